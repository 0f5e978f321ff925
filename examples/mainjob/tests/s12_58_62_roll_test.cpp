// The main job's rolling restart in simulation (docs/testing.md#the-simulation-harness, S12.58,
// S12.62): `demo_driver` drives the simulated mesh of cafmesh::chaos
// (cafmesh/mainjob/sim_mesh.hpp: whole silos of silo_world.hpp on the virtual-time fixture, the
// topology of the in-process network mesh).
//
// The S12.58 scenario below puts the portal hubs in the two pure clients (`senders:
// pure_client`); the co-hosted hubs are the owners and the node hubs. The mesh also hosts
// co-hosted portals (`silo:` origins, held while their silo is down).
//
// The S13 scenarios at the end run the topology users run (`sim_topology`): every silo
// incarnation has its own application, an echo hub factory that creates the answering hub
// of a node hub key inside that silo on its first activation there; those hubs send their
// responses through their silo and end when its host stop has answered, so a node hub
// re-activates on another silo with a hub of that silo's application. Every silo is rolled;
// the membership oracle is the world's (outside every silo, as a membership table would be).

#include <doctest/doctest.h>

#include <cstdint>
#include <sstream>
#include <string>

#include "cafmesh/mainjob/report.hpp"
#include "cafmesh/mainjob/scenario.hpp"
#include "cafmesh/mainjob/sim_mesh.hpp"
#include "cafmesh/routing/verdict.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;

namespace {

/// The S12.58 scenario (sim_mesh.hpp `sim_roll_scenario`).
scenario s12_58_scenario(uint64_t seed) {
  return sim_roll_scenario(seed);
}

/// Every assertion of S12.58 on one run.
void check_s12_58(const sim_run& r, const scenario& s) {
  INFO("seed " << s.seed << "\n" << render_table(r.rep));
  CHECK(r.quiescent);
  for (auto& c : r.rep.checks) {
    INFO(c.name << ": " << c.detail);
    CHECK(c.ok);
  }
  CHECK(r.rep.passed);
  if (!r.rep.passed)
    for (auto& t : r.rep.input.ledger.nack_texts)
      MESSAGE("NACK text: " << t);
  auto& l = r.rep.input.ledger;
  CHECK(l.total.lost == 0);
  CHECK(l.multiple_terminal == 0);
  CHECK(l.total.accepted > 0);
  // The scenario's traffic really flowed: every kind accepted and landed.
  for (auto k : {delivery_kind::frame, delivery_kind::post, delivery_kind::request}) {
    REQUIRE(l.by_kind.count(k) == 1);
    CHECK(l.by_kind.at(k).landed > 0);
  }
  // No sender saw a `no_compatible_silo` fault or "no active silo" text; no verdict that
  // waiting cannot help; no request deadline.
  for (auto& t : l.nack_texts) {
    CHECK(t.find("no_compatible_silo") == std::string::npos);
    CHECK(t.find("no active silo") == std::string::npos);
  }
  // A request's deadline is its one terminal outcome only when the request itself landed
  // and its response was what could not be delivered (docs/behaviour/routing.md#nacks: the
  // response's NACK goes to the responder, responses are not re-sent).
  CHECK(r.deadline_not_landed.empty());
  for (auto& x : r.deadline_not_landed)
    MESSAGE("deadline of a request that never landed: " << x);
  CHECK(l.order_violations == 0);
  CHECK(l.stale_drops == 0);
  REQUIRE(r.rep.input.mirrors_diverged);
  CHECK(*r.rep.input.mirrors_diverged == 0);
  // The roll: each silo stopped once and came back with a newer generation.
  REQUIRE(r.rep.input.silos.size() == s.roll.order.size());
  for (size_t i = 0; i < s.roll.order.size(); ++i) {
    auto& st = r.rep.input.silos[i];
    CHECK(st.name == s.roll.order[i]);
    REQUIRE(st.generation_after);
    CHECK(*st.generation_after > st.generation_before);
    CHECK(st.stop_duration_ms);
    CHECK(st.landed_while_out > 0);
  }
  CHECK(r.stops == s.roll.order.size());
  CHECK(r.stop_log_failures.empty());
  for (auto& x : r.stop_log_failures)
    INFO("no quiescence line: " << x);
  CHECK(r.abandoned.empty());
  for (auto& x : r.abandoned)
    MESSAGE(x);
  CHECK(r.resent_not_landed.empty());
  for (auto& x : r.resent_not_landed)
    MESSAGE(x);
  CHECK(r.rep.input.traffic.request_resends_exhausted == 0);
  CHECK(r.rep.input.traffic.requests_resent == r.resent_requests);
}

std::string numbers(const sim_run& r) {
  auto& l = r.rep.input.ledger;
  std::ostringstream o;
  o << "accepted " << l.total.accepted << ", landed " << l.total.landed << ", NACKed "
    << l.total.nacked << " {";
  for (auto& [v, n] : l.nacked_by_verdict)
    o << routing::to_string(v) << ": " << n << " ";
  o << "}, suppressed failures {";
  for (auto& [v, n] : l.suppressed_by_verdict)
    o << routing::to_string(v) << ": " << n << " ";
  o << "}, requests re-sent " << r.rep.input.traffic.requests_resent << ", fresh Fulls "
    << r.rep.input.traffic.fresh_fulls_after_nack << ", request deadlines (landed, response lost) "
    << r.deadlines << ", landed while out";
  for (auto& st : r.rep.input.silos)
    o << " " << st.name << "=" << st.landed_while_out << " (hold "
      << (st.quiescence_hold_ms ? std::to_string(*st.quiescence_hold_ms) : "-") << " ms)";
  o << ", latency p99 "
    << (l.latency_p99_ms ? std::to_string(*l.latency_p99_ms) + " ms" : std::string{"-"})
    << ", overload refusals " << r.rep.input.traffic.overload_refusals;
  o << ", virtual end " << r.end_ms << " ms, real " << r.real_ms << " ms";
  return o.str();
}

} // namespace

