// cafmesh-client's pure parts (client_mesh.hpp): the scenarios it refuses, the hubs it
// hosts, which successes it can observe, and the `unconfirmed` accounting of one-way
// deliveries whose success it cannot observe (driver + ledger + report).

#include <doctest/doctest.h>

#include <memory>
#include <sstream>

#include "cafmesh/mainjob/client_mesh.hpp"
#include "cafmesh/mainjob/driver.hpp"
#include "small_scenario.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;

namespace {

/// A mesh that sees no landing at node hubs (like the client): its `observes_success` is the
/// client's rule over the hubs the client would host.
struct remote_targets_mesh : mesh_port {
  std::set<std::string> hosted;
  std::vector<planned_delivery> submitted;
  void submit(const planned_delivery& d) override { submitted.push_back(d); }
  void stop_silo(const std::string&) override {}
  void restart_silo(const std::string&) override {}
  void stall_silo(const std::string&, bool) override {}
  void unstall_silo(const std::string&) override {}
  bool observes_success(const planned_delivery& d) const override {
    return client_observes_success(d, hosted);
  }
};

/// A driver over the small scenario on a `remote_targets_mesh` hosting what the client would.
struct client_run {
  scenario s = tests::small_scenario();
  remote_targets_mesh m;
  std::unique_ptr<demo_driver> d;

  client_run() {
    client_traffic t;
    t.s = s;
    m.hosted = client_hosted_hubs(t, {"portal"});
    d = std::make_unique<demo_driver>(s, m, "client", "c1");
  }
};

/// Advances `d` every ms-step from 0 to `until_ms` and lets the mesh answer what the client
/// could observe: requests get their response, deliveries to hosted hubs land.
void run_observable(demo_driver& d, remote_targets_mesh& m, int64_t until_ms, int64_t step_ms) {
  for (int64_t now = 0; now <= until_ms; now += step_ms) {
    auto before = m.submitted.size();
    d.advance(now);
    for (auto i = before; i < m.submitted.size(); ++i) {
      auto& p = m.submitted[i];
      if (p.kind == delivery_kind::request)
        d.on_response(p.id, now);
      else if (m.hosted.count(p.target) > 0)
        d.on_landed(p.id, now);
    }
  }
}

} // namespace

TEST_CASE("client: a scenario with a roll, faults or co-hosted senders is refused with its pointer") {
  auto s = default_scenario(); // the demo's roll of A, B, C
  s.faults.push_back(fault_spec{});
  s.traffic.senders = sender_placement::both;
  CHECK(client_scenario_errors(s)
        == std::vector<std::string>{
          "/roll/order: expected [] (cafmesh-client cannot stop or restart the cluster's "
          "silos), got 3 stop(s)",
          "/faults: expected [] (cafmesh-client cannot stall, kill or signal the cluster's silos), got 1 "
          "fault(s)",
          "/traffic/senders: expected \"pure_client\" (cafmesh-client hosts no hubs in silos), "
          "got \"both\""});
  CHECK(client_scenario_errors(tests::small_scenario()).empty());
}

TEST_CASE("client: hosts every sender and every stream-routed target of its plan") {
  client_traffic t;
  t.s = tests::small_scenario();
  std::vector<std::string> types{"portal", "client", "cache", "mesh"};
  CHECK(client_hosted_hubs(t, types)
        == std::set<std::string>{"node/Owner/O0", "node/Owner/O1", "portal/user0/tab1",
                                 "portal/user1/tab1", "portal/user2/tab1",
                                 "portal/user3/tab1"});
  auto trace = parse_trace(
    "{\"t_ms\":0,\"sender\":\"portal/a/t\",\"target\":\"node/Org/N1\",\"stream\":\"\","
    "\"payload_bytes\":1,\"kind\":\"request\"}\n"
    "{\"t_ms\":1,\"sender\":\"node/Owner/O1\",\"target\":\"portal/b/t\",\"stream\":\"s\","
    "\"payload_bytes\":1,\"kind\":\"frame\"}\n");
  REQUIRE(trace.ok);
  t.trace = trace.entries;
  CHECK(client_hosted_hubs(t, types)
        == std::set<std::string>{"node/Owner/O1", "portal/a/t", "portal/b/t"});
}

TEST_CASE("client: observes requests and deliveries to its own hubs, not one-way deliveries to node hubs") {
  std::set<std::string> hosted{"portal/user0/tab1"};
  planned_delivery d;
  d.kind = delivery_kind::request;
  d.target = "node/Org/N0";
  CHECK(client_observes_success(d, hosted));
  d.kind = delivery_kind::post;
  d.answer_suppressed = true;
  CHECK_FALSE(client_observes_success(d, hosted));
  d.kind = delivery_kind::frame;
  d.answer_suppressed = false;
  d.target = "portal/user0/tab1";
  CHECK(client_observes_success(d, hosted));
}

