// The router core (docs/behaviour/routing.md#the-router-core, #legs arms,
// docs/behaviour/quiescence.md#the-routing-io-pool terminal events,
// docs/behaviour/routing.md#the-ordered-dispatcher, #nacks, #saturation-report-and-refusal-log) in
// virtual time through the real router core, real io_pool and real gauge, with fake ports.

#include "router_fakes.hpp"

using namespace cafmesh::testing::router_bed;
using cafmesh::testing::fixture;
using lvl = cafmesh::log::level;

namespace {

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

void settle(fixture& fx, bed& b, std::chrono::milliseconds cap = 120s) {
  fx.run();
  REQUIRE(fx.run_until([&] {
            auto st = b.stats();
            return st.in_flight == 0 && st.nacks_alive == 0;
          },
                       cap));
}

std::vector<std::string> attempt_ids(bed& b) {
  std::vector<std::string> out;
  for (auto& a : b.grain().attempts)
    out.push_back(a.env.id);
  return out;
}

routing::io_pool_owner_actor as_owner(const router_core_actor& rc) {
  return caf::actor_cast<routing::io_pool_owner_actor>(rc);
}

} // namespace

// -- acceptance -----------------------------------------------------------------------------------
// docs/behaviour/routing.md#the-router-core

TEST_CASE_FIXTURE(fixture, "router: the grain path accepts a delivery whose leg carries the router appended to its path and refuses silo_unavailable after the stopping signal") {
  bed b(*this);
  b.start();
  auto r = grain_route(*this, b, bed::make("g1", "node/Org/Acme"));
  CHECK_FALSE(r); // accepted
  settle(*this, b);
  REQUIRE(b.grain().attempts.size() == 1);
  auto& path = b.grain().attempts[0].env.routing_path;
  REQUIRE(path.size() == 1);
  CHECK(path.back().to_string() == "router/S10.0.0.1:11111@1");
  CHECK(b.stats().landed == 1);
  // stopping signal
  CHECK(ask<caf::ok_atom>(*this, b.rc, lifecycle::host_stopping_atom::value)
        == caf::ok_atom::value);
  auto refused = grain_route(*this, b, bed::make("g2", "node/Org/Acme"));
  REQUIRE(refused);
  auto f = to_fault(refused);
  CHECK(f.code == mesh_errc::silo_unavailable);
  CHECK(f.text == "silo S10.0.0.1:11111@1 is leaving; route elsewhere");
  REQUIRE(f.silo);
  CHECK(*f.silo == b.silo);
  auto st = b.stats();
  CHECK(st.stopping);
  CHECK(st.refused_stopping == 1);
  CHECK(st.accepted == 1);
  CHECK(b.gauge_count() == 0);
  CHECK(b.grain().attempts.size() == 1); // no placement for the refused one
}

TEST_CASE_FIXTURE(fixture, "router: an envelope already carrying the router on its path is NACKed routing_loop") {
  bed b(*this);
  b.start();
  auto e = bed::make("loop1", "node/Org/Acme");
  e.routing_path.push_back(default_router_address(b.silo));
  b.route(e);
  settle(*this, b);
  auto e2 = e;
  e2.id = "loop2";
  auto r = grain_route(*this, b, e2);
  CHECK_FALSE(r); // taken: its routing_loop NACK went to the NACK machinery
  settle(*this, b);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 2);
  CHECK(ns[0].verdict == verdict::routing_loop);
  CHECK(ns[0].request_id == "loop1");
  CHECK(ns[1].request_id == "loop2");
  auto st = b.stats();
  CHECK(st.routing_loops == 2);
  CHECK(st.accepted == 0);
  CHECK(b.grain().attempts.empty());
  CHECK(b.gauge_count() == 0);
}

// -- ordering -------------------------------------------------------------------------------------
// docs/behaviour/routing.md#the-ordered-dispatcher

TEST_CASE_FIXTURE(fixture, "S12.38 legs of one unkeyed destination start one at a time in order") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::held();
  for (int i = 0; i < 3; ++i)
    b.route(bed::make("e" + std::to_string(i), "cache/mesh1"));
  run();
  run_for(1s);
  CHECK(attempt_ids(b) == std::vector<std::string>{"e0"});
  b.release();
  run();
  CHECK(attempt_ids(b) == std::vector<std::string>{"e0", "e1"});
  b.release();
  run();
  CHECK(attempt_ids(b) == std::vector<std::string>{"e0", "e1", "e2"});
  b.release();
  run();
  auto st = b.stats();
  CHECK(st.landed == 3);
  CHECK(st.channels == 0);
  CHECK(st.in_flight == 0);
  // negative control: legs admitted straight into the pool (node branch) start at once
  bed n(*this);
  n.start();
  n.grain().fallback = answer::held();
  for (int i = 0; i < 3; ++i)
    n.route(bed::make("n" + std::to_string(i), "node/Org/Acme"));
  run();
  CHECK(attempt_ids(n) == std::vector<std::string>{"n0", "n1", "n2"});
  n.release();
  run();
}

