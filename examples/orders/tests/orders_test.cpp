// The orders service (examples/orders/orders.hpp) on whole silos in virtual time: the hub
// node/orders/{id}, a handler taking the silo's `grain_factory`, places a line on the order
// grain, which reserves it on the inventory grain from inside its turn
// (docs/hosting.md#grains-that-call-grains).

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <utility>

#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "orders.hpp"

using namespace cafmesh;
using namespace cafmesh::lifecycle;

namespace {

/// A silo on `cluster` with what `add` registers, started.
template <class Add>
silo make_silo(testing::fixture& fx, const in_process_cluster_ptr& cluster, Add add,
               config::mesh_config cfg = {}) {
  silo_builder b{fx.sys};
  add(b.config(std::move(cfg)).cluster(cluster));
  auto s = b.build();
  REQUIRE(s);
  auto r = testing::ask(fx, s->host(), host_start_atom::value);
  REQUIRE(fx.run_until([&] { return r->done; }, std::chrono::minutes(1)));
  REQUIRE(r->ok());
  return std::move(*s);
}

} // namespace

TEST_CASE("hosting: the orders example: the hub node/orders/{id} places a line on the order "
          "grain, which reserves it on the inventory grain, across two silos' entries") {
  testing::fixture fx;
  auto cluster = make_in_process_cluster(fx.sys);
  auto a = make_silo(fx, cluster, orders::with_orders);
  auto b = make_silo(fx, cluster, orders::with_orders);
  auto place = [&](silo& via, const std::string& id, const std::string& line) -> std::string {
    auto r = testing::ask<std::string>(fx, via.entry(), routing::ce_request_atom::value,
                                       routing::address::from("node/orders/" + id),
                                       std::string{"request"}, line, int64_t{30000}, true);
    if (!fx.run_until([&] { return r->done; }, std::chrono::minutes(1)))
      return "no answer";
    if (r->err)
      return "error: " + to_string(routing::delivery_error_of(r->err));
    return r->value;
  };
  CHECK(place(a, "o1", R"({"sku":"apple","qty":2})")
        == R"({"left":999998,"lines":1,"order":"o1","reserved":true,"sku":"apple"})");
  CHECK(place(b, "o1", R"({"sku":"apple","qty":3})")
        == R"({"left":999995,"lines":2,"order":"o1","reserved":true,"sku":"apple"})");
  CHECK(place(b, "o2", R"({"sku":"pear","qty":1})")
        == R"({"left":999999,"lines":1,"order":"o2","reserved":true,"sku":"pear"})");
  CHECK(place(a, "o2", R"({"sku":"apple","qty":2000000})")
        == R"({"left":999995,"lines":1,"order":"o2","reserved":false,"sku":"apple"})");
  auto bad = place(a, "o3", R"({"sku":"apple"})");
  CHECK_MESSAGE(bad.rfind("error: ", 0) == 0, bad);
}
