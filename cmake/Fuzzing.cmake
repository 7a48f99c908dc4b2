# libFuzzer targets (tests/fuzz): -DKILN_FUZZ=ON with clang (Debian's clang-14
# + libclang-rt-14-dev). The asan preset sets it, so one ASan + UBSan build
# holds the test suite and the fuzzers: a second sanitizer build of the same
# libraries only for the fuzzers cost CI as much as the asan build itself.
#
# Coverage instrumentation (-fsanitize=fuzzer-no-link) goes only where the
# fuzzers' inputs are parsed and checked: the libraries below and the fuzz
# targets' own sources (kiln_fuzz_instrument in tests/fuzz). The CPU kernels,
# the plugins, the CLI and the tests stay uninstrumented, so the test suite in
# the same build runs its hot loops without a coverage callback per branch.
# Without KILN_FUZZ the same harnesses build as plain corpus-replay programs
# that ctest runs in every configuration, so the seed corpora and every past
# crash stay regression tests (tests/fuzz/).
option(KILN_FUZZ "Build the libFuzzer targets in tests/fuzz (needs clang)" OFF)

if(KILN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "KILN_FUZZ needs clang (cmake --preset asan uses clang-14)")
  endif()
  if(NOT KILN_SANITIZE)
    set(KILN_SANITIZE "address,undefined" CACHE STRING "" FORCE)
  endif()
endif()

# kiln_fuzz_instrument(TARGET...): coverage for libFuzzer on these targets'
# own sources; nothing without KILN_FUZZ.
function(kiln_fuzz_instrument)
  if(KILN_FUZZ)
    foreach(t ${ARGN})
      target_compile_options(${t} PRIVATE -fsanitize=fuzzer-no-link)
    endforeach()
  endif()
endfunction()
