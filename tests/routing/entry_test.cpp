// Routing entry layer: routing service (docs/behaviour/routing.md#the-entry, #monolith), routing
// grain (docs/behaviour/routing.md#the-routing-grain), node hub (docs/behaviour/routing.md#hubs),
// pod hub and claimer (docs/behaviour/routing.md#hubs), hub endpoint
// (docs/behaviour/routing.md#nacks) on simulated silos.

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/lifecycle/quiescence_participant.hpp"
#include "cafmesh/lifecycle/silo_lifecycle.hpp"
#include "cafmesh/routing/held_requests.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "cafmesh/testing/entry_world.hpp"
#include "cafmesh/routing/detail/hub_grains_state.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;

namespace {

/// Sends `xs...` from a scoped actor, runs, and returns the answer (or the error).
template <class T, class... Ts>
caf::expected<T> ask(testing::fixture& fx, const caf::actor& to, Ts&&... xs) {
  caf::scoped_actor self{fx.sys};
  self->send(to, std::forward<Ts>(xs)...);
  fx.run();
  caf::expected<T> out{caf::sec::request_timeout};
  self->receive([&](T& x) { out = std::move(x); }, [&](caf::error& e) { out = std::move(e); },
                caf::after(std::chrono::seconds(0)) >> [&] {});
  return out;
}

router_core_stats core_stats(testing::fixture& fx, const entry_silo& s) {
  auto r = ask<router_core_stats>(fx, caf::actor_cast<caf::actor>(s.core), rc_stats_atom::value);
  REQUIRE(r);
  return *r;
}

void signal_stopping(testing::fixture& fx, const entry_silo& s) {
  for (auto& h : {s.routing, caf::actor_cast<caf::actor>(s.core),
                  caf::actor_cast<caf::actor>(s.claimer)})
    REQUIRE(ask<caf::ok_atom>(fx, h, lifecycle::host_stopping_atom::value));
}

/// The hub endpoint a test hub factory built for `key` on any silo, or null.
caf::actor built_hub(entry_world& w, const std::string& key) {
  for (auto& s : w.silos) {
    auto& st = testing::fixture::state_of<test_hub_factory_state>(s.hubs);
    auto i = st.hubs.find(key);
    if (i != st.hubs.end())
      return i->second;
  }
  return caf::actor{};
}

/// The hub endpoint silo `s`'s test hub factory built for `key`, or null.
caf::actor hub_built_on(const entry_silo& s, const std::string& key) {
  auto& st = testing::fixture::state_of<test_hub_factory_state>(s.hubs);
  auto i = st.hubs.find(key);
  return i != st.hubs.end() ? i->second : caf::actor{};
}

template <class Handle>
size_t received_count(const Handle& h) {
  return h ? hub_of(h).received.size() : 0;
}

uint64_t placement_calls(entry_world& w) {
  uint64_t n = 0;
  for (auto& s : w.silos)
    n += w.placement_of(s.addr).stats.calls;
  return n;
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

} // namespace

TEST_CASE_FIXTURE(testing::fixture, "S12.35 host stopping NACKs co-hosted deliveries without placement, a stopping monolith builds no hub") {
  entry_world w(*this);
  auto& a = w.add_silo("a");
  w.add_silo("b");
  auto h = w.add_hub(a.routing, "portal/h1");
  // Before host_stopping: the delivery reaches the router core and lands.
  caf::anon_send(h, ep_post_atom::value, make_delivery("d1", "node/Org/Acme"));
  REQUIRE(run_until([&] { return received_count(built_hub(w, "Org/Acme")) == 1; }));
  CHECK(core_stats(*this, a).accepted == 1);
  CHECK(hub_of(h).outcomes.empty());
  // After host_stopping: NACK shutting_down straight to the sender, no placement.
  signal_stopping(*this, a);
  auto calls_before = placement_calls(w);
  auto frames_before = w.net_state().frames_sent;
  auto trace_before = w.net_state().trace.size();
  caf::anon_send(h, ep_post_atom::value, make_delivery("d2", "node/Org/Acme"));
  run();
  auto& hs = hub_of(h);
  REQUIRE(hs.outcomes.size() == 1);
  CHECK(hs.outcomes[0].id == "d2");
  CHECK(hs.outcomes[0].kind == "nack");
  CHECK(hs.outcomes[0].verdict == verdict::shutting_down);
  CHECK(contains(hs.outcomes[0].message, "Host is shutting down, cannot route to node/Org/Acme"));
  REQUIRE(hs.entry_answers.size() == 2);
  CHECK(hs.entry_answers[1].id == "d2");
  CHECK(is_failed_and_nacked(hs.entry_answers[1]));
  CHECK(placement_calls(w) == calls_before);
  CHECK(w.net_state().frames_sent == frames_before);
  CHECK(w.net_state().trace.size() == trace_before);
  CHECK(core_stats(*this, a).accepted == 1);
  CHECK(received_count(built_hub(w, "Org/Acme")) == 1);
  // Monolith: before shutting down a miss builds the hub; after, nothing is built.
  auto m = w.add_monolith();
  auto mh = w.add_hub(m.routing, "portal/m1");
  caf::anon_send(mh, ep_post_atom::value, make_delivery("m1", "node/Org/Acme"));
  run_for(10ms);
  auto& fst = state_of<test_hub_factory_state>(m.hubs);
  REQUIRE(fst.built.size() == 1);
  CHECK(received_count(fst.hubs["node/Org/Acme"]) == 1);
  REQUIRE(ask<caf::ok_atom>(*this, m.routing, lifecycle::host_stopping_atom::value));
  caf::anon_send(mh, ep_post_atom::value, make_delivery("m2", "node/Org/Missing"));
  run_for(10ms);
  CHECK(fst.built.size() == 1);
  CHECK(service_of(m.routing).stats.hubs_built == 1);
  auto& ms = hub_of(mh);
  REQUIRE(ms.outcomes.size() == 1);
  CHECK(ms.outcomes[0].id == "m2");
  CHECK(ms.outcomes[0].verdict == verdict::shutting_down);
  CHECK(contains(ms.outcomes[0].message, "Mesh is shutting down, cannot route to node/Org/Missing"));
  REQUIRE(ms.entry_answers.size() == 2);
  CHECK(is_failed_and_nacked(ms.entry_answers[1]));
}

TEST_CASE_FIXTURE(testing::fixture, "S12.44 silo_host deliveries skip routing/default, the role is fixed, stream frames keep order across a rejected attempt") {
  entry_world w(*this);
  entry_silo_options opt;
  opt.port_proxy = true;
  auto& a = w.add_silo("a", opt);
  auto& b = w.add_silo("b");
  auto h = w.add_hub(a.routing, "portal/owner");
  // (1) hubs' deliveries reach the router core; no placement of routing/default anywhere.
  for (int i = 0; i < 3; ++i)
    caf::anon_send(h, ep_post_atom::value, make_delivery("n" + std::to_string(i), "node/Org/Acme"));
  REQUIRE(run_until([&] { return received_count(built_hub(w, "Org/Acme")) == 3; }));
  CHECK(core_stats(*this, a).accepted == 3);
  CHECK(service_of(a.routing).stats.to_core == 3);
  // Every placement call on A came from the router core's grain deliveries; B placed nothing.
  CHECK(w.grains_of(a.addr).attempts == 3);
  CHECK(w.placement_of(a.addr).stats.calls == 3);
  CHECK(w.placement_of(b.addr).stats.calls == 0);
  for (auto& s : w.silos)
    CHECK(w.catalog_of(s.addr).by_grain.count(routing_grain_id()) == 0);
  // (2) the role cannot change after start: the role given at spawn is the one reported, and
  // a message shaped like a setter (the role query with a role name) is refused as
  // unexpected and changes nothing.
  auto role = ask<std::string>(*this, a.routing, rs_role_atom::value);
  REQUIRE(role);
  CHECK(*role == "silo_host");
  auto changed = ask<caf::ok_atom>(*this, a.routing, rs_role_atom::value,
                                   std::string{"pure_client"});
  REQUIRE(!changed);
  CHECK(changed.error() == caf::sec::unexpected_message);
  auto after = ask<std::string>(*this, a.routing, rs_role_atom::value);
  REQUIRE(after);
  CHECK(*after == "silo_host");
  // (3) v1, v2 of one stream; v1's first pod-hub attempt is rejected.
  auto sub = w.add_hub(b.routing, "portal/sub");
  caf::anon_send(b.claimer, pc_claim_atom::value, address::from("portal/sub"));
  run();
  REQUIRE(state_of<cafmesh::routing::detail::pod_hub_claimer_state>(b.claimer).attached_ok == 1);
  auto& px = state_of<port_proxy_state>(a.proxy);
  px.reject_first.insert("v1");
  px.events.clear();
  caf::anon_send(h, ep_post_atom::value, make_delivery("v1", "portal/sub", "stream-1"));
  caf::anon_send(h, ep_post_atom::value, make_delivery("v2", "portal/sub", "stream-1"));
  REQUIRE(run_until([&] { return received_count(sub) == 2; }));
  auto& rec = hub_of(sub).received;
  CHECK(rec[0].env.id == "v1");
  CHECK(rec[1].env.id == "v2");
  uint64_t v1_answer = 0, v2_first = 0;
  int64_t v1_first_t = -1, v1_second_t = -1;
  for (auto& e : px.events) {
    if (e.id == "v1" && e.what == "attempt") {
      if (v1_first_t < 0)
        v1_first_t = e.t_ms;
      else
        v1_second_t = e.t_ms;
    }
    if (e.id == "v1" && e.what == "answer")
      v1_answer = e.seq;
    if (e.id == "v2" && e.what == "attempt" && v2_first == 0)
      v2_first = e.seq;
  }
  REQUIRE(v1_answer > 0);
  REQUIRE(v2_first > 0);
  CHECK(v2_first > v1_answer); // v2's leg started only after v1 landed
  CHECK(v1_second_t - v1_first_t == 250); // router retry delay 0
  CHECK(px.attempts["v1"] == 2);
  CHECK(px.attempts["v2"] == 1);
  CHECK(hub_of(h).outcomes.empty());
}

TEST_CASE_FIXTURE(testing::fixture, "S12.49 pod hub re-claimed on a ring change and a pod hub placed without its local route answers not-here") {
  entry_world w(*this);
  auto& a = w.add_silo("a");
  auto& b = w.add_silo("b");
  // Pick a pod hub path whose ring owner changes when silo c joins the active set.
  auto c_addr = silo_address{"c", 11111, 3};
  std::string path;
  for (int i = 0; i < 200 && path.empty(); ++i) {
    auto p = "portal/u" + std::to_string(i) + "-alice"; // FNV-1a needs an early difference
    auto g = pod_hub_grain(p);
    if (ring_owner({a.addr, b.addr}, g) != ring_owner({a.addr, b.addr, c_addr}, g))
      path = p;
  }
  REQUIRE(!path.empty());
  auto owner = w.add_hub(a.routing, path);
  caf::anon_send(a.claimer, pc_claim_atom::value, address::from(path));
  run();
  auto& cl = state_of<cafmesh::routing::detail::pod_hub_claimer_state>(a.claimer);
  REQUIRE(cl.attached_ok == 1);
  entry_silo_options joining;
  joining.activate = false;
  auto& c = w.add_silo("c", joining);
  REQUIRE(c.addr == c_addr);
  auto attaches_before = cl.attaches;
  auto ok_before = cl.attached_ok;
  w.set_status(c.addr, silo_status::active); // one snapshot changing the ring
  run();
  CHECK(cl.attaches == attaches_before + 1);
  CHECK(cl.attached_ok == ok_before + 1);
  // A delivery from B afterwards lands in A's process.
  auto bs = w.add_hub(b.routing, "portal/bsender");
  caf::anon_send(bs, ep_post_atom::value, make_delivery("x1", path));
  REQUIRE(run_until([&] { return received_count(owner) == 1; }, 20s));
  CHECK(hub_of(bs).outcomes.empty());
  // A pod hub activation placed on B without the local route.
  auto deact_before = w.catalog_of(b.addr).stats.deactivated;
  caf::anon_send(bs, ep_post_atom::value, make_delivery("x2", "portal/bob"));
  REQUIRE(run_until([&] { return hub_of(bs).outcomes.size() == 1; }, 20s));
  auto& o = hub_of(bs).outcomes[0];
  CHECK(o.id == "x2");
  CHECK(o.kind == "nack");
  CHECK(o.verdict == verdict::shutting_down);
  CHECK(o.target_unserved);
  CHECK(contains(o.message, "No silo serves hub 'portal/bob'"));
  CHECK(contains(o.message, b.addr.to_string()));
  CHECK(w.catalog_of(b.addr).by_grain.count(pod_hub_grain("portal/bob")) == 0);
  CHECK(w.catalog_of(b.addr).stats.deactivated == deact_before + 1);
  CHECK(w.catalog_of(a.addr).by_grain.count(pod_hub_grain("portal/bob")) == 0);
}

TEST_CASE_FIXTURE(testing::fixture, "entry: a pod hub's hand-over delegated to the routing service reaches the local route whole and is answered to the caller forwarded, stamped and without the payload, and with no local route goes back to the activation, which answers the caller") {
  entry_world w(*this);
  auto& a = w.add_silo("a");
  auto owner = w.add_hub(a.routing, "portal/owner");
  run();
  // Stands for the pod-hub activation: answers a delivery handed back itself.
  auto activation = sys.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](ph_no_route_atom, envelope& d) {
      d.properties["handed_back"] = "true";
      return d;
    }};
  });
  auto d = make_delivery("l1", "portal/owner");
  d.properties["trace"] = "\"t1\"";
  auto r = ask<envelope>(*this, a.routing, lr_land_atom::value, d, a.addr, activation_tag{0x2a},
                         activation);
  REQUIRE(r);
  CHECK(r->id == "l1");
  CHECK(r->state == delivery_state::forwarded);
  CHECK(r->payload_json.empty());
  CHECK(r->properties.count("trace") == 0);
  CHECK(routing::landing_of(*r) == a.addr);
  CHECK(r->properties["landed_activation"] == "\"0000002a\"");
  REQUIRE(hub_of(owner).received.size() == 1);
  CHECK(hub_of(owner).received[0].env.payload_json == d.payload_json);
  CHECK(hub_of(owner).received[0].env.properties["trace"] == "\"t1\"");
  // No landing silo (the activation passes none for a continuation) and tag 0: no stamp.
  r = ask<envelope>(*this, a.routing, lr_land_atom::value, make_delivery("l3", "portal/owner"),
                    silo_address{}, activation_tag{}, activation);
  REQUIRE(r);
  CHECK(r->state == delivery_state::forwarded);
  CHECK(r->properties.empty());
  CHECK(hub_of(owner).received.size() == 2);
  // No local route: back to the activation, whose answer reaches the caller.
  r = ask<envelope>(*this, a.routing, lr_land_atom::value, make_delivery("l2", "portal/none"),
                    a.addr, activation_tag{0x2a}, activation);
  REQUIRE(r);
  CHECK(r->id == "l2");
  CHECK(r->properties["handed_back"] == "true");
  CHECK(r->payload_json == "{\"n\":1}");
  CHECK(hub_of(owner).received.size() == 2);
  caf::anon_send_exit(activation, caf::exit_reason::user_shutdown);
}