TEST_CASE_FIXTURE(fixture, "S12.39 different destinations and different keys never wait for each other") {
  bed b(*this);
  b.start();
  b.script("podhub/cache/a", {answer::held()});
  b.route(bed::make("a1", "cache/a"));
  b.route(bed::make("b1", "cache/b"));
  run();
  CHECK(attempt_ids(b) == std::vector<std::string>{"a1", "b1"});
  // one destination, keys A and B, A blocked
  b.script("podhub/cache/m", {answer::held(), answer::held()});
  b.route(bed::make("mA", "cache/m", "portal/alice", "{}", "A"));
  b.route(bed::make("mB", "cache/m", "portal/alice", "{}", "B"));
  run();
  CHECK(b.grain().attempts_for("podhub/cache/m") == 2);
  auto st = b.stats();
  CHECK(st.channels == 3); // cache/a [], cache/m [A], cache/m [B]
  b.release("podhub/cache/a");
  run();
  st = b.stats();
  CHECK(st.channels == 2);
  CHECK(st.destinations == 1);
  CHECK(st.deepest == 0);
  b.release();
  run();
}

TEST_CASE_FIXTURE(fixture, "S12.40 one channel runs strictly in order and look-alike channels stay independent") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::held();
  for (int i = 0; i < 3; ++i)
    b.route(bed::make("s" + std::to_string(i), "cache/mesh1", "portal/alice", "{}", "stream-7"));
  run();
  CHECK(attempt_ids(b) == std::vector<std::string>{"s0"});
  auto st = b.stats();
  CHECK(st.deepest == 2);
  CHECK(st.deepest_channel == "cache/mesh1 [stream-7]");
  b.release();
  run();
  CHECK(attempt_ids(b) == std::vector<std::string>{"s0", "s1"});
  b.release();
  run();
  CHECK(attempt_ids(b) == std::vector<std::string>{"s0", "s1", "s2"});
  b.release();
  run();
  CHECK(b.stats().channels == 0);
  // (cache/a, b/c) and (cache/a/b, c) are different channels
  b.route(bed::make("x", "cache/a", "portal/alice", "{}", "b/c"));
  b.route(bed::make("y", "cache/a/b", "portal/alice", "{}", "c"));
  run();
  CHECK(attempt_ids(b) == std::vector<std::string>{"s0", "s1", "s2", "x", "y"});
  st = b.stats();
  CHECK(st.channels == 2);
  CHECK(st.destinations == 2);
  b.release();
  run();
}

TEST_CASE_FIXTURE(fixture, "S12.41 a drain with a running head and 32 queued legs yields 33 terminal events each in its own turn") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::held();
  for (int i = 0; i < 33; ++i)
    b.route(bed::make("q" + std::to_string(i), "cache/mesh1"));
  run();
  CHECK(attempt_ids(b) == std::vector<std::string>{"q0"});
  CHECK(b.stats().deepest == 32);
  caf::anon_send(b.pool, routing::pool_drain_atom::value);
  auto rc_job = dynamic_cast<caf::resumable*>(caf::actor_cast<caf::abstract_actor*>(b.rc));
  REQUIRE(rc_job != nullptr);
  size_t rc_turns = 0;
  size_t worst = 0;
  auto events = [&] { return logs.count(") terminated: "); };
  for (int guard = 0; guard < 100000; ++guard) {
    if (sched.has_job()) {
      bool is_rc = sched.jobs.front() == rc_job;
      auto before = events();
      sched.run_once();
      auto delta = events() - before;
      if (is_rc) {
        ++rc_turns;
        worst = std::max(worst, delta);
      } else {
        CHECK(delta == 0);
      }
      continue;
    }
    if (now_ms() > 200000 || !fire_next_timeout())
      break;
  }
  CHECK(worst == 1); // one terminal event per router-core turn at most
  auto st = b.stats();
  CHECK(st.terminal_events == 33);
  CHECK(st.abandoned == 1);
  CHECK(st.refused == 32);
  CHECK(st.landed + st.nacked + st.crashed == 0);
  CHECK(st.max_dispatch_depth <= 1);
  CHECK(st.channels == 0);
  CHECK(st.in_flight == 0);
  CHECK(logs.count("(stream-routed -> cache/mesh1 (delivery q0)) terminated: abandoned") == 1);
  CHECK(logs.count(") terminated: pool_refused") == 32);
  CHECK(b.local_nacks().empty()); // the abandoned leg gets no NACK; the refused ones' NACKs were refused too
  CHECK(st.nacks_pool_refused == 32);
  CHECK(b.gauge_count() == 0);
  CHECK(attempt_ids(b).size() == 1);
}

// -- saturation -----------------------------------------------------------------------------------
// docs/behaviour/routing.md#saturation-report-and-refusal-log

