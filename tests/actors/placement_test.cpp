#include <chrono>
#include <map>
#include <set>
#include <string>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/placement_world.hpp"
#include "cafmesh/testing/sim_world.hpp"

using namespace std::chrono_literals;
using namespace cafmesh;
using namespace cafmesh::testing;

namespace {

struct pl_fixture : testing::fixture {
  caf::actor spawn_probe() { return track(sys.spawn(probe, static_cast<testing::fixture*>(this))); }
  void call(const caf::actor& p, const caf::actor& placement, const grain_id& g,
            caf::message payload, std::string tag, int32_t fwd = 0) {
    caf::anon_send(p, probe_ask_atom::value, placement, grain_call_msg(g, std::move(payload), fwd),
                   int64_t{3600000}, std::move(tag));
  }
  probe_state& probe_of(const caf::actor& p) { return state_of<probe_state>(p); }
  /// The answer tagged `tag`, or nullptr.
  const probe_answer_rec* answer(const caf::actor& p, const std::string& tag) {
    for (auto& a : probe_of(p).answers)
      if (a.tag == tag)
        return &a;
    return nullptr;
  }
  bool answered(const caf::actor& p, size_t n) { return probe_of(p).answers.size() >= n; }
  /// The silo that served a successful echo answer.
  static std::string served_by(const probe_answer_rec& a) {
    if (a.error || !a.reply.match_element<std::string>(0))
      return "<error: " + to_fault(a.error).render() + ">";
    return a.reply.get_as<std::string>(0);
  }
};

} // namespace

TEST_CASE("grain registry: manifest lists every type with strategy and interface version") {
  grain_registry r;
  CHECK(r.add_single("messagehub", placement_strategy::random, {}));
  CHECK(r.add_stateless("routing", 1, {}));
  CHECK(r.add_single("podhub", placement_strategy::prefer_local, {}, 3));
  CHECK_FALSE(r.add_single("routing", placement_strategy::random, {}));
  CHECK_FALSE(r.add_single("x", placement_strategy::stateless_worker, {}));
  CHECK_FALSE(r.add_stateless("y", 0, {}));
  auto m = r.manifest();
  REQUIRE(m.size() == 3);
  CHECK(m[0] == grain_type_info{"messagehub", placement_strategy::random, 1});
  CHECK(m[1] == grain_type_info{"podhub", placement_strategy::prefer_local, 3});
  CHECK(m[2] == grain_type_info{"routing", placement_strategy::stateless_worker, 1});
  REQUIRE(r.find("routing") != nullptr);
  CHECK(r.find("routing")->kind == grain_kind::stateless_worker);
  CHECK(r.find("routing")->local_limit == 1);
  CHECK(r.find("messagehub")->kind == grain_kind::single_activation);
  CHECK(r.find("nope") == nullptr);
}

TEST_CASE_FIXTURE(pl_fixture, "placement: a single-activation call activates, registers with the ring owner and later calls hit the cache") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_silo("c").addr;
  auto p = spawn_probe();
  grain_id g{"podhub", "portal/alice"};
  call(p, w.at(a).placement, g, echo_call(21), "first");
  REQUIRE(run_until([&] { return answered(p, 1); }));
  auto first = answer(p, "first");
  REQUIRE(first != nullptr);
  CHECK_FALSE(first->error);
  CHECK(served_by(*first) == a.to_string()); // prefer-local, A is Active
  CHECK(first->reply.get_as<int>(1) == 42);
  auto owner = ring_owner(w.active_set(), g);
  caf::anon_send(p, probe_ask_atom::value,
                 caf::actor_cast<caf::actor>(w.at(owner).partition),
                 caf::make_message(dir_entries_atom::value), int64_t{1000}, std::string{"entries"});
  REQUIRE(run_until([&] { return answered(p, 2); }));
  auto ents = answer(p, "entries")->reply.get_as<std::vector<activation_address>>(0);
  REQUIRE(ents.size() == 1);
  CHECK(ents[0].grain == g);
  CHECK(ents[0].silo == a);
  CHECK(w.placement_of(a).stats.lookups == 1);
  CHECK(w.placement_of(a).dir.lookups_sent() == 1);
  CHECK(static_cast<bool>(w.placement_of(a).cache.get(g)));
  // A second call goes straight to the cached activation: no lookup, no new item.
  call(p, w.at(a).placement, g, echo_call(1), "second");
  REQUIRE(run_until([&] { return answered(p, 3); }));
  CHECK(served_by(*answer(p, "second")) == a.to_string());
  CHECK(w.placement_of(a).stats.lookups == 1);
  CHECK(w.placement_of(a).stats.cache_hits == 1);
  CHECK(w.catalog_of(a).stats.activated == 1);
  // From B: the lookup finds A's activation; no second activation anywhere.
  call(p, w.at(b).placement, g, echo_call(2), "from-b");
  REQUIRE(run_until([&] { return answered(p, 4); }));
  CHECK(served_by(*answer(p, "from-b")) == a.to_string());
  CHECK(w.catalog_of(b).stats.activated == 0);
  CHECK(w.catalog_of(c).stats.activated == 0);
}

