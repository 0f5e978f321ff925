# cafmesh_add_library(<folder> DEPS <targets...> [NO_CAF])
# One library target per folder: sources <folder>/src/*.cpp, public headers in
# <folder>/include/cafmesh/<folder>/, exported as cafmesh::<folder>.
function(cafmesh_add_library folder)
  cmake_parse_arguments(ARG "NO_CAF" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp")
  set(tgt cafmesh_${folder})
  add_library(${tgt} STATIC ${srcs})
  add_library(cafmesh::${folder} ALIAS ${tgt})
  set_target_properties(${tgt} PROPERTIES EXPORT_NAME ${folder} OUTPUT_NAME cafmesh_${folder})
  target_include_directories(${tgt} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${tgt} PUBLIC ${ARG_DEPS})
  target_compile_features(${tgt} PUBLIC cxx_std_17)
  target_compile_options(${tgt} PRIVATE -Wall -Wextra -Winvalid-pch)
  cafmesh_sanitizer_link_interface(${tgt})
  if(CAFMESH_USE_PCH AND NOT ARG_NO_CAF)
    target_precompile_headers(${tgt} REUSE_FROM cafmesh_pch)
  endif()
  install(TARGETS ${tgt} EXPORT cafmeshTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()

# cafmesh_use_pch(<target>): reuse the shared CAF precompiled header.
# Executables compile with -fPIC (not -fPIE) so the PIC-built header stays valid for them.
function(cafmesh_use_pch tgt)
  if(CAFMESH_USE_PCH)
    get_target_property(type ${tgt} TYPE)
    if(type STREQUAL "EXECUTABLE")
      set_target_properties(${tgt} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
      target_compile_options(${tgt} PRIVATE -fPIC)
    endif()
    target_precompile_headers(${tgt} REUSE_FROM cafmesh_pch)
  endif()
endfunction()

# cafmesh_add_test_suite(<name> SOURCES... [LABELS ...] [DEPS ...])
# One doctest executable, one ctest test per TEST_CASE (doctest_discover_tests).
function(cafmesh_add_test_suite name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LABELS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE cafmesh::testing ${ARG_DEPS})
  # A virtual-time run whose result nobody reads proves nothing: `run_until` is
  # [[nodiscard]] and an ignored result does not compile (docs/testing.md#run-loop).
  target_compile_options(${name} PRIVATE -Wall -Wextra -Winvalid-pch -Werror=unused-result)
  cafmesh_use_pch(${name})
  if(ARG_LABELS)
    doctest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}")
  else()
    doctest_discover_tests(${name} PROPERTIES LABELS "unit")
  endif()
endfunction()

# cafmesh_add_fuzz_target(<name> <library>)
# A fuzz target (docs/testing.md#fuzzing) of the current folder: <name>.cpp defines
# LLVMFuzzerTestOneInput with the checks of cafmesh/testing/fuzz.hpp (header only: its folder,
# not the cafmesh::testing library, so that a libFuzzer build links only the fuzzed code).
# - CAFMESH_FUZZ (clang): the libFuzzer executable <name>, linking <library>.
# - Otherwise, with the tests: the regression runner <name>_replay, which feeds every file of
#   corpus/<name>/ (at least one) and regressions/<name>/ once, as a ctest test (label unit),
#   so that a finding stays fixed.
function(cafmesh_add_fuzz_target name lib)
  if(CAFMESH_FUZZ)
    add_executable(${name} ${name}.cpp)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    set(tgt ${name})
  elseif(CAFMESH_BUILD_TESTS)
    set(main "${CMAKE_BINARY_DIR}/cafmesh_fuzz_replay_main.cpp")
    file(CONFIGURE OUTPUT "${main}" CONTENT [[
// The regression runner of a fuzz target (cmake/cafmesh_helpers.cmake cafmesh_add_fuzz_target).
#include "cafmesh/testing/fuzz.hpp"

int main(int argc, char** argv) {
  return cafmesh::testing::fuzz::replay_main(argc, argv);
}
]])
    set(tgt ${name}_replay)
    add_executable(${tgt} ${name}.cpp "${main}")
    set(test "fuzz regression: ${name} runs every seed and every past finding")
    add_test(NAME "${test}"
             COMMAND ${tgt} --nonempty "${CMAKE_CURRENT_SOURCE_DIR}/corpus/${name}"
                     "${CMAKE_CURRENT_SOURCE_DIR}/regressions/${name}")
    set_tests_properties("${test}" PROPERTIES LABELS unit TIMEOUT 120)
  else()
    return()
  endif()
  target_include_directories(${tgt} PRIVATE "${PROJECT_SOURCE_DIR}/tests/support/include")
  target_link_libraries(${tgt} PRIVATE ${lib} nlohmann_json::nlohmann_json)
  target_compile_options(${tgt} PRIVATE -Wall -Wextra -Winvalid-pch)
  if(NOT lib STREQUAL "cafmesh::config")
    cafmesh_use_pch(${tgt})
  endif()
endfunction()
