#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/actors/detail/sim_network_state.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/sim_world.hpp"

using namespace std::chrono_literals;
using namespace cafmesh;
using namespace cafmesh::testing;

namespace {

sim_network_config fixed_latency(int64_t ms) {
  sim_network_config cfg;
  cfg.link_latency_min_ms = ms;
  cfg.link_latency_max_ms = ms;
  return cfg;
}

struct mc_fixture : testing::fixture {
  caf::actor spawn_probe() { return track(sys.spawn(probe, static_cast<testing::fixture*>(this))); }
  caf::actor spawn_echo() { return track(sys.spawn(echo)); }
  void ask(const caf::actor& p, const caf::actor& mc, caf::message call, std::string tag,
           int64_t timeout_ms = 60000) {
    caf::anon_send(p, probe_ask_atom::value, mc, std::move(call), timeout_ms, std::move(tag));
  }
  probe_state& probe_of(const caf::actor& p) { return state_of<probe_state>(p); }
};

} // namespace

TEST_CASE_FIXTURE(mc_fixture, "message_center: a remote call crosses the sim network and returns the reply after two link latencies") {
  sim_world w{*this, fixed_latency(3)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto e = spawn_echo();
  w.reg(b, component::test, e);
  auto p = spawn_probe();
  run();
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 21), "call");
  REQUIRE(run_until([&] { return !probe_of(p).answers.empty(); }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 1);
  CHECK(ans[0].t_ms == 6);
  CHECK_FALSE(ans[0].error);
  REQUIRE(ans[0].reply.match_elements<int>());
  CHECK(ans[0].reply.get_as<int>(0) == 42);
  auto& net = w.net_state();
  CHECK(net.frames_sent == 2);
  CHECK(net.frames_delivered == 2);
  CHECK(net.requests_by_component[component::test] == 1);
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: a local call short-cuts the network") {
  sim_world w{*this, fixed_latency(3)};
  auto a = w.add_silo("a");
  auto e = spawn_echo();
  w.reg(a, component::test, e);
  auto p = spawn_probe();
  run();
  ask(p, w.centres[a], make_call(a, component::test, echo_atom::value, std::string("hi")), "local");
  run();
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 1);
  CHECK(ans[0].t_ms == 0);
  REQUIRE(ans[0].reply.match_elements<std::string>());
  CHECK(ans[0].reply.get_as<std::string>(0) == "hi");
  CHECK(w.net_state().frames_sent == 0);
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: a component's fault crosses the wire unchanged") {
  sim_world w{*this, fixed_latency(1)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  w.reg(b, component::test, spawn_echo());
  auto p = spawn_probe();
  run();
  ask(p, w.centres[a], make_call(b, component::test, fail_atom::value, std::string("queue full")), "f");
  REQUIRE(run_until([&] { return !probe_of(p).answers.empty(); }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 1);
  CHECK(ans[0].t_ms == 2);
  auto f = fault_of(ans[0].error);
  CHECK(f.code == mesh_errc::rejected);
  CHECK(f.text == "queue full");
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: an unregistered component answers silo_unavailable") {
  sim_world w{*this, fixed_latency(1)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto p = spawn_probe();
  run();
  ask(p, w.centres[a], make_call(b, component::catalog, echo_atom::value, 1), "remote");
  ask(p, w.centres[a], make_call(a, component::catalog, echo_atom::value, 1), "local");
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 2; }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 2);
  CHECK(ans[0].tag == "local");
  CHECK(fault_of(ans[0].error).code == mesh_errc::silo_unavailable);
  CHECK(fault_of(ans[0].error).text == "component catalog is not registered on silo Sa:11111@1");
  CHECK(ans[1].tag == "remote");
  CHECK(ans[1].t_ms == 2);
  CHECK(fault_of(ans[1].error).code == mesh_errc::silo_unavailable);
  CHECK(fault_of(ans[1].error).text == "component catalog is not registered on silo Sb:11111@2");
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: blocking refuses application components with the resendable leaving refusal and lets system traffic pass") {
  sim_world w{*this, fixed_latency(1)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto e = spawn_echo();
  w.reg(b, component::activation, e);
  w.reg(b, component::directory, e);
  auto p = spawn_probe();
  run();
  caf::anon_send(w.centres[b], mc_block_atom::value, true);
  run();
  ask(p, w.centres[a], make_call(b, component::activation, echo_atom::value, 1), "app");
  ask(p, w.centres[a], make_call(b, component::directory, echo_atom::value, 2), "sys");
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 2; }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 2);
  CHECK(ans[0].tag == "app");
  CHECK(fault_of(ans[0].error).code == mesh_errc::silo_unavailable);
  CHECK(fault_of(ans[0].error).text == "silo Sb:11111@2 is leaving; route elsewhere");
  REQUIRE(fault_of(ans[0].error).silo);
  CHECK(*fault_of(ans[0].error).silo == b);
  CHECK(ans[1].tag == "sys");
  REQUIRE(ans[1].reply.match_elements<int>());
  CHECK(ans[1].reply.get_as<int>(0) == 4);
  CHECK(is_application(component::activation));
  CHECK_FALSE(is_application(component::directory));
  CHECK_FALSE(is_application(component::membership));
}

