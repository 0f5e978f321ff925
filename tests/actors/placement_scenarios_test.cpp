#include <chrono>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/grain_call.hpp"
#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/placement_world.hpp"
#include "cafmesh/testing/sim_world.hpp"

using namespace std::chrono_literals;
using namespace cafmesh;
using namespace cafmesh::testing;

namespace {

struct sc_fixture : testing::fixture {
  caf::actor spawn_probe() { return track(sys.spawn(probe, static_cast<testing::fixture*>(this))); }
  void call(const caf::actor& p, const caf::actor& placement, const grain_id& g,
            caf::message payload, std::string tag, int32_t fwd = 0) {
    caf::anon_send(p, probe_ask_atom::value, placement, grain_call_msg(g, std::move(payload), fwd),
                   int64_t{3600000}, std::move(tag));
  }
  void ask(const caf::actor& p, const caf::actor& to, caf::message m, std::string tag) {
    caf::anon_send(p, probe_ask_atom::value, to, std::move(m), int64_t{3600000}, std::move(tag));
  }
  probe_state& probe_of(const caf::actor& p) { return state_of<probe_state>(p); }
  const probe_answer_rec* answer(const caf::actor& p, const std::string& tag) {
    for (auto& a : probe_of(p).answers)
      if (a.tag == tag)
        return &a;
    return nullptr;
  }
  bool has(const caf::actor& p, const std::string& tag) { return answer(p, tag) != nullptr; }
  bool answered(const caf::actor& p, size_t n) { return probe_of(p).answers.size() >= n; }
  static std::string served_by(const probe_answer_rec& a) {
    if (a.error || !a.reply.match_element<std::string>(0))
      return "<error: " + to_fault(a.error).render() + ">";
    return a.reply.get_as<std::string>(0);
  }
};

/// The silo `n` random picks of A's placement PRNG choose among `candidates`
/// (docs/behaviour/directory-and-placement.md#placement).
std::vector<silo_address> expected_picks(const silo_address& self, uint64_t seed,
                                         std::vector<silo_address> candidates, int n) {
  std::sort(candidates.begin(), candidates.end());
  std::mt19937_64 rng(seed ^ fnv1a64("placement/" + self.to_string()));
  std::vector<silo_address> out;
  for (int i = 0; i < n; ++i)
    out.push_back(candidates[rng() % candidates.size()]);
  return out;
}

} // namespace

// -- docs/scenarios.md placement and directory scenarios -------------------------------------

TEST_CASE_FIXTURE(sc_fixture, "S12.45 a stalled ring owner times a messagehub placement out after 30 s while routing/default on A and B sends zero lookups") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_silo("c").addr;
  auto hub = owned_by(w.active_set(), c, "messagehub");
  w.stall(c); // undetected: C stays Active in membership
  // Directory frames so far: the joins' hand-offs (docs/behaviour/directory-and-placement.md).
  auto dir0 = w.net_state().requests_by_component[component::directory];
  auto p = spawn_probe();
  auto t0 = now_ms();
  grain_id router{"routing", "default"};
  call(p, w.at(a).placement, router, echo_call(1), "route-a");
  call(p, w.at(b).placement, router, echo_call(2), "route-b");
  run();
  REQUIRE(has(p, "route-a"));
  REQUIRE(has(p, "route-b"));
  CHECK(answer(p, "route-a")->t_ms == t0);
  CHECK(answer(p, "route-b")->t_ms == t0);
  CHECK(served_by(*answer(p, "route-a")) == a.to_string());
  CHECK(served_by(*answer(p, "route-b")) == b.to_string());
  // Zero lookups sent: the null directory answered in-process, no partition was asked.
  for (auto s : {a, b}) {
    CHECK(w.placement_of(s).stats.lookups == 1);       // one attempt, answered in-process
    CHECK(w.placement_of(s).dir.lookups_sent() == 0);  // no request to any partition
    CHECK(w.catalog_of(s).dir.registers_sent() == 0);
  }
  CHECK(w.net_state().requests_by_component[component::directory] - dir0 == 0);
  // Positive control: the messagehub grain owned by C.
  call(p, w.at(a).placement, hub, echo_call(3), "hub");
  REQUIRE(run_until([&] { return has(p, "hub"); }));
  auto ans = answer(p, "hub");
  CHECK(ans->t_ms == t0 + 30000);
  auto f = to_fault(ans->error);
  CHECK(f.code == mesh_errc::placement_timeout);
  CHECK(f.text == "placement of " + hub.to_string() + " timed out after 30 s");
  // Lookups of 5 s each, retried until the 30 s budget ended: attempts at 0, 5, ..., 25 s.
  CHECK(w.placement_of(a).dir.lookups_sent() == 6);
  CHECK(w.net_state().requests_by_component[component::directory] - dir0 == 6);
  CHECK(w.placement_of(a).stats.timeouts == 1);
}

