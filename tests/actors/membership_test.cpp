#include <chrono>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/sim_world.hpp"

using namespace std::chrono_literals;
using namespace cafmesh;
using namespace cafmesh::testing;

namespace {

struct mb_fixture : testing::fixture {
  caf::actor spawn_probe() { return track(sys.spawn(probe, static_cast<testing::fixture*>(this))); }
  template <class Handle>
  void ask(const caf::actor& p, const Handle& to, caf::message m, std::string tag) {
    caf::anon_send(p, probe_ask_atom::value, caf::actor_cast<caf::actor>(to), std::move(m),
                   int64_t{60000}, std::move(tag));
  }
  probe_state& probe_of(const caf::actor& p) { return state_of<probe_state>(p); }

  /// Snapshots a probe received as a subscriber, with their arrival times.
  std::vector<std::pair<int64_t, membership_snapshot>> snapshots(const caf::actor& p) {
    std::vector<std::pair<int64_t, membership_snapshot>> out;
    for (auto& kv : probe_of(p).told)
      if (kv.second.match_elements<mb_snapshot_atom, membership_snapshot>())
        out.emplace_back(kv.first, kv.second.get_as<membership_snapshot>(1));
    return out;
  }

  membership_row row(const silo_address& s, bool gateway = false) {
    membership_row r;
    r.silo = s;
    r.manifest = {{"messagehub", placement_strategy::random, 1},
                  {"routing", placement_strategy::stateless_worker, 1}};
    r.gateway = gateway;
    return r;
  }
};

} // namespace

TEST_CASE("membership: the documented status transition table") {
  using s = silo_status;
  std::vector<s> all{s::joining, s::active, s::shutting_down, s::stopping, s::dead};
  std::set<std::pair<s, s>> allowed{{s::joining, s::active},       {s::joining, s::dead},
                                    {s::active, s::shutting_down}, {s::active, s::stopping},
                                    {s::shutting_down, s::stopping}, {s::shutting_down, s::dead},
                                    {s::stopping, s::dead}};
  int n = 0;
  for (auto from : all)
    for (auto to : all) {
      CHECK(is_allowed_transition(from, to) == (allowed.count({from, to}) > 0));
      n += is_allowed_transition(from, to) ? 1 : 0;
    }
  CHECK(n == 7);
  CHECK_FALSE(is_terminating(s::joining));
  CHECK_FALSE(is_terminating(s::active));
  CHECK(is_terminating(s::shutting_down));
  CHECK(is_terminating(s::stopping));
  CHECK(is_terminating(s::dead));
  CHECK(to_string(s::shutting_down) == "ShuttingDown");
}

TEST_CASE("membership: the active set and the gateways are ordered by rendered address") {
  membership_snapshot snap;
  silo_address a{"10.0.0.2", 11111, 3}, b{"10.0.0.10", 11111, 1}, c{"10.0.0.2", 11111, 12};
  snap.upsert({c, silo_status::active, {}, true});
  snap.upsert({a, silo_status::active, {}, false});
  snap.upsert({b, silo_status::active, {}, true});
  snap.upsert({silo_address{"10.0.0.1", 1, 1}, silo_status::shutting_down, {}, true});
  // Rendered: "S10.0.0.10:11111@1" < "S10.0.0.2:11111@12" < "S10.0.0.2:11111@3".
  CHECK(snap.active_set() == std::vector<silo_address>{b, c, a});
  CHECK(snap.gateways() == std::vector<silo_address>{b, c});
  REQUIRE(snap.rows.size() == 4);
  CHECK(snap.rows[0].silo == b); // "S10.0.0.10:..." < "S10.0.0.1:..." (':' > '0')
  CHECK(snap.rows[1].silo.host == "10.0.0.1");
  CHECK(snap.departed(a)); // a newer generation (12) of a's endpoint has a row
  CHECK_FALSE(snap.departed(c));
}

