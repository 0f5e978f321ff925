// Whole-silo tests (docs/behaviour/lifecycle.md#stages, #the-host, #non-graceful-stops-and-crashes,
// docs/behaviour/quiescence.md#the-participant-at-stage-active, docs/scenarios.md S12.07, S12.09):
// silos assembled by
// `spawn_silo`, driven through their hosts in virtual time.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cafmesh/routing/dispatch_batch.hpp"
#include "cafmesh/routing/node_path_resolver.hpp"
#include "cafmesh/testing/silo_world.hpp"
#include "cafmesh/actors/detail/catalog_state.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
namespace ev = cafmesh::lifecycle::silo_event_text;
using testing::fixture;

namespace {

/// The S12.07 actions in their required order, as trace needles.
const std::vector<std::string>& s1207_order() {
  static const std::vector<std::string> xs{
    ev::stop_send,                                   // 20000 (a)
    "routing quiescence: no routing work in flight", // 20000 (b)
    ev::shutting_down_published,                     // 19999
    ev::all_deactivated,                             // 19998
    ev::messages_blocked,                            // 4000
    ev::placement_stopped,                           // 2001
    ev::dead_published,                              // 2001
    ev::centre_stopped,                              // 2000
    "draining routing I/O pool",                     // First
    "routing I/O pool joined",                       // First
  };
  return xs;
}

/// Checks that `a`'s trace holds every S12.07 action exactly once, in order, at or after
/// `t0`, and returns their virtual times.
std::vector<int64_t> check_s1207_order(const silo_world& w, const silo_address& a, int64_t t0) {
  std::vector<int64_t> ts;
  long prev = -1;
  for (auto& needle : s1207_order()) {
    auto h = w.first(a, needle);
    INFO("silo " << a.to_string() << " action: " << needle);
    REQUIRE(h.index >= 0);
    CHECK(h.index > prev);
    CHECK(h.t_ms >= t0);
    if (!ts.empty())
      CHECK(h.t_ms >= ts.back());
    prev = h.index;
    ts.push_back(h.t_ms);
  }
  // Stage 20000's two actions are parallel (either may log first); the rest is strict.
  return ts;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "silo: start runs every documented stage and the silo becomes Active with its gateway open") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  REQUIRE(w.last_start->ok());
  for (auto needle : {ev::centre_started, ev::placement_started, ev::runtime_started,
                      ev::joining_published, ev::routing_ready, ev::active_published,
                      ev::gateway_open}) {
    INFO(needle);
    CHECK(w.first(a, needle).index >= 0);
  }
  CHECK(w.first(a, ev::centre_started).index < w.first(a, ev::placement_started).index);
  CHECK(w.first(a, ev::placement_started).index < w.first(a, ev::joining_published).index);
  CHECK(w.first(a, ev::joining_published).index < w.first(a, ev::routing_ready).index);
  CHECK(w.first(a, ev::routing_ready).index < w.first(a, ev::active_published).index);
  CHECK(w.first(a, ev::active_published).index < w.first(a, ev::gateway_open).index);
  auto v = w.view_of(a);
  run();
  REQUIRE(v->ok());
  REQUIRE(v->value.find(a) != nullptr);
  CHECK(v->value.find(a)->status == silo_status::active);
}

TEST_CASE_FIXTURE(fixture, "silo: without the quiescence participant the start fails config_invalid") {
  silo_world w{*this};
  silo_world_options o;
  o.subscribe_quiescence = false;
  auto a = w.add_silo("a", o).addr;
  REQUIRE(w.last_start->done);
  CHECK(w.last_start->code() == mesh_errc::config_invalid);
  CHECK(to_fault(w.last_start->err).text.find("routing quiescence participant is not subscribed")
        != std::string::npos);
  // Detected at RuntimeInitialize, the first silo stage: no service ever started.
  CHECK(w.first(a, ev::centre_started).index == -1);
  CHECK(w.first(a, ev::joining_published).index == -1);
  CHECK(w.first(a, ev::active_published).index == -1);
}

