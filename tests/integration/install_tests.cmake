# The install rules and the package config, proven end to end (included by tests.cmake).
#
# install_and_consume: `cmake --install` this build into a prefix inside the build tree, then
# configure, build and run tests/consumer against it with find_package(cafmesh 0.1 REQUIRED).
add_test(NAME install_and_consume
  COMMAND ${CMAKE_COMMAND}
    -DCAFMESH_BUILD_DIR=${CMAKE_BINARY_DIR}
    -DCAFMESH_CONFIG=$<CONFIG>
    -DCAFMESH_LIBDIR=${CMAKE_INSTALL_LIBDIR}
    -DCONSUMER_SOURCE_DIR=${CMAKE_CURRENT_LIST_DIR}/../consumer
    -DHELLO_SOURCE_DIR=${PROJECT_SOURCE_DIR}/examples/hello
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install_and_consume
    -DGENERATOR=${CMAKE_GENERATOR}
    -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
    -DCAF_INCLUDE_DIR=${CAF_INCLUDE_DIR}
    -DCAF_core_LIBRARY=${CAF_core_LIBRARY}
    -DCAF_io_LIBRARY=${CAF_io_LIBRARY}
    -P ${CMAKE_CURRENT_LIST_DIR}/install_and_consume.cmake)
set_tests_properties(install_and_consume PROPERTIES
  LABELS integration
  TIMEOUT 600
  # Configuring and building the consumer takes one core for ~15 s; keep -j runs sane.
  PROCESSORS 1)