TEST_CASE_FIXTURE(mc_fixture, "S15.07 message_center: an application call from a silo membership showed Dead is dropped unanswered when it arrives, system traffic passes") {
  // A partition healed: a frame the cut silo sent before it was declared Dead arrives late
  // (TCP retransmitted it); its grain call must not start a turn beside the activation that
  // replaced the one it was meant for.
  sim_world w{*this, fixed_latency(10)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto e = spawn_echo();
  w.reg(b, component::activation, e);
  w.reg(b, component::directory, e);
  auto p = spawn_probe();
  run();
  ask(p, w.centres[a], make_call(b, component::activation, echo_atom::value, 1), "app", 100);
  ask(p, w.centres[a], make_call(b, component::directory, echo_atom::value, 2), "sys", 100);
  run_for(1ms);
  membership_snapshot dead; // b learns that a was declared Dead
  dead.version = 1;
  dead.rows = {membership_row{a, silo_status::dead, {}, false},
               membership_row{b, silo_status::active, {}, false}};
  caf::anon_send(w.centres[b], mb_snapshot_atom::value, dead);
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 2; }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 2);
  CHECK(ans[0].tag == "sys"); // answered after two latencies
  REQUIRE(ans[0].reply.match_elements<int>());
  CHECK(ans[0].reply.get_as<int>(0) == 4);
  CHECK(ans[1].tag == "app"); // never answered: its caller's own timeout ends it
  CHECK(ans[1].t_ms >= 100);
  CHECK(ans[1].error);
  CHECK(logs.count("dropped request activation message from departed silo Sa:11111@1") == 1);
}

