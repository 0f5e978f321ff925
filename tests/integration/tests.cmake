# Integration tests that are not doctest cases (included OPTIONAL by tests/CMakeLists.txt).

# -- install and consume --------------------------------------------------------------------------
include(${CMAKE_CURRENT_LIST_DIR}/install_tests.cmake)

# -- network mode ---------------------------------------------------------------------------------
include(${CMAKE_CURRENT_LIST_DIR}/net_tests.cmake)

# -- live runs of the examples' executables ------------------------------------------------------
include(${CMAKE_CURRENT_LIST_DIR}/example_runs.cmake)

# -- peer authentication runs alone ----------------------------------------------------------------
# Its S13.14 cases count every refusal their silos log. Beside them, a process of another test
# that still probes a port the OS has since given to one of their silos (a departed peer's
# endpoint) is refused too, for its cluster id, and counted: they run alone. doctest defines
# the list of discovered cases when ctest starts, so an include file read after doctest's own
# marks them (as cmake/cafmesh_sanitize.cmake sets its environment).
if(TARGET cafmesh_integration_tests)
  set(cafmesh_serial_file "${CMAKE_CURRENT_BINARY_DIR}/cafmesh_integration_serial.cmake")
  file(WRITE "${cafmesh_serial_file}"
       "foreach(t IN LISTS cafmesh_integration_tests_TESTS)\n"
       "  if(t MATCHES \"^S13[.]14 \")\n"
       "    set_tests_properties(\"\${t}\" PROPERTIES RUN_SERIAL TRUE)\n"
       "  endif()\n"
       "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${cafmesh_serial_file}")
endif()