TEST_CASE_FIXTURE(fixture, "S12.42 after a slow head lands the oldest dispatched age restarts and the queued leg's age is labelled queued") {
  bed b(*this);
  b.start();
  answer slow = answer::ok(delivery_state::forwarded);
  slow.delay_ms = 200;
  b.script("podhub/cache/mesh1", {slow, answer::held(), answer::held()});
  auto t0 = now_ms();
  for (int i = 0; i < 3; ++i)
    b.route(bed::make("k" + std::to_string(i), "cache/mesh1", "portal/alice", "{}", "s"));
  run();
  run_to(t0 + 200);
  auto landed_at = now_ms();
  auto st = b.stats();
  CHECK(st.landed == 1);
  REQUIRE(st.oldest_dispatched_age_ms >= 0);
  CHECK(st.oldest_dispatched_age_ms <= now_ms() - landed_at);
  CHECK(st.oldest_queued_age_ms >= 200);
  auto sample = b.gauge_oldest();
  bool found = false;
  for (auto& e : sample.entries)
    if (e.label == "stream-routed -> cache/mesh1 (delivery k2)") {
      found = true;
      CHECK(routing::render_entry(e, sample.now_ms)
            == "stream-routed -> cache/mesh1 (delivery k2) (queued, not dispatched), queued 0.2s");
    }
  CHECK(found);
  b.release();
  run();
  b.release();
  run();
}

TEST_CASE_FIXTURE(fixture, "S12.43 saturation reports at 64, escalates once after 100 s and clears at 32") {
  bed b(*this);
  b.opts.placement_timeout_ms = 500000;
  b.opts.grain_response_timeout_ms = 500000;
  b.start();
  b.grain().fallback = answer::held();
  auto t0 = now_ms();
  for (int i = 0; i < 63; ++i)
    b.route(bed::make("h" + std::to_string(i), "node/Org/N" + std::to_string(i)));
  run();
  CHECK(logs.count("routing saturation") == 0);
  b.route(bed::make("h63", "node/Org/N63"));
  run();
  CHECK(logs.count("routing saturation: 64 leg(s) in flight", lvl::warning) == 1);
  b.route(bed::make("h64", "node/Org/N64"));
  run();
  auto st = b.stats();
  CHECK(st.accepted == 65);
  CHECK(st.in_flight == 65);
  CHECK(b.grain().attempts.size() == 65); // the 65th was accepted and dispatched, not delayed
  // dispatches continue every 5 s while the head never lands
  for (int i = 1; i <= 30; ++i) {
    b.script("messagehub/Org/Fast" + std::to_string(i), {answer::ok()});
    run_to(t0 + i * 5000);
    b.route(bed::make("f" + std::to_string(i), "node/Org/Fast" + std::to_string(i)));
    run();
  }
  auto crit = logs.find("routing saturation critical", lvl::critical);
  REQUIRE(crit.size() == 1);
  CHECK(crit[0].t_ms - t0 == 100000);
  CHECK(logs.count("routing saturation", lvl::critical) == 1);
  // fall to 32
  for (int i = 0; i < 32; ++i)
    b.release("messagehub/Org/N" + std::to_string(i));
  run();
  CHECK(b.stats().in_flight == 33);
  CHECK(logs.count("routing saturation cleared after") == 0);
  b.release("messagehub/Org/N32");
  run();
  CHECK(b.stats().in_flight == 32);
  CHECK(logs.count("routing saturation cleared after", lvl::warning) == 1);
  b.release();
  run();
}

TEST_CASE_FIXTURE(fixture, "router: with saturation_warn_after_ms 1000 a saturation reports at info and warns once when it lasts 1 s, a burst that clears sooner warns nothing") {
  bed b(*this);
  b.opts.placement_timeout_ms = 500000;
  b.opts.grain_response_timeout_ms = 500000;
  b.cfg.routing.saturation_warn_after_ms = 1000;
  b.start();
  b.grain().fallback = answer::held();
  // A burst of 64 that falls to 32 after 400 ms: info only.
  auto t0 = now_ms();
  for (int i = 0; i < 64; ++i)
    b.route(bed::make("b" + std::to_string(i), "node/Org/B" + std::to_string(i)));
  run();
  CHECK(logs.count("routing saturation: 64 leg(s) in flight", lvl::info) == 1);
  run_to(t0 + 400);
  for (int i = 0; i < 32; ++i)
    b.release("messagehub/Org/B" + std::to_string(i));
  run();
  CHECK(logs.count("routing saturation cleared after 400 ms", lvl::info) == 1);
  run_to(t0 + 2000);
  CHECK(logs.count("routing saturation", lvl::warning) == 0);
  // A saturation that lasts: one warning 1,000 ms after its report, the clearing a warning.
  auto t1 = now_ms();
  for (int i = 0; i < 32; ++i)
    b.route(bed::make("c" + std::to_string(i), "node/Org/C" + std::to_string(i)));
  run();
  run_to(t1 + 999);
  CHECK(logs.count("routing saturation", lvl::warning) == 0);
  run_to(t1 + 1000);
  auto lasting = logs.find("routing saturation lasting 1000 ms: 64 leg(s) in flight", lvl::warning);
  REQUIRE(lasting.size() == 1);
  CHECK(lasting[0].t_ms - t1 == 1000);
  run_to(t1 + 5000);
  CHECK(logs.count("routing saturation", lvl::warning) == 1);
  for (int i = 0; i < 32; ++i)
    b.release("messagehub/Org/C" + std::to_string(i));
  run();
  CHECK(logs.count("routing saturation cleared after 5000 ms", lvl::warning) == 1);
  b.release();
  run();
}

// -- pod-hub and stream legs ----------------------------------------------------------------------
// docs/behaviour/routing.md#legs

