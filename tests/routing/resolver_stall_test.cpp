// S12.18: a leg parked in path resolution is counted by its silo's gauge and held by the
// quiescence participant at Active until the resolver answers.

#include <deque>
#include <memory>

#include <doctest/doctest.h>

#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/routing/detail/hub_endpoint_state.hpp"
#include "cafmesh/testing/silo_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using testing::fixture;

namespace {

using stall_release_atom = caf::atom_constant<caf::atom("tstallrel")>;

/// A path resolver that answers nothing until released, then "unknown path" to everyone.
caf::behavior stalled_resolver(caf::event_based_actor* self) {
  auto held = std::make_shared<std::deque<caf::response_promise>>();
  return {
    [=](routing::pr_resolve_atom, const std::string&) -> caf::response_promise {
      held->push_back(self->make_response_promise());
      return held->back();
    },
    [=](stall_release_atom) {
      for (auto& rp : *held)
        rp.deliver(routing::resolve_result{}); // found = false: unknown path
      held->clear();
    },
  };
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S12.18 a leg parked in a stalled path resolver on silo A is counted and held at 20000, then the unknown path is NACKed not_found and the gauge returns to 0") {
  silo_world w{*this};
  auto resolver = track(sys.spawn(stalled_resolver));
  silo_world_options o;
  o.resolver = resolver;
  auto a = w.add_silo("a", o).addr;
  w.add_silo("b");
  w.add_silo("c");
  REQUIRE(w.last_start->ok());
  auto& sa = w.at(a);
  auto hub_addr = routing::address::from("portal/h18");
  auto hub = track(routing::spawn_hub_endpoint(sys, hub_addr, sa.routing));
  caf::anon_send(sa.routing, routing::rs_register_atom::value, hub_addr,
                 caf::actor_cast<caf::actor>(hub));
  run();
  routing::envelope d;
  d.id = "s1218";
  d.sender = hub_addr;
  d.target = routing::address::from("node/Doc/Missing");
  d.payload_type = "test.ping";
  d.payload_json = "{}";
  caf::anon_send(hub, routing::ep_request_atom::value, d, int64_t{120000});
  run_for(std::chrono::seconds(5));
  // The leg waits in path resolution: A's gauge counts it.
  auto count = testing::ask<uint64_t>(*this, sa.gauge, routing::q_count_atom::value);
  run();
  REQUIRE(count->ok());
  CHECK(count->value >= 1);
  // A's lifecycle has the participant at 20000: a graceful stop holds there for the leg.
  auto stopped = w.stop(a, true);
  run_for(std::chrono::seconds(1));
  CHECK(logs.count("holding silo stop for 1 route leg(s)", log::level::info) == 1);
  CHECK_FALSE(stopped->done);
  // The resolver answers "unknown path" at t = 6 s.
  caf::anon_send(resolver, stall_release_atom::value);
  REQUIRE(run_until([&] { return stopped->done; }));
  CHECK(stopped->ok());
  CHECK(logs.count("routing quiescence: work landed after 1000 ms", log::level::info) == 1);
  auto& outcomes = cafmesh::routing::detail::state_of(hub).outcomes;
  REQUIRE(outcomes.size() == 1);
  CHECK(outcomes[0].id == "s1218");
  CHECK(outcomes[0].kind == "nack");
  CHECK(outcomes[0].verdict == routing::verdict::not_found);
  CHECK(outcomes[0].message.find("No node found at 'node/Doc/Missing'") != std::string::npos);
  // After the stop the gauge was torn down with nothing in it.
  CHECK(logs.count("did not land") == 0);
}
