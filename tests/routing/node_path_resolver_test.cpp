// The node path resolver (node_path_resolver.hpp).

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/routing/node_path_resolver.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;

TEST_CASE_FIXTURE(testing::fixture, "node path resolver: node/{prefix} is the node prefix, anything else is not found") {
  auto r = track(spawn_node_path_resolver(sys));
  auto hit = testing::ask<resolve_result>(*this, r, pr_resolve_atom::value,
                                          std::string{"node/Org/N3"});
  auto bare = testing::ask<resolve_result>(*this, r, pr_resolve_atom::value,
                                           std::string{"node/"});
  auto other = testing::ask<resolve_result>(*this, r, pr_resolve_atom::value,
                                            std::string{"portal/user1/tab1"});
  run();
  REQUIRE(hit->ok());
  CHECK(hit->value.found);
  CHECK(hit->value.node_prefix == "Org/N3");
  CHECK(hit->value.remainder.empty());
  REQUIRE(bare->ok());
  CHECK_FALSE(bare->value.found);
  REQUIRE(other->ok());
  CHECK_FALSE(other->value.found);
}

TEST_CASE("node path resolver: node_prefix_of is the one {type}/{prefix} rule") {
  CHECK(node_prefix_of("node", "node/Org/N3") == std::optional<std::string>{"Org/N3"});
  CHECK(node_prefix_of("node", "node/x") == std::optional<std::string>{"x"});
  // An empty prefix names no node, and neither does another type or a type-name prefix.
  CHECK_FALSE(node_prefix_of("node", "node/").has_value());
  CHECK_FALSE(node_prefix_of("node", "node").has_value());
  CHECK_FALSE(node_prefix_of("node", "nodes/x").has_value());
  CHECK_FALSE(node_prefix_of("node", "portal/user1/tab1").has_value());
  CHECK_FALSE(node_prefix_of("node", "").has_value());
  CHECK(node_prefix_of("pod", "pod/a/b") == std::optional<std::string>{"a/b"});
}
