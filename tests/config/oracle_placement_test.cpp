// Where the development membership oracle lives: any process may host it, a pure client
// included, so that no silo has to be the one stopped last.

#include <string>

#include <doctest/doctest.h>

#include "cafmesh/config/load.hpp"

using namespace cafmesh::config;

TEST_CASE("S13.07 config: a pure_client with primary_port 0 is accepted and is the primary that hosts the oracle") {
  auto r = parse(R"({"mesh":{"process_role":"pure_client","name":"oracle-1"},
                     "network":{"host":"127.0.0.1","port":7000,"primary_port":0}})");
  REQUIRE(r.ok);
  CHECK(r.value.mesh.role == process_role::pure_client);
  CHECK(r.value.mesh.name == "oracle-1");
  CHECK(r.value.network.port == 7000);
  CHECK(r.value.network.primary_port == 0);
  // The layout's other processes, silos and clients alike, name the oracle's process.
  for (auto role : {"silo_host", "pure_client"}) {
    CAPTURE(role);
    auto other = parse(std::string{R"({"mesh":{"process_role":")"} + role
                       + R"("},"network":{"primary_host":"127.0.0.1","primary_port":7000}})");
    REQUIRE(other.ok);
    CHECK(other.value.network.primary_port == 7000);
  }
  // A silo_host stays the primary by the same rule.
  auto silo = parse(R"({"mesh":{"process_role":"silo_host"}})");
  REQUIRE(silo.ok);
  CHECK(silo.value.network.primary_port == 0);
}
