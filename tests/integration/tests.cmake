# Integration tests that are not doctest cases (included OPTIONAL by tests/CMakeLists.txt).

# -- install and consume (branch vocab) -------------------------------------------------
include(${CMAKE_CURRENT_LIST_DIR}/install_tests.cmake)