TEST_CASE_FIXTURE(testing::fixture,
                  "S15.03 a claimed pod hub whose activation loses its directory registration is "
                  "claimed again within 10 ms, not at the next membership snapshot, and a post "
                  "from another silo then lands in its process") {
  entry_world w(*this);
  auto& a = w.add_silo("a");
  auto& b = w.add_silo("b");
  const std::string path = "portal/lost-claim";
  auto owner = w.add_hub(a.routing, path);
  caf::anon_send(a.claimer, pc_claim_atom::value, address::from(path));
  run();
  auto& cl = state_of<cafmesh::routing::detail::pod_hub_claimer_state>(a.claimer);
  REQUIRE(cl.attached_ok == 1);
  auto g = pod_hub_grain(path);
  auto& cat = w.catalog_of(a.addr);
  REQUIRE(cat.by_grain.count(g) == 1);
  REQUIRE(cat.by_grain.at(g).size() == 1);
  auto loser = activation_address{g, a.addr, activation_tag{cat.by_grain.at(g).front()}};
  auto attaches = cl.attaches;
  // What a directory partition tells the catalog when a hand-off kept another registration of
  // the grain (docs/behaviour/directory-and-placement.md#lookup-registration-cache): here, an
  // activation a retrying sender placed on B, which has no route to the hub.
  auto winner = activation_address{g, b.addr, activation_tag{0x5eed}};
  auto t0 = now_ms();
  caf::anon_send(a.catalog, dir_lost_atom::value, loser, winner);
  REQUIRE(run_until([&] { return cl.attached_ok == 2; }, 10s));
  CHECK(now_ms() - t0 <= 10);
  CHECK(cl.lost == 1);
  CHECK(cl.attaches == attaches + 1);
  REQUIRE(cat.by_grain.count(g) == 1);
  CHECK(cat.by_grain.at(g).front() != loser.tag.value);
  auto bs = w.add_hub(b.routing, "portal/lost-claim-sender");
  caf::anon_send(bs, ep_post_atom::value, make_delivery("y1", path));
  REQUIRE(run_until([&] { return received_count(owner) == 1; }, 20s));
  CHECK(hub_of(bs).outcomes.empty());
}

