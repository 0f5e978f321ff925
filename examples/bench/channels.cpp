/// @file
/// P5 (examples/bench/README.md): the router core's cost per delivery while 10, 1,000 or 100,000
/// ordering channels are open. A channel exists while it has a leg (the dispatcher keeps no idle
/// channel, docs/behaviour/routing.md#the-ordered-dispatcher), so the rig opens C channels with C
/// stream-routed deliveries to distinct targets `portal/o{i}` whose pod-hub calls the fake grain
/// port never answers; then it times deliveries round-robin over 100 other stream-routed targets
/// `portal/m{j}` (answered at once) while the C legs stay in flight.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.hpp"
#include "rig.hpp"

namespace cafmesh::bench {

using namespace cafmesh::routing;

rows run_channels(const options& opt, caf::actor_system& sys) {
  const std::vector<uint64_t> counts{10, 1000, 100000};
  const uint64_t batch = opt.quick ? 5000 : 20000;
  const int reps = opt.quick ? 2 : 3;
  const uint64_t measured_targets = 100;
  rows out;
  std::vector<envelope> open_list;
  open_list.reserve(counts.back());
  for (uint64_t i = 0; i < counts.back(); ++i)
    open_list.push_back(make_proto(address{"portal", "o" + std::to_string(i), {}}));
  auto open_protos = protos_of(std::move(open_list));
  std::vector<envelope> m_list;
  for (uint64_t j = 0; j < measured_targets; ++j)
    m_list.push_back(make_proto(address{"portal", "m" + std::to_string(j), {}}));
  auto m_protos = protos_of(std::move(m_list));

  nlohmann::json per_count = nlohmann::json::array();
  std::vector<double> wall_us, cpu_us;
  for (auto c : counts) {
    rig_options ro;
    ro.answer = [](const grain_id& g) {
      return g.key.rfind("portal/o", 0) == 0 ? grain_answer::never : grain_answer::at_once;
    };
    core_rig rig{sys, ro};
    auto t_open = clock_type::now();
    if (!rig.deliver(c, open_protos) || !rig.grain_calls.wait_for_count(c, 300)) {
      out.push_back(failed_row("P5", "router-core cost growth with open channels",
                               "could not open " + std::to_string(c) + " channels"));
      return out;
    }
    double open_s = seconds_since(t_open);
    auto st0 = rig.stats();
    // Warm-up on the measured targets, then the timed batches. Each ends when the fake grain
    // port has answered every measured call (a counter it bumps) and the router core has
    // taken every answer (two `rc_sync` barriers); nothing asks it during a batch, and its
    // statistics are asked only after the clock stopped, to check every leg landed.
    uint64_t landed_goal = st0.landed;
    uint64_t answered_goal = rig.answered.count.load();
    landed_goal += batch / 10;
    answered_goal += batch / 10;
    bool ok = rig.deliver(batch / 10, m_protos) && rig.wait_landed(landed_goal, answered_goal);
    std::vector<double> walls, cpus;
    uint64_t offset = 0;
    for (int r = 0; r < reps && ok; ++r) {
      landed_goal += batch;
      answered_goal += batch;
      auto t0 = clock_type::now();
      auto c0 = process_cpu_s();
      ok = rig.deliver(batch, m_protos, offset) && rig.wait_drained(answered_goal);
      walls.push_back(seconds_since(t0) / batch * 1e6);
      cpus.push_back((process_cpu_s() - c0) / batch * 1e6);
      // Checked after the clock stopped: `rc_stats` copies every in-flight leg's id, which
      // with 100,000 open channels costs as much as the batch itself.
      ok = ok && rig.wait_landed(landed_goal, answered_goal);
      offset += batch;
    }
    auto st = rig.stats();
    if (!ok || st.channels < c) {
      out.push_back(failed_row("P5", "router-core cost growth with open channels",
                               "with " + std::to_string(c) + " channels: legs did not land ("
                                 + std::to_string(st.channels) + " channels open)"));
      return out;
    }
    wall_us.push_back(median(walls));
    cpu_us.push_back(median(cpus));
    per_count.push_back({{"open_channels", c},
                         {"channels_reported", st.channels},
                         {"in_flight", st.in_flight},
                         {"rc_stats_asked", rig.stats_checks.load()},
                         {"open_s", open_s},
                         {"wall_us_per_delivery", walls},
                         {"cpu_us_per_delivery", cpus}});
    std::fprintf(stderr, "  %llu open channels (opened in %.1f s): %.2f us wall, %.2f us CPU "
                         "per delivery\n",
                 static_cast<unsigned long long>(c), open_s, wall_us.back(), cpu_us.back());
  }
  auto growth = wall_us.back() / wall_us.front();
  auto r = make_row("P5", "router-core cost per delivery, 100,000 / 10 open channels", growth,
                    "x", 1.2, false);
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "wall us/delivery: %.2f (10), %.2f (1k), %.2f (100k); CPU growth %.2f x",
                wall_us[0], wall_us[1], wall_us[2], cpu_us.back() / cpu_us.front());
  r.detail = buf;
  r.data = {{"batch", batch}, {"measured_targets", measured_targets}, {"counts", per_count}};
  out.push_back(std::move(r));
  return out;
}

} // namespace cafmesh::bench