TEST_CASE_FIXTURE(fixture, "S12.07 a silo with probes stops gracefully in the documented stage order") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_client("c", a);
  // Activations on A: a node hub grain placed from A (random strategy over A and B: place a
  // few until one lands on A) and the routing grain through the client.
  auto& sa = w.at(a);
  auto p = track(sys.spawn(probe, static_cast<fixture*>(this)));
  for (int i = 0; i < 8; ++i)
    caf::anon_send(p, probe_ask_atom::value, sa.placement,
                   caf::make_message(pl_call_atom::value,
                                     grain_id{"slow", "k" + std::to_string(i)}, int32_t{0},
                                     caf::make_message(pt_echo_atom::value, i)),
                   int64_t{0}, std::string{"k"});
  run();
  auto& cat = state_of<cafmesh::detail::catalog_state>(sa.catalog);
  REQUIRE(cat.activations.size() == 8);
  logs.clear();
  auto t0 = now_ms();
  auto stopped = w.stop(a, true);
  REQUIRE(run_until([&] { return stopped->done; }, std::chrono::minutes(10)));
  REQUIRE(stopped->ok());
  auto ts = check_s1207_order(w, a, t0);
  // Nothing held anything: every action ran at the instant of the stop (latency 0).
  for (auto t : ts)
    CHECK(t == t0);
  CHECK(w.first(a, ev::stop_send).text.find("1 pure client(s)") != std::string::npos);
  CHECK(state_of<echo_state>(c.inbox).received.size() == 1);
  CHECK(cat.stats.deactivated == 8);
  CHECK(cat.activations.empty());
  // The other silo saw ShuttingDown, then Dead.
  auto v = w.view_of(b);
  run();
  REQUIRE(v->ok());
  REQUIRE(v->value.find(a) != nullptr);
  CHECK(v->value.find(a)->status == silo_status::dead);
  CHECK(logs.count("mesh teardown", log::level::error) == 0);
}

namespace {

/// The statuses of `s` in the snapshots `rec` (an `echo` subscribed to an agent or the
/// oracle) received, without repeats, in arrival order.
std::vector<std::string> statuses_seen(const caf::actor& rec, const silo_address& s) {
  std::vector<std::string> out;
  for (auto& m : fixture::state_of<echo_state>(rec).received) {
    if (!m.match_elements<mb_snapshot_atom, membership_snapshot>())
      continue;
    auto row = m.get_as<membership_snapshot>(1).find(s);
    if (row == nullptr)
      continue;
    if (out.empty() || out.back() != to_string(row->status))
      out.push_back(to_string(row->status));
  }
  return out;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "A whole 3-silo simulated stop (silo + host + participants) completes with the stage order of S12.07 in the trace") {
  silo_world w{*this};
  std::vector<silo_address> xs{w.add_silo("a").addr, w.add_silo("b").addr,
                               w.add_silo("c").addr};
  REQUIRE(w.last_start->ok());
  // One recorder per silo agent and one on the oracle: what every other silo sees.
  std::map<silo_address, caf::actor> rec;
  for (auto& s : xs) {
    rec[s] = track(sys.spawn(echo));
    caf::anon_send(w.at(s).agent, mb_subscribe_atom::value, rec[s]);
  }
  auto oracle_rec = track(sys.spawn(echo));
  caf::anon_send(w.oracle, mb_subscribe_atom::value, oracle_rec);
  run();
  std::vector<int64_t> stop_ms;
  for (size_t i = 0; i < xs.size(); ++i) {
    run_for(std::chrono::seconds(1));
    auto t0 = now_ms();
    auto stopped = w.stop(xs[i], true);
    REQUIRE(run_until([&] { return stopped->done; }, std::chrono::minutes(10)));
    REQUIRE(stopped->ok());
    stop_ms.push_back(stopped->t_ms);
    check_s1207_order(w, xs[i], t0);
    // Every silo still running saw the stopping one go ShuttingDown, then Dead.
    for (size_t j = i + 1; j < xs.size(); ++j) {
      INFO("observer " << xs[j].to_string() << " of " << xs[i].to_string());
      CHECK(statuses_seen(rec[xs[j]], xs[i])
            == std::vector<std::string>{"Active", "ShuttingDown", "Dead"});
    }
    CHECK(statuses_seen(oracle_rec, xs[i])
          == std::vector<std::string>{"Active", "ShuttingDown", "Dead"});
    // The host ran its teardown after the silo stop: the probe answers torn_down.
    auto probe_r = testing::ask<probe_answer>(*this, w.registry, lifecycle::probe_runtime_atom::value,
                                              xs[i].to_string());
    run();
    REQUIRE(probe_r->ok());
    CHECK(probe_r->value == probe_answer::torn_down);
  }
  // One after another: each stop answered before the next began (1 s apart, latency 0).
  CHECK(stop_ms == std::vector<int64_t>{stop_ms[0], stop_ms[0] + 1000, stop_ms[0] + 2000});
  auto last = testing::ask<membership_snapshot>(*this, w.oracle, mb_get_atom::value);
  run();
  REQUIRE(last->ok());
  CHECK(last->value.active_set().empty());
}

TEST_CASE_FIXTURE(fixture, "silo world: restart brings a silo back with the next generation while the old one stays Dead") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto stopped = w.stop(a, true);
  REQUIRE(run_until([&] { return stopped->done; }, std::chrono::minutes(10)));
  auto a2 = w.restart(a).addr;
  REQUIRE(w.last_start->ok());
  CHECK(a2.host == a.host);
  CHECK(a2.port == a.port);
  CHECK(a2.generation > b.generation);
  auto v = w.view_of(b);
  run();
  REQUIRE(v->ok());
  CHECK(v->value.find(a)->status == silo_status::dead);
  CHECK(v->value.find(a2)->status == silo_status::active);
  CHECK(v->value.active_set() == std::vector<silo_address>{a2, b});
}