TEST_CASE_FIXTURE(testing::fixture, "S12.27 pure client retries no_compatible_silo until a silo is Active and lands without a NACK") {
  entry_world w(*this);
  entry_silo_options joining;
  joining.activate = false;
  auto& a = w.add_silo("a", joining);
  auto c = w.add_client("client");
  auto ch = w.add_hub(c.routing, "client/c1");
  auto t0 = now_ms();
  caf::anon_send(ch, ep_post_atom::value, make_delivery("c-1", "node/Org/Acme"));
  run_to(t0 + 1000);
  w.set_status(a.addr, silo_status::active);
  REQUIRE(run_until([&] { return received_count(built_hub(w, "Org/Acme")) == 1; }, 20s));
  run_for(10s);
  auto& att = service_of(c.routing).attempts_by_id["c-1"];
  REQUIRE(att.size() == 4);
  std::vector<int64_t> offs;
  for (auto t : att)
    offs.push_back(t - att[0]);
  CHECK(offs == std::vector<int64_t>{0, 200, 600, 1400});
  CHECK(service_of(c.routing).stats.client_accepted == 1);
  CHECK(service_of(c.routing).stats.client_failed == 0);
  CHECK(hub_of(ch).outcomes.empty());
  CHECK(hub_of(built_hub(w, "Org/Acme")).received[0].t_ms - att[0] >= 1400);
}

TEST_CASE_FIXTURE(testing::fixture, "pure client: attempts_by_id keeps the newest client.attempt_record_max delivery ids") {
  entry_world w(*this);
  w.add_silo("a");
  auto c = w.add_client("client", 104857600,
                        [](routing_service_options& o) { o.client.attempt_record_max = 2; });
  auto ch = w.add_hub(c.routing, "client/c1");
  size_t n = 0;
  for (auto id : {"c-1", "c-2", "c-3"}) {
    caf::anon_send(ch, ep_post_atom::value, make_delivery(id, "node/Org/Acme"));
    ++n;
    REQUIRE(run_until([&] { return received_count(built_hub(w, "Org/Acme")) == n; }, 20s));
  }
  auto& svc = service_of(c.routing);
  CHECK(svc.stats.client_attempts == 3);
  CHECK(svc.attempts_by_id.size() == 2);
  CHECK(svc.attempts_by_id.count("c-1") == 0);
  CHECK(svc.attempts_by_id["c-2"].size() == 1);
  CHECK(svc.attempts_by_id["c-3"].size() == 1);
  CHECK(svc.attempt_ids == std::deque<std::string>{"c-2", "c-3"});
}