TEST_CASE_FIXTURE(fixture, "router: pod_hub_not_here is NACKed shutting_down with target_unserved and the answering silo, without retry") {
  bed b(*this);
  b.start();
  silo_address s2{"10.0.0.3", 11111, 1};
  fault nh{mesh_errc::pod_hub_not_here, "pod hub not here"};
  nh.silo = s2;
  b.grain().fallback
    = answer::err(with_causes(fault{mesh_errc::application, "call failed"}, {nh}));
  b.route(bed::make("p1", "portal/bob"));
  settle(*this, b);
  CHECK(b.grain().attempts.size() == 1);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].verdict == verdict::shutting_down);
  CHECK(ns[0].target_unserved);
  CHECK(ns[0].message == "No silo serves hub 'portal/bob' (answered by S10.0.0.3:11111@1); retry");
  REQUIRE(ns[0].responding_silo);
  CHECK(*ns[0].responding_silo == s2);
}

TEST_CASE_FIXTURE(fixture, "router: a client-hosted pod hub not here falls back to the stream transport") {
  bed b(*this);
  b.cfg.routing.client_hosted_address_types = {"portal"};
  b.start();
  b.grain().fallback = answer::err(fault{mesh_errc::pod_hub_not_here, "pod hub not here"});
  b.route(bed::make("p1", "portal/bob"));
  settle(*this, b);
  CHECK(b.grain().attempts.size() == 1);
  REQUIRE(b.stream().published.size() == 1);
  CHECK(b.stream().published[0].second.id == "p1");
  CHECK(b.local_nacks().empty());
  CHECK(b.stats().landed == 1);
}

TEST_CASE_FIXTURE(fixture, "router: stream leg probe, silence and post guard") {
  bed b(*this);
  b.cfg.routing.client_hosted_address_types = {"app"};
  b.start();
  // definite none: not_found with target_unserved, nothing published
  b.stream().probe["app/none"] = 0;
  b.route(bed::make("s1", "app/none"));
  settle(*this, b);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].verdict == verdict::not_found);
  CHECK(ns[0].target_unserved);
  CHECK(contains(ns[0].message, "app/none"));
  // silence counts as yes: published once the 10 s probe bound passed
  b.stream().probe["app/quiet"] = -1;
  auto t0 = now_ms();
  b.route(bed::make("s2", "app/quiet"));
  settle(*this, b);
  REQUIRE(b.stream().published.size() == 1);
  CHECK(b.stream().published[0].first - t0 == 10000);
  // a post that never completes: the 60 s guard
  b.stream().publish["app/stuck"] = 2;
  auto t1 = now_ms();
  b.route(bed::make("s3", "app/stuck"));
  settle(*this, b);
  ns = b.local_nacks();
  REQUIRE(ns.size() == 2);
  CHECK(ns[1].verdict == verdict::failed);
  CHECK(ns[1].message == "Stream post to 'app/stuck' never completed within 60 s");
  CHECK(now_ms() - t1 >= 60000);
  // a post that faults
  b.stream().publish["app/bad"] = 1;
  b.route(bed::make("s4", "app/bad"));
  settle(*this, b);
  ns = b.local_nacks();
  REQUIRE(ns.size() == 3);
  CHECK(ns[2].verdict == verdict::failed);
  CHECK(contains(ns[2].message, "stream transport refused the post"));
}

TEST_CASE_FIXTURE(fixture, "router: a stream leg without a stream transport is a composition fault") {
  bed b(*this);
  b.with_streams = false;
  b.cfg.routing.client_hosted_address_types = {"app"};
  b.start();
  b.route(bed::make("c1", "app/viewer"));
  settle(*this, b);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].verdict == verdict::failed);
  CHECK(ns[0].message
        == "Routing to 'app/viewer' failed before the delivery could be attempted: the stream "
           "transport has not started");
}

// -- node leg resolution --------------------------------------------------------------------------
// docs/behaviour/routing.md#legs

TEST_CASE_FIXTURE(fixture, "router: node leg resolution failures") {
  bed b(*this);
  b.start();
  resolve_result missing;
  missing.closest_ancestor = std::string{"node/Org"};
  b.res().table["node/Org/Missing"] = missing;
  resolve_result deeper;
  deeper.found = true;
  deeper.node_prefix = "Org";
  deeper.remainder = "Deep/x";
  b.res().table["node/Org/Deep/x"] = deeper;
  b.res().faults["node/Org/Crash"] = fault{mesh_errc::application, "resolver crashed"};
  b.res().hold.insert("node/Org/Slow");
  b.route(bed::make("r1", "node/Org/Missing"));
  b.route(bed::make("r2", "node/Org/Deep/x"));
  b.route(bed::make("r3", "node/Org/Crash"));
  auto t0 = now_ms();
  b.route(bed::make("r4", "node/Org/Slow"));
  settle(*this, b);
  CHECK(b.grain().attempts.empty());
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 4);
  CHECK(ns[0].verdict == verdict::not_found);
  CHECK(ns[0].message == "No node found at 'node/Org/Missing'. Closest ancestor: 'node/Org'");
  CHECK(ns[1].verdict == verdict::not_found);
  CHECK(ns[1].message == "No node found at 'node/Org/Deep/x'");
  CHECK(ns[2].verdict == verdict::failed);
  CHECK(contains(ns[2].message, "resolver crashed"));
  CHECK(ns[3].verdict == verdict::failed);
  CHECK(contains(ns[3].message, "timed out after 30 s"));
  CHECK(now_ms() - t0 >= 30000);
}

