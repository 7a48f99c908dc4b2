# libFuzzer build (the fuzz preset in CMakePresets.json): -DKILN_FUZZ=ON with
# clang (Debian's clang-14 + libclang-rt-14-dev).
#
# Every library is instrumented for coverage (-fsanitize=fuzzer-no-link) and
# built with ASan + UBSan (cmake/Sanitizers.cmake); the targets in tests/fuzz
# link the libFuzzer driver. Without KILN_FUZZ the same harnesses build as
# plain corpus-replay programs that ctest runs in every configuration, so the
# seed corpora and every past crash stay regression tests (tests/fuzz/).
option(KILN_FUZZ "Build the libFuzzer targets in tests/fuzz (needs clang)" OFF)

if(KILN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "KILN_FUZZ needs clang (cmake --preset fuzz uses clang-14)")
  endif()
  if(NOT KILN_SANITIZE)
    set(KILN_SANITIZE "address,undefined" CACHE STRING "" FORCE)
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