TEST_CASE_FIXTURE(testing::fixture, "S12.25 pure client sends a response_timeout call once and a rejected call six times at 0 200 600 1400 3000 6200 ms") {
  {
    entry_world w(*this);
    entry_silo_options opt;
    opt.gateway_proxy = true;
    auto& a = w.add_silo("a", opt);
    state_of<gateway_proxy_state>(a.gateway).reject = 5;
    auto c = w.add_client("client");
    auto ch = w.add_hub(c.routing, "client/c1");
    caf::anon_send(ch, ep_post_atom::value, make_delivery("r-1", "node/Org/Acme"));
    REQUIRE(run_until([&] { return received_count(built_hub(w, "Org/Acme")) == 1; }, 20s));
    auto& calls = state_of<gateway_proxy_state>(a.gateway).calls_ms;
    REQUIRE(calls.size() == 6);
    std::vector<int64_t> offs;
    for (auto t : calls)
      offs.push_back(t - calls[0]);
    CHECK(offs == std::vector<int64_t>{0, 200, 600, 1400, 3000, 6200});
    CHECK(hub_of(ch).outcomes.empty());
  }
  {
    entry_world w(*this);
    entry_silo_options opt;
    opt.gateway_proxy = true;
    auto& a = w.add_silo("a", opt);
    state_of<gateway_proxy_state>(a.gateway).silent = true;
    auto c = w.add_client("client");
    auto ch = w.add_hub(c.routing, "client/c1");
    auto t0 = now_ms();
    caf::anon_send(ch, ep_post_atom::value, make_delivery("t-1", "node/Org/Acme"));
    REQUIRE(run_until([&] { return hub_of(ch).outcomes.size() == 1; }, 200s));
    run_for(60s);
    CHECK(state_of<gateway_proxy_state>(a.gateway).calls_ms.size() == 1);
    CHECK(service_of(c.routing).stats.client_attempts == 1);
    auto& o = hub_of(ch).outcomes[0];
    CHECK(o.kind == "nack");
    CHECK(o.verdict == verdict::failed);
    auto& att = service_of(c.routing).attempts_by_id["t-1"];
    REQUIRE(att.size() == 1);
    CHECK(o.t_ms - att[0] == 60000); // placement 30 s + response 30 s bound
    CHECK(now_ms() - t0 >= 60000);
    CHECK(hub_of(ch).outcomes.size() == 1);
  }
}

TEST_CASE_FIXTURE(testing::fixture, "entry: a pure client's request whose dispatch to its gateway never answers is NACKed failed before its requester's deadline") {
  // docs/behaviour/routing.md#a-requests-remaining-time: the dispatch itself is bounded by the
  // time its requester still waits (chaos seeds 634 and 708: the dispatch's frame was lost).
  entry_world w(*this);
  entry_silo_options opt;
  opt.gateway_proxy = true;
  auto& a = w.add_silo("a", opt);
  state_of<gateway_proxy_state>(a.gateway).silent = true;
  auto c = w.add_client("client");
  auto ch = w.add_hub(c.routing, "client/c1");
  auto t0 = now_ms();
  caf::anon_send(ch, ep_request_atom::value, make_delivery("q-1", "node/Org/Acme"),
                 int64_t{10000});
  // 10 s less the margin (a tenth, at most 1 s): the NACK is in before the deadline.
  REQUIRE(run_until([&] { return hub_of(ch).outcomes.size() == 1; }, 9500ms));
  CHECK(now_ms() - t0 == 9000);
  auto& o = hub_of(ch).outcomes[0];
  CHECK(o.id == "q-1");
  CHECK(o.kind == "nack");
  CHECK(o.verdict == verdict::failed);
  CHECK(o.message.find("did not answer: the call timed out after 9000 ms")
        != std::string::npos);
  CHECK(state_of<gateway_proxy_state>(a.gateway).calls_ms.size() == 1);
  CHECK(service_of(c.routing).stats.client_attempts == 1);
  // Its one outcome stays the only one: no deadline after it.
  run_for(5s);
  CHECK(hub_of(ch).outcomes.size() == 1);
}

TEST_CASE_FIXTURE(testing::fixture, "entry: node hub answers submitted while building and hands parked deliveries over in order") {
  entry_world w(*this);
  entry_silo_options opt;
  opt.port_proxy = true;
  opt.hub_build_delay_ms = 100;
  auto& a = w.add_silo("a", opt);
  auto h = w.add_hub(a.routing, "portal/h1");
  auto t0 = now_ms();
  for (int i = 1; i <= 3; ++i)
    caf::anon_send(h, ep_post_atom::value, make_delivery("d" + std::to_string(i), "node/Org/Acme"));
  REQUIRE(run_until([&] { return received_count(built_hub(w, "Org/Acme")) == 3; }, 5s));
  auto& rec = hub_of(built_hub(w, "Org/Acme")).received;
  CHECK(rec[0].env.id == "d1");
  CHECK(rec[1].env.id == "d2");
  CHECK(rec[2].env.id == "d3");
  // Parked while the hub builds (100 ms), then handed over together once it is ready.
  CHECK(rec[0].t_ms >= t0 + 100);
  CHECK(rec[2].t_ms == rec[0].t_ms);
  CHECK(now_ms() - t0 >= 100);
  auto& px = state_of<port_proxy_state>(a.proxy);
  int submitted = 0;
  for (auto& e : px.events)
    if (e.what == "answer:submitted" && e.t_ms - t0 < 100)
      ++submitted;
  CHECK(submitted == 3);
  run_for(1s);
  CHECK(hub_of(h).outcomes.empty());
  auto st = core_stats(*this, a);
  CHECK(st.landed == 3);
  CHECK(st.nacks_posted == 0);
}