// -- a request's remaining time -------------------------------------------------------------------
// docs/behaviour/routing.md#a-requests-remaining-time

TEST_CASE_FIXTURE(fixture, "router: a request's remaining time bounds its leg's grain attempt, which NACKs failed when it passes") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::held();
  auto t0 = now_ms();
  auto r = grain_route(*this, b, bed::make("rt1", "node/Org/Acme"), 2s);
  CHECK_FALSE(r); // accepted
  settle(*this, b);
  REQUIRE(b.grain().attempts.size() == 1);
  CHECK(b.grain().attempts[0].within_ms == 2000);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].request_id == "rt1");
  CHECK(ns[0].verdict == verdict::failed);
  CHECK(ns[0].message
        == "Delivery to 'node/Org/Acme' failed: grain call got no answer within 2 s");
  CHECK(now_ms() - t0 == 2000);
  CHECK(b.stats().requester_time_ran_out == 0);
  // Without a remaining time the attempt keeps the core's own bound: placement + response.
  auto r2 = grain_route(*this, b, bed::make("rt2", "node/Org/Acme"));
  REQUIRE_FALSE(r2);
  run();
  REQUIRE(b.grain().attempts.size() == 2);
  CHECK(b.grain().attempts[1].within_ms == 60000); // the bed's 30 s + 30 s
}

TEST_CASE_FIXTURE(fixture, "router: a leg whose retry would start after its requester stops waiting NACKs failed at once") {
  bed b(*this);
  b.start();
  fault busy{mesh_errc::overloaded, "hub busy"};
  busy.retry_after_ms = 5000;
  b.script("messagehub/Org/Busy", {answer::err(busy)});
  auto t0 = now_ms();
  auto r = grain_route(*this, b, bed::make("rt3", "node/Org/Busy"), 3s);
  REQUIRE_FALSE(r);
  settle(*this, b);
  REQUIRE(b.grain().attempts.size() == 1);
  CHECK(b.grain().attempts[0].within_ms == 3000);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].verdict == verdict::failed);
  CHECK(ns[0].message
        == "Delivery to 'node/Org/Busy' failed: its requester stops waiting before attempt 2");
  CHECK(now_ms() - t0 == 0); // at once: the retry would start after the requester stopped waiting
  CHECK(b.stats().requester_time_ran_out == 1);
}

// -- continuations whose attempt got no answer -------------------------------------------------
// docs/behaviour/routing.md#continuations-sent-again

TEST_CASE_FIXTURE(fixture, "router: a response whose grain attempt got no answer is sent again after its continuation bound, and the responses behind it on its channel wait only that long") {
  bed b(*this);
  b.start();
  b.script("podhub/portal/bob", {answer::held()}); // the first attempt's frame is lost
  auto t0 = now_ms();
  for (int i = 0; i < 3; ++i) {
    auto e = bed::make("resp" + std::to_string(i), "portal/bob", "node/Org/Acme");
    e.request_id = "req" + std::to_string(i);
    b.route(e);
  }
  settle(*this, b);
  auto& g = b.grain();
  CHECK(attempt_ids(b) == std::vector<std::string>{"resp0", "resp0", "resp1", "resp2"});
  REQUIRE(g.attempts.size() == 4);
  CHECK(g.attempts[0].within_ms == 5000); // routing.continuation_attempt_timeout_ms
  CHECK(g.attempts[0].t_ms - t0 == 0);
  CHECK(g.attempts[1].t_ms - t0 == 5250); // the bound, then the router's first retry delay
  CHECK(g.attempts[2].t_ms - t0 == 5250);
  CHECK(g.attempts[3].t_ms - t0 == 5250);
  auto st = b.stats();
  CHECK(st.landed == 3);
  CHECK(st.nacked == 0);
  CHECK(st.continuation_resends == 1);
  CHECK(g.attempts_for("messagehub/Org/Acme") == 0); // no NACK to the responding hub
  // A post whose attempt got no answer keeps placement + response as its bound and is not
  // sent again: its receiver keeps no outcome per delivery
  // (docs/behaviour/classification.md#why-a-response-timeout-is-never-resent).
  b.script("podhub/portal/carol", {answer::held()});
  auto t1 = now_ms();
  b.route(bed::make("post1", "portal/carol"));
  settle(*this, b);
  REQUIRE(g.attempts_for("podhub/portal/carol") == 1);
  CHECK(g.attempts.back().within_ms == 60000);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].request_id == "post1");
  CHECK(ns[0].verdict == verdict::failed);
  CHECK(now_ms() - t1 == 60000);
  CHECK(b.stats().continuation_resends == 1);
}

