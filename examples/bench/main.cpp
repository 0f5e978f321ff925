/// @file
/// cafmesh-bench: microbenchmarks of the co-hosted routing hot path against raw CAF, measured
/// in the same run and reported as ratios (project rule: the co-hosted hot path is held to
/// >= 25 % of raw CAF's one-way send rate). See examples/bench/README.md.
///
/// Cases (every one moves the same small `cafmesh::routing::envelope`):
/// - `raw_caf_one_way`: a driver actor sends N `(hb_in_atom, envelope)` one-way messages to
///   a sink actor.
/// - `co_hosted_local_route`: the driver sends N `(rs_deliver_atom, envelope)` REQUESTS
///   (the protocol is request/reply: the routing service answers `forwarded` at once) to a
///   `silo_host` routing service whose local route table maps the target to the sink (SPEC
///   §6.2 step 1); a batch ends when the sink has seen N envelopes AND the driver N answers.
/// - `co_hosted_router_core`: the driver sends N `rs_deliver` requests to a `silo_host`
///   routing service without a local route for the target; it hands every envelope to its
///   co-hosted router core (SPEC §6.2 step 4), which runs a node leg per delivery through the
///   real quiescence gauge and I/O pool against a fake path resolver and a fake grain port
///   that answers `processed` at once. A batch ends when the driver has N answers and the
///   router core's stats show N more landed legs.
///
/// Each benchmark iteration is one batch; time is wall-clock (`UseRealTime`), items = N.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <caf/all.hpp>

#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/io_pool.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/routing/router_core.hpp"
#include "cafmesh/routing/routing_service.hpp"

namespace {

using namespace cafmesh;
using namespace cafmesh::routing;

using bn_raw_atom = caf::atom_constant<caf::atom("bnraw")>;
using bn_req_atom = caf::atom_constant<caf::atom("bnreq")>;

/// Batch sizes (envelopes per benchmark iteration).
constexpr uint64_t raw_batch = 100000;
constexpr uint64_t local_batch = 100000;
constexpr uint64_t core_batch = 20000;

caf::actor_system* sys_ptr = nullptr;

/// A counter the benchmark thread can wait on (the actors only bump it).
struct progress {
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> target{~uint64_t{0}};
  std::atomic<uint64_t> bad{0}; ///< answers that were not `forwarded`, or errors
  std::mutex mtx;
  std::condition_variable cv;

  void bump() {
    if (count.fetch_add(1) + 1 == target.load()) {
      std::lock_guard<std::mutex> guard{mtx};
      cv.notify_all();
    }
  }

  /// Arms the next target `n` envelopes ahead of what was counted so far.
  void arm(uint64_t n) { target.store(count.load() + n); }