TEST_CASE_FIXTURE(testing::fixture, "entry: node hub build failure NACKs every parked delivery unavailable") {
  entry_world w(*this);
  entry_silo_options opt;
  opt.hub_build_delay_ms = 100;
  auto& a = w.add_silo("a", opt);
  state_of<test_hub_factory_state>(a.hubs).fail.insert("Org/Bad");
  auto h = w.add_hub(a.routing, "portal/h1");
  caf::anon_send(h, ep_post_atom::value, make_delivery("b1", "node/Org/Bad"));
  caf::anon_send(h, ep_post_atom::value, make_delivery("b2", "node/Org/Bad"));
  REQUIRE(run_until([&] { return hub_of(h).outcomes.size() == 2; }, 5s));
  run_for(1s);
  auto& os = hub_of(h).outcomes;
  REQUIRE(os.size() == 2);
  for (auto& o : os) {
    CHECK(o.kind == "nack");
    CHECK(o.verdict == verdict::unavailable);
    CHECK(contains(o.message, "Hub node/Org/Bad could not be built"));
  }
  CHECK(os[0].id == "b1");
  CHECK(os[1].id == "b2");
}

TEST_CASE_FIXTURE(testing::fixture, "entry: a node hub whose hub was disposed refuses with the owner banner and leaves") {
  entry_world w(*this);
  auto& a = w.add_silo("a");
  auto h = w.add_hub(a.routing, "portal/h1");
  caf::anon_send(h, ep_post_atom::value, make_delivery("d1", "node/Org/Acme"));
  REQUIRE(run_until([&] { return received_count(built_hub(w, "Org/Acme")) == 1; }, 5s));
  auto g = node_hub_grain("Org/Acme");
  REQUIRE(w.catalog_of(a.addr).by_grain.count(g) == 1);
  auto tag = activation_tag{w.catalog_of(a.addr).by_grain[g].front()};
  caf::anon_send_exit(built_hub(w, "Org/Acme"), caf::exit_reason::user_shutdown);
  run();
  caf::anon_send(h, ep_post_atom::value, make_delivery("d2", "node/Org/Acme"));
  REQUIRE(run_until([&] { return hub_of(h).outcomes.size() == 1; }, 5s));
  auto& o = hub_of(h).outcomes[0];
  CHECK(o.id == "d2");
  CHECK(o.verdict == verdict::shutting_down);
  CHECK(contains(o.message, owner_refusal_text("node/Org/Acme", tag)));
  run();
  CHECK(w.catalog_of(a.addr).by_grain.count(g) == 0);
}

TEST_CASE_FIXTURE(testing::fixture, "entry: after the stopping signal with 5 legs in flight a co-hosted delivery is NACKed without placement and a pure client is refused silo_unavailable, re-homed and lands") {
  entry_world w(*this);
  entry_silo_options opt;
  opt.gateway_proxy = true;
  opt.port_proxy = true;
  auto& a = w.add_silo("a", opt);
  auto joining = opt;
  joining.activate = false;
  joining.port_proxy = false;
  auto& b = w.add_silo("b", joining);
  auto c = w.add_client("client");
  auto ch = w.add_hub(c.routing, "client/c1");
  // Warm-up: only A is Active, so the client homes on gateway A.
  caf::anon_send(ch, ep_post_atom::value, make_delivery("w1", "node/Org/Acme"));
  REQUIRE(run_until([&] { return received_count(built_hub(w, "Org/Acme")) == 1; }, 20s));
  CHECK(service_of(c.routing).gateway == a.addr);
  w.set_status(b.addr, silo_status::active);
  auto h = w.add_hub(a.routing, "portal/h1");
  // 5 legs in flight on A (their grain calls never answer).
  auto& px = state_of<port_proxy_state>(a.proxy);
  for (int i = 1; i <= 5; ++i) {
    auto id = "l" + std::to_string(i);
    px.hold.insert(id);
    caf::anon_send(h, ep_post_atom::value, make_delivery(id, "node/Org/L" + std::to_string(i)));
  }
  run();
  std::vector<uint64_t> samples;
  auto sample = [&] {
    auto n = ask<uint64_t>(*this, caf::actor_cast<caf::actor>(a.gauge), routing::q_count_atom::value);
    REQUIRE(n);
    samples.push_back(*n);
  };
  sample();
  CHECK(samples.back() == 5);
  signal_stopping(*this, a);
  sample();
  auto a_calls = w.placement_of(a.addr).stats.calls;
  auto a_gw = state_of<gateway_proxy_state>(a.gateway).calls_ms.size();
  // The co-hosted hub: NACK shutting_down, no placement on A.
  caf::anon_send(h, ep_post_atom::value, make_delivery("h2", "node/Org/Acme"));
  run();
  REQUIRE(hub_of(h).outcomes.size() == 1);
  CHECK(hub_of(h).outcomes[0].verdict == verdict::shutting_down);
  CHECK(w.placement_of(a.addr).stats.calls == a_calls);
  sample();
  // The pure client: refused by A's router core, re-sent through B, lands. A's node hub of
  // Org/Acme takes no new work once A is stopping and leaves (hub_grains.hpp "A stopping
  // silo's hub grains"), so the delivery lands on the node hub placed anew on B.
  auto refused_before = core_stats(*this, a).refused_stopping;
  caf::anon_send(ch, ep_post_atom::value, make_delivery("c2", "node/Org/Acme"));
  REQUIRE(run_until([&] { return received_count(hub_built_on(b, "Org/Acme")) == 1; }, 20s));
  CHECK(hub_of(hub_built_on(b, "Org/Acme")).received[0].env.id == "c2");
  CHECK(received_count(hub_built_on(a, "Org/Acme")) == 1); // w1 only
  CHECK(core_stats(*this, a).refused_stopping == refused_before + 1);
  CHECK(state_of<gateway_proxy_state>(a.gateway).calls_ms.size() == a_gw + 1);
  CHECK(state_of<gateway_proxy_state>(b.gateway).calls_ms.size() == 1);
  CHECK(service_of(c.routing).gateway == b.addr);
  auto& att = service_of(c.routing).attempts_by_id["c2"];
  REQUIRE(att.size() == 2);
  CHECK(att[1] - att[0] == 200);
  CHECK(core_stats(*this, b).accepted == 1);
  sample();
  run_for(10s);
  sample();
  CHECK(hub_of(ch).outcomes.empty());
  for (size_t i = 1; i < samples.size(); ++i)
    CHECK(samples[i] <= samples[i - 1]);
  CHECK(samples.back() == 5);
}