TEST_CASE_FIXTURE(mb_fixture, "membership: the oracle versions every change by one and refuses transitions outside the table") {
  auto oracle = track(spawn_membership_oracle(sys, {}));
  auto p = spawn_probe();
  auto sub = spawn_probe();
  caf::anon_send(oracle, mb_subscribe_atom::value, sub);
  silo_address a{"a", 11111, 1};
  run();
  ask(p, oracle, caf::make_message(mb_join_atom::value, row(a)), "join");
  run();
  ask(p, oracle, caf::make_message(mb_status_atom::value, a, silo_status::active), "active");
  run();
  ask(p, oracle, caf::make_message(mb_status_atom::value, a, silo_status::dead), "active->dead?");
  run();
  ask(p, oracle, caf::make_message(mb_status_atom::value, a, silo_status::joining), "back");
  run();
  ask(p, oracle, caf::make_message(mb_status_atom::value, a, silo_status::shutting_down), "sd");
  run();
  ask(p, oracle, caf::make_message(mb_status_atom::value, a, silo_status::shutting_down), "again");
  run();
  ask(p, oracle, caf::make_message(mb_status_atom::value, a, silo_status::dead), "dead");
  run();
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 7);
  CHECK(ans[0].reply.get_as<uint64_t>(0) == 1);
  CHECK(ans[1].reply.get_as<uint64_t>(0) == 2);
  REQUIRE(ans[2].error);
  CHECK(to_fault(ans[2].error).code == mesh_errc::invalid_operation);
  CHECK(to_fault(ans[2].error).text == "membership transition Active -> Dead of Sa:11111@1 refused");
  REQUIRE(ans[3].error);
  CHECK(to_fault(ans[3].error).text == "membership transition Active -> Joining of Sa:11111@1 refused");
  CHECK(ans[4].reply.get_as<uint64_t>(0) == 3);
  CHECK(ans[5].reply.get_as<uint64_t>(0) == 3); // same status: no change
  CHECK(ans[6].reply.get_as<uint64_t>(0) == 4);
  auto snaps = snapshots(sub);
  REQUIRE(snaps.size() == 4);
  std::vector<silo_status> seen;
  for (uint64_t i = 0; i < snaps.size(); ++i) {
    CHECK(snaps[i].second.version == i + 1);
    seen.push_back(snaps[i].second.rows.at(0).status);
  }
  CHECK(seen == std::vector<silo_status>{silo_status::joining, silo_status::active,
                                         silo_status::shutting_down, silo_status::dead});
}

TEST_CASE_FIXTURE(mb_fixture, "membership: Joining to Dead is allowed, Active to Dead is refused") {
  auto oracle = track(spawn_membership_oracle(sys, {}));
  auto p = spawn_probe();
  silo_address a{"a", 1, 1}, b{"b", 1, 1};
  ask(p, oracle, caf::make_message(mb_join_atom::value, row(a)), "ja");
  ask(p, oracle, caf::make_message(mb_join_atom::value, row(b)), "jb");
  ask(p, oracle, caf::make_message(mb_status_atom::value, a, silo_status::dead), "a dead");
  ask(p, oracle, caf::make_message(mb_status_atom::value, b, silo_status::active), "b active");
  ask(p, oracle, caf::make_message(mb_status_atom::value, b, silo_status::dead), "b dead");
  run();
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 5);
  CHECK(ans[2].reply.get_as<uint64_t>(0) == 3);
  CHECK(ans[3].reply.get_as<uint64_t>(0) == 4);
  REQUIRE(ans[4].error);
  CHECK(to_fault(ans[4].error).text == "membership transition Active -> Dead of Sb:1@1 refused");
}

