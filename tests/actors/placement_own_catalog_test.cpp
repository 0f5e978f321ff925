// Placement answers from its own silo's catalog when the directory cannot answer
// (docs/behaviour/directory-and-placement.md#own-catalog-when-the-directory-cannot-answer): a
// grain whose live activation is on this silo is found although the directory partition that
// owns its id sits on a killed silo not yet declared Dead (docs/testing.md#process-chaos, seed
// 8). A directory that answers still decides, a deactivating activation is no answer, and a
// lost entry is still repaired by the directory path.

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/placement_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;

namespace {

struct own_fixture : testing::fixture {
  caf::actor spawn_probe() { return track(sys.spawn(probe, static_cast<testing::fixture*>(this))); }
  void call(const caf::actor& p, const caf::actor& placement, const grain_id& g,
            caf::message payload, std::string tag) {
    caf::anon_send(p, probe_ask_atom::value, placement, grain_call_msg(g, std::move(payload)),
                   int64_t{3600000}, std::move(tag));
  }
  void ask(const caf::actor& p, const caf::actor& to, caf::message m, std::string tag) {
    caf::anon_send(p, probe_ask_atom::value, to, std::move(m), int64_t{3600000}, std::move(tag));
  }
  const probe_answer_rec* answer(const caf::actor& p, const std::string& tag) {
    for (auto& a : state_of<probe_state>(p).answers)
      if (a.tag == tag)
        return &a;
    return nullptr;
  }
  bool has(const caf::actor& p, const std::string& tag) { return answer(p, tag) != nullptr; }
  static std::string served_by(const probe_answer_rec& a) {
    if (a.error || !a.reply.match_element<std::string>(0))
      return "<error: " + to_fault(a.error).render() + ">";
    return a.reply.get_as<std::string>(0);
  }
  /// Hands silo `s` its catalog as the silo's RuntimeServices stage does
  /// (lifecycle/src/components/runtime_services.cpp): placement calls its activations there.
  void wire_catalog(placement_world& w, const silo_address& s) {
    caf::anon_send(w.at(s).placement, pl_catalog_atom::value, w.at(s).catalog);
    run();
  }
  /// The entries `owner`'s directory partition holds.
  std::vector<activation_address> entries(placement_world& w, const caf::actor& p,
                                          const silo_address& owner, const std::string& tag) {
    ask(p, caf::actor_cast<caf::actor>(w.at(owner).partition),
        caf::make_message(dir_entries_atom::value), tag);
    run();
    auto a = answer(p, tag);
    REQUIRE(a != nullptr);
    REQUIRE_FALSE(a->error);
    return a->reply.get_as<std::vector<activation_address>>(0);
  }
  /// Silo `a` (its catalog wired) calls a pod-hub grain whose directory entry `owner`'s
  /// partition holds, once: answers the grain and the one entry, A's activation.
  std::pair<grain_id, activation_address> first_call(placement_world& w, const caf::actor& p,
                                                     const silo_address& a,
                                                     const silo_address& owner) {
    wire_catalog(w, a);
    auto g = owned_by(w.active_set(), owner, "podhub");
    call(p, w.at(a).placement, g, echo_call(1), "first");
    REQUIRE(run_until([&] { return has(p, "first"); }));
    auto registered = entries(w, p, owner, "entries-1");
    REQUIRE(registered.size() == 1);
    REQUIRE(registered.front().silo == a);
    return {g, registered.front()};
  }
};

} // namespace

TEST_CASE_FIXTURE(own_fixture, "placement: an activation in the silo's own catalog is found while the directory partition that owns its id sits on a killed silo") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  w.add_silo("b");
  auto c = w.add_silo("c").addr;
  wire_catalog(w, a);
  auto p = spawn_probe();
  auto g = owned_by(w.active_set(), c, "podhub");
  call(p, w.at(a).placement, g, echo_call(1), "first");
  REQUIRE(run_until([&] { return has(p, "first"); }));
  REQUIRE(served_by(*answer(p, "first")) == a.to_string()); // prefer-local
  auto lookups = w.placement_of(a).dir.lookups_sent();
  // C is killed and not yet declared Dead: membership still lists it Active, so its
  // partition still owns g, and every request to it bounces.
  w.kill(c);
  REQUIRE(w.placement_of(a).view.is_active(c));
  // The cached address is gone, as the attach's bypass, a router retry or a view change
  // that moved g's owner drops it.
  caf::anon_send(w.at(a).placement, pl_inval_atom::value, g);
  run();
  REQUIRE_FALSE(static_cast<bool>(w.placement_of(a).cache.get(g)));
  auto t0 = now_ms();
  call(p, w.at(a).placement, g, echo_call(2), "after-kill");
  REQUIRE(run_until([&] { return has(p, "after-kill"); }));
  auto ans = answer(p, "after-kill");
  CHECK(served_by(*ans) == a.to_string());
  CHECK(ans->t_ms == t0);
  CHECK(ans->reply.get_as<int>(1) == 4);
  // One lookup, which bounced; the activation is the one that was there.
  CHECK(w.placement_of(a).dir.lookups_sent() == lookups + 1);
  CHECK(w.catalog_of(a).stats.activated == 1);
  CHECK(w.catalog_of(a).activations.size() == 1);
  REQUIRE(static_cast<bool>(w.placement_of(a).cache.get(g)));
  CHECK(w.placement_of(a).cache.get(g)->silo == a);
}