TEST_CASE_FIXTURE(sc_fixture, "S12.46 a silo without the bypass places routing/default with one ring lookup answered not_registered") {
  placement_world w{*this};
  world_silo_options old_build;
  old_build.bypass = false;
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b", old_build).addr;
  auto c = w.add_silo("c").addr;
  auto p = spawn_probe();
  grain_id router{"routing", "default"};
  auto owner = ring_owner(w.active_set(), router);
  auto dir0 = w.net_state().requests_by_component[component::directory];
  call(p, w.at(a).placement, router, echo_call(1), "a");
  call(p, w.at(b).placement, router, echo_call(2), "b");
  REQUIRE(run_until([&] { return answered(p, 2); }));
  CHECK_FALSE(answer(p, "a")->error);
  CHECK_FALSE(answer(p, "b")->error);
  CHECK(served_by(*answer(p, "a")) == a.to_string());
  CHECK(served_by(*answer(p, "b")) == b.to_string());
  CHECK(w.placement_of(a).dir.lookups_sent() == 0);
  CHECK(w.placement_of(b).dir.lookups_sent() == 1); // one ring lookup, not_registered
  CHECK(w.placement_of(b).stats.lookups == 1);
  CHECK(w.placement_of(b).stats.activations == 0);  // stateless: nothing to register
  CHECK(w.catalog_of(b).dir.registers_sent() == 0);
  CHECK(w.net_state().requests_by_component[component::directory] - dir0
        == (owner == b ? 0u : 1u));
  CHECK(logs.count("unknown directory") == 0);
  CHECK(logs.count("directory", log::level::warning) == 0);
  CHECK(logs.count("directory", log::level::error) == 0);
}

TEST_CASE_FIXTURE(sc_fixture, "S12.47 from a ShuttingDown silo stateless-worker and prefer-local placement pick a random Active compatible silo, with none no_compatible_silo") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_silo("c").addr;
  w.set_status(a, silo_status::shutting_down);
  auto picks = expected_picks(a, 1, {b, c}, 2);
  auto p = spawn_probe();
  call(p, w.at(a).placement, grain_id{"routing", "default"}, echo_call(1), "sw");
  REQUIRE(run_until([&] { return has(p, "sw"); }));
  call(p, w.at(a).placement, grain_id{"podhub", "portal/alice"}, echo_call(2), "pl");
  REQUIRE(run_until([&] { return has(p, "pl"); }));
  CHECK(served_by(*answer(p, "sw")) == picks[0].to_string());
  CHECK(served_by(*answer(p, "pl")) == picks[1].to_string());
  CHECK(w.catalog_of(a).stats.activated == 0);
  // With no Active compatible silo at all:
  w.set_status(b, silo_status::shutting_down);
  w.set_status(c, silo_status::shutting_down);
  call(p, w.at(a).placement, grain_id{"routing", "default"}, echo_call(3), "sw-none");
  call(p, w.at(a).placement, grain_id{"podhub", "portal/bob"}, echo_call(4), "pl-none");
  REQUIRE(run_until([&] { return has(p, "sw-none") && has(p, "pl-none"); }));
  auto list = a.to_string() + ", " + b.to_string() + ", " + c.to_string();
  auto f1 = to_fault(answer(p, "sw-none")->error);
  auto f2 = to_fault(answer(p, "pl-none")->error);
  CHECK(f1.code == mesh_errc::no_compatible_silo);
  CHECK(f2.code == mesh_errc::no_compatible_silo);
  CHECK(f1.text.rfind("no active silo is compatible with grain type", 0) == 0);
  CHECK(f1.text == "no active silo is compatible with grain type routing (interface version 1); "
                   "silos known with this type: [" + list + "]; start a silo that hosts "
                   "routing, or send again once one is Active");
  CHECK(f2.text == "no active silo is compatible with grain type podhub (interface version 1); "
                   "silos known with this type: [" + list + "]; start a silo that hosts "
                   "podhub, or send again once one is Active");
}

namespace {

/// 331 routing/default calls from `from` within 50 ms of virtual time.
void send_331(sc_fixture& fx, const caf::actor& p, const caf::actor& placement) {
  auto t0 = fx.now_ms();
  for (int i = 0; i < 331; ++i) {
    fx.run_to(t0 + i * 50 / 331);
    fx.call(p, placement, grain_id{"routing", "default"}, echo_call(i), "d" + std::to_string(i));
    fx.run();
  }
}

} // namespace