TEST_CASE_FIXTURE(mc_fixture, "S15.07 message_center: a call from a silo this centre knows departed only by a broken connection is still served") {
  sim_world w{*this, fixed_latency(10)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  w.reg(b, component::activation, spawn_echo());
  auto p = spawn_probe();
  run();
  ask(p, w.centres[a], make_call(b, component::activation, echo_atom::value, 1), "app", 100);
  run_for(1ms);
  caf::anon_send(w.centres[b], mc_gone_atom::value, a); // a link down, not a declaration
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 1; }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans[0].reply.match_elements<int>());
  CHECK(ans[0].reply.get_as<int>(0) == 2);
  CHECK(logs.count("from departed silo") == 0);
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: a pending call fails departed_silo when the peer's centre exits, later calls at once") {
  sim_world w{*this, fixed_latency(2)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto e = spawn_echo();
  w.reg(b, component::test, e);
  auto p = spawn_probe();
  run();
  ask(p, w.centres[a], make_call(b, component::test, silent_atom::value), "pending");
  run_for(10ms);
  CHECK(probe_of(p).answers.empty());
  caf::anon_send_exit(w.centres[b], caf::exit_reason::kill);
  run_for(1ms);
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 1);
  CHECK(ans[0].t_ms == 10);
  auto f = fault_of(ans[0].error);
  CHECK(f.code == mesh_errc::departed_silo);
  REQUIRE(f.silo);
  CHECK(*f.silo == b);
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 1), "later");
  run();
  REQUIRE(ans.size() == 2);
  CHECK(ans[1].t_ms == 11);
  CHECK(fault_of(ans[1].error).code == mesh_errc::departed_silo);
  CHECK(w.net_state().count(" gone Sb:11111@2") == 1);
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: a graceful leaver's answer held on a stalled link still completes the call after membership shows it Dead") {
  // b answers, then leaves gracefully while its answer is held on the link to a (a's links
  // are stalled, a itself runs). Membership reaches a over no link, so it overtakes the
  // answer; the call must still end with b's answer, not with a resendable departed_silo
  // (docs/behaviour/membership.md#departures-and-the-wire).
  sim_world w{*this, fixed_latency(2)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  w.reg(b, component::test, spawn_echo());
  auto p = spawn_probe();
  run();
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 21), "held");
  run_for(3ms); // the request arrived at 2 ms, the answer is due at a at 4 ms
  caf::anon_send(w.net, sim_stall_atom::value, a, false);
  run_for(2ms);
  CHECK(w.net_state().count("hold n2 Sb:11111@2 -> Sa:11111@1") == 1);
  membership_snapshot leaving;
  leaving.version = 1;
  leaving.rows = {membership_row{a, silo_status::active, {}, false},
                  membership_row{b, silo_status::shutting_down, {}, false}};
  caf::anon_send(w.centres[a], mb_snapshot_atom::value, leaving);
  run();
  auto dead = leaving;
  dead.version = 2;
  dead.rows[1].status = silo_status::dead;
  caf::anon_send(w.centres[a], mb_snapshot_atom::value, dead);
  caf::anon_send_exit(w.centres[b], caf::exit_reason::user_shutdown);
  run_for(10ms);
  auto& ans = probe_of(p).answers;
  CHECK(ans.empty());
  caf::anon_send(w.net, sim_unstall_atom::value, a);
  REQUIRE(run_until([&] { return !ans.empty(); }));
  REQUIRE(ans.size() == 1);
  CHECK(ans[0].t_ms == 15);
  CHECK_FALSE(ans[0].error);
  REQUIRE(ans[0].reply.match_elements<int>());
  CHECK(ans[0].reply.get_as<int>(0) == 42);
  // The departure is still learnt, after the answer: a new call fails at once.
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 1), "later");
  REQUIRE(run_until([&] { return ans.size() == 2; }));
  CHECK(fault_of(ans[1].error).code == mesh_errc::departed_silo);
  CHECK(ans[1].t_ms == 15);
}

namespace {

/// Calls b from a while `rule` drops one frame, then b leaves gracefully (ShuttingDown, then
/// Dead) and its centre exits; returns the call's fault.
fault graceful_leave_after_drop(mc_fixture& fx, drop_rule rule_for_ab(const silo_address&,
                                                                         const silo_address&)) {
  sim_world w{fx, fixed_latency(2)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  w.reg(b, component::test, fx.spawn_echo());
  auto p = fx.spawn_probe();
  fx.run();
  caf::anon_send(w.net, sim_drop_atom::value, rule_for_ab(a, b));
  fx.run();
  fx.ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 21), "dropped");
  fx.run_for(10ms); // the request arrived at 2 ms, the answer was due at a at 4 ms
  CHECK(w.net_state().count(" drop n") == 1);
  membership_snapshot leaving;
  leaving.version = 1;
  leaving.rows = {membership_row{a, silo_status::active, {}, false},
                  membership_row{b, silo_status::shutting_down, {}, false}};
  caf::anon_send(w.centres[a], mb_snapshot_atom::value, leaving);
  fx.run();
  auto dead = leaving;
  dead.version = 2;
  dead.rows[1].status = silo_status::dead;
  caf::anon_send(w.centres[a], mb_snapshot_atom::value, dead);
  caf::anon_send_exit(w.centres[b], caf::exit_reason::user_shutdown);
  auto& ans = fx.probe_of(p).answers;
  REQUIRE(fx.run_until([&] { return !ans.empty(); }));
  REQUIRE(ans.size() == 1);
  CHECK(ans[0].t_ms == 10);
  return fault_of(ans[0].error);
}

} // namespace