TEST_CASE_FIXTURE(mb_fixture, "membership: an agent applies snapshots in version order and ignores stale ones") {
  auto oracle = track(spawn_membership_oracle(sys, {}));
  silo_address a{"a", 1, 1};
  auto agent = track(spawn_membership_agent(sys, a, oracle));
  auto sub = spawn_probe();
  caf::anon_send(agent, mb_subscribe_atom::value, sub);
  run();
  auto make = [&](uint64_t v, silo_status s) {
    membership_snapshot snap;
    snap.version = v;
    snap.rows.push_back({a, s, {}, false});
    return snap;
  };
  caf::anon_send(agent, mb_snapshot_atom::value, make(3, silo_status::active));
  caf::anon_send(agent, mb_snapshot_atom::value, make(2, silo_status::joining));
  caf::anon_send(agent, mb_snapshot_atom::value, make(3, silo_status::joining));
  caf::anon_send(agent, mb_snapshot_atom::value, make(5, silo_status::shutting_down));
  run();
  auto snaps = snapshots(sub);
  REQUIRE(snaps.size() == 2);
  CHECK(snaps[0].second.version == 3);
  CHECK(snaps[0].second.rows[0].status == silo_status::active);
  CHECK(snaps[1].second.version == 5);
  CHECK(snaps[1].second.rows[0].status == silo_status::shutting_down);
  auto p = spawn_probe();
  ask(p, agent, caf::make_message(mb_get_atom::value), "view");
  run();
  REQUIRE(probe_of(p).answers.size() == 1);
  CHECK(probe_of(p).answers[0].reply.get_as<membership_snapshot>(0).version == 5);
  // A late subscriber receives the current view at once.
  auto late = spawn_probe();
  caf::anon_send(agent, mb_subscribe_atom::value, late);
  run();
  REQUIRE(snapshots(late).size() == 1);
  CHECK(snapshots(late)[0].second.version == 5);
}

TEST_CASE_FIXTURE(mb_fixture, "membership: graceful leave applies locally first and leaves the active set in one snapshot") {
  auto oracle = track(spawn_membership_oracle(sys, {}));
  silo_address a{"a", 1, 1}, b{"b", 1, 2}, c{"c", 1, 3};
  auto agent_a = track(spawn_membership_agent(sys, a, oracle));
  auto agent_b = track(spawn_membership_agent(sys, b, oracle));
  auto sub_a = spawn_probe();
  auto sub_b = spawn_probe();
  auto p = spawn_probe();
  caf::anon_send(agent_a, mb_subscribe_atom::value, sub_a);
  caf::anon_send(agent_b, mb_subscribe_atom::value, sub_b);
  run();
  ask(p, agent_a, caf::make_message(mb_join_atom::value, row(a).manifest, true), "ja");
  run();
  ask(p, agent_b, caf::make_message(mb_join_atom::value, row(b).manifest, true), "jb");
  run();
  ask(p, agent_a, caf::make_message(mb_status_atom::value, silo_status::active), "aa");
  run();
  ask(p, agent_b, caf::make_message(mb_status_atom::value, silo_status::active), "ab");
  run();
  CHECK(snapshots(sub_a).back().second.version == 4);
  CHECK(snapshots(sub_a).back().second.active_set() == std::vector<silo_address>{a, b});
  // A third silo's join reaches the oracle before a's leave: the oracle's v5 still shows a
  // Active; a's own view must not show a Active again.
  caf::anon_send(agent_a, mb_status_atom::value, silo_status::shutting_down);
  caf::anon_send(oracle, mb_join_atom::value, row(c));
  run();
  auto sa = snapshots(sub_a);
  REQUIRE(sa.size() == 7); // v1 v2 v3 v4, local v4', v5 (patched), v6
  CHECK(sa[4].second.version == 4);
  CHECK(sa[4].second.find(a)->status == silo_status::shutting_down);
  CHECK(sa[4].second.active_set() == std::vector<silo_address>{b});
  CHECK(sa[5].second.version == 5);
  CHECK(sa[5].second.find(a)->status == silo_status::shutting_down);
  CHECK(sa[6].second.version == 6);
  CHECK(sa[6].second.find(a)->status == silo_status::shutting_down);
  // Everyone else: a is Active up to v5 and ShuttingDown from v6, never both.
  auto sb = snapshots(sub_b);
  REQUIRE(sb.size() == 6);
  for (auto& kv : sb) {
    auto st = kv.second.find(a)->status;
    if (kv.second.version <= 5)
      CHECK(st != silo_status::shutting_down);
    else
      CHECK(st == silo_status::shutting_down);
    CHECK(kv.second.is_active(a) == (st == silo_status::active));
  }
  CHECK(sb[4].second.active_set() == std::vector<silo_address>{a, b});
  CHECK(sb[5].second.active_set() == std::vector<silo_address>{b});
  REQUIRE(probe_of(p).answers.size() == 4);
}

