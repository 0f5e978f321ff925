# Integration tests that are not doctest cases (included OPTIONAL by tests/CMakeLists.txt).

# -- network mode (branch netlink) ----------------------------------------------------
include(${CMAKE_CURRENT_LIST_DIR}/net_tests.cmake)