TEST_CASE_FIXTURE(fixture, "router: a response none of whose attempts gets an answer is NACKed failed to its hub once the router budget is spent") {
  bed b(*this);
  b.start();
  b.script("podhub/portal/bob", std::vector<answer>(7, answer::held()));
  auto t0 = now_ms();
  auto e = bed::make("resp9", "portal/bob");
  e.request_id = "req9";
  b.route(e);
  settle(*this, b);
  auto& g = b.grain();
  REQUIRE(g.attempts_for("podhub/portal/bob") == 7);
  // 7 attempts of 5 s and the router's delays 250 + 500 + 1,000 + 2,000 + 3,000 + 3,000 ms
  CHECK(g.attempts.back().t_ms - t0 == 6 * 5000 + 9750);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].request_id == "resp9");
  CHECK(ns[0].verdict == verdict::failed);
  CHECK(ns[0].message == "Delivery to 'portal/bob' failed: grain call got no answer within 5 s");
  CHECK(now_ms() - t0 == 7 * 5000 + 9750);
  auto st = b.stats();
  CHECK(st.continuation_resends == 6);
  CHECK(st.nacked == 1);
}

// -- NACK ladder ----------------------------------------------------------------------------------
// docs/behaviour/routing.md#nacks

TEST_CASE_FIXTURE(fixture, "router: NACK ladder rung b delivers to the sender's node hub and falls back to the stream") {
  bed b(*this);
  b.start();
  b.script("messagehub/Org/Fail", {answer::err(fault{mesh_errc::invalid_operation, "nope"})});
  b.script("messagehub/Org/Fail2", {answer::err(fault{mesh_errc::invalid_operation, "nope"})});
  b.script("messagehub/Org/Sender", {answer::ok(delivery_state::submitted)});
  b.route(bed::make("n1", "node/Org/Fail", "node/Org/Sender"));
  settle(*this, b);
  auto& g = b.grain();
  REQUIRE(g.attempts_for("messagehub/Org/Sender") == 1);
  CHECK(g.attempts.back().env.payload_type == "delivery_failure");
  CHECK(g.attempts.back().env.request_id == std::string{"n1"});
  CHECK(b.stats().nacks_node_hub == 1);
  // the sender's hub refuses: fallback to the stream transport
  b.script("messagehub/Org/Sender", {answer::err(fault{mesh_errc::invalid_operation, "gone"})});
  b.route(bed::make("n2", "node/Org/Fail2", "node/Org/Sender"));
  settle(*this, b);
  REQUIRE(b.stream().published.size() == 1);
  CHECK(b.stream().published[0].second.request_id == std::string{"n2"});
  CHECK(b.stats().nacks_stream == 1);
  // an unresolvable sender goes straight to the stream
  b.script("messagehub/Org/Fail3", {answer::err(fault{mesh_errc::invalid_operation, "nope"})});
  b.route(bed::make("n3", "node/Org/Fail3", "user/zed"));
  settle(*this, b);
  REQUIRE(b.stream().published.size() == 2);
  CHECK(b.stream().published[1].second.request_id == std::string{"n3"});
  CHECK(b.res().calls.back() == "user/zed");
}

TEST_CASE_FIXTURE(fixture, "router: NACK ladder rung c and d with the windowed BOTH transports error") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::err(fault{mesh_errc::invalid_operation, "nope"});
  b.script("podhub/portal/carol", {answer::ok(delivery_state::forwarded)});
  b.route(bed::make("c1", "node/Org/A", "portal/carol"));
  settle(*this, b);
  CHECK(b.stats().nacks_pod_hub == 1);
  // pod hub faults (not runtime_gone) -> stream; no subscriber -> error, publish anyway
  b.stream().probe["portal/carol"] = 0;
  b.route(bed::make("c2", "node/Org/A", "portal/carol"));
  settle(*this, b);
  CHECK(logs.count("no live subscriber for NACK to portal/carol (delivery c2); publishing anyway",
                   lvl::error)
        == 1);
  REQUIRE(b.stream().published.size() == 1);
  CHECK(b.stream().published[0].second.request_id == std::string{"c2"});
  // publishing fails too: BOTH transports failed, windowed per sender
  b.stream().publish["portal/carol"] = 1;
  b.route(bed::make("c3", "node/Org/A", "portal/carol"));
  settle(*this, b);
  b.route(bed::make("c4", "node/Org/A", "portal/carol"));
  settle(*this, b);
  CHECK(logs.count("BOTH transports failed for NACK to portal/carol (delivery c3)", lvl::error) == 1);
  CHECK(logs.count("BOTH transports failed for NACK to portal/carol", lvl::error) == 1);
  run_for(61s);
  b.route(bed::make("c5", "node/Org/A", "portal/carol"));
  settle(*this, b);
  auto lines = logs.find("BOTH transports failed for NACK to portal/carol (delivery c5)", lvl::error);
  REQUIRE(lines.size() == 1);
  CHECK(contains(lines[0].text, "repeated 1 time(s)"));
  auto st = b.stats();
  CHECK(st.nacks_failed == 3);
  CHECK(st.nacks_alive == 0);
  CHECK(b.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "router: a failing answer-suppressed delivery is never NACKed and is counted") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::err(fault{mesh_errc::invalid_operation, "nope"});
  auto e = bed::make("hb1", "node/Org/A");
  e.answer_suppressed = true;
  b.route(e);
  settle(*this, b);
  e.id = "hb2";
  b.route(e);
  settle(*this, b);
  CHECK(b.local_nacks().empty());
  auto st = b.stats();
  CHECK(st.suppressed_failures == 2);
  CHECK(st.nacks_posted == 0);
  CHECK(logs.count("answer-suppressed delivery", lvl::warning) == 1); // windowed
  CHECK(b.gauge_count() == 0);
}