TEST_CASE_FIXTURE(mb_fixture, "membership: a restart joins with a higher generation and its predecessor is Dead in the same snapshot") {
  auto oracle = track(spawn_membership_oracle(sys, {}));
  auto p = spawn_probe();
  silo_address a1{"a", 11111, 1}, a2{"a", 11111, 2};
  ask(p, oracle, caf::make_message(mb_join_atom::value, row(a1)), "j1");
  ask(p, oracle, caf::make_message(mb_status_atom::value, a1, silo_status::active), "act");
  ask(p, oracle, caf::make_message(mb_join_atom::value, row(a2)), "j2");
  ask(p, oracle, caf::make_message(mb_join_atom::value, row(a1)), "j1 again");
  ask(p, oracle, caf::make_message(mb_get_atom::value), "get");
  run();
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 5);
  CHECK(ans[2].reply.get_as<uint64_t>(0) == 3);
  REQUIRE(ans[3].error);
  CHECK(to_fault(ans[3].error).code == mesh_errc::invalid_operation);
  CHECK(to_fault(ans[3].error).text == "join of Sa:11111@1 refused: generation 2 already joined");
  auto snap = ans[4].reply.get_as<membership_snapshot>(0);
  CHECK(snap.version == 3);
  CHECK(snap.find(a1)->status == silo_status::dead);
  CHECK(snap.find(a2)->status == silo_status::joining);
  CHECK(snap.departed(a1));
  CHECK(a2.generation > a1.generation);
}

TEST_CASE_FIXTURE(mb_fixture, "membership: a killed silo is declared Dead after 10,000 ms of silence") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto oracle = track(spawn_membership_oracle(sys, {10000}, w.net));
  auto sub = spawn_probe();
  caf::anon_send(oracle, mb_subscribe_atom::value, sub);
  for (auto s : {a, b}) {
    caf::anon_send(oracle, mb_join_atom::value, row(s));
    caf::anon_send(oracle, mb_status_atom::value, s, silo_status::active);
  }
  run();
  run_for(1000ms);
  caf::anon_send(w.net, sim_kill_atom::value, b);
  caf::anon_send_exit(w.centres[b], caf::exit_reason::kill);
  run_for(9999ms);
  CHECK(snapshots(sub).back().second.is_active(b));
  run_for(1ms);
  auto snaps = snapshots(sub);
  REQUIRE(snaps.size() == 6);
  CHECK(snaps[4].first == 11000);
  CHECK(snaps[4].second.find(b)->status == silo_status::stopping);
  CHECK(snaps[5].first == 11000);
  CHECK(snaps[5].second.find(b)->status == silo_status::dead);
  CHECK(snaps[5].second.active_set() == std::vector<silo_address>{a});
  CHECK(logs.count("Sb:11111@2 silent for 10000 ms: declared Dead", log::level::warning) == 1);
  auto& trace = w.net_state().trace;
  CHECK(std::count(trace.begin(), trace.end(),
                   "11000 note membership v6: Sa:11111@1=Active Sb:11111@2=Dead") == 1);
}

TEST_CASE_FIXTURE(mb_fixture, "membership: a detectable stall is declared Dead unless unstalled in time, an undetected stall never") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto c = w.add_silo("c");
  auto oracle = track(spawn_membership_oracle(sys, {10000}, w.net));
  auto sub = spawn_probe();
  caf::anon_send(oracle, mb_subscribe_atom::value, sub);
  for (auto s : {a, b, c}) {
    caf::anon_send(oracle, mb_join_atom::value, row(s));
    caf::anon_send(oracle, mb_status_atom::value, s, silo_status::active);
  }
  run();
  caf::anon_send(w.net, sim_stall_atom::value, a);        // detectable
  caf::anon_send(w.net, sim_stall_atom::value, b, false); // undetected
  caf::anon_send(w.net, sim_stall_atom::value, c);        // detectable, unstalled at 5 s
  run_for(5000ms);
  caf::anon_send(w.net, sim_unstall_atom::value, c);
  run_for(5000ms);
  auto last = snapshots(sub).back();
  CHECK(last.first == 10000);
  CHECK(last.second.find(a)->status == silo_status::dead);
  CHECK(last.second.active_set() == std::vector<silo_address>{b, c});
  run_for(std::chrono::minutes(12));
  CHECK(snapshots(sub).back().second.active_set() == std::vector<silo_address>{b, c});
  CHECK(snapshots(sub).back().second.version == 8);
  caf::anon_send(w.net, sim_unstall_atom::value, a);
  caf::anon_send(w.net, sim_unstall_atom::value, b);
  run();
}

