# Sanitizer builds (the asan and tsan presets in CMakePresets.json).
#
#   -DKILN_SANITIZE=address,undefined   ASan + UBSan: every target, plugins included
#   -DKILN_SANITIZE=thread              TSan
#
# Included from the top-level CMakeLists.txt before any target is defined, so
# the flags reach every library, plugin, test and tool. UBSan stops at the
# first report (-fno-sanitize-recover) so a test cannot pass with undefined
# behaviour in its log; ASan stops at its first report anyway. The matching
# runtime options (halt_on_error, suppressions) are in the test presets.
set(KILN_SANITIZE "" CACHE STRING "Sanitizers to build with: address,undefined | thread | empty for none")

if(KILN_SANITIZE)
  if(KILN_SANITIZE MATCHES "thread" AND KILN_SANITIZE MATCHES "address")
    message(FATAL_ERROR "KILN_SANITIZE: thread and address cannot be combined")
  endif()
  message(STATUS "kiln: building with -fsanitize=${KILN_SANITIZE}")
  add_compile_options(-fsanitize=${KILN_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${KILN_SANITIZE})
  if(KILN_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
  set(KILN_SANITIZER_SUPPRESSIONS_DIR ${CMAKE_SOURCE_DIR}/tests/sanitizers)
endif()
