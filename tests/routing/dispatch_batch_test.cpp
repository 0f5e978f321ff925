// A pure client's dispatch batches (SPEC §14 B1/B4, docs/behaviour/routing.md#dispatch-batches):
// the dispatches started in one turn reach the gateway's routing grain as one call, the router
// core answers each item as it would a lone call, and each item ends by its own verdict.

#include "router_fakes.hpp"

#include <map>
#include <string>
#include <vector>

#include "cafmesh/testing/silo_world.hpp"

using namespace cafmesh::testing::router_bed;
namespace router_bed = cafmesh::testing::router_bed;
using namespace std::chrono_literals;
using cafmesh::testing::fixture;

namespace {

const std::string portal_path = "portal/user1/tab1";

/// Silo a and two pure clients homed on it: p hosts the portal hub `portal_path`, o the owner
/// hub `node/Owner/O1`; the portal is attached.
struct two_clients {
  explicit two_clients(fixture& fx) : w(fx) {
    a = w.add_silo("a").addr;
    p = w.add_client("p", a);
    o = w.add_client("o", a);
    portal = testing::add_hub(fx, p.routing, portal_path);
    owner = testing::add_hub(fx, o.routing, "node/Owner/O1");
    fx.run_for(1s);
    REQUIRE(testing::service_of(p.routing).inbound.at(portal_path).attached);
    REQUIRE(testing::service_of(o.routing).gateway == a);
  }
  /// Has the owner hub post one frame on each of `n` streams to the portal (not yet run).
  std::vector<std::string> post_frames(int n) {
    std::vector<std::string> ids;
    for (int s = 0; s < n; ++s) {
      ids.push_back("s" + std::to_string(s) + "-f0");
      caf::anon_send(owner, ep_post_atom::value,
                     testing::make_delivery(ids.back(), portal_path,
                                            "stream-" + std::to_string(s)));
    }
    return ids;
  }

  /// How often each delivery landed at the portal.
  std::map<std::string, int> landed() {
    std::map<std::string, int> times;
    for (auto& r : testing::hub_of(portal).received)
      ++times[r.env.id];
    return times;
  }

  testing::silo_world w;
  silo_address a;
  testing::world_client p;
  testing::world_client o;
  hub_endpoint_actor portal;
  hub_endpoint_actor owner;
};

/// Sends `items` to the bed's router core as one batch and answers its verdicts.
dispatch_verdicts route_batch(fixture& fx, bed& b, std::vector<dispatch_item> items) {
  caf::scoped_actor self{fx.sys};
  self->send(b.rc, rc_grains_atom::value, std::move(items), silo_address{});
  fx.run();
  dispatch_verdicts out;
  bool got = false;
  self->receive([&](dispatch_verdicts& v) {
    out = std::move(v);
    got = true;
  },
                caf::after(std::chrono::seconds(0)) >> [] {});
  REQUIRE(got);
  return out;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "dispatch batches: 20 frames a pure client's hub posts in one turn reach its gateway's routing grain as one call and each lands once") {
  two_clients t{*this};
  auto& o = t.o;
  auto before = testing::service_of(o.routing).stats;
  auto sent = t.post_frames(20);
  run_for(1s);
  auto after = testing::service_of(o.routing).stats;
  CHECK(after.client_attempts - before.client_attempts == 20);
  CHECK(after.client_batches - before.client_batches == 1);
  CHECK(after.client_accepted - before.client_accepted == 20);
  CHECK(after.client_failed - before.client_failed == 0);
  auto times = t.landed();
  CHECK(times.size() == sent.size());
  for (auto& id : sent) {
    INFO(id);
    CHECK(times[id] == 1);
  }
}

TEST_CASE_FIXTURE(fixture, "dispatch batches: a request about to expire leaves in a call of its own, so the frames started in the same turn keep their own bounds and land") {
  two_clients t{*this};
  auto& o = t.o;
  auto before = testing::service_of(o.routing).stats;
  auto sent = t.post_frames(10);
  // 100 ms to its deadline: its call would live 90 ms, less than a call needs to leave.
  auto r = testing::make_delivery("r-short", "node/Org/Acme");
  r.sender = address::from("node/Owner/O1");
  caf::anon_send(o.routing, rs_request_atom::value, r, int64_t{100});
  run_for(1s);
  auto after = testing::service_of(o.routing).stats;
  CHECK(after.client_attempts - before.client_attempts == 11);
  CHECK(after.client_batches - before.client_batches == 2);
  CHECK(after.client_accepted - before.client_accepted >= 10);
  auto times = t.landed();
  for (auto& id : sent) {
    INFO(id);
    CHECK(times[id] == 1);
  }
}

TEST_CASE_FIXTURE(fixture, "dispatch batches: the router core answers each item as a lone call and refuses only the items past routing.max_in_flight, whose legs it never took") {
  bed b(*this);
  b.cfg.routing.max_in_flight = 2;
  b.cfg.routing.overload_retry_after_ms = 750;
  b.start();
  b.grain().fallback = answer::held();
  std::vector<dispatch_item> items;
  for (auto id : {"b1", "b2", "b3", "b4"})
    items.push_back({bed::make(id, "node/Org/Acme"), caf::timespan{0}});
  auto v = route_batch(*this, b, std::move(items));
  REQUIRE(v.size() == 4);
  CHECK_FALSE(v[0]);
  CHECK_FALSE(v[1]);
  const std::string text = "silo " + b.silo.to_string()
                           + " overloaded: 2 deliveries in flight (routing.max_in_flight 2);"
                             " retry after 750 ms";
  for (size_t i : {size_t{2}, size_t{3}}) {
    CAPTURE(i);
    REQUIRE(v[i]);
    auto f = to_fault(v[i]);
    CHECK(f.code == mesh_errc::overloaded);
    CHECK(f.text == text);
    REQUIRE(f.retry_after_ms);
    CHECK(*f.retry_after_ms == 750u);
  }
  auto st = b.stats();
  CHECK(st.accepted == 2);
  CHECK(st.refused_overloaded == 2);
  run();
  REQUIRE(b.grain().attempts.size() == 2); // the two accepted legs' grain calls, held
  CHECK(b.grain().attempts[0].env.id == "b1");
  CHECK(b.grain().attempts[1].env.id == "b2");
  // After the stopping signal every item of a batch is refused, naming the silo.
  CHECK(router_bed::ask<caf::ok_atom>(*this, b.rc, lifecycle::host_stopping_atom::value)
        == caf::ok_atom::value);
  std::vector<dispatch_item> late{{bed::make("c1", "node/Org/Acme"), caf::timespan{0}},
                                  {bed::make("c2", "node/Org/Acme"), caf::timespan{0}}};
  auto v2 = route_batch(*this, b, std::move(late));
  REQUIRE(v2.size() == 2);
  for (auto& e : v2) {
    REQUIRE(e);
    auto f = to_fault(e);
    CHECK(f.code == mesh_errc::silo_unavailable);
    CHECK(f.text == "silo " + b.silo.to_string() + " is leaving; route elsewhere");
    REQUIRE(f.silo);
    CHECK(*f.silo == b.silo);
  }
  CHECK(b.stats().accepted == 2);
}