// -- terminal events ------------------------------------------------------------------------------
// docs/behaviour/routing.md#legs, docs/behaviour/quiescence.md#the-routing-io-pool

TEST_CASE_FIXTURE(fixture, "router: a crashed leg is NACKed leg_crashed once unless already failed-and-NACKed") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::held();
  b.route(bed::make("x1", "node/Org/Acme"));
  run();
  auto sample = b.gauge_oldest();
  REQUIRE(sample.entries.size() == 1);
  auto id = sample.entries[0].slot;
  caf::anon_send(as_owner(b.rc), routing::pool_down_atom::value, id,
                 caf::make_error(caf::sec::runtime_error));
  run();
  caf::anon_send(as_owner(b.rc), routing::pool_down_atom::value, id,
                 caf::make_error(caf::sec::runtime_error)); // a second down: ignored
  b.release();
  settle(*this, b);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].verdict == verdict::failed);
  CHECK(contains(ns[0].message,
                 "Routing to 'node/Org/Acme' failed before the delivery could be attempted: "));
  auto st = b.stats();
  CHECK(st.crashed == 1);
  CHECK(st.landed == 0);
  CHECK(st.terminal_events == 1);
  // already failed-and-NACKed: no NACK
  auto e = bed::make("x2", "node/Org/Acme");
  mark_failed_and_nacked(e);
  b.route(e);
  run();
  sample = b.gauge_oldest();
  REQUIRE(sample.entries.size() == 1);
  caf::anon_send(as_owner(b.rc), routing::pool_down_atom::value, sample.entries[0].slot,
                 caf::make_error(caf::sec::runtime_error));
  b.release();
  settle(*this, b);
  CHECK(b.local_nacks().size() == 1);
  CHECK(b.stats().crashed == 2);
  CHECK(b.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "router: a leg cancelled by the pool is abandoned without a NACK") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::held();
  b.route(bed::make("a1", "node/Org/Acme"));
  run();
  auto id = b.gauge_oldest().entries.at(0).slot;
  caf::anon_send(as_owner(b.rc), routing::pool_cancel_atom::value, id);
  run();
  b.release();
  settle(*this, b);
  CHECK(b.local_nacks().empty());
  auto st = b.stats();
  CHECK(st.abandoned == 1);
  CHECK(st.terminal_events == 1);
  CHECK(b.gauge_count() == 0);
  CHECK(logs.count("abandoned by the pool drain; no NACK") == 1);
}

TEST_CASE_FIXTURE(fixture, "router: after the pool drained a leg is refused and its NACK carries nothing") {
  bed b(*this);
  b.start();
  CHECK(ask<uint64_t>(*this, b.pool, routing::pool_drain_atom::value) == 0);
  b.route(bed::make("z1", "node/Org/Acme"));
  settle(*this, b);
  CHECK(b.grain().attempts.empty());
  CHECK(b.local_nacks().empty());
  auto st = b.stats();
  CHECK(st.refused == 1);
  CHECK(st.terminal_events == 1);
  CHECK(st.nacks_pool_refused == 1);
  CHECK(logs.count("NACK to portal/alice (delivery z1) not sent: pool drained; leg will not run",
                   lvl::debug)
        == 1);
  CHECK(b.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "router: both entries feed one dispatcher so a stream's frames keep their order") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::held();
  b.route(bed::make("v1", "cache/mesh1", "portal/alice", "{}", "stream-9"));
  auto r = grain_route(*this, b, bed::make("v2", "cache/mesh1", "portal/alice", "{}", "stream-9"));
  CHECK_FALSE(r); // accepted
  b.route(bed::make("v3", "cache/mesh1", "portal/alice", "{}", "stream-9"));
  run();
  CHECK(attempt_ids(b) == std::vector<std::string>{"v1"});
  CHECK(b.stats().deepest == 2);
  for (int i = 0; i < 3; ++i) {
    b.release();
    run();
  }
  CHECK(attempt_ids(b) == std::vector<std::string>{"v1", "v2", "v3"});
  CHECK(b.stats().landed == 3);
}

TEST_CASE_FIXTURE(fixture, "router: 10,000 node legs land with one terminal event each and leave nothing behind") {
  bed b(*this);
  b.cfg.routing.max_in_flight = 0; // the flood, not admission control, is under test here
  b.start();
  auto wall0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10000; ++i)
    b.route(bed::make("m" + std::to_string(i), "node/Org/N" + std::to_string(i % 50)));
  run();
  auto wall = std::chrono::steady_clock::now() - wall0;
  auto st = b.stats();
  CHECK(st.accepted == 10000);
  CHECK(st.landed == 10000);
  CHECK(st.terminal_events == 10000);
  CHECK(st.in_flight == 0);
  CHECK(b.grain().attempts.size() == 10000);
  CHECK(b.gauge_count() == 0);
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(wall).count();
  MESSAGE("10,000 node legs (accept, admit, resolve, deliver, terminal) in " << us / 1000
          << " ms wall on the test coordinator, " << us / 10000 << " us per leg");
}

