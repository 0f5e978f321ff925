/// @file
/// P1, P1q, P1b and P7 (examples/bench/README.md): the co-hosted router-core path (one-way
/// posts, P1; `rs_deliver` requests, P1q) and the co-hosted local route (P1b) against raw
/// CAF one-way sends, each repetition measuring its own raw baseline right before the case,
/// in wall time (rates) and process CPU time; the mailbox enqueues and CAF timers per
/// delivery of P1 and P1q counted once on CAF's test coordinator (counting.hpp).

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.hpp"
#include "counting.hpp"
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

/// The router core's statistics, asked by an actor (a blocking request would never be
/// answered on the test coordinator); null when no answer came.
std::shared_ptr<router_core_stats> ask_stats(counted_system& cs, const router_core_actor& rc) {
  auto out = std::make_shared<router_core_stats>();
  auto got = std::make_shared<bool>(false);
  cs.sys().spawn([=](caf::event_based_actor* self) {
    self->request(rc, caf::infinite, rc_stats_atom::value)
      .then([=](router_core_stats& st) { *out = std::move(st), *got = true; });
  });
  cs.run();
  return *got ? out : nullptr;
}

/// The flow of P1 (`post`) or P1q (`rs_deliver` requests) once on CAF's test coordinator:
/// `warm` deliveries, then `n` counted ones, each from one message to the driver.
flow_cost count_rig_flow(bool post, uint64_t warm, uint64_t n) {
  flow_cost fc;
  fc.deliveries = n;
  counted_system cs;
  core_rig rig{cs.sys()};
  cs.run();
  auto protos = protos_of({make_proto(address{"node", "Org/Bench", {}})});
  auto flow = [&](uint64_t k) {
    auto answered_goal = rig.answered.count.load() + k;
    auto answers_goal = rig.answers.count.load() + (post ? 0 : k);
    if (post)
      rig.post(k, protos);
    else
      rig.start_deliver(k, protos);
    return cs.run_until([&] {
      return rig.answered.count.load() >= answered_goal
             && rig.answers.count.load() >= answers_goal;
    });
  };
  if (!flow(warm)) {
    fc.why = "the warm-up did not land";
    return fc;
  }
  cs.reset();
  bool ok = flow(n);
  fc.t = cs.counted();
  fc.t.jobs -= fc.t.jobs > 0 ? 1 : 0; // less the driver's own `go` message
  auto st = ask_stats(cs, rig.core());
  if (!ok || !st || st->landed != warm + n || st->in_flight != 0 || rig.answers.bad.load() != 0) {
    fc.why = "the counted flow did not land every leg";
    return fc;
  }
  fc.ok = true;
  return fc;
}

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

  // The router-core path: node legs through the co-hosted router core (rig.hpp), whose
  // fake resolver marks its answers cacheable. P1: the driver posts one-way; P1q: the
  // driver keeps a window of `rs_deliver` requests. A batch ends when the fake grain port has
  // answered every call and the router core then counts every leg landed (one `rc_stats`).
  core_rig rig{sys};
  auto core_protos = protos_of({make_proto(address{"node", "Org/Bench", {}})});
  uint64_t landed_goal = 0;
  bool core_ok = true;
  auto core_batch = [&](uint64_t n, bool post) -> timing {
    landed_goal += n;
    auto t0 = clock_type::now();
    auto c0 = process_cpu_s();
    bool ok = true;
    if (post)
      rig.post(n, core_protos);
    else
      ok = rig.deliver(n, core_protos);
    ok = ok && rig.wait_landed(landed_goal, landed_goal);
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
  core_batch(sz.core / 10, true);
  core_batch(sz.core / 10, false);

  std::vector<double> p1, p1q, p1b, p7, raw_rates, local_rates, core_rates, req_rates;
  nlohmann::json reps = nlohmann::json::array();
  for (int r = 0; r < sz.reps && core_ok; ++r) {
    auto raw_a = raw_batch(sz.raw);
    timing loc;
    if (registered)
      loc = local_batch(sz.local);
    auto raw_b = raw_batch(sz.raw);
    auto core = core_batch(sz.core, true);
    auto raw_c = raw_batch(sz.raw);
    auto req = core_batch(sz.core, false);
    double raw_a_rate = sz.raw / raw_a.wall;
    double raw_b_rate = sz.raw / raw_b.wall;
    double raw_c_rate = sz.raw / raw_c.wall;
    double loc_rate = registered ? sz.local / loc.wall : 0;
    double core_rate = sz.core / core.wall;
    double req_rate = sz.core / req.wall;
    double raw_cpu_per = raw_b.cpu / sz.raw;
    double core_cpu_per = core.cpu / sz.core;
    raw_rates.push_back(raw_a_rate);
    raw_rates.push_back(raw_b_rate);
    raw_rates.push_back(raw_c_rate);
    local_rates.push_back(loc_rate);
    core_rates.push_back(core_rate);
    req_rates.push_back(req_rate);
    p1.push_back(core_rate / raw_b_rate);
    p1q.push_back(req_rate / raw_c_rate);
    p1b.push_back(loc_rate / raw_a_rate);
    p7.push_back(core_cpu_per / raw_cpu_per);
    reps.push_back({{"raw_before_local_per_s", raw_a_rate},
                    {"local_route_per_s", loc_rate},
                    {"raw_before_core_per_s", raw_b_rate},
                    {"router_core_post_per_s", core_rate},
                    {"raw_before_requests_per_s", raw_c_rate},
                    {"router_core_requests_per_s", req_rate},
                    {"p1_ratio", p1.back()},
                    {"p1q_ratio", p1q.back()},
                    {"p1b_ratio", p1b.back()},
                    {"raw_cpu_us_per_send", raw_cpu_per * 1e6},
                    {"core_cpu_us_per_delivery", core_cpu_per * 1e6},
                    {"p7_ratio", p7.back()},
                    {"load_1min", load_1min()}});
    std::fprintf(stderr,
                 "  rep %d: raw %.0f/s local %.0f/s (%.3f) | raw %.0f/s post %.0f/s (%.3f) "
                 "cpu %.2f us vs %.3f us (%.1f x) | raw %.0f/s requests %.0f/s (%.3f)\n",
                 r + 1, raw_a_rate, loc_rate, p1b.back(), raw_b_rate, core_rate, p1.back(),
                 core_cpu_per * 1e6, raw_cpu_per * 1e6, p7.back(), raw_c_rate, req_rate,
                 p1q.back());
  }
  // Mailbox enqueues and CAF timers per delivery: the same flows once on CAF's test
  // coordinator, 1,000 deliveries after a 100-delivery warm-up.
  auto post_cost = count_rig_flow(true, 100, 1000);
  auto req_cost = count_rig_flow(false, 100, 1000);
  post_cost.report("P1");
  req_cost.report("P1q");
  auto st = rig.stats();
  if (!core_ok || rig.answers.bad.load() != 0 || st.landed != st.accepted) {
    out.push_back(failed_row("P1", "co-hosted router core, one-way post / raw one-way",
                             "legs did not all land or an answer was not forwarded"));
    out.push_back(failed_row("P1q", "co-hosted router core, rs_deliver requests / raw one-way",
                             "legs did not all land or an answer was not forwarded"));
  } else {
    auto core_row = [&](const char* id, const char* what, const std::vector<double>& ratios,
                        const std::vector<double>& rates, const char* name,
                        const flow_cost& cost, bool with_reps) {
      auto r = make_row(id, what, median(ratios), "x", 0.25, true);
      char buf[240];
      std::snprintf(buf, sizeof buf,
                    "median of %zu reps: %s %.0f/s, raw %.0f/s; per-rep range %.3f-%.3f; "
                    "vs the run's median raw %.3f",
                    ratios.size(), name, median(rates), median(raw_rates),
                    *std::min_element(ratios.begin(), ratios.end()),
                    *std::max_element(ratios.begin(), ratios.end()),
                    median(rates) / median(raw_rates));
      r.detail = buf + cost.detail();
      r.data = {{"ratios", ratios}, {"batch", sz.core}, {"raw_batch", sz.raw},
                {"rates_per_s", rates}, {"rc_stats_asked", rig.stats_checks.load()}};
      if (with_reps)
        r.data["repetitions"] = reps;
      cost.add_to(r.data);
      out.push_back(std::move(r));
    };
    // P1q keeps the goal P1 had while it measured this request variant.
    core_row("P1", "co-hosted router core, one-way post / raw one-way", p1, core_rates, "post",
             post_cost, true);
    core_row("P1q", "co-hosted router core, rs_deliver requests / raw one-way", p1q, req_rates,
             "requests", req_cost, false);
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