TEST_CASE_FIXTURE(sc_fixture, "placement: bypass off and the routing/default ring owner stalled, 331 calls within 50 ms all fail placement_timeout at the same instant 30 s after the item began (S12.50 without the pure client)") {
  placement_world w{*this};
  world_silo_options no_bypass;
  no_bypass.bypass = false;
  std::vector<silo_address> all;
  for (auto h : {"a", "b", "c"})
    all.push_back(w.add_silo(h, no_bypass).addr);
  grain_id router{"routing", "default"};
  auto owner = ring_owner(w.active_set(), router);
  silo_address from = all[0] == owner ? all[1] : all[0];
  w.stall(owner);
  auto p = spawn_probe();
  auto t0 = now_ms();
  send_331(*this, p, w.at(from).placement);
  REQUIRE(run_until([&] { return answered(p, 331); }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 331);
  size_t timeouts = 0;
  for (auto& x : ans) {
    CHECK(x.t_ms == t0 + 30000);
    if (to_fault(x.error).code == mesh_errc::placement_timeout)
      ++timeouts;
  }
  CHECK(timeouts == 331);
  CHECK(w.placement_of(from).stats.items_created == 1);
  CHECK(w.placement_of(from).stats.joined == 330);
}

TEST_CASE_FIXTURE(sc_fixture, "placement: with the bypass (default) and the routing/default ring owner stalled, none of 331 calls fails (S12.50 control)") {
  placement_world w{*this};
  std::vector<silo_address> all;
  for (auto h : {"a", "b", "c"})
    all.push_back(w.add_silo(h).addr);
  grain_id router{"routing", "default"};
  auto owner = ring_owner(w.active_set(), router);
  silo_address from = all[0] == owner ? all[1] : all[0];
  w.stall(owner);
  auto dir0 = w.net_state().requests_by_component[component::directory];
  auto p = spawn_probe();
  send_331(*this, p, w.at(from).placement);
  REQUIRE(run_until([&] { return answered(p, 331); }, 1000ms));
  size_t ok = 0;
  for (auto& x : probe_of(p).answers)
    if (!x.error && served_by(x) == from.to_string())
      ++ok;
  CHECK(ok == 331);
  CHECK(w.net_state().requests_by_component[component::directory] - dir0 == 0);
  CHECK(w.placement_of(from).stats.timeouts == 0);
}

// -- catalog --------------------------------------------------------------------------------------
// docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion; the catalog parts of S12.09

TEST_CASE_FIXTURE(sc_fixture, "catalog: an activation in a 40 s turn at deactivate-all is abandoned at 30 s with a warning") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto p = spawn_probe();
  grain_id g{"slow", "x"};
  call(p, w.at(a).placement, g, slow_call(40000), "turn");
  run();
  REQUIRE(w.catalog_of(a).activations.size() == 1);
  auto tag = w.catalog_of(a).activations.begin()->second.tag;
  ask(p, w.at(a).catalog, caf::make_message(ct_deact_all_atom::value), "deact");
  REQUIRE(run_until([&] { return answered(p, 2); }));
  CHECK(answer(p, "deact")->t_ms == 30000);
  CHECK_FALSE(answer(p, "deact")->error);
  auto turn = answer(p, "turn");
  REQUIRE(turn != nullptr);
  CHECK(turn->t_ms == 30000);
  // Its caller's own bound (30 s from leaving placement) ends at the same instant.
  CHECK(to_fault(turn->error).code == mesh_errc::response_timeout);
  auto warn = logs.find("abandoned", log::level::warning);
  REQUIRE(warn.size() == 1);
  CHECK(warn[0].t_ms == 30000);
  CHECK(warn[0].text.find(tag.to_string() + " of slow/x") != std::string::npos);
  CHECK(w.catalog_of(a).stats.abandoned == 1);
  CHECK(w.catalog_of(a).activations.empty());
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: turns that may interleave overlap, an exclusive turn waits for them and holds everything behind it") {
  // docs/behaviour/directory-and-placement.md#turns-and-interleaving: `slow` calls interleave,
  // `echo` calls are exclusive.
  world_silo_options opt;
  opt.registry = [](const silo_address& s) {
    auto r = test_registry(s);
    r->set_may_interleave("slow", [](const caf::message& m) {
      return m.match_element<caf::atom_value>(0)
             && m.get_as<caf::atom_value>(0) == pt_slow_atom::value;
    });
    return r;
  };
  placement_world w{*this};
  auto a = w.add_silo("a", opt).addr;
  auto p = spawn_probe();
  grain_id g{"slow", "il"};
  call(p, w.at(a).placement, g, slow_call(1000), "s1");
  run();
  call(p, w.at(a).placement, g, slow_call(1000), "s2");
  call(p, w.at(a).placement, g, echo_call(1), "e");
  call(p, w.at(a).placement, g, slow_call(1000), "s3");
  REQUIRE(run_until([&] { return answered(p, 4); }));
  // s1 and s2 run together; e starts once both ended; s3 waits behind e, then runs alone.
  CHECK(answer(p, "s1")->t_ms == 1000);
  CHECK(answer(p, "s2")->t_ms == 1000);
  CHECK(answer(p, "e")->t_ms == 1000);
  CHECK(answer(p, "s3")->t_ms == 2000);
  std::vector<std::string> order;
  for (auto& x : probe_of(p).answers)
    order.push_back(x.tag);
  CHECK(order == std::vector<std::string>{"s1", "s2", "e", "s3"});
  CHECK(served_by(*answer(p, "s3")) == a.to_string());
  CHECK(w.catalog_of(a).stats.turns == 4);
  CHECK(w.catalog_of(a).stats.activated == 1);
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: without an interleave predicate every turn waits for the one before it") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto p = spawn_probe();
  grain_id g{"slow", "ex"};
  call(p, w.at(a).placement, g, slow_call(1000), "s1");
  run();
  call(p, w.at(a).placement, g, slow_call(1000), "s2");
  call(p, w.at(a).placement, g, echo_call(1), "e");
  REQUIRE(run_until([&] { return answered(p, 3); }));
  CHECK(answer(p, "s1")->t_ms == 1000);
  CHECK(answer(p, "s2")->t_ms == 2000);
  CHECK(answer(p, "e")->t_ms == 2000);
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: a message queued to a deactivating activation is rerouted with forward count + 1 to a new activation on another Active silo") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto p = spawn_probe();
  grain_id g{"slow", "y"};
  call(p, w.at(a).placement, g, slow_call(2000), "turn");
  run();
  call(p, w.at(a).placement, g, echo_call(5), "queued"); // cache hit: queued behind the turn
  run();
  REQUIRE(w.catalog_of(a).activations.size() == 1);
  CHECK(w.catalog_of(a).activations.begin()->second.queue.size() == 1);
  w.set_status(a, silo_status::shutting_down);
  ask(p, w.at(a).catalog, caf::make_message(ct_deact_all_atom::value), "deact");
  run_to(1000);
  // Arriving while it deactivates (A's cache still names it): held as well.
  call(p, w.at(a).placement, g, echo_call(7), "late");
  REQUIRE(run_until([&] { return answered(p, 4); }));
  CHECK(served_by(*answer(p, "late")) == b.to_string());
  CHECK(answer(p, "late")->t_ms == 2000);
  CHECK(served_by(*answer(p, "turn")) == a.to_string());
  CHECK(answer(p, "turn")->t_ms == 2000);
  auto q = answer(p, "queued");
  CHECK(served_by(*q) == b.to_string());
  CHECK(q->t_ms == 2000);
  CHECK(q->reply.get_as<int>(1) == 10);
  CHECK(answer(p, "deact")->t_ms == 2000);
  CHECK(w.catalog_of(a).stats.rerouted == 2);
  CHECK(w.catalog_of(b).stats.activated == 1);
  CHECK(w.catalog_of(b).last_forward_count == 1);
  REQUIRE(static_cast<bool>(w.placement_of(a).cache.get(g)));
  CHECK(w.placement_of(a).cache.get(g)->silo == b);
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: a held message already forwarded twice is refused rejected") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto p = spawn_probe();
  grain_id g{"slow", "z"};
  call(p, w.at(a).placement, g, slow_call(2000), "turn");
  run();
  call(p, w.at(a).placement, g, echo_call(5), "twice", 2);
  run();
  w.set_status(a, silo_status::shutting_down);
  ask(p, w.at(a).catalog, caf::make_message(ct_deact_all_atom::value), "deact");
  REQUIRE(run_until([&] { return answered(p, 3); }));
  auto f = to_fault(answer(p, "twice")->error);
  CHECK(f.code == mesh_errc::rejected);
  CHECK(f.text == "forward count 3 exceeds placement.max_forward_count = 2 for slow/z");
  CHECK(answer(p, "twice")->t_ms == 2000);
  CHECK(w.catalog_of(b).stats.activated == 0);
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: a stateless worker activation deactivates without waiting while a busy one finishes its turn") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto p = spawn_probe();
  call(p, w.at(a).placement, grain_id{"routing", "default"}, echo_call(1), "route");
  call(p, w.at(a).placement, grain_id{"slow", "w"}, slow_call(10000), "turn");
  run();
  REQUIRE(has(p, "route"));
  REQUIRE(w.catalog_of(a).activations.size() == 2);
  ask(p, w.at(a).catalog, caf::make_message(ct_deact_all_atom::value), "deact");
  run();
  // At the same instant the stateless worker is gone; the busy one is still in its turn.
  CHECK(w.catalog_of(a).activations.size() == 1);
  CHECK(w.catalog_of(a).by_grain.count(grain_id{"routing", "default"}) == 0);
  CHECK(w.catalog_of(a).stats.deactivated == 1);
  REQUIRE(run_until([&] { return has(p, "deact"); }));
  CHECK(answer(p, "deact")->t_ms == 10000);
  CHECK(answer(p, "turn")->t_ms == 10000);
  CHECK(logs.count("abandoned") == 0);
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: a grain that fails to activate is refused activation_deactivated with recorded = yes and the recorded error") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto p = spawn_probe();
  grain_id g{"broken", "x"};
  call(p, w.at(a).placement, g, echo_call(1), "call");
  REQUIRE(run_until([&] { return has(p, "call"); }));
  auto f = to_fault(answer(p, "call")->error);
  CHECK(f.code == mesh_errc::activation_deactivated);
  CHECK(f.activation_error_recorded == tri_bool::yes);
  CHECK(f.text.find("constructor threw: bad config") != std::string::npos);
  CHECK(w.catalog_of(a).failures.at(g) == "constructor threw: bad config");
  // A message naming some activation of it: recorded = yes from the registry.
  ask(p, w.at(a).catalog,
      caf::make_message(ct_invoke_atom::value, g, activation_tag{0x1234abcd}, int32_t{0}, echo_call(2)),
      "direct");
  REQUIRE(run_until([&] { return has(p, "direct"); }));
  auto f2 = to_fault(answer(p, "direct")->error);
  CHECK(f2.code == mesh_errc::activation_deactivated);
  CHECK(f2.activation_error_recorded == tri_bool::yes);
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: a message for an activation no longer on the silo is refused activation_deactivated, recorded no, and the caller's cache entry is dropped") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto p = spawn_probe();
  grain_id g{"podhub", "portal/q"};
  call(p, w.at(a).placement, g, echo_call(1), "first");
  call(p, w.at(b).placement, g, echo_call(1), "from-b");
  REQUIRE(run_until([&] { return answered(p, 2); }));
  CHECK(served_by(*answer(p, "from-b")) == a.to_string());
  REQUIRE(static_cast<bool>(w.placement_of(b).cache.get(g)));
  auto tag = w.placement_of(b).cache.get(g)->tag;
  ask(p, w.at(a).catalog, caf::make_message(ct_deact_atom::value, tag), "deact");
  REQUIRE(run_until([&] { return has(p, "deact"); }));
  CHECK(!static_cast<bool>(w.placement_of(a).cache.get(g))); // told by its own catalog
  call(p, w.at(b).placement, g, echo_call(2), "stale");
  REQUIRE(run_until([&] { return has(p, "stale"); }));
  auto f = to_fault(answer(p, "stale")->error);
  CHECK(f.code == mesh_errc::activation_deactivated);
  CHECK(f.activation_error_recorded == tri_bool::no);
  CHECK(f.text == tag.to_string() + " of podhub/portal/q is not active on silo " + a.to_string());
  CHECK(!static_cast<bool>(w.placement_of(b).cache.get(g)));
  // A tag this silo never handed out: unknown.
  ask(p, w.at(a).catalog,
      caf::make_message(ct_invoke_atom::value, g, activation_tag{0x0badf00d}, int32_t{0}, echo_call(3)),
      "unknown");
  REQUIRE(run_until([&] { return has(p, "unknown"); }));
  CHECK(to_fault(answer(p, "unknown")->error).activation_error_recorded == tri_bool::unknown);
  // The next call re-resolves: a fresh activation (prefer-local from B).
  call(p, w.at(b).placement, g, echo_call(4), "again");
  REQUIRE(run_until([&] { return has(p, "again"); }));
  CHECK(served_by(*answer(p, "again")) == b.to_string());
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: a call refused for an activation that left removes the directory entry still naming it, and the next call activates afresh") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto p = spawn_probe();
  grain_id g{"podhub", "portal/stale"};
  call(p, w.at(a).placement, g, echo_call(1), "first");
  REQUIRE(run_until([&] { return has(p, "first"); }));
  REQUIRE(served_by(*answer(p, "first")) == a.to_string());
  auto owner = ring_owner(w.active_set(), g);
  ask(p, caf::actor_cast<caf::actor>(w.at(owner).partition),
      caf::make_message(dir_lookup_atom::value, g), "lookup-1");
  REQUIRE(run_until([&] { return has(p, "lookup-1"); }));
  auto tag = answer(p, "lookup-1")->reply.get_as<lookup_result>(0).address.tag;
  ask(p, w.at(a).catalog, caf::make_message(ct_deact_atom::value, tag), "deact");
  REQUIRE(run_until([&] { return has(p, "deact"); }));
  // The entry comes back, as a directory hand-off that raced the unregister leaves it.
  activation_address stale{g, a, tag};
  ask(p, caf::actor_cast<caf::actor>(w.at(owner).partition),
      caf::make_message(dir_register_atom::value, stale), "revive");
  REQUIRE(run_until([&] { return has(p, "revive"); }));
  REQUIRE(answer(p, "revive")->reply.get_as<activation_address>(0) == stale);
  call(p, w.at(b).placement, g, echo_call(2), "stale");
  REQUIRE(run_until([&] { return has(p, "stale"); }));
  CHECK(to_fault(answer(p, "stale")->error).code == mesh_errc::activation_deactivated);
  CHECK(w.catalog_of(a).stats.stale_unregistered == 1);
  ask(p, caf::actor_cast<caf::actor>(w.at(owner).partition),
      caf::make_message(dir_lookup_atom::value, g), "lookup-2");
  REQUIRE(run_until([&] { return has(p, "lookup-2"); }));
  CHECK_FALSE(answer(p, "lookup-2")->reply.get_as<lookup_result>(0).registered);
  call(p, w.at(b).placement, g, echo_call(3), "again");
  REQUIRE(run_until([&] { return has(p, "again"); }));
  CHECK(served_by(*answer(p, "again")) == b.to_string());
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: a silo that is not Active refuses new activations with silo_unavailable") {
  placement_world w{*this};
  world_silo_options joining;
  joining.activate = false;
  auto a = w.add_silo("a", joining).addr;
  auto p = spawn_probe();
  ask(p, w.at(a).catalog, caf::make_message(ct_activate_atom::value, grain_id{"podhub", "x"}), "act");
  ask(p, w.at(a).catalog,
      caf::make_message(ct_invoke_atom::value, grain_id{"routing", "default"}, activation_tag{},
                        int32_t{0}, echo_call(1)),
      "sw");
  REQUIRE(run_until([&] { return answered(p, 2); }));
  auto f = to_fault(answer(p, "act")->error);
  CHECK(f.code == mesh_errc::silo_unavailable);
  CHECK(f.text == "silo " + a.to_string() + " is not active, refusing to activate podhub/x");
  CHECK(to_fault(answer(p, "sw")->error).code == mesh_errc::silo_unavailable);
  CHECK(w.catalog_of(a).stats.activated == 0);
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: first-wins registration, the losing activation deactivates and both callers get the winner") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto p = spawn_probe();
  grain_id g{"messagehub", "Org/Acme"};
  ask(p, w.at(a).catalog, caf::make_message(ct_activate_atom::value, g), "a");
  ask(p, w.at(b).catalog, caf::make_message(ct_activate_atom::value, g), "b");
  REQUIRE(run_until([&] { return answered(p, 2); }));
  auto ra = answer(p, "a");
  auto rb = answer(p, "b");
  REQUIRE_FALSE(ra->error);
  REQUIRE_FALSE(rb->error);
  REQUIRE(ra->reply.match_elements<activation_address>());
  REQUIRE(rb->reply.match_elements<activation_address>());
  CHECK(ra->reply.get_as<activation_address>(0) == rb->reply.get_as<activation_address>(0));
  auto live = w.catalog_of(a).activations.size() + w.catalog_of(b).activations.size();
  CHECK(live == 1);
  CHECK(w.catalog_of(a).stats.deactivated + w.catalog_of(b).stats.deactivated == 1);
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: an idle activation deactivates after the idle time") {
  placement_world w{*this};
  world_silo_options opt;
  opt.idle_deactivation_ms = 60000;
  auto a = w.add_silo("a", opt).addr;
  auto p = spawn_probe();
  call(p, w.at(a).placement, grain_id{"podhub", "idle"}, echo_call(1), "c");
  run();
  REQUIRE(has(p, "c"));
  run_to(59999);
  CHECK(w.catalog_of(a).activations.size() == 1);
  run_to(60000);
  CHECK(w.catalog_of(a).activations.empty());
  CHECK(w.catalog_of(a).stats.deactivated == 1);
}

