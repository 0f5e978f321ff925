// A stopping silo's answers still leave it and new requests move elsewhere, on whole
// simulated silos (silo_world) whose application hubs live inside the silo being stopped:
// S13.01 (traffic through a graceful stop), S13.02 (a response after the stopping signal
// holds the stop until it landed), S13.03 (new work refused at once, a NACK accepted).

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/routing/application_hub.hpp"
#include "cafmesh/routing/quiescence_atoms.hpp"
#include "cafmesh/routing/router_core.hpp"
#include "cafmesh/routing/routing_service.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "cafmesh/testing/silo_world.hpp"
#include "cafmesh/actors/detail/catalog_state.hpp"
#include "cafmesh/actors/detail/placement_state.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {

/// A co-hosted portal hub `addr` of silo `s`: a local route of its routing service whose
/// pod hub is claimed by its claimer (so other silos reach it through `podhub/{addr}`).
routing::hub_endpoint_actor add_portal(fixture& fx, silo_world& w, const silo_address& s,
                                       const std::string& addr) {
  auto& silo = w.at(s);
  auto a = routing::address::from(addr);
  auto h = fx.track(routing::spawn_hub_endpoint(fx.sys, a, silo.routing));
  caf::anon_send(silo.routing, routing::rs_register_atom::value, a,
                 caf::actor_cast<caf::actor>(h));
  fx.run();
  caf::anon_send(silo.claimer, routing::pc_claim_atom::value, a);
  fx.run();
  return h;
}

/// The application hub silo `s`'s factory built for `key`, or null.
caf::actor built_on(silo_world& w, const silo_address& s, const std::string& key) {
  auto& st = fixture::state_of<test_hub_factory_state>(w.entry(s).hubs);
  auto i = st.hubs.find(key);
  return i == st.hubs.end() ? caf::actor{} : i->second;
}

/// Every delivery id the application hubs of silo `s` took in.
std::set<std::string> received_on(silo_world& w, const silo_address& s) {
  std::set<std::string> out;
  for (auto& kv : fixture::state_of<test_hub_factory_state>(w.entry(s).hubs).hubs)
    for (auto& r : hub_of(kv.second).received)
      out.insert(r.env.id);
  return out;
}

uint64_t placement_calls(silo_world& w, const silo_address& s) {
  return fixture::state_of<cafmesh::detail::placement_state>(w.at(s).placement).stats.calls;
}

routing::router_core_stats core_stats(fixture& fx, silo_world& w, const silo_address& s) {
  auto r = testing::ask<routing::router_core_stats>(fx, caf::actor_cast<caf::actor>(w.at(s).core),
                                                    routing::rc_stats_atom::value);
  fx.run();
  REQUIRE(r->ok());
  return r->value;
}

uint64_t gauge_count(fixture& fx, silo_world& w, const silo_address& s) {
  auto r = testing::ask<uint64_t>(fx, w.at(s).gauge, routing::q_count_atom::value);
  fx.run();
  REQUIRE(r->ok());
  return r->value;
}

/// Host step 1 alone: the stopping signal to the routing service, router core and pod-hub
/// claimer of `s`, each acknowledged.
void signal_stopping(fixture& fx, silo_world& w, const silo_address& s) {
  auto& silo = w.at(s);
  for (auto& h : {silo.routing, caf::actor_cast<caf::actor>(silo.core),
                  caf::actor_cast<caf::actor>(silo.claimer)}) {
    auto r = testing::ask<caf::ok_atom>(fx, h, lifecycle::host_stopping_atom::value);
    fx.run();
    REQUIRE(r->ok());
  }
}

/// The response hub `from` sends to the sender of request `req`.
routing::envelope response_to(const routing::envelope& req, const std::string& from) {
  routing::envelope r;
  r.id = req.id + "-response";
  r.sender = routing::address::from(from);
  r.target = req.sender;
  r.request_id = req.id;
  r.payload_type = "response";
  r.payload_json = "{}";
  return r;
}