TEST_CASE("client: heartbeats to remote node hubs end unconfirmed, neither landed nor lost") {
  client_run run;
  auto& m = run.m;
  auto& d = *run.d;
  std::ostringstream events;
  d.write_ledger_events_to(&events);
  // Every delivery the client can observe succeeds: frames land, requests are answered.
  run_observable(d, m, 1100, 10);
  uint64_t heartbeats = 0;
  for (auto& p : m.submitted)
    if (p.answer_suppressed)
      ++heartbeats;
  REQUIRE(heartbeats > 0);
  CHECK(d.traffic_done());
  CHECK(d.unobservable_in_flight() == heartbeats);
  CHECK(d.quiescent()); // only deliveries without an observable success are open
  d.mark_unconfirmed(1500);
  CHECK(d.unobservable_in_flight() == 0);
  auto r = d.finish();
  auto& l = r.input.ledger;
  CHECK(l.total.accepted == m.submitted.size());
  CHECK(l.total.unconfirmed == heartbeats);
  CHECK(l.total.landed == m.submitted.size() - heartbeats);
  CHECK(l.total.lost == 0);
  CHECK(l.by_kind.at(delivery_kind::post).unconfirmed == heartbeats);
  CHECK(r.passed);
  CHECK(render_table(r).find("unconfirmed (one-way, no observable outcome)  "
                             + std::to_string(heartbeats))
        != std::string::npos);
  // The ledger file holds one `unconfirmed` line per heartbeat and reads back the same.
  outcome_ledger back;
  std::istringstream in{events.str()};
  uint64_t lines = 0;
  uint64_t unconfirmed_lines = 0;
  for (std::string line; std::getline(in, line);) {
    ++lines;
    if (line.find("\"event\":\"unconfirmed\"") != std::string::npos)
      ++unconfirmed_lines;
    CHECK(read_event_line(line, back) == "");
  }
  CHECK(unconfirmed_lines == heartbeats);
  CHECK(back.summarize().total == l.total);
}

TEST_CASE("client: a NACK before the end is the outcome of a delivery whose success is not observable") {
  client_run run;
  auto& m = run.m;
  auto& d = *run.d;
  d.advance(1000);
  std::string nacked;
  for (auto& p : m.submitted)
    if (p.answer_suppressed && nacked.empty())
      nacked = p.id;
  REQUIRE_FALSE(nacked.empty());
  auto before = d.unobservable_in_flight();
  d.on_suppressed_failure(nacked, routing::verdict::unavailable, "x", 1100);
  CHECK(d.unobservable_in_flight() == before - 1);
  d.mark_unconfirmed(1200);
  auto l = d.finish().input.ledger;
  CHECK(l.total.suppressed_failures == 1);
  CHECK(l.total.unconfirmed == before - 1);
  CHECK(l.multiple_terminal == 0);
}

TEST_CASE("client: a trace replay through the driver records every line once and measures no mirrors") {
  auto trace = parse_trace(
    "{\"t_ms\":0,\"sender\":\"node/Owner/O1\",\"target\":\"portal/a/t\",\"stream\":\"s\","
    "\"payload_bytes\":1,\"kind\":\"frame\"}\n"
    "{\"t_ms\":1,\"sender\":\"node/Owner/O1\",\"target\":\"portal/b/t\",\"stream\":\"s\","
    "\"payload_bytes\":1,\"kind\":\"frame\"}\n"
    "{\"t_ms\":2,\"sender\":\"node/Owner/O1\",\"target\":\"portal/a/t\",\"stream\":\"s\","
    "\"payload_bytes\":1,\"kind\":\"frame\"}\n"
    "{\"t_ms\":3,\"sender\":\"portal/a/t\",\"target\":\"node/Org/N1\",\"stream\":\"\","
    "\"payload_bytes\":1,\"kind\":\"request\"}\n");
  REQUIRE(trace.ok);
  remote_targets_mesh m;
  m.hosted = {"node/Owner/O1", "portal/a/t", "portal/b/t"};
  auto s = tests::small_scenario();
  demo_driver d{s, m, "client", trace_replay{trace.entries, "c1", "client:c1"}};
  run_observable(d, m, 3, 1);
  std::vector<std::string> ids;
  for (auto& p : m.submitted)
    ids.push_back(p.id + " " + p.origin);
  CHECK(ids
        == std::vector<std::string>{"c1-1 client:c1", "c1-2 client:c1", "c1-3 client:c1",
                                    "c1-4 client:c1"});
  CHECK(d.quiescent());
  auto r = d.finish();
  CHECK(r.input.ledger.total.landed == 4);
  CHECK(r.input.ledger.total.lost == 0);
  // portal/a/t saw versions 1 and 3 of stream s: its mirror is behind the owner's clock,
  // which is why a replay does not measure mirrors.
  CHECK_FALSE(r.input.mirrors_diverged.has_value());
  CHECK(r.passed);
}
