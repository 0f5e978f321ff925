/// @file
/// P1, P1b and P7 (examples/bench/README.md): the co-hosted router-core path and the
/// co-hosted local route against raw CAF one-way sends, each repetition measuring its own
/// raw baseline right before the case, in wall time (rates) and process CPU time.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.hpp"
#include "rig.hpp"

#include "cafmesh/routing/entry_atoms.hpp"

namespace cafmesh::bench {

using namespace cafmesh::routing;

namespace {

struct sizes {
  int reps;
  uint64_t raw;
  uint64_t local;
  uint64_t core;
};

/// One timed batch: wall seconds and process CPU seconds.
struct timing {
  double wall = 0;
  double cpu = 0;
};

} // namespace

rows run_co_hosted(const options& opt, caf::actor_system& sys) {
  sizes sz = opt.quick ? sizes{10, 100000, 100000, 20000} : sizes{10, 200000, 200000, 40000};
  rows out;
  progress sunk;
  progress local_answers;
  auto snk = sys.spawn(bench_sink, &sunk);
  auto raw_drv = sys.spawn(bench_driver, &local_answers);
  auto local_drv = sys.spawn(bench_driver, &local_answers);
  auto node_target = address{"node", "bench", {}};
  auto raw_proto = make_proto(node_target);

  // The local route: a silo_host routing service whose route table maps the target to
  // the sink (docs/behaviour/routing.md#the-entry, step 1).
  routing_service_options lo;
  lo.role = config::process_role::silo_host;
  lo.process_name = "bench-local";
  auto local_rs = spawn_routing_service(sys, lo);
  bool registered = false;
  {
    caf::scoped_actor self{sys};
    self->request(local_rs, caf::infinite, rs_register_atom::value, node_target, snk)
      .receive([&](caf::ok_atom) { registered = true; }, [&](caf::error&) {});
  }
  auto local_protos = protos_of({make_proto(node_target)});
  auto local_batch = [&](uint64_t n) -> timing {
    sunk.arm(n);
    local_answers.arm(n);
    auto t0 = clock_type::now();
    auto c0 = process_cpu_s();
    caf::anon_send(local_drv, bn_req_atom::value, local_rs, n, local_protos, uint64_t{0});
    sunk.wait();
    local_answers.wait();
    return {seconds_since(t0), process_cpu_s() - c0};
  };

  // The router-core path: node legs through the co-hosted router core (rig.hpp).
  core_rig rig{sys};
  auto core_protos = protos_of({make_proto(address{"node", "Org/Bench", {}})});
  uint64_t landed_goal = 0;
  bool core_ok = true;
  auto core_batch = [&](uint64_t n) -> timing {
    landed_goal += n;
    auto t0 = clock_type::now();
    auto c0 = process_cpu_s();
    bool ok = rig.deliver(n, core_protos) && rig.wait_landed(landed_goal, landed_goal);
    timing t{seconds_since(t0), process_cpu_s() - c0};
    if (!ok)
      core_ok = false;
    return t;
  };
  auto raw_batch = [&](uint64_t n) -> timing {
    auto [wall, cpu] = raw_one_way_batch(raw_drv, snk, sunk, n, raw_proto);
    return {wall, cpu};
  };

  // Warm-up (allocator arenas, CAF's mailboxes, the router core's maps).
  raw_batch(sz.raw / 10);
  if (registered)
    local_batch(sz.local / 10);
  core_batch(sz.core / 10);

  std::vector<double> p1, p1b, p7, raw_rates, local_rates, core_rates;
  nlohmann::json reps = nlohmann::json::array();
  for (int r = 0; r < sz.reps && core_ok; ++r) {
    auto raw_a = raw_batch(sz.raw);
    timing loc;
    if (registered)
      loc = local_batch(sz.local);
    auto raw_b = raw_batch(sz.raw);
    auto core = core_batch(sz.core);
    double raw_a_rate = sz.raw / raw_a.wall;
    double raw_b_rate = sz.raw / raw_b.wall;
    double loc_rate = registered ? sz.local / loc.wall : 0;
    double core_rate = sz.core / core.wall;
    double raw_cpu_per = raw_b.cpu / sz.raw;
    double core_cpu_per = core.cpu / sz.core;
    raw_rates.push_back(raw_a_rate);
    raw_rates.push_back(raw_b_rate);
    local_rates.push_back(loc_rate);
    core_rates.push_back(core_rate);
    p1.push_back(core_rate / raw_b_rate);
    p1b.push_back(loc_rate / raw_a_rate);
    p7.push_back(core_cpu_per / raw_cpu_per);
    reps.push_back({{"raw_before_local_per_s", raw_a_rate},
                    {"local_route_per_s", loc_rate},
                    {"raw_before_core_per_s", raw_b_rate},
                    {"router_core_per_s", core_rate},
                    {"p1_ratio", p1.back()},
                    {"p1b_ratio", p1b.back()},
                    {"raw_cpu_us_per_send", raw_cpu_per * 1e6},
                    {"core_cpu_us_per_delivery", core_cpu_per * 1e6},
                    {"p7_ratio", p7.back()},
                    {"load_1min", load_1min()}});
    std::fprintf(stderr,
                 "  rep %d: raw %.0f/s local %.0f/s (%.3f) | raw %.0f/s core %.0f/s (%.3f) "
                 "cpu %.2f us vs %.3f us (%.1f x)\n",
                 r + 1, raw_a_rate, loc_rate, p1b.back(), raw_b_rate, core_rate, p1.back(),
                 core_cpu_per * 1e6, raw_cpu_per * 1e6, p7.back());
  }
  auto st = rig.stats();
  if (!core_ok || rig.answers.bad.load() != 0 || st.landed != st.accepted) {
    out.push_back(failed_row("P1", "co-hosted router core / raw one-way",
                             "legs did not all land or an answer was not forwarded"));
  } else {
    auto r = make_row("P1", "co-hosted router core / raw one-way", median(p1), "x", 0.25, true);
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "median of %zu reps: core %.0f/s, raw %.0f/s; per-rep range %.3f-%.3f; "
                  "vs the run's median raw %.3f",
                  p1.size(), median(core_rates), median(raw_rates),
                  *std::min_element(p1.begin(), p1.end()), *std::max_element(p1.begin(), p1.end()),
                  median(core_rates) / median(raw_rates));
    r.detail = buf;
    r.data = {{"ratios", p1}, {"batch", sz.core}, {"raw_batch", sz.raw}, {"repetitions", reps}};
    out.push_back(std::move(r));
  }
  if (!registered || local_answers.bad.load() != 0) {
    out.push_back(failed_row("P1b", "co-hosted local route / raw one-way",
                             "local route not registered or an answer was not forwarded"));
  } else {
    size_t passing = 0;
    std::string list;
    for (auto x : p1b) {
      passing += x >= 0.33 ? 1 : 0;
      char buf[16];
      std::snprintf(buf, sizeof buf, "%s%.2f", list.empty() ? "" : " ", x);
      list += buf;
    }
    auto r = make_row("P1b", "co-hosted local route / raw one-way", median(p1b), "x", 0.33,
                      true);
    // The goal: >= 0.33 in 9 of 10 runs.
    r.met = p1b.size() >= 10 && passing * 10 >= p1b.size() * 9;
    r.goal = ">= 0.33 in 9 of 10";
    char buf[80];
    std::snprintf(buf, sizeof buf, "; vs the run's median raw %.3f",
                  median(local_rates) / median(raw_rates));
    r.detail = std::to_string(passing) + " of " + std::to_string(p1b.size())
               + " reps >= 0.33; per rep: " + list + buf;
    r.data = {{"ratios", p1b}, {"passing", passing}, {"batch", sz.local}};
    out.push_back(std::move(r));
  }
  if (core_ok) {
    auto r = make_row("P7", "CPU per router-core delivery / per raw one-way send", median(p7),
                      "x", 5, false);
    std::vector<double> core_us, raw_us;
    for (auto& rep : reps) {
      core_us.push_back(rep["core_cpu_us_per_delivery"].get<double>());
      raw_us.push_back(rep["raw_cpu_us_per_send"].get<double>());
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "median %.2f us CPU per delivery vs %.3f us per raw send",
                  median(core_us), median(raw_us));
    r.detail = buf;
    r.data = {{"ratios", p7}, {"core_cpu_us", core_us}, {"raw_cpu_us", raw_us}};
    out.push_back(std::move(r));
  }
  for (auto h : {snk, raw_drv, local_drv, caf::actor_cast<caf::actor>(local_rs)})
    caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
  return out;
}

} // namespace cafmesh::bench