/// The actor clock's ms at this instant: hub endpoints stamp their outcomes and receipts
/// with it (not with the fixture's `now_ms`).
int64_t clock_ms(fixture& fx) {
  using namespace std::chrono;
  return duration_cast<milliseconds>(fx.sched.clock().current_time.time_since_epoch()).count();
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S13.03 after the stopping signal a new post or request from a hub of the silo is refused shutting_down at once without placement, and a NACK from a hub of the silo is accepted and reaches its requester") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  // node/Org/X lives on A: activated while A is the only silo.
  auto pa = add_portal(*this, w, a, "portal/pa");
  caf::anon_send(pa, routing::ep_post_atom::value, make_delivery("warm", "node/Org/X"));
  run_for(1s);
  auto x = built_on(w, a, "Org/X");
  REQUIRE(x);
  auto b = w.add_silo("b").addr;
  auto pb = add_portal(*this, w, b, "portal/pb");
  run_for(1s);
  // Request r0 of B's portal reaches A's hub X, which does not answer it yet.
  caf::anon_send(pb, routing::ep_request_atom::value, make_delivery("r0", "node/Org/X"),
                 int64_t{30000});
  run_for(1s);
  REQUIRE(hub_of(x).received.size() == 2);
  auto r0 = hub_of(x).received[1].env;
  REQUIRE(r0.id == "r0");
  signal_stopping(*this, w, a);
  auto calls_before = placement_calls(w, a);
  auto accepted_before = core_stats(*this, w, a).accepted;
  auto t = clock_ms(*this);
  // New work from a hub of A: a post and a request that answers nothing.
  caf::anon_send(pa, routing::ep_post_atom::value, make_delivery("p1", "node/Org/Y"));
  caf::anon_send(pa, routing::ep_request_atom::value, make_delivery("q1", "node/Org/Y"),
                 int64_t{30000});
  run();
  auto& ps = hub_of(pa);
  REQUIRE(ps.outcomes.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(ps.outcomes[i].id == (i == 0 ? "p1" : "q1"));
    CHECK(ps.outcomes[i].kind == "nack");
    CHECK(ps.outcomes[i].verdict == routing::verdict::shutting_down);
    CHECK(ps.outcomes[i].message == "Host is shutting down, cannot route to node/Org/Y");
    CHECK(ps.outcomes[i].t_ms == t);
  }
  CHECK(placement_calls(w, a) == calls_before);
  CHECK(core_stats(*this, w, a).accepted == accepted_before);
  // A NACK from A's hub X for r0: a continuation, accepted and routed to B's portal.
  routing::delivery_failure f;
  f.request_id = "r0";
  f.original = r0;
  f.message = "Delivery to 'node/Org/X' failed: the application refused it (test)";
  f.verdict = routing::verdict::rejected;
  auto nack = routing::make_nack_envelope(f, "x-nack-r0", routing::address::from("node/Org/X"));
  caf::anon_send(x, routing::ep_post_atom::value, nack);
  run_for(1s);
  auto& xs = hub_of(x);
  REQUIRE(xs.entry_answers.size() == 1);
  CHECK(xs.entry_answers.back().id == "x-nack-r0");
  CHECK(xs.entry_answers.back().state == routing::delivery_state::forwarded);
  CHECK(xs.outcomes.empty());
  CHECK(core_stats(*this, w, a).accepted == accepted_before + 1);
  CHECK(service_of(w.at(a).routing).stats.stopping_continuations == 1);
  CHECK(service_of(w.at(a).routing).stats.stopping_nacks == 2);
  auto& bs = hub_of(pb);
  REQUIRE(bs.outcomes.size() == 1);
  CHECK(bs.outcomes[0].id == "r0");
  CHECK(bs.outcomes[0].kind == "nack");
  CHECK(bs.outcomes[0].verdict == routing::verdict::rejected);
  CHECK(bs.outcomes[0].message == f.message);
  CHECK(bs.outcomes[0].t_ms == t);
  CHECK(gauge_count(*this, w, a) == 0);
}