// -- placement: stop, response timeout ---------------------------------------------------

TEST_CASE_FIXTURE(sc_fixture, "placement: stop fails every waiting message and every later one with silo_unavailable") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  w.add_silo("b");
  auto c = w.add_silo("c").addr;
  auto hub = owned_by(w.active_set(), c, "messagehub");
  w.stall(c);
  auto p = spawn_probe();
  call(p, w.at(a).placement, hub, echo_call(1), "w1");
  call(p, w.at(a).placement, hub, echo_call(2), "w2");
  run_to(1000);
  ask(p, w.at(a).placement, caf::make_message(pl_stop_atom::value), "stop");
  REQUIRE(run_until([&] { return answered(p, 3); }));
  auto text = "silo " + a.to_string() + " is shutting down";
  for (auto tag : {"w1", "w2"}) {
    auto x = answer(p, tag);
    CHECK(x->t_ms == 1000);
    auto f = to_fault(x->error);
    CHECK(f.code == mesh_errc::silo_unavailable);
    CHECK(f.text == text);
  }
  call(p, w.at(a).placement, grain_id{"routing", "default"}, echo_call(3), "late");
  REQUIRE(run_until([&] { return has(p, "late"); }));
  CHECK(to_fault(answer(p, "late")->error).text == text);
}

