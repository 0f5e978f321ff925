// test_cluster's network faults (docs/hosting.md#testing-a-service-in-virtual-time): a
// partition holds a request until it heals, a stall holds it until it ends and is unseen by
// membership, on the orders service (examples/orders) with links that cross at once.

#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/test_cluster.hpp"
#include "orders.hpp"

using namespace cafmesh;
using namespace std::chrono_literals;

TEST_CASE("test_cluster: a partition of the client from every silo holds its request until "
          "the heal, which delivers it: answered at the heal") {
  testing::fixture fx;
  testing::test_cluster mesh{fx};
  for (auto name : {"a", "b", "c"})
    mesh.add_silo(name, orders::with_orders);
  mesh.add_client("front");
  auto warm = mesh.request("front", "node/orders/o1", R"({"sku":"s1","qty":1})");
  REQUIRE(fx.run_until([&] { return warm->done; }, 1min));
  REQUIRE(warm->ok());
  for (auto name : {"a", "b", "c"})
    mesh.partition("front", name);
  auto held = mesh.request("front", "node/orders/o1", R"({"sku":"s1","qty":2})");
  fx.run_for(5s);
  CHECK_FALSE(held->done);
  auto t_heal = fx.now_ms();
  for (auto name : {"a", "b", "c"})
    mesh.heal("front", name);
  REQUIRE(fx.run_until([&] { return held->done; }, 1min));
  CHECK(held->ok());
  CHECK(held->t_ms == t_heal);
  CHECK(held->value
        == R"({"left":999997,"lines":2,"order":"o1","reserved":true,"sku":"s1"})");
}

TEST_CASE("test_cluster: a stall longer than the failure detection holds every silo's frames "
          "but declares no silo Dead: answered at the unstall by the same activations") {
  testing::fixture fx;
  testing::test_cluster mesh{fx, {}, 2s}; // a silent silo is Dead after 2 s
  for (auto name : {"a", "b", "c"})
    mesh.add_silo(name, orders::with_orders);
  mesh.add_client("front");
  auto warm = mesh.request("front", "node/orders/o2", R"({"sku":"s2","qty":5})");
  REQUIRE(fx.run_until([&] { return warm->done; }, 1min));
  REQUIRE(warm->ok());
  for (auto name : {"a", "b", "c"})
    mesh.stall(name);
  auto held = mesh.request("front", "node/orders/o2", R"({"sku":"s2","qty":1})");
  fx.run_for(5s);
  CHECK_FALSE(held->done);
  auto t_unstall = fx.now_ms();
  for (auto name : {"a", "b", "c"})
    mesh.unstall(name);
  REQUIRE(fx.run_until([&] { return held->done; }, 1min));
  CHECK(held->ok());
  CHECK(held->t_ms == t_unstall);
  // The order and inventory activations kept their state: no silo was declared Dead.
  CHECK(held->value
        == R"({"left":999994,"lines":2,"order":"o2","reserved":true,"sku":"s2"})");
}