TEST_CASE_FIXTURE(fixture, "S13.02 a response a hub of the stopping silo sends after the stopping signal is accepted, counted by the gauge, and the Active hold ends only once it landed at its requester") {
  // Every frame between silos takes 50 ms, so each leg below has a known duration.
  silo_world w{*this, 1, 50, 50};
  auto a = w.add_silo("a").addr;
  auto pa = add_portal(*this, w, a, "portal/pa");
  caf::anon_send(pa, routing::ep_post_atom::value, make_delivery("warm", "node/Org/X"));
  run_for(1s);
  auto x = built_on(w, a, "Org/X");
  REQUIRE(x);
  auto b = w.add_silo("b").addr;
  auto pb = add_portal(*this, w, b, "portal/pb");
  run_for(2s);
  // A's placement learns where B's portal lives (its cache holds podhub/portal/pb).
  caf::anon_send(pa, routing::ep_post_atom::value, make_delivery("w2", "portal/pb"));
  run_for(1s);
  REQUIRE(hub_of(pb).received.size() == 1);
  // Request r0 of B's portal lands at A's hub X, which keeps it unanswered for now.
  caf::anon_send(pb, routing::ep_request_atom::value, make_delivery("r0", "node/Org/X"),
                 int64_t{30000});
  run_for(1s);
  REQUIRE(hub_of(x).received.size() == 2);
  auto r0 = hub_of(x).received[1].env;
  REQUIRE(r0.id == "r0");
  REQUIRE(gauge_count(*this, w, a) == 0);
  // t0: a post of A's portal to B's portal is in flight (one round trip, as A's placement
  // knows where the pod hub lives), and A is stopped gracefully: the hold starts with that
  // one leg.
  auto t0 = now_ms();
  auto c0 = clock_ms(*this);
  caf::anon_send(pa, routing::ep_post_atom::value, make_delivery("p1", "portal/pb"));
  run();
  auto stopped = w.stop(a, true);
  run();
  REQUIRE(w.first(a, "holding silo stop for 1 route leg(s)").t_ms == t0);
  // t0 + 50: the hub answers r0.
  run_for(50ms);
  caf::anon_send(x, routing::ep_post_atom::value, response_to(r0, "node/Org/X"));
  run();
  auto& xs = hub_of(x);
  REQUIRE(xs.entry_answers.size() == 1);
  CHECK(xs.entry_answers[0].id == "r0-response");
  CHECK(xs.entry_answers[0].state == routing::delivery_state::forwarded);
  CHECK(xs.outcomes.empty());
  CHECK(gauge_count(*this, w, a) == 2);
  CHECK(service_of(w.at(a).routing).stats.stopping_continuations == 1);
  REQUIRE(run_until([&] { return stopped->done; }, 60s));
  REQUIRE(stopped->ok());
  // p1 reached B's portal at t0 + 50 and its leg landed at t0 + 100. The response shares
  // p1's channel (the destination portal/pb), so it waited behind p1 and started at
  // t0 + 100: it reached B's portal at t0 + 150, its leg learned it landed at t0 + 200, and
  // only then did the hold let the stop go on.
  auto& bs = hub_of(pb);
  REQUIRE(bs.outcomes.size() == 1);
  CHECK(bs.outcomes[0].id == "r0");
  CHECK(bs.outcomes[0].kind == "response");
  CHECK(bs.outcomes[0].t_ms == c0 + 150);
  REQUIRE(bs.received.size() == 2);
  CHECK(bs.received[1].env.id == "p1");
  CHECK(bs.received[1].t_ms == c0 + 50);
  auto landed = w.first(a, "routing quiescence: work landed after");
  CHECK(landed.t_ms == t0 + 200);
  CHECK(contains(landed.text, "work landed after 200 ms"));
  CHECK(w.first(a, "(stream-routed -> portal/pb (delivery p1)) terminated: landed").t_ms
        == t0 + 100);
  CHECK(w.first(a, "(delivery r0-response)) terminated: landed").t_ms == t0 + 200);
  CHECK(logs.count("did not land") == 0);
}

TEST_CASE_FIXTURE(fixture, "S13.02 an application hub's answer after the stopping signal holds the Active stop until it landed, with no leg of the stopping silo in flight when the signal came") {
  // Every frame between silos takes 50 ms. The request reaches A's hub through B's router
  // core, so A's own legs are none: only the hub's delivery in progress can hold A's stop.
  silo_world w{*this, 1, 50, 50};
  auto held = std::make_shared<std::vector<routing::hub_responder>>();
  silo_world_options o;
  o.hubs = {{"node/Org/*", [held](caf::event_based_actor*, const routing::envelope&,
                                  routing::hub_responder r) { held->push_back(r); }}};
  auto a = w.add_silo("a", o).addr;
  auto pa = add_portal(*this, w, a, "portal/pa");
  caf::anon_send(pa, routing::ep_post_atom::value, make_delivery("warm", "node/Org/X"));
  run_for(1s);
  REQUIRE(held->size() == 1); // node/Org/X is active on A, the only silo
  held->front().done();
  held->clear();
  run();
  auto b = w.add_silo("b", o).addr;
  auto pb = add_portal(*this, w, b, "portal/pb");
  run_for(2s);
  caf::anon_send(pb, routing::ep_request_atom::value, make_delivery("r0", "node/Org/X"),
                 int64_t{30000});
  run_for(1s);
  REQUIRE(held->size() == 1); // r0 is in progress at A's hub
  CHECK(gauge_count(*this, w, a) == 1); // the hub's slot; no leg of A
  CHECK(core_stats(*this, w, a).in_flight == 0);
  auto t0 = now_ms();
  auto c0 = clock_ms(*this);
  auto stopped = w.stop(a, true);
  run();
  CHECK(w.first(a, "holding silo stop for 1 route leg(s)").t_ms == t0);
  run_for(50ms);
  CHECK_FALSE(stopped->done);
  held->front().respond(routing::reply{"{\"ok\":1}"});
  REQUIRE(run_until([&] { return stopped->done; }, 60s));
  REQUIRE(stopped->ok());
  auto& bs = hub_of(pb);
  REQUIRE(bs.outcomes.size() == 1);
  CHECK(bs.outcomes[0].id == "r0");
  CHECK(bs.outcomes[0].kind == "response");
  // The hold let go only when the response's leg learned it landed: one 50 ms frame after
  // the response reached B's portal.
  auto landed = w.first(a, "routing quiescence: work landed after");
  REQUIRE(landed.t_ms >= 0);
  CHECK(landed.t_ms - t0 == (bs.outcomes[0].t_ms - c0) + 50);
  CHECK(w.first(a, "(delivery r0-response)) terminated: landed").t_ms == landed.t_ms);
  CHECK(logs.count("did not land") == 0);
}