TEST_CASE_FIXTURE(mc_fixture, "message_center: a graceful leaver whose request the wire dropped fails the call as resendable") {
  // It never saw the call (docs/behaviour/membership.md#departures-and-the-wire).
  auto f = graceful_leave_after_drop(*this, [](const silo_address& a, const silo_address& b) {
    drop_rule r;
    r.src = a;
    r.dst = b;
    return r;
  });
  CHECK(f.code == mesh_errc::departed_silo);
  CHECK(f.text == "silo Sb:11111@2 has departed");
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: a graceful leaver whose answer the wire dropped fails the call as in flight, its outcome unknown") {
  // A missing answer means "not carried out" only on a wire that lost no frame from the
  // leaver (docs/behaviour/membership.md#departures-and-the-wire).
  auto f = graceful_leave_after_drop(*this, [](const silo_address& a, const silo_address& b) {
    drop_rule r;
    r.src = b;
    r.dst = a;
    r.is_response = true;
    return r;
  });
  CHECK(f.code == mesh_errc::departed_silo);
  CHECK(f.text == "silo Sb:11111@2 departed while the call was in flight; its outcome is unknown");
}

namespace {

/// a calls b's silent component (the call stays in flight), b learns it is leaving (`how`),
/// then a learns from membership that b is Dead (`a_saw` first, if set) and b's centre exits.
/// Returns the call's fault and what a's watcher was told, in order.
struct leave_seen {
  fault f;
  std::vector<std::string> told;
};

template <class How>
leave_seen call_in_flight_when_b_leaves(mc_fixture& fx, How how,
                                        std::optional<silo_status> a_saw) {
  sim_world w{fx, fixed_latency(2)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  w.reg(b, component::test, fx.spawn_echo());
  auto p = fx.spawn_probe();
  auto watcher = fx.spawn_probe();
  caf::anon_send(w.centres[a], mc_watch_atom::value, watcher);
  fx.run();
  fx.ask(p, w.centres[a], make_call(b, component::test, silent_atom::value), "in flight");
  fx.run_for(10ms); // the request reached b at 2 ms; b holds it
  how(w, a, b);
  fx.run_for(10ms);
  uint64_t version = 10;
  if (a_saw) {
    membership_snapshot v;
    v.version = version++;
    v.rows = {membership_row{a, silo_status::active, {}, false},
              membership_row{b, *a_saw, {}, false}};
    caf::anon_send(w.centres[a], mb_snapshot_atom::value, v);
    fx.run();
  }
  membership_snapshot dead;
  dead.version = version;
  dead.rows = {membership_row{a, silo_status::active, {}, false},
               membership_row{b, silo_status::dead, {}, false}};
  caf::anon_send(w.centres[a], mb_snapshot_atom::value, dead);
  caf::anon_send_exit(w.centres[b], caf::exit_reason::user_shutdown);
  auto& ans = fx.probe_of(p).answers;
  REQUIRE(fx.run_until([&] { return !ans.empty(); }));
  REQUIRE(ans.size() == 1);
  leave_seen out;
  out.f = fault_of(ans[0].error);
  for (auto& [t, m] : fx.probe_of(watcher).told)
    out.told.push_back(caf::to_string(m));
  return out;
}

/// b's own membership agent shows b `status` (b applies its leave to its own view first).
auto b_sees_itself(silo_status status) {
  return [status](sim_world& w, const silo_address& a, const silo_address& b) {
    membership_snapshot own;
    own.version = 5;
    own.rows = {membership_row{a, silo_status::active, {}, false},
                membership_row{b, status, {}, false}};
    caf::anon_send(w.centres[b], mb_snapshot_atom::value, own);
  };
}

} // namespace

TEST_CASE_FIXTURE(mc_fixture, "S15.02 message_center: a leaving silo tells its peers over the link, so a caller whose membership jumped from Active to Dead fails its in-flight call as resendable") {
  // The caller's view never showed b ShuttingDown (a membership table read between b's
  // ShuttingDown and Dead rows would skip it); b's own notice, sent on the link before its
  // last frames, says the leave was graceful.
  auto seen = call_in_flight_when_b_leaves(*this, b_sees_itself(silo_status::shutting_down),
                                           std::nullopt);
  CHECK(seen.f.code == mesh_errc::departed_silo);
  CHECK(seen.f.text == "silo Sb:11111@2 has departed");
  CHECK(seen.f.causes.empty()); // no response timeout: resendable
  CHECK(seen.told
        == std::vector<std::string>{"('mcleaving', Sb:11111@2, true)", "('mcgone', Sb:11111@2)"});
}

TEST_CASE_FIXTURE(mc_fixture, "S15.02 message_center: blocking application messages sends the leaving notice too, once") {
  auto seen = call_in_flight_when_b_leaves(
    *this,
    [](sim_world& w, const silo_address& a, const silo_address& b) {
      b_sees_itself(silo_status::shutting_down)(w, a, b);
      caf::anon_send(w.centres[b], mc_block_atom::value, true);
    },
    std::nullopt);
  CHECK(seen.f.text == "silo Sb:11111@2 has departed");
  CHECK(seen.told
        == std::vector<std::string>{"('mcleaving', Sb:11111@2, true)", "('mcgone', Sb:11111@2)"});
  CHECK(logs.count("leaving (graceful): told 1 peer(s)") == 1);
  // A block without a ShuttingDown row of its own (a non-graceful stop) is a leave too.
  auto blocked_only = call_in_flight_when_b_leaves(
    *this,
    [](sim_world& w, const silo_address&, const silo_address& b) {
      caf::anon_send(w.centres[b], mc_block_atom::value, true);
    },
    std::nullopt);
  CHECK(blocked_only.f.text == "silo Sb:11111@2 has departed");
  CHECK(blocked_only.told
        == std::vector<std::string>{"('mcleaving', Sb:11111@2, false)", "('mcgone', Sb:11111@2)"});
}

TEST_CASE_FIXTURE(mc_fixture, "S15.02 message_center: a peer membership last showed Stopping left too: its in-flight call fails as resendable") {
  auto seen = call_in_flight_when_b_leaves(
    *this, [](sim_world&, const silo_address&, const silo_address&) {},
    silo_status::stopping);
  CHECK(seen.f.code == mesh_errc::departed_silo);
  CHECK(seen.f.text == "silo Sb:11111@2 has departed");
  CHECK(seen.told
        == std::vector<std::string>{"('mcleaving', Sb:11111@2, false)", "('mcgone', Sb:11111@2)"});
}

TEST_CASE_FIXTURE(mc_fixture, "S15.02 message_center: a peer that went from Active to Dead without a leave of its own (killed) leaves its in-flight call's outcome unknown") {
  auto seen = call_in_flight_when_b_leaves(
    *this, [](sim_world&, const silo_address&, const silo_address&) {}, std::nullopt);
  CHECK(seen.f.code == mesh_errc::departed_silo);
  CHECK(seen.f.text == "silo Sb:11111@2 departed while the call was in flight; its outcome is unknown");
  CHECK(seen.told == std::vector<std::string>{"('mcgone', Sb:11111@2)"});
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: a call to a silo the network never knew bounces as departed_silo") {
  sim_world w{*this, fixed_latency(2)};
  auto a = w.add_silo("a");
  auto p = spawn_probe();
  run();
  silo_address ghost{"ghost", 1, 99};
  ask(p, w.centres[a], make_call(ghost, component::test, echo_atom::value, 1), "ghost");
  REQUIRE(run_until([&] { return !probe_of(p).answers.empty(); }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 1);
  CHECK(ans[0].t_ms == 2);
  CHECK(fault_of(ans[0].error).code == mesh_errc::departed_silo);
  CHECK(w.net_state().count("bounce n1 Sa:11111@1 -> Sghost:1@99") == 1);
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: a frame for an earlier generation on the same endpoint answers departed_silo") {
  sim_world w{*this, fixed_latency(1)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto p = spawn_probe();
  run();
  // Simulates a restart: the same centre handle now serves b's endpoint at a newer
  // generation, so a frame still naming the older one must not be served.
  silo_address old_b = b;
  old_b.generation = 0;
  caf::anon_send(w.net, sim_attach_atom::value, old_b, w.centres[b]);
  run();
  ask(p, w.centres[a], make_call(old_b, component::test, echo_atom::value, 1), "old");
  REQUIRE(run_until([&] { return !probe_of(p).answers.empty(); }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 1);
  CHECK(fault_of(ans[0].error).code == mesh_errc::departed_silo);
  CHECK(*fault_of(ans[0].error).silo == old_b);
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: a one-way send reaches the component on the peer") {
  sim_world w{*this, fixed_latency(4)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto e = spawn_echo();
  w.reg(b, component::test, e);
  run();
  caf::anon_send(w.centres[a], mc_send_atom::value, b, component::test,
                 caf::make_message(std::string("note"), 7));
  run_for(3ms);
  CHECK(state_of<echo_state>(e).received.empty());
  run_for(1ms);
  auto& rec = state_of<echo_state>(e).received;
  REQUIRE(rec.size() == 1);
  REQUIRE(rec[0].match_elements<std::string, int>());
  CHECK(rec[0].get_as<int>(1) == 7);
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: a request to a killed silo bounces as departed_silo after one link latency") {
  sim_world w{*this, fixed_latency(3)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  w.reg(b, component::test, spawn_echo());
  auto p = spawn_probe();
  run();
  caf::anon_send(w.net, sim_kill_atom::value, b);
  run();
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 1), "killed");
  REQUIRE(run_until([&] { return !probe_of(p).answers.empty(); }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 1);
  CHECK(ans[0].t_ms == 3);
  CHECK(fault_of(ans[0].error).code == mesh_errc::departed_silo);
  CHECK(w.net_state().count("bounce n1 Sa:11111@1 -> Sb:11111@2") == 1);
}

TEST_CASE("message_center: a frame's time-to-live is re-armed on arrival and refreshed when it leaves, an expired request is not sent") {
  using clock_tp = caf::actor_clock::time_point;
  clock_tp t0{std::chrono::seconds(100)};
  wire_frame f;
  f.correlation_id = 7;
  f.target = component::activation;
  f.src = silo_address{"10.0.0.1", 1, 1};
  f.dst = silo_address{"10.0.0.2", 2, 1};
  f.ttl_ms = 3000;
  arm_expiry(f, t0);
  CHECK(f.expires_at == t0 + 3000ms);
  // 100 ms or less left (call_expiry_margin_ms) counts as expired.
  CHECK(call_expiry_margin_ms == 100);
  CHECK_FALSE(f.expired(t0 + 2899ms));
  CHECK(f.expired(t0 + 2900ms));
  CHECK(f.expired(t0 + 3000ms));
  // Held 1,200 ms in this process: it leaves with 1,800 ms to live.
  CHECK(refresh_ttl(f, t0 + 1200ms));
  CHECK(f.ttl_ms == 1800);
  // 100.5 ms left still leaves (with the whole 100 ms); 100 ms left does not.
  f.ttl_ms = 3000;
  CHECK(refresh_ttl(f, t0 + 2899ms + 500us));
  CHECK(f.ttl_ms == 100);
  f.ttl_ms = 3000;
  CHECK_FALSE(refresh_ttl(f, t0 + 2900ms));
  CHECK(f.ttl_ms == 3000);
  auto resp = expired_response(f, "before it left " + f.src.to_string());
  CHECK(resp.is_response);
  CHECK(resp.correlation_id == 7);
  CHECK(resp.src == f.dst);
  CHECK(resp.dst == f.src);
  auto why = to_fault(resp.error);
  CHECK(why.code == mesh_errc::response_timeout);
  CHECK(why.text
        == "call #7 to activation on " + f.dst.to_string() + " expired before it left "
             + f.src.to_string() + ": its caller stopped waiting after 3000 ms");
  // Responses, one-way frames and frames without a time-to-live always leave.
  wire_frame r = f;
  r.is_response = true;
  CHECK(refresh_ttl(r, t0 + 10s));
  wire_frame plain;
  plain.correlation_id = 8;
  CHECK_FALSE(plain.expired(t0));
  CHECK(refresh_ttl(plain, t0 + 10s));
  CHECK(plain.ttl_ms == 0);
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: a call whose time-to-live ran out while it was held never reaches its component and is answered response_timeout") {
  sim_world w{*this, fixed_latency(2)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto target = spawn_probe(); // component `test` on b: records what reaches it
  w.reg(b, component::test, target);
  auto p = spawn_probe();
  run();
  caf::anon_send(w.net, sim_stall_atom::value, b);
  run();
  ask(p, w.centres[a], make_bounded_call(3000, b, component::test, echo_atom::value, 5),
      "bounded", 3000);
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 6), "unbounded");
  run_for(10s);
  caf::anon_send(w.net, sim_unstall_atom::value, b);
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 2; }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 2);
  CHECK(ans[0].tag == "bounded");
  CHECK(ans[0].t_ms == 3000);
  CHECK(ans[0].error == caf::sec::request_timeout);
  CHECK(ans[1].tag == "unbounded");
  CHECK(ans[1].t_ms == 10002);
  // Only the call without a time-to-live reached the component.
  auto& told = probe_of(target).told;
  REQUIRE(told.size() == 1);
  CHECK(told[0].first == 10002 - 2);
  CHECK(told[0].second.match_elements<echo_atom, int>());
  CHECK(told[0].second.get_as<int>(1) == 6);
  CHECK(logs.find("dropped an expired request from " + a.to_string() + ": call #1 to test on "
                    + b.to_string() + " expired in transit: its caller stopped waiting after "
                                      "3000 ms",
                  log::level::warning)
          .size()
        == 1);
  // The expired request's answer freed a's pending call; b counted it.
  ask(p, w.centres[b], caf::make_message(mc_stats_atom::value), "stats b");
  ask(p, w.centres[a], caf::make_message(mc_stats_atom::value), "stats a");
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 4; }));
  REQUIRE(ans.size() == 4);
  REQUIRE(ans[2].reply.match_elements<message_center_stats>());
  CHECK(ans[2].reply.get_as<message_center_stats>(0).expired == 1);
  REQUIRE(ans[3].reply.match_elements<message_center_stats>());
  CHECK(ans[3].reply.get_as<message_center_stats>(0).pending_calls == 0);
}

