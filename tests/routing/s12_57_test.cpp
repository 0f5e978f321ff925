// docs/scenarios.md S12.57: the delta-sync receiver guard (docs/behaviour/sync-guard.md) needs
// per-channel FIFO (docs/behaviour/routing.md#the-ordered-dispatcher). The mirror part (no base, a
// patch that does not apply) on a `delta_mirror`, and the negative control end to end: frames of
// one stream routed by a real router core to a pod-hub subscriber, P6's first pod-hub attempt
// `rejected` (docs/behaviour/classification.md#retry-policies retry after 250 ms). With the
// router's per-channel FIFO (every frame on the stream's ordering key), P7 waits behind P6 and
// both apply; with it disabled for P7 (P7 on an ordering key of its own, so that no channel
// orders it behind P6, as a router without per-channel FIFO treats every frame), P7 overtakes
// P6, P6 is dropped as stale and `a` never arrives.

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cafmesh/routing/sync_guard.hpp"
#include "cafmesh/testing/entry_world.hpp"
#include "cafmesh/routing/detail/hub_grains_state.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;
using namespace cafmesh::testing;
using namespace std::chrono_literals;

namespace {

sync_frame P(uint64_t v, const std::string& key, const std::string& value) {
  return sync_frame::patch(v, {sync_op::set(key, value)});
}

size_t count_fresh(const std::vector<sync_request>& xs) {
  size_t n = 0;
  for (auto& r : xs)
    if (r.what == sync_request::kind::fresh_full)
      ++n;
  return n;
}

/// The subscriber side of the negative control: what `portal/sub` received, in arrival
/// order, applied to a mirror (frames by delivery id).
struct applied_run {
  std::vector<std::string> order;
  std::vector<frame_outcome> outcomes;
  sync_state state;
  size_t requests = 0;
  std::map<std::string, int> attempts;
  uint64_t p7_first_attempt_seq = 0;
  uint64_t p6_answer_seq = 0;
  int64_t p6_retry_gap_ms = -1;
  size_t sender_outcomes = 0;
};

/// Routes F5, P6 and P7 to `portal/sub`. `fifo`: all three on the ordering key `view` (one
/// channel, ordered by the router's per-channel FIFO); false: P7 on a key of its own.
applied_run run_stream(testing::fixture& fx, bool fifo) {
  entry_world w(fx);
  entry_silo_options opt;
  opt.port_proxy = true;
  auto& a = w.add_silo("a", opt);
  auto& b = w.add_silo("b");
  auto owner = w.add_hub(a.routing, "portal/owner");
  auto sub = w.add_hub(b.routing, "portal/sub");
  caf::anon_send(b.claimer, pc_claim_atom::value, address::from("portal/sub"));
  fx.run();
  REQUIRE(fx.state_of<cafmesh::routing::detail::pod_hub_claimer_state>(b.claimer).attached_ok == 1);
  std::map<std::string, sync_frame> frames{
    {"F5", sync_frame::full(5, {})}, {"P6", P(6, "a", "\"A\"")}, {"P7", P(7, "b", "\"B\"")}};
  caf::anon_send(owner, ep_post_atom::value, make_delivery("F5", "portal/sub", "view"));
  REQUIRE(fx.run_until([&] { return hub_of(sub).received.size() == 1; }));
  auto& px = fx.state_of<port_proxy_state>(a.proxy);
  px.reject_first.insert("P6");
  px.events.clear();
  caf::anon_send(owner, ep_post_atom::value, make_delivery("P6", "portal/sub", "view"));
  caf::anon_send(owner, ep_post_atom::value,
                 make_delivery("P7", "portal/sub", fifo ? "view" : "view-P7"));
  REQUIRE(fx.run_until([&] { return hub_of(sub).received.size() == 3; }, 10s));
  fx.run_for(120s); // long past every retry: nothing else arrives
  applied_run out;
  delta_mirror m{"portal/sub#view"};
  for (auto& r : hub_of(sub).received) {
    out.order.push_back(r.env.id);
    out.outcomes.push_back(m.on_frame(frames.at(r.env.id)));
  }
  out.state = m.state();
  out.requests = m.take_requests().size();
  out.attempts = px.attempts;
  int64_t p6_first = -1;
  for (auto& e : px.events) {
    if (e.id == "P7" && e.what == "attempt" && out.p7_first_attempt_seq == 0)
      out.p7_first_attempt_seq = e.seq;
    if (e.id == "P6" && e.what == "answer")
      out.p6_answer_seq = e.seq;
    if (e.id == "P6" && e.what == "attempt") {
      if (p6_first < 0)
        p6_first = e.t_ms;
      else
        out.p6_retry_gap_ms = e.t_ms - p6_first;
    }
  }
  out.sender_outcomes = hub_of(owner).outcomes.size();
  return out;
}

} // namespace