TEST_CASE_FIXTURE(own_fixture, "placement: a deactivating activation in the silo's own catalog is not answered, the call takes the directory and is rerouted once the activation has left") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  wire_catalog(w, a);
  auto p = spawn_probe();
  auto g = owned_by(w.active_set(), b, "slow");
  call(p, w.at(a).placement, g, slow_call(10000), "long"); // one turn open for 10 s
  run();
  REQUIRE(w.catalog_of(a).activations.size() == 1);
  auto first = w.catalog_of(a).activations.begin()->second.tag;
  ask(p, w.at(a).catalog, caf::make_message(ct_deact_atom::value, first), "deact");
  run();
  REQUIRE(w.catalog_of(a).activations.begin()->second.deactivating);
  caf::anon_send(w.at(a).placement, pl_inval_atom::value, g);
  run();
  auto lookups = w.placement_of(a).dir.lookups_sent();
  auto t0 = now_ms();
  call(p, w.at(a).placement, g, echo_call(3), "during");
  REQUIRE(run_until([&] { return has(p, "during"); }));
  auto ans = answer(p, "during");
  // The catalog did not offer the deactivating activation: placement looked g up, found the
  // entry still naming it, and the catalog held the message until the activation had left
  // at t0 + 10 s, then rerouted it (forward count 1) to a fresh activation, found by a second
  // lookup that missed.
  CHECK(served_by(*ans) == a.to_string());
  CHECK(ans->t_ms == t0 + 10000);
  CHECK(answer(p, "long")->t_ms == t0 + 10000);
  CHECK(w.placement_of(a).dir.lookups_sent() == lookups + 2);
  CHECK(w.catalog_of(a).stats.rerouted == 1);
  CHECK(w.catalog_of(a).stats.activated == 2);
  CHECK(w.catalog_of(a).last_forward_count == 1);
  REQUIRE(w.catalog_of(a).activations.size() == 1);
  CHECK(w.catalog_of(a).activations.begin()->second.tag != first);
}

TEST_CASE_FIXTURE(own_fixture, "placement: an activation of the silo whose directory entry was lost is registered again by the directory path, not answered from the catalog") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto p = spawn_probe();
  auto [g, mine] = first_call(w, p, a, b);
  // The entry is lost (as a hand-off that never arrived loses it), and the cache with it.
  ask(p, caf::actor_cast<caf::actor>(w.at(b).partition),
      caf::make_message(dir_unregister_atom::value, mine), "lose");
  caf::anon_send(w.at(a).placement, pl_inval_atom::value, g);
  run();
  REQUIRE(entries(w, p, b, "entries-2").empty());
  auto lookups = w.placement_of(a).dir.lookups_sent();
  auto t0 = now_ms();
  call(p, w.at(a).placement, g, echo_call(2), "again");
  REQUIRE(run_until([&] { return has(p, "again"); }));
  CHECK(served_by(*answer(p, "again")) == a.to_string());
  CHECK(answer(p, "again")->t_ms == t0);
  CHECK(w.placement_of(a).dir.lookups_sent() == lookups + 1); // a miss: activate, register
  auto back = entries(w, p, b, "entries-3");
  REQUIRE(back.size() == 1);
  CHECK(back.front() == mine);
  CHECK(w.catalog_of(a).stats.activated == 1);
}

TEST_CASE_FIXTURE(own_fixture, "placement: a directory that answers decides, even when the silo's own catalog holds a live activation of the grain") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_silo("c").addr;
  auto p = spawn_probe();
  auto [g, mine] = first_call(w, p, a, c);
  // The entry now names an activation on B (as after a lost entry that B registered first);
  // A's activation still lives.
  ask(p, caf::actor_cast<caf::actor>(w.at(c).partition),
      caf::make_message(dir_unregister_atom::value, mine), "lose");
  run();
  ask(p, w.at(b).catalog, caf::make_message(ct_activate_atom::value, g), "on-b");
  REQUIRE(run_until([&] { return has(p, "on-b"); }));
  auto theirs = answer(p, "on-b")->reply.get_as<activation_address>(0);
  REQUIRE(theirs.silo == b);
  REQUIRE(w.catalog_of(a).activations.size() == 1);
  caf::anon_send(w.at(a).placement, pl_inval_atom::value, g);
  run();
  call(p, w.at(a).placement, g, echo_call(2), "decided");
  REQUIRE(run_until([&] { return has(p, "decided"); }));
  CHECK(served_by(*answer(p, "decided")) == b.to_string());
  REQUIRE(static_cast<bool>(w.placement_of(a).cache.get(g)));
  CHECK(*w.placement_of(a).cache.get(g) == theirs);
}