TEST_CASE_FIXTURE(sc_fixture, "placement: a call that left placement times out response_timeout 30 s later") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto p = spawn_probe();
  run_to(500);
  call(p, w.at(a).placement, grain_id{"slow", "h"}, caf::make_message(pt_hold_atom::value), "hold");
  REQUIRE(run_until([&] { return has(p, "hold"); }));
  auto x = answer(p, "hold");
  CHECK(x->t_ms == 30500);
  auto f = to_fault(x->error);
  CHECK(f.code == mesh_errc::response_timeout);
  CHECK(f.text == "grain call to slow/h timed out after 30 s");
}

TEST_CASE_FIXTURE(sc_fixture, "placement: a caller's bound shortens a call's response bound, and a call with nothing left of it is not sent") {
  // docs/behaviour/routing.md#a-requests-remaining-time
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto p = spawn_probe();
  run_to(500);
  auto hold = caf::make_message(pt_hold_atom::value);
  ask(p, w.at(a).placement,
      caf::make_message(pl_call_atom::value, grain_id{"slow", "h"}, int32_t{0}, hold,
                        caf::timespan{std::chrono::milliseconds(2000)}),
      "bounded");
  REQUIRE(run_until([&] { return has(p, "bounded"); }));
  auto x = answer(p, "bounded");
  CHECK(x->t_ms == 2500);
  auto f = to_fault(x->error);
  CHECK(f.code == mesh_errc::response_timeout);
  CHECK(f.text == "grain call to slow/h timed out after 2 s");
  // A bound above the configured one leaves it as it is.
  ask(p, w.at(a).placement,
      caf::make_message(pl_call_atom::value, grain_id{"slow", "h2"}, int32_t{0}, hold,
                        caf::timespan{std::chrono::milliseconds(90000)}),
      "loose");
  REQUIRE(run_until([&] { return has(p, "loose"); }));
  CHECK(answer(p, "loose")->t_ms == 2500 + 30000);
  CHECK(to_fault(answer(p, "loose")->error).text == "grain call to slow/h2 timed out after 30 s");
  // Nothing left once the activation is known: the message never leaves placement.
  auto t0 = now_ms();
  ask(p, w.at(a).placement,
      caf::make_message(pl_call_atom::value, grain_id{"slow", "h"}, int32_t{0}, hold,
                        caf::timespan{1}),
      "spent");
  REQUIRE(run_until([&] { return has(p, "spent"); }));
  CHECK(answer(p, "spent")->t_ms == t0);
  auto g = to_fault(answer(p, "spent")->error);
  CHECK(g.code == mesh_errc::response_timeout);
  CHECK(g.text == "grain call to slow/h not sent: its caller's time ran out");
}