TEST_CASE_FIXTURE(mb_fixture, "membership: the message centre fails calls to a silo its agent reports Dead") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto oracle = track(spawn_membership_oracle(sys, {}));
  auto agent_a = track(spawn_membership_agent(sys, a, oracle));
  caf::anon_send(agent_a, mb_subscribe_atom::value, w.centres[a]);
  auto e = track(sys.spawn(echo));
  w.reg(b, component::test, e);
  auto p = spawn_probe();
  caf::anon_send(oracle, mb_join_atom::value, row(b));
  run();
  ask(p, w.centres[a], make_call(b, component::test, silent_atom::value), "pending");
  run_for(5ms);
  CHECK(probe_of(p).answers.empty());
  caf::anon_send(oracle, mb_dead_atom::value, b);
  run();
  REQUIRE(probe_of(p).answers.size() == 1);
  REQUIRE(probe_of(p).answers[0].error);
  CHECK(to_fault(probe_of(p).answers[0].error).code == mesh_errc::departed_silo);
}

TEST_CASE_FIXTURE(mb_fixture, "membership: a restarted silo gets the next generation, the old one is Dead and departed for every centre") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto b_old = w.add_member("b").addr;
  w.join_active(a.addr);
  w.join_active(b_old);
  auto& b_new = w.restart(b_old);
  CHECK(b_new.addr.same_endpoint(b_old));
  CHECK(b_new.addr.generation > b_old.generation);
  w.join_active(b_new.addr);
  auto p = spawn_probe();
  ask(p, w.oracle, caf::make_message(mb_get_atom::value), "snap");
  run();
  auto snap = probe_of(p).answers.at(0).reply.get_as<membership_snapshot>(0);
  CHECK(snap.find(b_old)->status == silo_status::dead);
  CHECK(snap.active_set() == std::vector<silo_address>{a.addr, b_new.addr});
  auto e = track(sys.spawn(echo));
  w.reg(b_new.addr, component::test, e);
  run();
  ask(p, a.mc, make_call(b_old, component::test, echo_atom::value, 1), "old");
  ask(p, a.mc, make_call(b_new.addr, component::test, echo_atom::value, 2), "new");
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 3; }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 3);
  CHECK(ans[1].tag == "old");
  CHECK(to_fault(ans[1].error).code == mesh_errc::departed_silo);
  CHECK(ans[1].t_ms == ans[0].t_ms); // known departed: fails at once, no frame
  CHECK(ans[2].reply.get_as<int>(0) == 4);
}

namespace {

using sw_to_atom = caf::atom_constant<caf::atom("swto")>;

struct switch_state {
  caf::actor target;
  std::vector<caf::actor> subscribers;
  static inline const char* name = "test.oracle_switch";
};

/// Stands for the development oracle of a process that restarts, as the oracle relay does
/// in network mode: every request goes to the current oracle, and `(sw_to_atom, oracle)`
/// subscribes every subscriber seen so far to a new one.
caf::behavior oracle_switch(caf::stateful_actor<switch_state>* self) {
  self->set_default_handler(
    [=](caf::scheduled_actor*, caf::message_view& v) -> caf::result<caf::message> {
      auto rp = self->make_response_promise();
      rp.delegate(self->state.target, v.copy_content_to_message());
      return caf::message{};
    });
  return {
    [=](sw_to_atom, const caf::actor& o) {
      self->state.target = o;
      for (auto& sub : self->state.subscribers)
        self->send(o, mb_subscribe_atom::value, sub);
    },
    [=](mb_subscribe_atom, const caf::actor& sub) {
      self->state.subscribers.push_back(sub);
      if (self->state.target)
        self->send(self->state.target, mb_subscribe_atom::value, sub);
    },
  };
}

} // namespace