  void wait() {
    std::unique_lock<std::mutex> guard{mtx};
    cv.wait(guard, [&] { return count.load() >= target.load(); });
  }
};

/// The sink: counts `(hb_in_atom, envelope)` messages, the shape a local route receives.
caf::behavior sink(caf::event_based_actor*, progress* p) {
  return {
    [=](hb_in_atom, const envelope&) { p->bump(); },
  };
}

/// Most `rs_deliver` requests one driver keeps outstanding. CAF 0.17 keeps a requester's
/// pending response handlers in a flat map searched linearly, so flooding 100,000 requests
/// at once measures that lookup, not the routing service; a bounded window measures a
/// pipelined request stream instead.
constexpr uint64_t request_window = 128;

struct driver_state {
  routing_service_actor rs;
  envelope proto;
  uint64_t remaining = 0;
  static inline const char* name = "bench.driver";
};

/// The driver: pushes a one-way batch in one handler, or a request batch through a window.
caf::behavior driver(caf::stateful_actor<driver_state>* self, progress* answers) {
  // Owned by the behavior; the response handlers use the raw pointer (no ownership cycle;
  // they never run after the actor quit).
  auto send_one_owner = std::make_shared<std::function<void()>>();
  auto send_one = send_one_owner.get();
  *send_one = [=] {
    auto& st = self->state;
    --st.remaining;
    self->request(st.rs, caf::infinite, rs_deliver_atom::value, st.proto)
      .then(
        [=](const envelope& answer) {
          if (answer.state != delivery_state::forwarded)
            answers->bad.fetch_add(1);
          answers->bump();
          if (self->state.remaining > 0)
            (*send_one)();
        },
        [=](caf::error&) {
          answers->bad.fetch_add(1);
          answers->bump();
          if (self->state.remaining > 0)
            (*send_one)();
        });
  };
  return {
    [=, keep = send_one_owner](bn_raw_atom, const caf::actor& dst, uint64_t n, const envelope& proto) {
      for (uint64_t i = 0; i < n; ++i)
        self->send(dst, hb_in_atom::value, proto);
    },
    [=](bn_req_atom, const routing_service_actor& rs, uint64_t n, const envelope& proto) {
      auto& st = self->state;
      st.rs = rs;
      st.proto = proto;
      st.remaining = n;
      for (uint64_t i = 0; i < request_window && st.remaining > 0; ++i)
        (*send_one)();
    },
  };
}

/// The small envelope every case moves.
envelope make_proto(address target) {
  envelope d;
  d.id = "bench-1";
  d.sender = address{"portal", "bench", {}};
  d.target = std::move(target);
  d.payload_type = "bench.ping";
  d.payload_json = R"({"n":1})";
  return d;
}

/// A grain port that answers every delivery `processed` at once.
grain_port_actor::behavior_type instant_grains(grain_port_actor::pointer, progress* p) {
  return {
    [=](gp_deliver_atom, const grain_id&, envelope& d) -> envelope {
      p->bump();
      d.state = delivery_state::processed;
      return std::move(d);
    },
    [](gp_invalidate_atom, const grain_id&) {},
    [](gp_inval_silo_atom, const silo_address&) {},
    [](gp_act_error_atom, const grain_id&) -> std::string { return {}; },
  };
}

/// A path resolver: `node/{prefix}` -> node prefix.
path_resolver_actor::behavior_type node_resolver(path_resolver_actor::pointer) {
  return {
    [](pr_resolve_atom, const std::string& path) {
      resolve_result r;
      if (path.rfind("node/", 0) == 0) {
        r.found = true;
        r.node_prefix = path.substr(5);
      }
      return r;
    },
  };
}

template <class... Handles>
void exit_all(Handles&... hs) {
  (caf::anon_send_exit(hs, caf::exit_reason::user_shutdown), ...);
}

// -- cases ---------------------------------------------------------------------------------

void raw_caf_one_way(benchmark::State& state) {
  auto& sys = *sys_ptr;
  progress sunk;
  progress answers;
  auto snk = sys.spawn(sink, &sunk);
  auto drv = sys.spawn(driver, &answers);
  auto proto = make_proto(address{"node", "bench", {}});
  for (auto _ : state) {
    sunk.arm(raw_batch);
    caf::anon_send(drv, bn_raw_atom::value, snk, raw_batch, proto);
    sunk.wait();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * raw_batch));
  exit_all(snk, drv);
}

void co_hosted_local_route(benchmark::State& state) {
  auto& sys = *sys_ptr;
  progress sunk;
  progress answers;
  auto snk = sys.spawn(sink, &sunk);
  auto drv = sys.spawn(driver, &answers);
  routing_service_options opts;
  opts.role = config::process_role::silo_host;
  opts.process_name = "bench";
  auto rs = spawn_routing_service(sys, opts);
  auto target = address{"node", "bench", {}};
  {
    caf::scoped_actor self{sys};
    bool ok = false;
    self->request(rs, caf::infinite, rs_register_atom::value, target, snk)
      .receive([&](caf::ok_atom) { ok = true; }, [&](caf::error&) {});
    if (!ok) {
      state.SkipWithError("rs_register failed");
      exit_all(snk, drv, rs);
      return;
    }
  }
  auto proto = make_proto(target);
  for (auto _ : state) {
    sunk.arm(local_batch);
    answers.arm(local_batch);
    caf::anon_send(drv, bn_req_atom::value, rs, local_batch, proto);
    sunk.wait();
    answers.wait();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * local_batch));
  if (answers.bad.load() != 0)
    state.SkipWithError("routing service answered something other than forwarded");
  exit_all(snk, drv, rs);
}

