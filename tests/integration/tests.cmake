# Integration tests that are not doctest cases (included OPTIONAL by tests/CMakeLists.txt).

# -- install and consume --------------------------------------------------------------------------
include(${CMAKE_CURRENT_LIST_DIR}/install_tests.cmake)

# -- network mode ---------------------------------------------------------------------------------
include(${CMAKE_CURRENT_LIST_DIR}/net_tests.cmake)