TEST_CASE("S12.58 3 silos and 2 pure clients with co-hosted hubs roll gracefully in simulation: one terminal outcome per delivery, nothing lost, mirrors equal their owners") {
  auto s = s12_58_scenario(42);
  auto r = run_sim(s);
  MESSAGE(numbers(r));
  check_s12_58(r, s);
}

TEST_CASE("S12.62 the simulated roll is deterministic with seed 42 and every seed from 1 to 10 satisfies S12.58") {
  auto s = s12_58_scenario(42);
  auto first = run_sim(s);
  auto second = run_sim(s);
  MESSAGE(numbers(first));
  CHECK(first.network_digest == second.network_digest);
  CHECK(first.ledger_digest == second.ledger_digest);
  CHECK(first.ledger_lines == second.ledger_lines);
  CHECK(first.ledger_lines.size() > 0);
  check_s12_58(first, s);
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto si = s12_58_scenario(seed);
    auto r = run_sim(si);
    MESSAGE("seed " << seed << ": " << numbers(r));
    check_s12_58(r, si);
  }
}

TEST_CASE("S12.58 the simulated roll also holds with portal hubs co-hosted on the silos as well as in the pure clients (senders both), seed 42 and seeds 1 to 10") {
  auto s = s12_58_scenario(42);
  s.traffic.senders = sender_placement::both;
  auto r = run_sim(s);
  MESSAGE(numbers(r));
  check_s12_58(r, s);
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto si = s12_58_scenario(seed);
    si.traffic.senders = sender_placement::both;
    auto ri = run_sim(si);
    MESSAGE("seed " << seed << ": " << numbers(ri));
    check_s12_58(ri, si);
  }
}

// -- the users' topology: answering node hubs inside every silo ----------------------------

namespace {

/// Everything S12.58 asserts, plus: no request ended by its deadline (a graceful stop must
/// leave every request answered, or NACKed once its retry budget is spent).
void check_s13_09(const sim_run& r, const scenario& s) {
  check_s12_58(r, s);
  INFO("seed " << s.seed);
  CHECK(r.rep.input.ledger.total.deadlines == 0);
  CHECK(r.deadlines == 0);
}

/// The S13.10 scenario: no sequential roll; A stopped at 2 s and B 10 ms later, each restarted
/// 1 s after its own stop completed, so B's stop begins while A's is still in progress.
scenario s13_10_scenario(uint64_t seed) {
  auto s = s12_58_scenario(seed);
  s.name = "sim-overlapping-stops";
  s.roll.order.clear();
  s.roll.steps = {roll_step_spec{"A", 2000, 1000}, roll_step_spec{"B", 2001, 1000}};
  return s;
}

/// Admission bounds of every router core and gateway: the nominal load (500/s) passes them
/// (with 8 it was already refused one delivery in eleven), three times that does not.
constexpr const char* s13_12_config
  = R"({"routing":{"max_in_flight":16},"gateway":{"max_outstanding":16}})";

/// The accepted deliveries' latency bound of S13.12.
constexpr int64_t s13_12_max_p99_ms = 2000;

} // namespace