TEST_CASE_FIXTURE(pl_fixture, "catalog: activation tags are 8 lower-case hex digits, unique within the silo") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto p = spawn_probe();
  for (int i = 0; i < 50; ++i)
    call(p, w.at(a).placement, grain_id{"podhub", "h" + std::to_string(i)}, echo_call(i),
         "c" + std::to_string(i));
  REQUIRE(run_until([&] { return answered(p, 50); }));
  auto& cat = w.catalog_of(a);
  REQUIRE(cat.activations.size() == 50);
  std::set<std::string> hexes;
  for (auto& kv : cat.activations) {
    auto h = kv.second.tag.hex();
    CHECK(h.size() == 8);
    CHECK(h.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(kv.second.tag.to_string() == "activation #" + h);
    hexes.insert(h);
  }
  CHECK(hexes.size() == 50);
}

TEST_CASE("placement and catalog configs take the documented defaults from mesh_config") {
  config::mesh_config m;
  silo_address s{"h", 1, 7};
  auto pc = make_placement_config(m, s);
  CHECK(pc.self == s);
  CHECK(pc.seed == 1);
  CHECK(pc.timeout_ms == 30000);
  CHECK(pc.worker_count == 16);
  CHECK(pc.max_forward_count == 2);
  CHECK(pc.lookup_attempt_timeout_ms == 5000);
  CHECK(pc.response_timeout_ms == 30000);
  CHECK(pc.stateless_worker_bypass);
  auto cc = make_catalog_config(m, s);
  CHECK(cc.self == s);
  CHECK(cc.deactivation_timeout_ms == 30000);
  CHECK(cc.activation_timeout_ms == 30000);
  CHECK(cc.max_forward_count == 2);
  CHECK(cc.lookup_attempt_timeout_ms == 5000);
  CHECK(cc.stateless_worker_bypass);
  m.directory.stateless_worker_bypass = false;
  m.placement.worker_count = 4;
  CHECK_FALSE(make_placement_config(m, s).stateless_worker_bypass);
  CHECK_FALSE(make_catalog_config(m, s).stateless_worker_bypass);
  CHECK(make_placement_config(m, s).worker_count == 4);
}

TEST_CASE("catalog config: idle collection is catalog.idle_deactivation_ms, off (0) by default") {
  config::mesh_config m;
  silo_address s{"h", 1, 7};
  CHECK(m.catalog.idle_deactivation_ms == 0);
  CHECK(make_catalog_config(m, s).idle_deactivation_ms == 0);
  m.catalog.idle_deactivation_ms = 900000;
  CHECK(make_catalog_config(m, s).idle_deactivation_ms == 900000);
  auto r = config::parse(
    R"({"mesh":{"process_role":"silo_host"},"catalog":{"idle_deactivation_ms":100}})");
  REQUIRE(r.ok);
  CHECK(make_catalog_config(r.value, s).idle_deactivation_ms == 100);
}

TEST_CASE_FIXTURE(pl_fixture, "placement: work items are spread over worker_count workers by fnv1a64(grain id) mod 16") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto c = w.add_silo("c").addr;
  w.stall(c);
  auto p = spawn_probe();
  std::vector<grain_id> ids;
  for (int i = 0; ids.size() < 8; ++i) {
    grain_id g{"messagehub", "w" + std::to_string(i)};
    if (ring_owner(w.active_set(), g) == c)
      ids.push_back(g);
  }
  for (auto& g : ids) {
    call(p, w.at(a).placement, g, echo_call(1), g.key);
    call(p, w.at(a).placement, g, echo_call(2), g.key + "-again");
  }
  run();
  auto& st = w.placement_of(a);
  REQUIRE(st.workers.size() == 16);
  size_t items = 0;
  for (size_t i = 0; i < 16; ++i)
    for (auto& kv : st.workers[i]) {
      ++items;
      CHECK(fnv1a64(kv.first.to_string()) % 16 == i);
      CHECK(kv.second.waiters.size() == 2); // one item per grain id, batching both calls
    }
  CHECK(items == 8);
  CHECK(st.stats.items_created == 8);
  CHECK(st.stats.joined == 8);
}