TEST_CASE_FIXTURE(fixture, "S12.09 GrainDeactivation abandons a 40 s turn at 30 s, reroutes held messages with forward count + 1 and lets the routing grain go at once") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto& sa = w.at(a);
  auto p = track(sys.spawn(probe, static_cast<fixture*>(this)));
  auto& answers = state_of<probe_state>(p).answers;
  auto answer = [&](const std::string& tag) -> const probe_answer_rec* {
    for (auto& x : answers)
      if (x.tag == tag)
        return &x;
    return nullptr;
  };
  grain_id slow{"slow", "x"};
  grain_id router{"routing", "default"};
  // The routing grain's activation on A, through a real route request (lands at once).
  auto d = make_delivery("d1", "node/Org/Acme");
  d.sender = routing::address::from("client/1");
  caf::anon_send(p, probe_ask_atom::value, sa.placement,
                 caf::make_message(pl_call_atom::value, router, int32_t{0},
                                   caf::make_message(routing::hg_routes_atom::value,
                                                     std::vector<routing::dispatch_item>{
                                                       {d, caf::timespan{0}}},
                                                     silo_address{})),
                 int64_t{0}, std::string{"route"});
  // slow/x on A (prefer-local), in a 40 s turn.
  caf::anon_send(p, probe_ask_atom::value, sa.placement,
                 caf::make_message(pl_call_atom::value, slow, int32_t{0},
                                   caf::make_message(pt_slow_atom::value, int64_t{40000})),
                 int64_t{0}, std::string{"turn40"});
  run();
  REQUIRE(answer("route") != nullptr);
  REQUIRE(!answer("route")->error);
  auto& cat = state_of<cafmesh::detail::catalog_state>(sa.catalog);
  REQUIRE(cat.by_grain.count(slow) == 1);
  REQUIRE(cat.by_grain.count(router) == 1);
  auto tag = activation_tag{cat.by_grain[slow].front()};
  CHECK(cat.activations.at(tag.value).busy());
  // Graceful stop of A; run the instant of the stop only (no timer fires).
  auto t0 = now_ms();
  auto stopped = w.stop(a, true);
  run();
  REQUIRE(w.first(a, ev::shutting_down_published).t_ms == t0);
  // Stage 19998 runs: the routing grain's activation is already gone, slow/x deactivates.
  CHECK(cat.by_grain.count(router) == 0);
  REQUIRE(cat.by_grain.count(slow) == 1);
  CHECK(cat.activations.at(tag.value).deactivating);
  // Messages queued to the deactivating activation: forward counts 0, 1 and 2.
  for (int32_t fwd : {0, 1, 2})
    caf::anon_send(p, probe_ask_atom::value, sa.catalog,
                   caf::make_message(ct_invoke_atom::value, slow, tag, fwd,
                                     caf::make_message(pt_echo_atom::value, 10 + fwd)),
                   int64_t{0}, "fwd" + std::to_string(fwd));
  run();
  CHECK(answer("fwd0") == nullptr);
  CHECK(cat.activations.at(tag.value).queue.size() == 3);
  // The 40 s turn is abandoned at 30 s with a warning.
  REQUIRE(run_until([&] { return answer("fwd2") != nullptr; }, std::chrono::minutes(1)));
  auto ab = logs.find("abandoned", log::level::warning);
  REQUIRE(ab.size() == 1);
  CHECK(ab[0].t_ms == t0 + 30000);
  CHECK(ab[0].text.find(tag.to_string()) != std::string::npos);
  CHECK(cat.stats.abandoned == 1);
  CHECK(cat.stats.rerouted == 3);
  REQUIRE(run_until([&] { return answer("fwd0") && answer("fwd1"); }, std::chrono::minutes(1)));
  // Rerouted with forward count + 1 to a new activation on B (the other Active silo).
  for (auto [t, x] : {std::pair{"fwd0", 20}, std::pair{"fwd1", 22}}) {
    auto r = answer(t);
    INFO(std::string{t} << ": " << to_fault(r->error).text);
    REQUIRE(!r->error);
    REQUIRE(r->reply.match_elements<std::string, int>());
    CHECK(r->reply.get_as<std::string>(0) == b.to_string());
    CHECK(r->reply.get_as<int>(1) == x);
    CHECK(r->t_ms == t0 + 30000);
  }
  auto& cat_b = state_of<cafmesh::detail::catalog_state>(w.at(b).catalog);
  CHECK(cat_b.by_grain.count(slow) == 1);
  // The last turn on B was the message queued with forward count 1: it arrived with 2.
  CHECK(cat_b.last_forward_count == 2);
  // Forwarded twice already: the reroute (count 3) is refused `rejected`.
  auto r2 = answer("fwd2");
  REQUIRE(r2->error);
  CHECK(to_fault(r2->error).code == mesh_errc::rejected);
  CHECK(to_fault(r2->error).text.find("forward count 3 exceeds placement.max_forward_count = 2")
        != std::string::npos);
  CHECK(r2->t_ms == t0 + 30000);
  // The stop then completes (19998 ended at 30 s).
  REQUIRE(run_until([&] { return stopped->done; }, std::chrono::minutes(10)));
  CHECK(stopped->ok());
  CHECK(w.first(a, ev::all_deactivated).t_ms == t0 + 30000);
  check_s1207_order(w, a, t0);
}