TEST_CASE_FIXTURE(fixture, "router: the host's stopping signal reaches the router core and accepted legs still land with the gauge never rising") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::held();
  for (int i = 0; i < 5; ++i)
    b.route(bed::make("w" + std::to_string(i), "node/Org/W" + std::to_string(i)));
  run();
  CHECK(b.gauge_count() == 5);
  lifecycle::host_options ho;
  ho.silo_name = b.silo.to_string();
  ho.recipients = {caf::actor_cast<lifecycle::stopping_recipient_actor>(b.rc)};
  auto h = track(lifecycle::spawn_host(sys, std::move(ho)));
  caf::anon_send(h, lifecycle::host_halt_atom::value, false);
  run();
  CHECK(b.stats().stopping);
  auto refused = grain_route(*this, b, bed::make("late", "node/Org/Late"));
  CHECK(refused);
  std::vector<uint64_t> samples{b.gauge_count()};
  for (int i = 0; i < 5; ++i) {
    b.release("messagehub/Org/W" + std::to_string(i));
    run();
    samples.push_back(b.gauge_count());
  }
  CHECK(samples == std::vector<uint64_t>{5, 4, 3, 2, 1, 0});
  auto st = b.stats();
  CHECK(st.landed == 5);
  CHECK(st.accepted == 5);
  CHECK(b.grain().attempts.size() == 5); // the refused one never reached placement
}

TEST_CASE_FIXTURE(fixture, "router: a queued leg's timers start at its dispatch, not at its acceptance") {
  bed b(*this);
  b.start();
  b.script("podhub/cache/mesh1", {answer::held(), answer::held()});
  auto t0 = now_ms();
  b.route(bed::make("head", "cache/mesh1"));
  b.route(bed::make("next", "cache/mesh1"));
  run();
  run_to(t0 + 50000);
  b.release("podhub/cache/mesh1"); // the head lands at 50 s; `next` starts now
  run();
  CHECK(b.grain().attempts.size() == 2);
  CHECK(b.grain().attempts[1].t_ms - t0 == 50000);
  settle(*this, b, 300s);
  // `next` never answers: its attempt times out 60 s after its dispatch (110 s), not after
  // its acceptance (60 s)
  auto lines = logs.find("delivery next to 'cache/mesh1' NACKed failed after 1 attempt(s)");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].t_ms - t0 == 110000);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].request_id == "next");
}

TEST_CASE_FIXTURE(fixture, "router: hosted targets are reduced to their host address before the branch") {
  bed b(*this);
  b.start();
  b.route(bed::make("h1", "client/7f3a~portal/alice"));   // outermost host portal/alice
  b.route(bed::make("h2", "portal/x~mesh/m1"));           // mesh host: the address itself
  b.route(bed::make("h3", "node/Org/Acme~node/Org"));     // node host: node branch on node/Org
  settle(*this, b);
  auto& g = b.grain();
  REQUIRE(g.attempts.size() == 3);
  CHECK(g.attempts[0].grain == "podhub/portal/alice");
  CHECK(g.attempts[0].env.target.to_string() == "client/7f3a~portal/alice"); // target unchanged
  CHECK(g.attempts[1].grain == "podhub/portal/x");
  CHECK(g.attempts[2].grain == "messagehub/Org");
  CHECK(b.res().calls == std::vector<std::string>{"node/Org"});
  CHECK(b.stats().landed == 3);
}

TEST_CASE_FIXTURE(fixture, "router: the local-route port can be wired after spawn") {
  bed b(*this);
  b.with_locals = false;
  b.start();
  b.grain().fallback = answer::err(fault{mesh_errc::invalid_operation, "nope"});
  b.route(bed::make("u1", "node/Org/A")); // no local routes yet: rung c then d
  settle(*this, b);
  CHECK(b.local_nacks().empty());
  CHECK(b.stats().nacks_stream == 1);
  caf::anon_send(b.rc, rc_locals_atom::value,
                 caf::actor_cast<local_route_port_actor>(b.locals));
  b.route(bed::make("u2", "node/Org/A"));
  settle(*this, b);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].request_id == "u2");
  CHECK(b.stats().nacks_local == 1);
}

TEST_CASE_FIXTURE(fixture, "router: the NACK's node-hub transport runs inside the router retry loop") {
  bed b(*this);
  b.start();
  b.script("messagehub/Org/Fail", {answer::err(fault{mesh_errc::invalid_operation, "nope"})});
  b.script("messagehub/Org/Sender", {answer::err(fault{mesh_errc::rejected, "queue limit reached"}),
                                     answer::ok(delivery_state::submitted)});
  auto t0 = now_ms();
  b.route(bed::make("rb1", "node/Org/Fail", "node/Org/Sender"));
  settle(*this, b);
  auto& g = b.grain();
  std::vector<int64_t> times;
  for (auto& a : g.attempts)
    if (a.grain == "messagehub/Org/Sender")
      times.push_back(a.t_ms - t0);
  CHECK(times == std::vector<int64_t>{0, 250});
  CHECK(g.invalidated == std::vector<std::string>{"messagehub/Org/Sender"});
  auto st = b.stats();
  CHECK(st.nacks_node_hub == 1);
  CHECK(st.nacks_stream == 0);
  CHECK(b.gauge_count() == 0);
}
