// Legs that do not land when their silo stops, on whole silos (silo_world): silo A accepts
// deliveries from a sender hub co-hosted in A's process for pod hubs whose owner hub lives
// in silo B, with the link A -> B slowed to 50 s so that the two channel heads' grain calls
// are in flight and three legs wait behind them. A non-graceful stop (S13.04) or a graceful
// stop whose host budget expires during the hold (S13.05) ends every one of them with
// exactly one NACK before the routing I/O pool is drained at stage First.

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "s12_stall_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {

/// What the sender's hub had received when stage First began to stop (the pool drain and
/// its join run there).
struct first_probe_record {
  routing::hub_endpoint_actor sender;
  int64_t at_ms = -1;
  std::vector<hub_outcome> outcomes;
};

caf::behavior first_probe(caf::event_based_actor*, std::shared_ptr<first_probe_record> rec,
                          fixture* fx) {
  return {
    [=](lifecycle::start_stage_atom, lifecycle::stage) { return caf::ok_atom::value; },
    [=](lifecycle::stop_stage_atom, lifecycle::stage, bool) {
      rec->at_ms = fx->now_ms();
      if (rec->sender)
        rec->outcomes.assign(hub_of(rec->sender).outcomes.begin(),
                             hub_of(rec->sender).outcomes.end());
      return caf::ok_atom::value;
    },
    [=](lifecycle::budget_expired_atom) {},
  };
}

struct stopping_world {
  fixture& fx;
  silo_world w;
  std::shared_ptr<first_probe_record> probe = std::make_shared<first_probe_record>();
  silo_address a, b;
  routing::hub_endpoint_actor sender, hub_x, hub_y;

  explicit stopping_world(fixture& f, int64_t shutdown_budget_ms = 30000) : fx(f), w(f) {
    auto prb = caf::actor_cast<lifecycle::lifecycle_observer_actor>(
      fx.track(fx.sys.spawn(first_probe, probe, &fx)));
    silo_world_options oa;
    oa.probes.emplace_back(lifecycle::stages::first, "first-probe", prb);
    oa.configure = [=](config::mesh_config& cfg) {
      cfg.host.shutdown_budget_ms = shutdown_budget_ms;
    };
    a = w.add_silo("a", oa).addr;
    b = w.add_silo("b").addr;
    REQUIRE(w.last_start->ok());
    // The answering hubs live in B's process: B claims their pod hubs.
    hub_x = cohosted_hub(fx, w, b, "cache/X");
    hub_y = cohosted_hub(fx, w, b, "cache/Y");
    for (auto path : {"cache/X", "cache/Y"})
      caf::anon_send(w.at(b).claimer, routing::pc_claim_atom::value, routing::address::from(path));
    // The sender lives in A's process.
    sender = cohosted_hub(fx, w, a, "node/Sender/A");
    probe->sender = sender;
    fx.run_for(1s);
    // Both routes work before the link slows down.
    post("x0", "cache/X");
    post("y0", "cache/Y");
    fx.run_for(1s);
    REQUIRE(received_count(hub_x, "x0") == 1);
    REQUIRE(received_count(hub_y, "y0") == 1);
    REQUIRE(hub_of(sender).outcomes.empty());
    caf::anon_send(w.net, sim_delay_atom::value, a, b, int64_t{50000}, int64_t{50000});
    fx.run();
    // Two channel heads in flight, three legs queued behind them.
    post("x1", "cache/X");
    post("x2", "cache/X");
    post("x3", "cache/X");
    post("y1", "cache/Y");
    post("y2", "cache/Y");
    fx.run_for(100ms);
    auto st = core_stats(fx, w, a);
    REQUIRE(st.in_flight == 5);
    REQUIRE(st.channels == 2);
    REQUIRE(st.deepest == 2);
    REQUIRE(st.grain_attempts == 4); // x0, y0, then the heads x1 and y1
  }