TEST_CASE_FIXTURE(mc_fixture, "message_center: the one-way sends of one backlog cross the link as one message in send order, a lone send as a message of its own, and the peer's centre takes them in that order (SPEC §14 B7)") {
  sim_world w{*this, fixed_latency(2)};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto c = w.add_silo("c");
  auto eb = spawn_echo();
  auto ec = spawn_echo();
  w.reg(b, component::test, eb);
  w.reg(c, component::test, ec);
  run();
  auto& net = w.net_state();
  auto ab = std::make_pair(a, b);
  auto ac = std::make_pair(a, c);
  // A lone send: one message.
  caf::anon_send(w.centres[a], mc_send_atom::value, b, component::test,
                 caf::make_message(std::string("lone"), 0));
  run_for(2ms);
  CHECK(net.messages_by_link[ab] == 1);
  CHECK(net.frames_by_link[ab] == 1);
  REQUIRE(state_of<echo_state>(eb).received.size() == 1);
  // 40 sends queued at once, to two peers: the centre hands them to the link when its
  // mailbox is empty or 32 wait; per peer they keep their order.
  for (int i = 1; i <= 40; ++i)
    caf::anon_send(w.centres[a], mc_send_atom::value, i % 4 == 0 ? c : b, component::test,
                   caf::make_message(std::string("n"), i));
  run_for(2ms);
  CHECK(net.frames_by_link[ab] == 1 + 30);
  CHECK(net.frames_by_link[ac] == 10);
  // Two messages to each peer: the 32 frames of the cap, then the other 8 once the
  // mailbox was empty.
  CHECK(net.messages_by_link[ab] == 1 + 2);
  CHECK(net.messages_by_link[ac] == 2);
  auto order = [&](const caf::actor& e) {
    std::vector<int> out;
    for (auto& m : state_of<echo_state>(e).received)
      out.push_back(m.get_as<int>(1));
    return out;
  };
  std::vector<int> want_b{0}, want_c;
  for (int i = 1; i <= 40; ++i)
    (i % 4 == 0 ? want_c : want_b).push_back(i);
  CHECK(order(eb) == want_b);
  CHECK(order(ec) == want_c);
  auto stats = testing::ask<message_center_stats>(*this, w.centres[a], mc_stats_atom::value);
  run();
  REQUIRE(stats->done);
  CHECK(stats->value.frames_out == 41);
  CHECK(stats->value.batches_out == 3);
}
