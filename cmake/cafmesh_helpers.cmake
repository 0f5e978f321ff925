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