namespace {

using s1208_done_atom = caf::atom_constant<caf::atom("ts8done")>;

/// A path resolver answering `node/{prefix}` after `delay_ms` (legs wait in resolution).
caf::behavior slow_resolver(caf::event_based_actor* self, int64_t delay_ms) {
  auto held = std::make_shared<std::deque<std::pair<std::string, caf::response_promise>>>();
  return {
    [=](routing::pr_resolve_atom, const std::string& path) -> caf::response_promise {
      held->emplace_back(path, self->make_response_promise());
      self->delayed_send(self, std::chrono::milliseconds(delay_ms), s1208_done_atom::value);
      return held->back().second;
    },
    [=](s1208_done_atom) {
      auto [path, rp] = held->front();
      held->pop_front();
      routing::resolve_result r;
      if (auto prefix = routing::node_prefix_of("node", path)) {
        r.found = true;
        r.node_prefix = std::move(*prefix);
      }
      rp.deliver(r);
    },
  };
}

/// Mesh teardown taking `delay_ms`; logs "test teardown: started" / "test teardown: done".
caf::behavior slow_teardown(caf::event_based_actor* self, int64_t delay_ms) {
  auto held = std::make_shared<caf::response_promise>();
  return {
    [=](lifecycle::host_teardown_atom, int64_t) -> caf::response_promise {
      log::get("test").info("test teardown: started");
      *held = self->make_response_promise();
      self->delayed_send(self, std::chrono::milliseconds(delay_ms), s1208_done_atom::value);
      return *held;
    },
    [=](s1208_done_atom) {
      log::get("test").info("test teardown: done");
      held->deliver(std::string{});
    },
  };
}

/// Observer probe: logs "probe {name}: stop_stage" when its stop arrives; answers at once.
caf::behavior stage_probe(caf::event_based_actor*, std::string name) {
  return {
    [=](lifecycle::start_stage_atom, lifecycle::stage) { return caf::ok_atom::value; },
    [=](lifecycle::stop_stage_atom, lifecycle::stage, bool) {
      log::get("test").info("probe " + name + ": stop_stage");
      return caf::ok_atom::value;
    },
    [=](lifecycle::budget_expired_atom) {},
  };
}

/// Index of the first captured line containing `needle`, or -1.
long index_of(const std::vector<log::line>& ls, const std::string& needle) {
  for (size_t i = 0; i < ls.size(); ++i)
    if (ls[i].text.find(needle) != std::string::npos)
      return static_cast<long>(i);
  return -1;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S12.08 a silo host under traffic acknowledges host_stopping before any stop_stage, tears down after the lifecycle stop and reports torn_down after the teardown") {
  silo_world w{*this};
  auto resolver = track(sys.spawn(slow_resolver, int64_t{2000}));
  auto teardown = track(sys.spawn(slow_teardown, int64_t{1500}));
  silo_world_options o;
  o.resolver = resolver;
  o.teardown = caf::actor_cast<lifecycle::mesh_teardown_actor>(teardown);
  // Probe observers at the highest and lowest stages.
  auto top = track(sys.spawn(stage_probe, std::string{"20000"}));
  auto bottom = track(sys.spawn(stage_probe, std::string{"First"}));
  o.probes.emplace_back(lifecycle::stages::active, "probe-active",
                        caf::actor_cast<lifecycle::lifecycle_observer_actor>(top));
  o.probes.emplace_back(lifecycle::stages::first, "probe-first",
                        caf::actor_cast<lifecycle::lifecycle_observer_actor>(bottom));
  auto a = w.add_silo("a", o).addr;
  w.add_silo("b");
  REQUIRE(w.last_start->ok());
  auto& sa = w.at(a);
  // Traffic: 5 deliveries from a co-hosted hub, each leg waiting 2 s in path resolution.
  auto hub = track(routing::spawn_hub_endpoint(sys, routing::address::from("portal/h1"), sa.routing));
  caf::anon_send(sa.routing, routing::rs_register_atom::value,
                 routing::address::from("portal/h1"), caf::actor_cast<caf::actor>(hub));
  run();
  std::vector<std::shared_ptr<testing::reply<routing::envelope>>> sent;
  for (int i = 0; i < 5; ++i) {
    auto d = make_delivery("s1208-" + std::to_string(i), "node/Org/Acme");
    d.sender = routing::address::from("portal/h1");
    sent.push_back(testing::ask<routing::envelope>(*this, sa.routing, routing::rs_deliver_atom::value, d));
  }
  run();
  for (auto& r : sent) {
    REQUIRE(r->ok());
    CHECK(r->value.state == routing::delivery_state::forwarded);
  }
  auto count = testing::ask<uint64_t>(*this, sa.gauge, routing::q_count_atom::value);
  run();
  REQUIRE(count->ok());
  REQUIRE(count->value == 5);
  logs.clear();
  auto t0 = now_ms();
  auto stopped = w.stop(a, true);
  // While the teardown step runs, the runtime still answers alive.
  REQUIRE(run_until([&] { return logs.count("test teardown: started") == 1; }));
  auto t_teardown = now_ms();
  auto during = testing::ask<probe_answer>(*this, w.registry, lifecycle::probe_runtime_atom::value, a.to_string());
  run();
  REQUIRE(during->ok());
  CHECK(during->value == probe_answer::alive);
  REQUIRE(run_until([&] { return stopped->done; }));
  REQUIRE(stopped->ok());
  auto after = testing::ask<probe_answer>(*this, w.registry, lifecycle::probe_runtime_atom::value, a.to_string());
  run();
  REQUIRE(after->ok());
  CHECK(after->value == probe_answer::torn_down);
  auto ls = logs.lines();
  auto ack_rs = index_of(ls, "routing service: stopping signal received");
  auto ack_rc = index_of(ls, "router core: stopping signal received");
  auto all_acked = index_of(ls, "stopping signal acknowledged by all 3 recipient(s)");
  auto first_stop = index_of(ls, "probe 20000: stop_stage");
  auto lowest_stop = index_of(ls, "probe First: stop_stage");
  auto lc_stopped = index_of(ls, "silo lifecycle stopped");
  auto td_start = index_of(ls, "test teardown: started");
  auto td_done = index_of(ls, "test teardown: done");
  auto torn = index_of(ls, "runtime probe now answers torn_down");
  REQUIRE(ack_rs >= 0);
  REQUIRE(ack_rc >= 0);
  REQUIRE(first_stop >= 0);
  CHECK(ack_rs < first_stop);
  CHECK(ack_rc < first_stop);
  CHECK(all_acked < first_stop);
  // No stage saw stop_stage before the acknowledgements: the quiescence line comes after too.
  CHECK(all_acked < index_of(ls, "routing quiescence: holding silo stop for 5 route leg(s)"));
  // The legs land (resolution answers at t0 + 2 s) while the stop holds at Active.
  auto landed = logs.find("routing quiescence: work landed after 2000 ms");
  REQUIRE(landed.size() == 1);
  CHECK(landed[0].t_ms == t0 + 2000);
  // Teardown only after the lifecycle stop answered; torn_down only after the teardown.
  REQUIRE(lowest_stop >= 0);
  REQUIRE(lc_stopped >= 0);
  CHECK(lowest_stop < lc_stopped);
  CHECK(lc_stopped < td_start);
  CHECK(td_start < td_done);
  CHECK(td_done < torn);
  CHECK(t_teardown == t0 + 2000);
  CHECK(stopped->t_ms == t0 + 3500);
  CHECK(logs.count("mesh teardown clean") == 1);
  // The traffic landed: the node hub got all 5, in order, and the sender saw no NACK.
  std::vector<std::string> got;
  for (auto& e : w.silos)
    for (auto& kv : state_of<test_hub_factory_state>(e.hubs).hubs)
      for (auto& r : hub_of(kv.second).received)
        got.push_back(r.env.id);
  CHECK(got == std::vector<std::string>{"s1208-0", "s1208-1", "s1208-2", "s1208-3", "s1208-4"});
  CHECK(hub_of(hub).outcomes.empty());
}

TEST_CASE_FIXTURE(fixture, "silo: a non-graceful host stop publishes Stopping then Dead, does not hold and still stops every stage in order") {
  silo_world w{*this};
  auto resolver = track(sys.spawn(slow_resolver, int64_t{2000}));
  silo_world_options o;
  o.resolver = resolver;
  auto a = w.add_silo("a", o).addr;
  auto b = w.add_silo("b").addr;
  auto& sa = w.at(a);
  auto d = make_delivery("ng-1", "node/Org/Acme");
  d.sender = routing::address::from("portal/h1");
  auto r = testing::ask<routing::envelope>(*this, sa.routing, routing::rs_deliver_atom::value, d);
  run();
  REQUIRE(r->ok());
  logs.clear();
  auto t0 = now_ms();
  auto stopped = w.stop(a, false);
  REQUIRE(run_until([&] { return stopped->done; }));
  REQUIRE(stopped->ok());
  auto warn = logs.find("NON-gracefully", log::level::warning);
  REQUIRE(warn.size() == 1);
  CHECK(warn[0].text.find("dispatch -> node/Org/Acme (delivery ng-1)") != std::string::npos);
  CHECK(warn[0].t_ms == t0);
  CHECK(w.first(a, ev::shutting_down_published).index == -1);
  long prev = -1;
  for (auto needle : {ev::stop_send, ev::stopping_published, ev::all_deactivated,
                      ev::messages_blocked, ev::placement_stopped, ev::dead_published,
                      ev::centre_stopped, "routing I/O pool joined"}) {
    auto h = w.first(a, needle);
    INFO(needle);
    REQUIRE(h.index > prev);
    prev = h.index;
  }
  auto v = w.view_of(b);
  run();
  REQUIRE(v->ok());
  CHECK(v->value.find(a)->status == silo_status::dead);
}

namespace {

struct oracle_gate_state {
  bool hold_shutting_down = true;
  std::vector<caf::response_promise> held;
  static inline const char* name = "test.oracle_gate";
};

/// Between one agent and the oracle: passes everything, but never answers (nor forwards)
/// a ShuttingDown publication while `hold_shutting_down` is set.
caf::behavior oracle_gate(caf::stateful_actor<oracle_gate_state>* self, caf::actor oracle) {
  return {
    [=](mb_subscribe_atom a, const caf::actor& sub) { self->send(oracle, a, sub); },
    [=](mb_join_atom a, membership_row& row) -> caf::response_promise {
      auto rp = self->make_response_promise();
      self->request(oracle, caf::infinite, a, std::move(row))
        .then([=](uint64_t v) mutable { rp.deliver(v); },
              [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    },
    [=](mb_status_atom a, const silo_address& s, silo_status to) -> caf::response_promise {
      auto rp = self->make_response_promise();
      if (to == silo_status::shutting_down && self->state.hold_shutting_down) {
        self->state.held.push_back(rp);
        return rp;
      }
      self->request(oracle, caf::infinite, a, s, to)
        .then([=](uint64_t v) mutable { rp.deliver(v); },
              [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    },
  };
}

} // namespace

TEST_CASE_FIXTURE(fixture, "silo: when the ShuttingDown publication loses its 5 s grace window the silo warns and publishes Stopping (stage BecomeActive)") {
  silo_world w{*this};
  auto gate = track(sys.spawn(oracle_gate, caf::actor_cast<caf::actor>(w.oracle)));
  silo_world_options o;
  // A partial stand-in: it answers what an agent sends an oracle (subscribe, join, status).
  o.oracle = caf::actor_cast<membership_oracle_actor>(gate);
  auto a = w.add_silo("a", o).addr;
  w.add_silo("b");
  REQUIRE(w.last_start->ok());
  auto oracle_rec = track(sys.spawn(echo));
  caf::anon_send(w.oracle, mb_subscribe_atom::value, oracle_rec);
  run();
  logs.clear();
  auto t0 = now_ms();
  auto stopped = w.stop(a, true);
  REQUIRE(run_until([&] { return stopped->done; }));
  REQUIRE(stopped->ok());
  auto warn = logs.find("ShuttingDown not published within 5000 ms", log::level::warning);
  REQUIRE(warn.size() == 1);
  CHECK(warn[0].t_ms == t0 + 5000);
  CHECK(warn[0].text.find("publishing Stopping") != std::string::npos);
  CHECK(w.first(a, ev::shutting_down_published).index == -1);
  CHECK(w.first(a, ev::stopping_published).t_ms == t0 + 5000);
  CHECK(w.first(a, ev::stopping_published).index < w.first(a, ev::all_deactivated).index);
  CHECK(w.first(a, ev::dead_published).t_ms == t0 + 5000);
  CHECK(statuses_seen(oracle_rec, a) == std::vector<std::string>{"Active", "Stopping", "Dead"});
}

TEST_CASE_FIXTURE(fixture, "silo: the gateway part serves pure clients only between the Active start and the GrainDeactivation stop") {
  silo_world w{*this};
  silo_world_options o;
  o.start = false;
  auto a = w.add_silo("a", o).addr;
  auto& sa = w.at(a);
  auto d = make_delivery("gw-1", "node/Org/Acme");
  d.sender = routing::address::from("client/c1");
  auto route_call = [&](const routing::envelope& e) {
    return caf::make_message(pl_call_atom::value, grain_id{"routing", "default"}, int32_t{0},
                             caf::make_message(routing::hg_routes_atom::value,
                                               std::vector<routing::dispatch_item>{
                                                 {e, caf::timespan{0}}},
                                               silo_address{}));
  };
  auto p = track(sys.spawn(probe, static_cast<fixture*>(this)));
  auto& answers = state_of<probe_state>(p).answers;
  caf::anon_send(p, probe_ask_atom::value, sa.gateway, route_call(d), int64_t{0}, std::string{"before"});
  run();
  REQUIRE(answers.size() == 1);
  CHECK(to_fault(answers[0].error).code == mesh_errc::silo_unavailable);
  CHECK(to_fault(answers[0].error).text
        == "gateway " + a.to_string()
             + " is not accepting client messages (it is starting or stopping); send through "
               "another Active gateway");
  auto started = testing::ask(*this, sa.host, lifecycle::host_start_atom::value);
  run();
  REQUIRE(started->ok());
  // A pure client connected to A: its delivery lands through the gateway and routing/default.
  auto c = w.add_client("c", a);
  auto hub = track(routing::spawn_hub_endpoint(sys, routing::address::from("client/c1"), c.routing));
  caf::anon_send(c.routing, routing::rs_register_atom::value, routing::address::from("client/c1"),
                 caf::actor_cast<caf::actor>(hub));
  run();
  auto sent = testing::ask<routing::envelope>(*this, c.routing, routing::rs_deliver_atom::value, d);
  run_for(std::chrono::seconds(1));
  REQUIRE(sent->ok());
  CHECK(sent->value.state == routing::delivery_state::forwarded);
  std::vector<std::string> got;
  for (auto& kv : state_of<test_hub_factory_state>(w.entry(a).hubs).hubs)
    for (auto& r : hub_of(kv.second).received)
      got.push_back(r.env.id);
  CHECK(got == std::vector<std::string>{"gw-1"});
  // Stop the lifecycle alone (no host step 5: the actors stay up to be asked).
  auto lc = testing::ask(*this, sa.subject, lifecycle::run_stop_atom::value, true);
  REQUIRE(run_until([&] { return lc->done; }));
  INFO(to_fault(lc->err).text);
  REQUIRE(lc->ok());
  CHECK(state_of<echo_state>(c.inbox).received.size() == 1);
  auto d2 = make_delivery("gw-2", "node/Org/Acme");
  caf::anon_send(p, probe_ask_atom::value, sa.gateway, route_call(d2), int64_t{0}, std::string{"after"});
  run();
  REQUIRE(answers.size() == 2);
  CHECK(to_fault(answers[1].error).code == mesh_errc::silo_unavailable);
  CHECK(w.first(a, ev::gateway_closed).index > w.first(a, ev::all_deactivated).index);
}

TEST_CASE_FIXTURE(fixture, "silo: a running silo that membership declares Dead stops non-gracefully by itself, the others keep running") {
  silo_world w{*this};
  auto& sa = w.add_silo("a");
  auto a = sa.addr;
  auto host_a = sa.host;
  auto b = w.add_silo("b").addr;
  auto declared = testing::ask<uint64_t>(*this, w.oracle, mb_dead_atom::value, a);
  auto halted = [&] {
    auto st = testing::ask<lifecycle::host_phase>(*this, host_a, lifecycle::host_state_atom::value);
    run();
    return st->ok() && st->value == lifecycle::host_phase::torn_down;
  };
  REQUIRE(run_until([&] { return declared->done && halted(); }, std::chrono::minutes(2)));
  REQUIRE(declared->ok());
  CHECK(logs.count("shows this silo Dead: stopping non-gracefully") == 1);
  CHECK(w.first(a, "shows this silo Dead").index >= 0);
  auto v = w.view_of(b);
  run();
  REQUIRE(v->ok());
  CHECK(v->value.active_set() == std::vector<silo_address>{b});
  CHECK(w.first(b, "shows this silo Dead").index < 0);
}

TEST_CASE_FIXTURE(fixture, "S15.07 silo: a silo that membership declares Dead blocks application messages at once, before its stop deactivates its grains") {
  // After a partition heals, the calls its peers sent before the cut can still arrive: the
  // centre refuses them from the moment the silo learns that it is Dead, not only at the
  // stop's blocking stage after GrainDeactivation.
  silo_world w{*this};
  auto& sa = w.add_silo("a");
  auto a = sa.addr;
  w.add_silo("b");
  auto declared = testing::ask<uint64_t>(*this, w.oracle, mb_dead_atom::value, a);
  REQUIRE(run_until([&] { return declared->done && w.first(a, ev::all_deactivated).index >= 0; },
                    std::chrono::minutes(2)));
  auto dead = w.first(a, "shows this silo Dead: stopping non-gracefully");
  auto blocked = w.first(a, "leaving (not graceful)"); // the centre's notice when it blocks
  REQUIRE(dead.index >= 0);
  REQUIRE(blocked.index >= 0);
  CHECK(blocked.t_ms == dead.t_ms);
  CHECK(blocked.index < w.first(a, ev::all_deactivated).index);
}
