// Admission control at a silo's gateway (the side that serves pure clients): beyond
// `gateway.max_outstanding` client dispatches waiting for their answer, the next one is
// refused `overloaded` with `retry_after_ms` before it reaches placement; once one is
// answered the gateway accepts again.

#include <doctest/doctest.h>

#include "cafmesh/routing/classify.hpp"
#include "cafmesh/testing/silo_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

TEST_CASE_FIXTURE(fixture, "gateway: beyond gateway.max_outstanding a client dispatch is refused overloaded with retry_after_ms before placement, and accepted again once one is answered") {
  silo_world w{*this};
  silo_world_options o;
  o.configure = [](config::mesh_config& cfg) {
    cfg.gateway.max_outstanding = 2;
    cfg.routing.overload_retry_after_ms = 900;
  };
  auto a = w.add_silo("a", o).addr;
  REQUIRE(w.last_start->ok());
  auto gw = w.at(a).gateway;
  auto call = [&](const std::string& key, int64_t ms) {
    return testing::ask<std::string>(*this, gw, pl_call_atom::value, grain_id{"slowsw", key},
                                     int32_t{0}, caf::make_message(pt_slow_atom::value, ms));
  };
  auto c1 = call("k1", 1000);
  auto c2 = call("k2", 1000);
  auto c3 = call("k3", 1000);
  run();
  REQUIRE(c3->done);
  REQUIRE(c3->err);
  auto f = to_fault(c3->err);
  CHECK(f.code == mesh_errc::overloaded);
  CHECK(f.text == "gateway " + a.to_string()
                    + " overloaded: 2 client dispatches outstanding (gateway.max_outstanding 2);"
                      " retry after 900 ms");
  REQUIRE(f.retry_after_ms);
  CHECK(*f.retry_after_ms == 900u);
  CHECK(routing::classify(f) == routing::verdict::unavailable);
  CHECK_FALSE(c1->done);
  CHECK_FALSE(c2->done);
  run_for(1000ms);
  REQUIRE(c1->ok());
  REQUIRE(c2->ok());
  CHECK(c1->value == a.to_string());
  auto c4 = call("k4", 10);
  run_for(10ms);
  REQUIRE(c4->ok());
  CHECK(c4->value == a.to_string());
}