  void post(const std::string& id, const std::string& target) {
    caf::anon_send(sender, routing::ep_post_atom::value, make_delivery(id, target));
  }

  std::string before_text(const std::string& target) const {
    return "silo " + a.to_string() + " stopped before the delivery to " + target
           + " was attempted";
  }
  std::string in_flight_text(const std::string& target) const {
    return "silo " + a.to_string() + " stopped while the delivery to " + target
           + " was in flight; its outcome is unknown";
  }

  /// The NACKs the sender had when First began: exactly one per delivery, as expected.
  void check_nacks_before_first() {
    REQUIRE(probe->at_ms >= 0);
    std::map<std::string, std::vector<hub_outcome>> by_id;
    for (auto& o : probe->outcomes)
      by_id[o.id].push_back(o);
    CHECK(probe->outcomes.size() == 5);
    const std::map<std::string, std::pair<routing::verdict, std::string>> expected{
      {"x1", {routing::verdict::failed, in_flight_text("cache/X")}},
      {"y1", {routing::verdict::failed, in_flight_text("cache/Y")}},
      {"x2", {routing::verdict::shutting_down, before_text("cache/X")}},
      {"x3", {routing::verdict::shutting_down, before_text("cache/X")}},
      {"y2", {routing::verdict::shutting_down, before_text("cache/Y")}},
    };
    for (auto& [id, want] : expected) {
      CAPTURE(id);
      REQUIRE(by_id[id].size() == 1);
      CHECK(by_id[id][0].kind == "nack");
      CHECK(by_id[id][0].verdict == want.first);
      CHECK(by_id[id][0].message == want.second);
    }
  }
};

} // namespace

TEST_CASE_FIXTURE(fixture, "S13.04 a non-graceful stop with 3 legs queued behind channel heads and 2 grain calls in flight: 3 NACKs shutting_down and 2 NACKs failed with outcome unknown reach the sender before the pool's join, one per delivery") {
  stopping_world sw{*this};
  auto t0 = now_ms();
  auto stopped = sw.w.stop(sw.a, false);
  run_for(1s);
  REQUIRE(stopped->ok());
  sw.check_nacks_before_first();
  CHECK(sw.probe->at_ms == t0);
  // Nothing was left for the drain: it joined with residual 0, and no NACK was unsent.
  CHECK(sw.w.first(sw.a, "routing I/O pool joined").t_ms == t0);
  CHECK(logs.count("could not leave") == 0);
  // The participant named the residual by delivery id.
  CHECK(sw.w.first(sw.a, "stopping NON-gracefully with 5 route leg(s) in flight").text.find(
          "; residual: x1, x2, x3, y1, y2")
        != std::string::npos);
  // After the slowed link delivered the two heads, nothing further reached the sender.
  run_for(60s);
  CHECK(hub_of(sw.sender).outcomes.size() == 5);
}

TEST_CASE_FIXTURE(fixture, "S13.05 a graceful stop whose host budget expires during the hold: the release line names the residual and every residual delivery gets one NACK as in S13.04") {
  stopping_world sw{*this, 10000};
  auto t0 = now_ms();
  auto stopped = sw.w.stop(sw.a, true);
  run_for(9999ms);
  CHECK(hub_of(sw.sender).outcomes.empty()); // held: nothing ended before the budget
  run_for(1ms);
  auto release = sw.w.first(sw.a, "routing quiescence: shutdown budget expired while holding");
  CHECK(release.t_ms == t0 + 10000);
  CHECK(release.text.find("releasing with 5 route leg(s) in flight; residual: x1, x2, x3, y1, y2")
        != std::string::npos);
  run_for(1s);
  REQUIRE(stopped->ok());
  sw.check_nacks_before_first();
  CHECK(sw.probe->at_ms >= t0 + 10000);
  CHECK(logs.count("could not leave") == 0);
  run_for(60s);
  CHECK(hub_of(sw.sender).outcomes.size() == 5);
}