TEST_CASE_FIXTURE(sc_fixture, "placement: a departed silo fails the call departed_silo and drops the cached address") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto p = spawn_probe();
  grain_id g{"podhub", "portal/dep"};
  call(p, w.at(b).placement, g, echo_call(1), "on-b");
  REQUIRE(run_until([&] { return has(p, "on-b"); }));
  call(p, w.at(a).placement, g, echo_call(2), "from-a");
  REQUIRE(run_until([&] { return has(p, "from-a"); }));
  CHECK(served_by(*answer(p, "from-a")) == b.to_string());
  REQUIRE(static_cast<bool>(w.placement_of(a).cache.get(g)));
  w.kill(b);
  call(p, w.at(a).placement, g, echo_call(3), "dead");
  REQUIRE(run_until([&] { return has(p, "dead"); }));
  auto f = to_fault(answer(p, "dead")->error);
  CHECK(f.code == mesh_errc::departed_silo);
  CHECK(!static_cast<bool>(w.placement_of(a).cache.get(g)));
}

TEST_CASE_FIXTURE(sc_fixture, "placement: a silo with another interface version is no candidate and is listed as known with the type") {
  placement_world w{*this};
  world_silo_options v2;
  v2.registry = [](const silo_address& s) {
    auto r = std::make_shared<grain_registry>();
    r->add_single("messagehub", placement_strategy::random, echo_grain(s), 2);
    return r;
  };
  auto a = w.add_silo("a", v2).addr; // hosts messagehub v2 only
  world_silo_options none;
  none.registry = [](const silo_address& s) {
    auto r = std::make_shared<grain_registry>();
    r->add_single("messagehub", placement_strategy::random, echo_grain(s), 1);
    return r;
  };
  auto b = w.add_silo("b", none).addr;
  w.set_status(b, silo_status::shutting_down); // the only v1 silo is leaving
  auto p = spawn_probe();
  call(p, w.at(b).placement, grain_id{"messagehub", "Org/Acme"}, echo_call(1), "v1");
  REQUIRE(run_until([&] { return has(p, "v1"); }));
  auto f = to_fault(answer(p, "v1")->error);
  CHECK(f.code == mesh_errc::no_compatible_silo);
  CHECK(f.text == "no active silo is compatible with grain type messagehub (interface version 1); "
                  "silos known with this type: [" + a.to_string() + ", " + b.to_string()
                  + "]; start a silo that hosts messagehub, or send again once one is Active");
  CHECK(w.catalog_of(a).stats.activated == 0);
}