TEST_CASE_FIXTURE(testing::fixture, "entry: the hub endpoint passes one outcome per delivery id and drops duplicates with the debug line") {
  entry_world w(*this);
  auto& a = w.add_silo("a");
  auto h = w.add_hub(a.routing, "portal/h1");
  auto nack_for = [](const std::string& id, const std::string& nid) {
    envelope orig = make_delivery(id, "node/Org/Acme");
    orig.sender = address::from("portal/h1");
    auto f = make_delivery_failure(orig, "Delivery to 'node/Org/Acme' failed: test",
                                   verdict::shutting_down);
    return make_nack_envelope(f, nid, address::from("router/x"));
  };
  // One-way post NACKed twice (two transports): one outcome, one duplicate dropped.
  caf::anon_send(h, hb_in_atom::value, nack_for("p1", "n1"));
  caf::anon_send(h, hb_in_atom::value, nack_for("p1", "n2"));
  run();
  // A request answered, then a late NACK: only the response.
  caf::anon_send(h, ep_request_atom::value, make_delivery("q1", "node/Org/Acme"), int64_t{60000});
  run();
  envelope resp;
  resp.id = "q1-response";
  resp.sender = address::from("node/Org/Acme");
  resp.target = address::from("portal/h1");
  resp.request_id = std::string{"q1"};
  resp.payload_json = "{}";
  caf::anon_send(h, hb_in_atom::value, resp);
  caf::anon_send(h, hb_in_atom::value, nack_for("q1", "n3"));
  run_for(61s);
  auto& os = hub_of(h).outcomes;
  REQUIRE(os.size() == 2);
  CHECK(os[0].id == "p1");
  CHECK(os[0].kind == "nack");
  CHECK(os[1].id == "q1");
  CHECK(os[1].kind == "response");
  CHECK(hub_of(h).tracker.duplicates_dropped() == 2);
  CHECK(logs.count("duplicate outcome for delivery p1 dropped", log::level::debug) == 1);
  CHECK(logs.count("duplicate outcome for delivery q1 dropped", log::level::debug) == 1);
}

TEST_CASE_FIXTURE(testing::fixture, "S12.19 during A's graceful stop hold a co-hosted delivery is NACKed without placement and a pure client's is refused, re-homed and lands while A's gauge never rises") {
  entry_world w(*this);
  entry_silo_options opt;
  opt.gateway_proxy = true;
  opt.port_proxy = true;
  auto& a = w.add_silo("a", opt);
  auto joining = opt;
  joining.activate = false;
  joining.port_proxy = false;
  auto& b = w.add_silo("b", joining);
  auto c = w.add_client("client");
  auto ch = w.add_hub(c.routing, "client/c1");
  caf::anon_send(ch, ep_post_atom::value, make_delivery("w1", "node/Org/Acme"));
  REQUIRE(run_until([&] { return received_count(built_hub(w, "Org/Acme")) == 1; }, 20s));
  REQUIRE(service_of(c.routing).gateway == a.addr); // the client's gateway is A
  w.set_status(b.addr, silo_status::active);
  // Silo A's host: lifecycle subject with the quiescence participant at Active (20000).
  auto subject = track(
    lifecycle::spawn_silo_lifecycle(sys, {a.addr.to_string(), std::chrono::seconds(1)}));
  auto participant = track(lifecycle::spawn_quiescence_participant(sys, a.gauge, {}));
  REQUIRE(ask<caf::ok_atom>(*this, caf::actor_cast<caf::actor>(subject),
                            lifecycle::subscribe_atom::value, lifecycle::stage{20000},
                            std::string{"quiescence"}, participant));
  lifecycle::host_options ho;
  ho.silo_name = a.addr.to_string();
  ho.subject = subject;
  ho.budgets.shutdown_budget_ms = 60000; // the 30 s hold expires first
  ho.recipients = {caf::actor_cast<lifecycle::stopping_recipient_actor>(a.routing),
                   caf::actor_cast<lifecycle::stopping_recipient_actor>(a.core),
                   caf::actor_cast<lifecycle::stopping_recipient_actor>(a.claimer)};
  auto host = track(lifecycle::spawn_host(sys, ho));
  REQUIRE(ask<caf::ok_atom>(*this, caf::actor_cast<caf::actor>(host), lifecycle::host_start_atom::value));
  // 5 legs in flight on A.
  auto h = w.add_hub(a.routing, "portal/h1");
  auto& px = state_of<port_proxy_state>(a.proxy);
  for (int i = 1; i <= 5; ++i) {
    auto id = "l" + std::to_string(i);
    px.hold.insert(id);
    caf::anon_send(h, ep_post_atom::value, make_delivery(id, "node/Org/L" + std::to_string(i)));
  }
  run();
  std::vector<uint64_t> samples;
  auto sample = [&] {
    auto n = ask<uint64_t>(*this, caf::actor_cast<caf::actor>(a.gauge), routing::q_count_atom::value);
    REQUIRE(n);
    samples.push_back(*n);
  };
  sample();
  REQUIRE(samples.back() == 5);
  // Graceful stop: stopping signal, then the hold at Active.
  caf::anon_send(host, lifecycle::host_halt_atom::value, true);
  run_for(1s);
  sample();
  auto phase = ask<lifecycle::host_phase>(*this, caf::actor_cast<caf::actor>(host), lifecycle::host_state_atom::value);
  REQUIRE(phase);
  CHECK(*phase == lifecycle::host_phase::stopping_silo);
  auto a_calls = w.placement_of(a.addr).stats.calls;
  auto a_gw = state_of<gateway_proxy_state>(a.gateway).calls_ms.size();
  caf::anon_send(h, ep_post_atom::value, make_delivery("h2", "node/Org/Acme"));
  run();
  sample();
  REQUIRE(hub_of(h).outcomes.size() == 1);
  CHECK(hub_of(h).outcomes[0].id == "h2");
  CHECK(hub_of(h).outcomes[0].verdict == verdict::shutting_down);
  CHECK(contains(hub_of(h).outcomes[0].message, "Host is shutting down, cannot route to node/Org/Acme"));
  CHECK(w.placement_of(a.addr).stats.calls == a_calls);
  // A's node hub of Org/Acme takes no new work once A is stopping and leaves
  // (hub_grains.hpp "A stopping silo's hub grains"): c2 lands on the one placed anew on B.
  caf::anon_send(ch, ep_post_atom::value, make_delivery("c2", "node/Org/Acme"));
  REQUIRE(run_until([&] { return received_count(hub_built_on(b, "Org/Acme")) == 1; }, 20s));
  sample();
  CHECK(core_stats(*this, a).refused_stopping == 1);
  CHECK(logs.count("is leaving; route elsewhere") >= 1);
  CHECK(state_of<gateway_proxy_state>(a.gateway).calls_ms.size() == a_gw + 1);
  CHECK(state_of<gateway_proxy_state>(b.gateway).calls_ms.size() == 1);
  CHECK(service_of(c.routing).gateway == b.addr);
  CHECK(core_stats(*this, b).accepted == 1);
  CHECK(hub_of(hub_built_on(b, "Org/Acme")).received[0].env.id == "c2");
  CHECK(received_count(hub_built_on(a, "Org/Acme")) == 1); // w1 only
  run_for(5s);
  sample();
  CHECK(hub_of(ch).outcomes.empty());
  for (size_t i = 1; i < samples.size(); ++i)
    CHECK(samples[i] <= samples[i - 1]);
  // The hold ends at its 30 s budget (the 5 legs never land) and the stop completes.
  REQUIRE(run_until([&] {
    auto p = ask<lifecycle::host_phase>(*this, caf::actor_cast<caf::actor>(host), lifecycle::host_state_atom::value);
    return p && *p == lifecycle::host_phase::torn_down;
  }, 60s));
  CHECK(logs.count("5 route leg(s) did not land") == 1);
}