TEST_CASE("S13.09 S12.58 with the answering node hubs co-hosted in every silo and every silo rolled: S12.58's assertions hold and no request ends by its deadline, seeds 1 to 10") {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto s = s12_58_scenario(seed);
    s.name = "sim-roll-users-topology";
    s.expect.max_request_deadlines = 0;
    auto r = run_sim(s, sim_topology::users());
    MESSAGE("seed " << seed << ": " << numbers(r));
    check_s13_09(r, s);
  }
}

TEST_CASE("S13.10 3 silos under traffic, two stopped gracefully with overlapping windows: nothing lost, one terminal outcome per delivery, seeds 1 to 10") {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto s = s13_10_scenario(seed);
    auto r = run_sim(s, sim_topology::users());
    MESSAGE("seed " << seed << ": " << numbers(r));
    INFO("seed " << seed << "\n" << render_table(r.rep));
    auto& l = r.rep.input.ledger;
    CHECK(r.quiescent);
    CHECK(l.total.accepted > 0);
    CHECK(l.total.lost == 0);
    CHECK(l.multiple_terminal == 0);
    // Both stops happened, overlapped, and both silos came back with a newer generation.
    REQUIRE(r.rep.input.silos.size() == 2);
    auto& a = r.rep.input.silos[0];
    auto& b = r.rep.input.silos[1];
    CHECK(a.name == "A");
    CHECK(b.name == "B");
    REQUIRE(a.stop_duration_ms);
    REQUIRE(b.stop_duration_ms);
    CHECK(b.stop_started_ms < a.stop_started_ms + *a.stop_duration_ms);
    REQUIRE(a.generation_after);
    REQUIRE(b.generation_after);
    CHECK(*a.generation_after > a.generation_before);
    CHECK(*b.generation_after > b.generation_before);
    CHECK(r.stops == 2);
  }
}

TEST_CASE("S13.12 traffic at 3 times the carried rate with a roll: nothing lost, one terminal outcome per delivery, every refusal carries retry_after_ms, accepted deliveries' p99 within the bound") {
  // The carried rate: what the mesh with these admission bounds carries of the nominal
  // load, without a roll.
  auto base = s12_58_scenario(42);
  base.name = "sim-carried-rate";
  base.config_json = s13_12_config;
  base.roll.order.clear();
  auto measured = run_sim(base, sim_topology::users());
  auto& ml = measured.rep.input.ledger;
  REQUIRE(ml.total.lost == 0);
  auto carried_per_s = static_cast<int64_t>(ml.total.landed) / base.duration_s;
  MESSAGE("carried " << carried_per_s << " deliveries/s: " << numbers(measured));
  REQUIRE(carried_per_s > 0);
  // Three times that, with the roll.
  auto s = s12_58_scenario(42);
  s.name = "sim-overload-roll";
  s.config_json = s13_12_config;
  s.rate_per_s = 3 * carried_per_s;
  s.expect.max_p99_ms = s13_12_max_p99_ms;
  auto r = run_sim(s, sim_topology::users());
  MESSAGE(numbers(r) << ", overload refusals " << r.rep.input.traffic.overload_refusals
                     << ", re-sent after overload " << r.rep.input.traffic.overload_resends);
  INFO(render_table(r.rep));
  auto& l = r.rep.input.ledger;
  auto& t = r.rep.input.traffic;
  CHECK(r.quiescent);
  CHECK(l.total.lost == 0);
  CHECK(l.multiple_terminal == 0);
  // The load really exceeded the bounds, and every refusal said when to come back.
  CHECK(t.overload_refusals > 0);
  CHECK(t.overload_refusals_without_retry_after == 0);
  CHECK(t.overload_resends > 0);
  REQUIRE(l.latency_p99_ms);
  CHECK(*l.latency_p99_ms <= s13_12_max_p99_ms);
  CHECK(r.stops == s.roll.order.size());
}