namespace {

struct caller_state {
  std::vector<caf::message> replies;
  std::vector<fault> faults;
  static inline const char* name = "test.caller";
};

caf::behavior grain_caller(caf::stateful_actor<caller_state>* self, caf::actor placement) {
  grain_call(self, placement, grain_id{"messagehub", "Org/Call"}, echo_call(20))
    .then([=](const std::string& silo, int x) { self->state.replies.push_back(caf::make_message(silo, x)); },
          [=](caf::error& e) { self->state.faults.push_back(to_fault(e)); });
  grain_call(self, placement, grain_id{"nothere", "x"}, echo_call(1))
    .then([=](const std::string& silo, int x) { self->state.replies.push_back(caf::make_message(silo, x)); },
          [=](caf::error& e) { self->state.faults.push_back(to_fault(e)); });
  return {[](pt_done_atom) {}};
}

} // namespace

TEST_CASE_FIXTURE(sc_fixture, "grain call: any actor of a silo calls a grain through its placement service and gets the reply or a fault") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto c = track(sys.spawn(grain_caller, w.at(a).placement));
  REQUIRE(run_until([&] {
    auto& st = state_of<caller_state>(c);
    return st.replies.size() + st.faults.size() == 2;
  }));
  auto& st = state_of<caller_state>(c);
  REQUIRE(st.replies.size() == 1);
  CHECK(st.replies[0].get_as<std::string>(0) == a.to_string());
  CHECK(st.replies[0].get_as<int>(1) == 40);
  REQUIRE(st.faults.size() == 1);
  CHECK(st.faults[0].code == mesh_errc::no_compatible_silo);
  CHECK(st.faults[0].text == "no active silo is compatible with grain type nothere (interface version ?); "
                             "silos known with this type: []; start a silo that hosts nothere, "
                             "or send again once one is Active");
}

TEST_CASE_FIXTURE(sc_fixture, "placement: a burst of stateless-worker calls at one instant stays on the Active local silo, queued at its local limit, never spilled to a stalled peer") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  w.add_silo("b");
  auto c = w.add_silo("c").addr;
  w.stall(c); // undetected
  auto p = spawn_probe();
  auto t0 = now_ms();
  for (int i = 0; i < 20; ++i)
    call(p, w.at(a).placement, grain_id{"routing", "default"}, echo_call(i), "r" + std::to_string(i));
  REQUIRE(run_until([&] { return answered(p, 20); }));
  for (auto& x : probe_of(p).answers) {
    CHECK(x.t_ms == t0);
    CHECK(served_by(x) == a.to_string());
  }
  CHECK(w.catalog_of(a).stats.activated == 1); // local limit 1: one activation, turns queued
  CHECK(w.catalog_of(a).stats.turns == 20);
  // The null directory answered inside each call: no work item kept a deadline timer; the
  // clock holds only placement's one sweep timer (its calls are answered by id, SPEC §14 B6)
  // and the probe's 20 request timeouts (CAF 0.17 keeps request timeouts after the reply);
  // with a CAF request per call it would hold 40, with a deadline per item 60.
  CHECK(sched.clock().schedule().size() == 21);
}