TEST_CASE_FIXTURE(testing::fixture, "entry: a pure client refuses a payload at the grain-call limit with one NACK rejected and dispatches one below it") {
  entry_world w(*this);
  w.add_silo("a");
  auto c = w.add_client("client", 1000);
  auto ch = w.add_hub(c.routing, "client/c1");
  auto big = make_delivery("s1", "node/Org/Acme");
  big.payload_json = std::string(1000, 'x');
  auto small = make_delivery("s2", "node/Org/Acme");
  small.payload_json = std::string(999, 'x');
  caf::anon_send(ch, ep_post_atom::value, big);
  caf::anon_send(ch, ep_post_atom::value, small);
  REQUIRE(run_until([&] { return received_count(built_hub(w, "Org/Acme")) == 1; }, 20s));
  run_for(1s);
  auto& hs = hub_of(ch);
  REQUIRE(hs.outcomes.size() == 1);
  CHECK(hs.outcomes[0].id == "s1");
  CHECK(hs.outcomes[0].verdict == verdict::rejected);
  CHECK(is_failed_and_nacked(hs.entry_answers[0]));
  CHECK(hub_of(built_hub(w, "Org/Acme")).received[0].env.id == "s2");
  CHECK(service_of(c.routing).stats.size_refused == 1);
  CHECK(service_of(c.routing).stats.client_attempts == 1);
  CHECK(logs.count("1,000", log::level::error) == 1);
}

TEST_CASE_FIXTURE(testing::fixture, "entry: a node hub is exempt from idle collection while building and collected once its hub is ready") {
  entry_world w(*this);
  entry_silo_options opt;
  opt.hub_build_delay_ms = 500;
  opt.idle_deactivation_ms = 100;
  auto& a = w.add_silo("a", opt);
  auto h = w.add_hub(a.routing, "portal/h1");
  auto t0 = now_ms();
  caf::anon_send(h, ep_post_atom::value, make_delivery("d1", "node/Org/Acme"));
  run_to(t0 + 450);
  auto g = node_hub_grain("Org/Acme");
  CHECK(w.catalog_of(a.addr).by_grain.count(g) == 1); // idle for 450 ms, still there
  REQUIRE(run_until([&] { return received_count(built_hub(w, "Org/Acme")) == 1; }, 5s));
  CHECK(hub_of(built_hub(w, "Org/Acme")).received[0].t_ms >= t0 + 500); // once the hub is built
  run_to(t0 + 2000);
  CHECK(hub_of(h).outcomes.empty());
  CHECK(w.catalog_of(a.addr).by_grain.count(g) == 0); // unpinned: collected when idle
}

TEST_CASE_FIXTURE(testing::fixture, "pod hub claim: a claim refused for want of a local route deactivates the activation and is retried under the attach policy until the route exists") {
  entry_world w(*this);
  auto& a = w.add_silo("a");
  w.add_silo("b");
  // A claims portal/late before its hub is registered: the activation placed on A answers
  // false. It must not stay behind (pinned or not) to refuse the next claim, and the claim
  // must not wait for a membership snapshot that may never come.
  auto t0 = now_ms();
  caf::anon_send(a.claimer, pc_claim_atom::value, address::from("portal/late"));
  run_for(1000ms);
  auto& cl = state_of<cafmesh::routing::detail::pod_hub_claimer_state>(a.claimer);
  CHECK(cl.attached_ok == 0);
  CHECK(w.catalog_of(a.addr).by_grain.count(pod_hub_grain("portal/late")) == 0);
  // Attempts at 0, 250 and 750 ms (attach policy: min(250·2ⁿ, 4,000) ms).
  CHECK(cl.attaches == 3);
  // Three refusals: the first at info (a route registered a moment late is expected while a
  // process starts), the two on retry at warning.
  CHECK(logs.count("pod hub claim of portal/late refused", log::level::info) == 1);
  CHECK(logs.count("pod hub claim of portal/late refused", log::level::warning) == 2);
  // The hub registers at t0 + 1 s; the retry at 1,750 ms lands it, and nothing more is sent.
  auto hub = w.add_hub(a.routing, "portal/late");
  CHECK(now_ms() - t0 == 1000);
  run_for(2000ms);
  CHECK(cl.attaches == 4);
  CHECK(cl.attached_ok == 1);
  CHECK(w.catalog_of(a.addr).by_grain.count(pod_hub_grain("portal/late")) == 1);
  CHECK(logs.count("pod hub claim of portal/late gave up", log::level::error) == 0);
  run_for(10000ms);
  CHECK(cl.attaches == 4);
  CHECK(hub);
}

TEST_CASE_FIXTURE(testing::fixture, "pod hub claim: a claim whose route never comes gives up after the attach policy's 5 retries at 0, 250, 750, 1,750, 3,750 and 7,750 ms") {
  entry_world w(*this);
  auto& a = w.add_silo("a");
  w.add_silo("b");
  caf::anon_send(a.claimer, pc_claim_atom::value, address::from("portal/never"));
  run_for(20000ms);
  auto& cl = state_of<cafmesh::routing::detail::pod_hub_claimer_state>(a.claimer);
  CHECK(cl.attaches == 6);
  CHECK(cl.attached_ok == 0);
  CHECK(logs.count("pod hub claim of portal/never refused", log::level::info) == 1);
  CHECK(logs.count("pod hub claim of portal/never refused", log::level::warning) == 5);
  auto gave_up = logs.find("pod hub claim of portal/never gave up", log::level::error);
  REQUIRE(gave_up.size() == 1);
  CHECK(w.catalog_of(a.addr).by_grain.count(pod_hub_grain("portal/never")) == 0);
}