TEST_CASE_FIXTURE(pl_fixture, "catalog: an activation told it lost its registration deactivates (lost_registration) and a later call reaches the winner") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto p = spawn_probe();
  grain_id g{"podhub", "portal/bob"};
  call(p, w.at(a).placement, g, echo_call(1), "first");
  REQUIRE(run_until([&] { return answered(p, 1); }));
  REQUIRE(served_by(*answer(p, "first")) == a.to_string());
  auto& cat = w.catalog_of(a);
  REQUIRE(cat.activations.size() == 1);
  activation_address mine{g, a, cat.activations.begin()->second.tag};
  // The directory kept an activation on B instead (as after a hand-off collision): B's
  // activation is registered at the owner, and A's catalog is told its own one lost.
  auto owner = ring_owner({a, b}, g);
  auto q = spawn_probe();
  caf::anon_send(q, probe_ask_atom::value, w.at(a).centre,
                 make_call(owner, component::directory, dir_unregister_atom::value, mine),
                 int64_t{60000}, std::string{"unreg"});
  REQUIRE(run_until([&] { return probe_of(q).answers.size() == 1; }));
  caf::anon_send(q, probe_ask_atom::value, w.at(b).catalog,
                 caf::make_message(ct_activate_atom::value, g), int64_t{60000},
                 std::string{"activate on b"});
  REQUIRE(run_until([&] { return probe_of(q).answers.size() == 2; }));
  REQUIRE_FALSE(probe_of(q).answers[1].error);
  auto winner = probe_of(q).answers[1].reply.get_as<activation_address>(0);
  REQUIRE(winner.silo == b);
  caf::anon_send(w.at(a).catalog, dir_lost_atom::value, mine, winner);
  run();
  CHECK(cat.activations.empty());
  CHECK(cat.stats.deactivated == 1);
  CHECK(logs.count(mine.tag.to_string() + " of " + g.to_string() + " lost its registration to "
                   + winner.to_string()) == 1);
  // A's placement cache was invalidated: the next call from A reaches B's activation.
  call(p, w.at(a).placement, g, echo_call(2), "second");
  REQUIRE(run_until([&] { return answered(p, 2); }));
  CHECK(served_by(*answer(p, "second")) == b.to_string());
  // A stale notice (the activation is gone, or the tag never lived here) changes nothing.
  caf::anon_send(w.at(a).catalog, dir_lost_atom::value, mine, winner);
  run();
  CHECK(cat.stats.deactivated == 1);
}

TEST_CASE_FIXTURE(pl_fixture, "placement: a silo that said it is leaving gets no new activation while another candidate exists, until membership no longer lists it Active") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_silo("c").addr;
  auto p = spawn_probe();
  auto place_from = [&](const silo_address& from, const std::string& prefix) {
    auto before = probe_of(p).answers.size();
    for (int i = 0; i < 20; ++i)
      call(p, w.at(from).placement, grain_id{"messagehub", prefix + std::to_string(i)}, echo_call(i),
           prefix + std::to_string(i));
    REQUIRE(run_until([&] { return answered(p, before + 20); }));
    std::map<std::string, int> by;
    for (size_t i = before; i < probe_of(p).answers.size(); ++i)
      ++by[served_by(probe_of(p).answers[i])];
    return by;
  };
  // Control: C's placement was told nothing and puts some of 20 new grains on B.
  auto control = place_from(c, "Org/C");
  CHECK(control[b.to_string()] > 0);
  CHECK(w.placement_of(c).stats.leaving_skipped == 0);
  // A's placement heard that B is leaving: none of 20 new grains goes there.
  caf::anon_send(w.at(a).placement, pl_leaving_atom::value, b);
  run();
  REQUIRE(w.placement_of(a).leaving == std::set<silo_address>{b});
  auto by = place_from(a, "Org/A");
  CHECK(by[b.to_string()] == 0);
  CHECK(by[a.to_string()] + by[c.to_string()] == 20);
  CHECK(w.placement_of(a).stats.leaving_skipped == 20);
  // Existing activations on B are still called: a grain C placed there answers from B.
  std::string on_b;
  for (auto& ans : probe_of(p).answers)
    if (served_by(ans) == b.to_string()) {
      on_b = ans.tag;
      break;
    }
  REQUIRE_FALSE(on_b.empty());
  call(p, w.at(a).placement, grain_id{"messagehub", on_b}, echo_call(7), "existing");
  REQUIRE(run_until([&] { return answer(p, "existing") != nullptr; }));
  CHECK(served_by(*answer(p, "existing")) == b.to_string());
  // Membership no longer lists B Active: the entry goes, and a report about a silo that is
  // not Active is not kept.
  w.set_status(b, silo_status::shutting_down);
  run();
  CHECK(w.placement_of(a).leaving.empty());
  caf::anon_send(w.at(a).placement, pl_leaving_atom::value, b);
  run();
  CHECK(w.placement_of(a).leaving.empty());
  // Every candidate leaving: placement still places (a preference, never a refusal).
  caf::anon_send(w.at(a).placement, pl_leaving_atom::value, a);
  caf::anon_send(w.at(a).placement, pl_leaving_atom::value, c);
  run();
  REQUIRE(w.placement_of(a).leaving.size() == 2);
  call(p, w.at(a).placement, grain_id{"messagehub", "Org/last"}, echo_call(9), "last");
  REQUIRE(run_until([&] { return answer(p, "last") != nullptr; }));
  CHECK_FALSE(answer(p, "last")->error);
  CHECK(w.placement_of(a).stats.leaving_skipped == 20);
}