TEST_CASE_FIXTURE(sc_fixture, "placement: the random strategy takes candidates ordered by rendered address at index next() mod n of the silo's seeded PRNG") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_silo("c").addr;
  auto picks = expected_picks(a, 1, {c, a, b}, 12);
  auto p = spawn_probe();
  for (int i = 0; i < 12; ++i) {
    auto tag = "h" + std::to_string(i);
    call(p, w.at(a).placement, grain_id{"messagehub", "Org/" + tag}, echo_call(i), tag);
    REQUIRE(run_until([&] { return has(p, tag); }));
    CHECK(served_by(*answer(p, tag)) == picks[static_cast<size_t>(i)].to_string());
  }
  std::set<silo_address> used(picks.begin(), picks.end());
  CHECK(used.size() == 3); // the sequence reaches every candidate, A included
}

TEST_CASE_FIXTURE(sc_fixture, "placement: two silos placing one grain at once on different silos end on the registration winner, the loser deactivates") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_silo("c").addr;
  auto pa = expected_picks(a, 1, {a, b, c}, 1)[0];
  auto pb = expected_picks(b, 1, {a, b, c}, 1)[0];
  REQUIRE(pa != pb); // the two placements activate on different silos
  auto p = spawn_probe();
  grain_id g{"messagehub", "Org/Race"};
  call(p, w.at(a).placement, g, echo_call(1), "from-a");
  call(p, w.at(b).placement, g, echo_call(2), "from-b");
  REQUIRE(run_until([&] { return answered(p, 2); }));
  auto sa = served_by(*answer(p, "from-a"));
  auto sb = served_by(*answer(p, "from-b"));
  CHECK(sa == sb);
  CHECK((sa == pa.to_string() || sa == pb.to_string()));
  size_t live = 0, gone = 0;
  for (auto s : {a, b, c}) {
    live += w.catalog_of(s).activations.size();
    gone += w.catalog_of(s).stats.deactivated;
  }
  CHECK(live == 1);
  CHECK(gone == 1);
  CHECK(w.placement_of(a).cache.get(g)->silo.to_string() == sa);
  CHECK(w.placement_of(b).cache.get(g)->silo.to_string() == sa);
}

TEST_CASE_FIXTURE(sc_fixture, "placement: with 1-5 ms link latency the placement timeout still fires 30 s after the item was created and calls elsewhere land") {
  sim_network_config net;
  net.seed = 7;
  net.link_latency_min_ms = 1;
  net.link_latency_max_ms = 5;
  placement_world w{*this, net};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_silo("c").addr;
  auto hub = owned_by(w.active_set(), c, "messagehub");
  auto ok = owned_by(w.active_set(), b, "podhub");
  w.stall(c);
  auto p = spawn_probe();
  run_to(now_ms() + 3);
  auto t0 = now_ms();
  call(p, w.at(a).placement, hub, echo_call(1), "hub");
  call(p, w.at(a).placement, ok, echo_call(2), "ok");
  REQUIRE(run_until([&] { return answered(p, 2); }));
  CHECK(to_fault(answer(p, "hub")->error).code == mesh_errc::placement_timeout);
  CHECK(answer(p, "hub")->t_ms == t0 + 30000);
  CHECK_FALSE(answer(p, "ok")->error);
  CHECK(served_by(*answer(p, "ok")) == a.to_string()); // prefer-local; its owner B was asked
  CHECK(answer(p, "ok")->t_ms > t0);
}

TEST_CASE_FIXTURE(sc_fixture, "catalog: an activation that ends on its own is removed, later calls re-resolve to a fresh activation") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto p = spawn_probe();
  grain_id g{"slow", "crash"};
  call(p, w.at(a).placement, g, echo_call(1), "first");
  REQUIRE(run_until([&] { return has(p, "first"); }));
  auto tag = w.catalog_of(a).activations.begin()->second.tag;
  call(p, w.at(a).placement, g, caf::make_message(pt_quit_atom::value), "quit");
  REQUIRE(run_until([&] { return has(p, "quit"); }));
  run(); // (the quitting handler still answered its turn, empty, before the actor ended)
  CHECK(w.catalog_of(a).activations.empty());
  REQUIRE(logs.count("exited on its own", log::level::warning) == 1);
  CHECK(logs.find("exited on its own")[0].text.find(tag.to_string()) != std::string::npos);
  CHECK(!static_cast<bool>(w.placement_of(a).cache.get(g)));
  call(p, w.at(a).placement, g, echo_call(2), "again");
  REQUIRE(run_until([&] { return has(p, "again"); }));
  CHECK(served_by(*answer(p, "again")) == a.to_string());
  CHECK(w.catalog_of(a).stats.activated == 2);
}
