# Network mode (actors/include/cafmesh/actors/net_link.hpp): the node executable that
# net_cluster_test.cpp starts as separate processes. Included by tests.cmake.
add_executable(cafmesh_net_node ${CMAKE_CURRENT_LIST_DIR}/net_node/net_node.cpp)
target_link_libraries(cafmesh_net_node PRIVATE cafmesh::lifecycle)
target_compile_options(cafmesh_net_node PRIVATE -Wall -Wextra -Winvalid-pch)
cafmesh_use_pch(cafmesh_net_node)
if(TARGET cafmesh_integration_tests)
  add_dependencies(cafmesh_integration_tests cafmesh_net_node)
  target_compile_definitions(cafmesh_integration_tests PRIVATE
    CAFMESH_NET_NODE_PATH="$<TARGET_FILE:cafmesh_net_node>")
endif()