void co_hosted_router_core(benchmark::State& state) {
  auto& sys = *sys_ptr;
  progress grain_calls;
  progress answers;
  silo_address silo{"127.0.0.1", 11111, 1};
  config::mesh_config cfg;
  // The hot path is measured without admission control: the batch floods the core faster
  // than it can work, and the peak of legs in flight is reported (`peak_in_flight`), the
  // figure `routing.max_in_flight` is chosen against.
  cfg.routing.max_in_flight = 0;
  uint64_t peak_in_flight = 0;
  auto gauge = routing::spawn_routing_quiescence(sys, {silo.to_string()});
  auto pool = routing::spawn_io_pool(sys, routing::io_pool_options::from(cfg.pool,
                                                                             silo.to_string()));
  auto grains = sys.spawn(instant_grains, &grain_calls);
  auto resolver = sys.spawn(node_resolver);
  auto co = router_core_options::from(cfg, silo);
  co.gauge = gauge;
  co.pool = pool;
  co.grains = grains;
  co.resolver = resolver;
  auto rc = spawn_router_core(sys, co);
  auto ro = routing_service_options::from(cfg);
  ro.role = config::process_role::silo_host;
  ro.process_name = "bench";
  ro.core = rc;
  auto rs = spawn_routing_service(sys, ro);
  caf::anon_send(rc, rc_locals_atom::value, caf::actor_cast<local_route_port_actor>(rs));
  auto drv = sys.spawn(driver, &answers);
  auto proto = make_proto(address{"node", "Org/Bench", {}});
  caf::scoped_actor self{sys};
  auto stats = [&] {
    router_core_stats out;
    self->request(rc, caf::infinite, rc_stats_atom::value)
      .receive([&](router_core_stats& x) { out = std::move(x); }, [&](caf::error&) {});
    return out;
  };
  uint64_t landed_goal = 0;
  bool broken = false;
  for (auto _ : state) {
    grain_calls.arm(core_batch);
    answers.arm(core_batch);
    landed_goal += core_batch;
    caf::anon_send(drv, bn_req_atom::value, rs, core_batch, proto);
    answers.wait();
    // Every delivery of the batch is handed over now: the pile-up in the core is near its
    // peak (one extra core turn per batch).
    peak_in_flight = std::max(peak_in_flight, stats().in_flight);
    grain_calls.wait();
    // The leg lands after the grain port's answer reaches it: wait for the core's count.
    // Polled every 50 us, not in a busy loop: each `rc_stats` request is a router-core turn
    // that lists every leg in flight, which a busy poll would add to the measured path.
    for (;;) {
      auto st = stats();
      if (st.landed >= landed_goal)
        break;
      if (st.terminal_events > st.landed) {
        broken = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (broken)
      break;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * core_batch));
  state.counters["peak_in_flight"] = static_cast<double>(peak_in_flight);
  auto st = stats();
  if (broken || answers.bad.load() != 0 || st.landed != st.accepted)
    state.SkipWithError("router core legs did not all land or an answer was not forwarded");
  exit_all(drv, rs, rc, grains, resolver, pool, gauge);
}

// -- reporting -------------------------------------------------------------------------------

/// Console output plus the per-iteration-run rates, for the ratio table.
class ratio_reporter : public benchmark::ConsoleReporter {
public:
  std::map<std::string, std::vector<double>> rates;

  void ReportRuns(const std::vector<Run>& runs) override {
    for (auto& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred)
        continue;
      auto i = r.counters.find("items_per_second");
      if (i != r.counters.end())
        rates[r.run_name.function_name].push_back(i->second.value);
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  auto n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2.0;
}

std::string loadavg() {
  std::ifstream in{"/proc/loadavg"};
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

} // namespace

BENCHMARK(raw_caf_one_way)->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(5);
BENCHMARK(co_hosted_local_route)->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(5);
BENCHMARK(co_hosted_router_core)->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(5);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  auto load_before = loadavg();
  int rc = 0;
  {
    caf::actor_system_config cfg; // default: work-stealing scheduler
    caf::actor_system sys{cfg};
    sys_ptr = &sys;
    ratio_reporter rep;
    benchmark::RunSpecifiedBenchmarks(&rep);
    sys_ptr = nullptr;
    std::printf("\nload average before: %s, after: %s\n", load_before.c_str(),
                loadavg().c_str());
    std::printf("%-24s %6s %16s %14s\n", "case", "runs", "median items/s", "vs raw CAF");
    auto raw = rep.rates.find("raw_caf_one_way");
    double raw_rate = raw != rep.rates.end() && !raw->second.empty() ? median(raw->second) : 0;
    for (const char* name : {"raw_caf_one_way", "co_hosted_local_route", "co_hosted_router_core"}) {
      auto i = rep.rates.find(name);
      if (i == rep.rates.end() || i->second.empty())
        continue;
      auto m = median(i->second);
      if (raw_rate > 0)
        std::printf("%-24s %6zu %16.0f %13.1f%%\n", name, i->second.size(), m,
                    100.0 * m / raw_rate);
      else
        std::printf("%-24s %6zu %16.0f %14s\n", name, i->second.size(), m, "(no raw run)");
    }
    benchmark::Shutdown();
  }
  return rc;
}