namespace {

/// What the scripted placement of the claim tests below saw: each claim attempt's virtual ms.
struct scripted_placement_state {
  std::vector<int64_t> attempts_ms;
  static inline const char* name = "test.scripted_placement";
};

/// A placement service for one claimer: its first `failures` attach calls fail with
/// activation_deactivated "{tag} of {g} is not active on silo {on}" (the directory named an
/// activation on silo `on` that had left), later ones answer true.
caf::behavior scripted_placement(caf::stateful_actor<scripted_placement_state>* self,
                                 testing::fixture* fx, silo_address on, size_t failures) {
  return {
    [=](pl_inval_atom, const grain_id&) {},
    [=](pl_call_atom, const grain_id& g, int32_t, const caf::message&) -> caf::result<bool> {
      auto& xs = self->state.attempts_ms;
      xs.push_back(fx->now_ms());
      if (xs.size() > failures)
        return true;
      fault f{mesh_errc::activation_deactivated,
              "activation #1 of " + g.to_string() + " is not active on silo " + on.to_string()};
      f.activation_error_recorded = tri_bool::unknown;
      f.silo = on;
      return to_error(f);
    },
  };
}

/// Runs one claim of `portal/moved` by a claimer on silo a against a scripted placement;
/// answers the attempts' virtual ms relative to the claim, space-separated.
std::string claim_attempts(testing::fixture& fx, const silo_address& answered_on,
                                    size_t failures, int64_t run_ms) {
  auto slots = std::make_shared<silo_routing_slots>();
  slots->silo = silo_address{"a", 11111, 1};
  auto placement = fx.track(fx.sys.spawn(scripted_placement, &fx, answered_on, failures));
  auto claimer = fx.track(spawn_pod_hub_claimer(fx.sys, placement, caf::actor{},
                                                config::attach_section{}, "a", slots));
  auto t0 = fx.now_ms();
  caf::anon_send(claimer, pc_claim_atom::value, address::from("portal/moved"));
  fx.run_for(std::chrono::milliseconds(run_ms));
  std::string out;
  for (auto t : fx.state_of<scripted_placement_state>(placement).attempts_ms)
    out += (out.empty() ? "" : " ") + std::to_string(t - t0);
  return out;
}

} // namespace

TEST_CASE_FIXTURE(testing::fixture, "pod hub claim: an attempt that reached the pod hub's activation on another silo after it had left is placed again at once, at most 3 times per assertion, the attach policy then applies") {
  // The activation in the way lived on silo c: the second attempt follows at once and lands.
  auto c = silo_address{"c", 11111, 3};
  auto once = claim_attempts(*this, c, 1, 10000);
  CHECK(once == "0 0");
  // Always in the way: 3 prompt re-placements, then 250 and 500 ms (attach policy).
  auto always = claim_attempts(*this, c, 5, 10000);
  CHECK(always == "0 0 0 0 250 750");
  // The claimer's own silo answered that the activation left: nothing moved elsewhere, so
  // the attach policy's backoff applies as for any failed claim.
  auto own = claim_attempts(*this, silo_address{"a", 11111, 1}, 1, 10000);
  CHECK(own == "0 250");
}

TEST_CASE_FIXTURE(testing::fixture, "entry: a co-hosted request whose grain call never answers is NACKed failed before its requester's deadline") {
  // docs/behaviour/routing.md#a-requests-remaining-time (a pure client's request: the chaos
  // test of hubs that never end their deliveries)
  entry_world w(*this);
  entry_silo_options opt;
  opt.port_proxy = true;
  auto& a = w.add_silo("a", opt);
  auto h = w.add_hub(a.routing, "portal/h1");
  auto& px = state_of<port_proxy_state>(a.proxy);
  px.hold.insert("co1");
  auto t0 = now_ms();
  caf::anon_send(h, ep_request_atom::value, make_delivery("co1", "node/Org/Acme"), int64_t{10000});
  // 10 s less the margin (a tenth, at most 1 s): the NACK is in before the deadline.
  REQUIRE(run_until([&] { return hub_of(h).outcomes.size() == 1; }, 9500ms));
  CHECK(now_ms() - t0 >= 9000);
  auto& o = hub_of(h).outcomes[0];
  CHECK(o.id == "co1");
  CHECK(o.kind == "nack");
  CHECK(o.verdict == verdict::failed);
  CHECK(o.message == "Delivery to 'node/Org/Acme' failed: grain call got no answer within 9 s");
  CHECK(core_stats(*this, a).nacked == 1);
  // Its one outcome stays the only one: no deadline after it.
  run_for(5s);
  CHECK(hub_of(h).outcomes.size() == 1);
}

TEST_CASE_FIXTURE(testing::fixture, "B6 a pure client's dispatches keep their bounds and texts under one call timer: a later dispatch with an earlier deadline ends first, each at its exact bound") {
  // SPEC §14 B6: no CAF request timeout per dispatch; the client's gateway calls are bounded
  // by one timer armed for the earliest deadline (docs/delivery-costs.md).
  entry_world w(*this);
  entry_silo_options opt;
  opt.gateway_proxy = true;
  auto& a = w.add_silo("a", opt);
  state_of<gateway_proxy_state>(a.gateway).silent = true;
  auto c = w.add_client("client");
  auto ch = w.add_hub(c.routing, "client/c1");
  auto t0 = now_ms();
  caf::anon_send(ch, ep_post_atom::value, make_delivery("p-1", "node/Org/Acme"));
  run();
  run_for(1s);
  caf::anon_send(ch, ep_request_atom::value, make_delivery("q-1", "node/Org/Acme"),
                 int64_t{10000});
  run();
  // The request's call is bounded by 9 s (10 s less the margin), the post's by 60 s
  // (placement 30 s + response 30 s): the request ends first, at t0 + 1 s + 9 s.
  REQUIRE(run_until([&] { return hub_of(ch).outcomes.size() == 1; }, 20s));
  CHECK(now_ms() - t0 == 10000);
  CHECK(hub_of(ch).outcomes[0].id == "q-1");
  CHECK(hub_of(ch).outcomes[0].message.find("did not answer: the call timed out after 9000 ms")
        != std::string::npos);
  REQUIRE(run_until([&] { return hub_of(ch).outcomes.size() == 2; }, 60s));
  CHECK(now_ms() - t0 == 60000);
  auto& o = hub_of(ch).outcomes[1];
  CHECK(o.id == "p-1");
  CHECK(o.kind == "nack");
  CHECK(o.verdict == verdict::failed);
  CHECK(o.message.find("did not answer: the call timed out after 60000 ms") != std::string::npos);
  CHECK(state_of<gateway_proxy_state>(a.gateway).calls_ms.size() == 2);
  CHECK(service_of(c.routing).stats.client_attempts == 2);
  CHECK(service_of(c.routing).call_deadlines.empty());
  run_for(60s);
  CHECK(hub_of(ch).outcomes.size() == 2);
}
