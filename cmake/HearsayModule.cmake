# hearsay_module(<name> [TOOL] [DEPS <targets>...] [TEST_DEPS <targets>...])
#
# Builds the module in the current folder by convention:
#   *.cc (not *_test.cc, *_fuzz.cc)  -> static library hearsay_<name>
#   *_test.cc                        -> test binary hearsay_<name>_test, registered with ctest
#   *_fuzz.cc                        -> one fuzz target each (see hearsay_fuzz_target)
# Includes are rooted at src/. A TOOL module (the simulator and the tools that drive processes on
# trusted input) builds its tests only with HEARSAY_TOOL_TESTS: the sanitizer build leaves them out.
include(GoogleTest)

function(hearsay_module name)
  cmake_parse_arguments(ARG "TOOL" "" "DEPS;TEST_DEPS" ${ARGN})
  file(GLOB all_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  set(lib_srcs)
  set(test_srcs)
  set(fuzz_srcs)
  foreach(f IN LISTS all_srcs)
    if(f MATCHES "_test\\.cc$")
      list(APPEND test_srcs ${f})
    elseif(f MATCHES "_fuzz\\.cc$")
      list(APPEND fuzz_srcs ${f})
    else()
      list(APPEND lib_srcs ${f})
    endif()
  endforeach()

  set(lib hearsay_${name})
  if(lib_srcs)
    add_library(${lib} STATIC ${lib_srcs})
    target_include_directories(${lib} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${lib} PUBLIC ${ARG_DEPS})
  else()
    add_library(${lib} INTERFACE)
    target_include_directories(${lib} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${lib} INTERFACE ${ARG_DEPS})
  endif()

  if(ARG_TOOL AND NOT HEARSAY_TOOL_TESTS)
    set(test_srcs)
  endif()
  if(test_srcs AND BUILD_TESTING)
    add_executable(${lib}_test ${test_srcs})
    target_link_libraries(${lib}_test PRIVATE ${lib} ${ARG_TEST_DEPS} GTest::gmock GTest::gtest_main)
    gtest_discover_tests(${lib}_test DISCOVERY_TIMEOUT 120
      PROPERTIES ENVIRONMENT "HEARSAY_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
    hearsay_unit_test(${lib}_test)
  endif()

  foreach(f IN LISTS fuzz_srcs)
    hearsay_fuzz_target(${f} ${lib})
  endforeach()
endfunction()

# A fuzz target defines LLVMFuzzerTestOneInput. With HEARSAY_FUZZ it links libFuzzer; otherwise it
# links a small driver that replays fuzz/corpus/<target>/ and fuzz/regressions/<target>/, and that
# replay runs as an ordinary test, so every crash once found stays fixed.
function(hearsay_fuzz_target src lib)
  get_filename_component(stem ${src} NAME_WE)
  set(target hearsay_${stem})
  add_executable(${target} ${src})
  target_link_libraries(${target} PRIVATE ${lib})
  if(HEARSAY_FUZZ)
    target_link_options(${target} PRIVATE -fsanitize=fuzzer)
  else()
    target_link_libraries(${target} PRIVATE hearsay_fuzz_replay)
    if(BUILD_TESTING)
      hearsay_unit_test(${target})
      add_test(NAME ${stem}_replay
        COMMAND ${target} ${PROJECT_SOURCE_DIR}/fuzz/corpus/${stem}
                          ${PROJECT_SOURCE_DIR}/fuzz/regressions/${stem})
    endif()
  endif()
  set_property(GLOBAL APPEND PROPERTY HEARSAY_FUZZ_TARGETS ${target})
endfunction()

# hearsay_unit_test(<target>): a test binary that runs in-process (no `hearsay` process, no
# engine). The target hearsay_unit_tests builds them all: a sanitizer build builds only these.
function(hearsay_unit_test target)
  set_property(GLOBAL APPEND PROPERTY HEARSAY_UNIT_TEST_TARGETS ${target})
  hearsay_test_code(${target})
endfunction()

# hearsay_test_code(<target>): the target's own sources are test code, compiled with
# HEARSAY_TEST_COMPILE_OPTIONS (after the build type's flags, so they win). Tests spend their time
# in the libraries, which keep the build's optimisation; unoptimised, a test file compiles in
# about half the time (net/daemon_test.cc: 19.3 s at -O3 against 11.1 s with GCC, 27.0 s at -O1
# against 13.9 s with clang and the sanitizers).
#
# A test binary of several files is also a unity build: its files are compiled
# HEARSAY_TEST_UNITY_BATCH_SIZE at a time as one translation unit, so gtest and the project's
# headers are parsed once per batch, not once per file. The files of one test binary therefore
# share one namespace: helpers in their anonymous namespaces need distinct names, or the file
# keeps them in a namespace named after it (docs/architecture.md#build-layout).
# HEARSAY_UNITY_TESTS=OFF compiles each file on its own.
set(HEARSAY_TEST_COMPILE_OPTIONS -O0 CACHE STRING "Compile options for test code")
option(HEARSAY_UNITY_TESTS "Compile the files of each test binary in unity batches" ON)
set(HEARSAY_TEST_UNITY_BATCH_SIZE 8 CACHE STRING "Test files per unity translation unit")
function(hearsay_test_code target)
  target_compile_options(${target} PRIVATE ${HEARSAY_TEST_COMPILE_OPTIONS})
  get_target_property(srcs ${target} SOURCES)
  list(LENGTH srcs n)
  if(HEARSAY_UNITY_TESTS AND n GREATER 1)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                          UNITY_BUILD_BATCH_SIZE ${HEARSAY_TEST_UNITY_BATCH_SIZE})
  endif()
endfunction()