TEST_CASE_FIXTURE(mb_fixture, "membership: a row joined again with its own status is added with it, once, and refused behind a newer generation") {
  membership_oracle_config ocfg;
  ocfg.table = 7;
  auto oracle = track(spawn_membership_oracle(sys, ocfg));
  auto p = spawn_probe();
  silo_address b1{"b", 2, 1}, b2{"b", 2, 2}, c{"c", 3, 1};
  auto again = [&](const silo_address& s, silo_status st) {
    auto r = row(s, true);
    r.status = st;
    return caf::make_message(mb_join_atom::value, std::move(r));
  };
  ask(p, oracle, again(b1, silo_status::active), "b1 active");
  run();
  ask(p, oracle, again(b1, silo_status::active), "b1 active again");
  run();
  ask(p, oracle, again(b1, silo_status::shutting_down), "b1 leaving");
  run();
  ask(p, oracle, again(b1, silo_status::active), "b1 active after leaving");
  run();
  ask(p, oracle, again(b2, silo_status::active), "b2 active");
  run();
  ask(p, oracle, again(b1, silo_status::active), "b1 behind b2");
  run();
  ask(p, oracle, caf::make_message(mb_join_atom::value, row(c)), "c joins");
  run();
  ask(p, oracle, caf::make_message(mb_join_atom::value, row(c)), "c joins twice");
  run();
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 8);
  std::vector<uint64_t> versions;
  for (size_t i : {0, 1, 2, 3, 4, 6}) {
    REQUIRE_FALSE(ans[i].error);
    versions.push_back(ans[i].reply.get_as<uint64_t>(0));
  }
  CHECK(versions == std::vector<uint64_t>{1, 1, 2, 2, 3, 4});
  CHECK(to_fault(ans[5].error).code == mesh_errc::invalid_operation);
  CHECK(to_fault(ans[7].error).code == mesh_errc::invalid_operation);
  ask(p, oracle, caf::make_message(mb_get_atom::value), "get");
  run();
  auto snap = probe_of(p).answers.back().reply.get_as<membership_snapshot>(0);
  CHECK(snap.version == 4);
  CHECK(snap.table == 7);
  CHECK(snap.render() == "v4\n" + b1.to_string() + " Dead gateway\n" + b2.to_string()
                           + " Active gateway\n" + c.to_string() + " Joining");
}

