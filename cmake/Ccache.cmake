# ccache for every build (release, asan, tsan, fuzz) when it is installed
# (scripts/install-deps.sh installs it with the test tools).
#
# CCACHE_BASEDIR is the source tree, so ccache hashes paths inside it relative
# to the build directory; with CCACHE_NOHASHDIR the compiler's working
# directory is left out of the hash too. Together they let a clean clone in
# another folder (what .ci/run is run on) hit the objects an earlier build of
# the same sources made. -DKILN_CCACHE=OFF builds without it.
option(KILN_CCACHE "Compile through ccache when it is installed" ON)
if(KILN_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(KILN_CCACHE_PROGRAM ccache)
  if(KILN_CCACHE_PROGRAM)
    set(KILN_CCACHE_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=true
                             ${KILN_CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${KILN_CCACHE_LAUNCHER})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${KILN_CCACHE_LAUNCHER})
    message(STATUS "kiln: compiling through ${KILN_CCACHE_PROGRAM} (base dir ${CMAKE_SOURCE_DIR})")
  endif()
endif()