TEST_CASE_FIXTURE(testing::fixture, "S12.57 a mirror without a base asks one fresh Full for 5 patches, a patch that does not apply gets a Full adopted, and with per-channel FIFO disabled P7 overtakes P6 so P6 is dropped and a never arrives while with FIFO both apply") {
  SUBCASE("mirror without a base: 5 patches, exactly one fresh-Full request in flight") {
    delta_mirror m{"portal/sub#view"};
    CHECK(m.on_frame(P(3, "a", "1")) == frame_outcome::resync_requested);
    for (uint64_t v = 4; v <= 7; ++v)
      CHECK(m.on_frame(P(v, "a", "1")) == frame_outcome::gap_dropped);
    CHECK(count_fresh(m.take_requests()) == 1);
    CHECK(m.resync_in_flight());
    CHECK(m.counters().fresh_full_requests == 1);
  }
  SUBCASE("a patch that does not apply requests a fresh Full whose version is adopted") {
    delta_mirror m{"portal/sub#view"};
    CHECK(m.on_frame(sync_frame::full(5, {{"a", "1"}})) == frame_outcome::applied);
    CHECK(m.on_frame(sync_frame::patch(6, {sync_op::remove("missing")}))
          == frame_outcome::resync_requested);
    auto reqs = m.take_requests();
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0].what == sync_request::kind::fresh_full);
    CHECK(m.state() == sync_state{{"a", "1"}});
    CHECK(m.on_frame(sync_frame::full(9, {{"a", "1"}, {"c", "3"}})) == frame_outcome::applied);
    CHECK(*m.version() == 9);
    CHECK(m.state() == sync_state{{"a", "1"}, {"c", "3"}});
  }
  SUBCASE("negative control: per-channel FIFO disabled, P7 overtakes P6, P6 is dropped, a never arrives") {
    auto r = run_stream(*this, false);
    CHECK(r.order == std::vector<std::string>{"F5", "P7", "P6"});
    CHECK(r.p7_first_attempt_seq < r.p6_answer_seq); // P7 ran while P6 was retrying
    CHECK(r.p6_retry_gap_ms == 250);
    REQUIRE(r.outcomes.size() == 3);
    CHECK(r.outcomes[0] == frame_outcome::applied);
    CHECK(r.outcomes[1] == frame_outcome::applied);
    CHECK(r.outcomes[2] == frame_outcome::stale_dropped);
    CHECK(r.state == sync_state{{"b", "\"B\""}});
    CHECK(r.state.count("a") == 0);
    CHECK(r.requests == 0); // nothing ever asks for `a` again
    CHECK(r.attempts["P6"] == 2);
    CHECK(r.attempts["P7"] == 1);
    CHECK(r.sender_outcomes == 0); // both landed: the loss is silent
  }
  SUBCASE("with per-channel FIFO (default): P7 waits behind P6 and both apply") {
    auto r = run_stream(*this, true);
    CHECK(r.order == std::vector<std::string>{"F5", "P6", "P7"});
    CHECK(r.p7_first_attempt_seq > r.p6_answer_seq); // P7 started after P6 landed
    CHECK(r.p6_retry_gap_ms == 250);
    REQUIRE(r.outcomes.size() == 3);
    for (auto o : r.outcomes)
      CHECK(o == frame_outcome::applied);
    CHECK(r.state == sync_state{{"a", "\"A\""}, {"b", "\"B\""}});
    CHECK(r.requests == 0);
    CHECK(r.attempts["P6"] == 2);
    CHECK(r.attempts["P7"] == 1);
    CHECK(r.sender_outcomes == 0);
  }
}