TEST_CASE_FIXTURE(fixture, "S13.01 a silo stopped gracefully under request traffic to its answering hubs: every request is answered, none by its deadline, and those that reached its hubs after the stopping signal are answered by activations on the other silo") {
  // Every frame between silos takes 10 ms: membership news of the stop takes time to
  // spread, so requests keep reaching A's hubs after the stopping signal.
  silo_world w{*this, 1, 10, 10};
  silo_world_options o;
  o.hubs_respond = true;
  auto a = w.add_silo("a", o).addr;
  // Eight answering node hubs live on A: activated while A is the only silo.
  constexpr int hubs = 8;
  auto pa = add_portal(*this, w, a, "portal/pa");
  for (int h = 1; h <= hubs; ++h)
    caf::anon_send(pa, routing::ep_post_atom::value,
                   make_delivery("warm" + std::to_string(h), "node/Org/H" + std::to_string(h)));
  run_for(1s);
  REQUIRE(fixture::state_of<test_hub_factory_state>(w.entry(a).hubs).built.size() == hubs);
  auto b = w.add_silo("b", o).addr;
  auto pb = add_portal(*this, w, b, "portal/pb");
  run_for(1s);
  // 400 requests from B's portal, one every 10 ms, round robin over the hubs; A is stopped
  // gracefully right before request 200.
  constexpr int total = 400;
  constexpr int before_stop = 200;
  std::shared_ptr<testing::reply<caf::ok_atom>> stopped;
  uint64_t a_activated = 0;
  for (int i = 0; i < total; ++i) {
    if (i == before_stop) {
      a_activated = fixture::state_of<cafmesh::detail::catalog_state>(w.at(a).catalog).stats.activated;
      stopped = w.stop(a, true);
      run();
    }
    caf::anon_send(pb, routing::ep_request_atom::value,
                   make_delivery("q" + std::to_string(i),
                                 "node/Org/H" + std::to_string(i % hubs + 1)),
                   int64_t{30000});
    run_for(10ms);
  }
  REQUIRE(run_until([&] { return hub_of(pb).outcomes.size() == total; }, 60s));
  REQUIRE(run_until([&] { return stopped->done; }, 60s));
  REQUIRE(stopped->ok());
  std::map<std::string, int> kinds;
  for (auto& out : hub_of(pb).outcomes)
    ++kinds[out.kind];
  CHECK(kinds["response"] == total);
  CHECK(kinds["deadline"] == 0);
  CHECK(kinds["nack"] == 0);
  // Who answered: A's hubs took exactly the requests sent before the stopping signal, B's
  // hubs every later one.
  auto on_a = received_on(w, a);
  auto on_b = received_on(w, b);
  int a_before = 0, a_after = 0, b_before = 0, b_after = 0;
  for (int i = 0; i < total; ++i) {
    auto id = "q" + std::to_string(i);
    bool early = i < before_stop;
    if (on_a.count(id) != 0)
      ++(early ? a_before : a_after);
    if (on_b.count(id) != 0)
      ++(early ? b_before : b_after);
  }
  CHECK(a_before == before_stop);
  CHECK(a_after == 0);
  CHECK(b_before == 0);
  CHECK(b_after == total - before_stop);
  // Each of A's hubs refused the first request that reached it after the signal, before
  // its application hub saw it; each was retried and answered on B.
  CHECK(logs.count("refused before its hub saw it: silo " + a.to_string() + " is leaving") == hubs);
  CHECK(fixture::state_of<test_hub_factory_state>(w.entry(b).hubs).built.size() == hubs);
  // B's placement heard A is leaving and passed over it for each of the eight new
  // activations, so no retry went back to A: A activated nothing after the signal.
  CHECK(fixture::state_of<cafmesh::detail::placement_state>(w.at(b).placement).stats.leaving_skipped == hubs);
  CHECK(fixture::state_of<cafmesh::detail::catalog_state>(w.at(a).catalog).stats.activated == a_activated);
}