TEST_CASE_FIXTURE(mb_fixture, "membership: after the development table's process restarts, every silo registers its row again with its own status and the others' rows are carried until they do") {
  // Table 1: a1 (the table's own silo), then b, c, e Active through the switch; d is a pure
  // client's agent that never joins.
  membership_oracle_config t1;
  t1.table = 1;
  auto oracle1 = spawn_membership_oracle(sys, t1);
  auto sw = track(sys.spawn(oracle_switch));
  caf::anon_send(sw, sw_to_atom::value, caf::actor_cast<caf::actor>(oracle1));
  auto via = caf::actor_cast<membership_oracle_actor>(sw);
  silo_address a1{"a", 1, 1}, a2{"a", 1, 2}, b{"b", 2, 1}, c{"c", 3, 1}, d{"d", 4, 1},
    e{"e", 5, 1};
  auto agent_b = track(spawn_membership_agent(sys, b, via));
  auto agent_c = track(spawn_membership_agent(sys, c, via));
  auto agent_d = track(spawn_membership_agent(sys, d, via));
  auto agent_e = spawn_membership_agent(sys, e, via);
  auto sub_b = spawn_probe();
  auto sub_d = spawn_probe();
  caf::anon_send(agent_b, mb_subscribe_atom::value, sub_b);
  caf::anon_send(agent_d, mb_subscribe_atom::value, sub_d);
  auto p = spawn_probe();
  run();
  ask(p, oracle1, caf::make_message(mb_join_atom::value, row(a1, true)), "a1");
  run();
  ask(p, oracle1, caf::make_message(mb_status_atom::value, a1, silo_status::active), "a1 on");
  run();
  for (auto& ag : {agent_b, agent_c, agent_e}) {
    ask(p, ag, caf::make_message(mb_join_atom::value, row(b).manifest, true), "join");
    run();
    ask(p, ag, caf::make_message(mb_status_atom::value, silo_status::active), "active");
    run();
  }
  REQUIRE(snapshots(sub_b).back().second.version == 8);
  // The table's process stops (e goes with it, killed); it restarts with table 2, its silo
  // a2 joins there, and the switch reaches the new oracle.
  caf::anon_send_exit(oracle1, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(agent_e, caf::exit_reason::kill);
  run();
  membership_oracle_config t2;
  t2.table = 2;
  auto oracle2 = track(spawn_membership_oracle(sys, t2));
  ask(p, oracle2, caf::make_message(mb_join_atom::value, row(a2, true)), "a2");
  run();
  auto reset_at = now_ms();
  auto seen_b = snapshots(sub_b).size();
  auto seen_d = snapshots(sub_d).size();
  caf::anon_send(sw, sw_to_atom::value, caf::actor_cast<caf::actor>(oracle2));
  run();
  // b and c registered their rows again, Active; the new table holds exactly them and a2.
  ask(p, oracle2, caf::make_message(mb_get_atom::value), "t2");
  run();
  auto t2snap = probe_of(p).answers.back().reply.get_as<membership_snapshot>(0);
  CHECK(t2snap.table == 2);
  CHECK(t2snap.render() == "v3\n" + a2.to_string() + " Joining gateway\n" + b.to_string()
                             + " Active gateway\n" + c.to_string() + " Active gateway");
  // Every view since the reset kept b and c Active and among the gateways, with versions
  // that keep growing: 8 + the table's version. e is carried (not registered again).
  auto sb = snapshots(sub_b);
  auto sd = snapshots(sub_d);
  REQUIRE(sb.size() == seen_b + 3);
  REQUIRE(sd.size() == seen_d + 3);
  for (auto* list : {&sb, &sd}) {
    for (size_t i = list == &sb ? seen_b : seen_d; i < list->size(); ++i) {
      auto& v = (*list)[i].second;
      CHECK(v.version == 8 + (i - (list == &sb ? seen_b : seen_d)) + 1);
      CHECK(v.table == 2);
      CHECK(v.active_set() == std::vector<silo_address>{b, c, e});
      CHECK(v.gateways() == std::vector<silo_address>{b, c, e});
      CHECK(v.find(a1) == nullptr);
      CHECK(v.departed(a1));
    }
  }
  CHECK(logs.count("membership table reset (table 1 -> 2 at v1): carrying 3 row(s)") == 3);
  CHECK(logs.count("registered again as Active in membership table 2") == 2);
  // e never registers again: carried for exactly 10,000 ms from the reset.
  run_to(reset_at + 9999);
  CHECK(snapshots(sub_d).size() == seen_d + 3);
  run_to(reset_at + 10000);
  sd = snapshots(sub_d);
  REQUIRE(sd.size() == seen_d + 4);
  CHECK(sd.back().second.version == 12);
  CHECK(sd.back().second.active_set() == std::vector<silo_address>{b, c});
  CHECK(sd.back().second.find(e) == nullptr);
  CHECK(logs.count(e.to_string() + " did not register again in table 2 within 10000 ms") == 3);
  // A leave after the reset lands in the new table.
  ask(p, agent_b, caf::make_message(mb_status_atom::value, silo_status::shutting_down), "b off");
  run();
  ask(p, oracle2, caf::make_message(mb_get_atom::value), "t2 after");
  run();
  auto after = probe_of(p).answers.back().reply.get_as<membership_snapshot>(0);
  CHECK(after.version == 4);
  CHECK(after.find(b)->status == silo_status::shutting_down);
  CHECK(snapshots(sub_d).back().second.version == 13);
  CHECK(snapshots(sub_d).back().second.active_set() == std::vector<silo_address>{c});
  // A late snapshot of the old table is ignored.
  membership_snapshot old;
  old.version = 50;
  old.table = 1;
  old.rows.push_back({e, silo_status::active, {}, true});
  caf::anon_send(agent_d, mb_snapshot_atom::value, old);
  run();
  CHECK(snapshots(sub_d).back().second.version == 13);
}
