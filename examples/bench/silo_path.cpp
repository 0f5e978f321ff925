/// @file
/// P1r (examples/bench/README.md): one-way posts through the real path of a silo built with
/// `lifecycle::silo_builder` (in process, on its own in-process cluster, in an actor system
/// of its own): a driver posts `(rs_post_atom, envelope)` to node hubs `node/bench/{0..3}` of
/// an application hub of that silo through the silo's routing service, so that each goes
/// routing service -> router core -> grain port -> placement -> message centre -> catalog ->
/// node-hub grain activation -> application hub. The hub's handler ends each delivery at once
/// (no reply) and bumps the counter the benchmark thread waits on. Against raw CAF one-way
/// sends measured right before, in the same actor system, as P1 does.
///
/// A node hub of the silo, once spawned, is registered as a local route of the silo's
/// routing service (application_hub.hpp `spawn_hub_table`), and from then on the silo's own
/// posts to it take the local route (docs/behaviour/routing.md#the-entry, step 1). To
/// measure the router-core path, the row unregisters those routes after the warm-up
/// (`rs_unregister_atom`) and checks, by the routing service's counters, that every timed
/// delivery went to the router core. The enqueue count of the local route the silo would
/// take as shipped is reported beside it.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "bench.hpp"
#include "counting.hpp"
#include "rig.hpp"

#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/routing_service.hpp"

namespace cafmesh::bench {

using namespace cafmesh::routing;

namespace {

constexpr uint64_t target_count = 4;

address target_of(uint64_t k) {
  return address{"node", "bench/" + std::to_string(k % target_count), {}};
}

/// `n` envelopes to the targets in turn, each with its own id (a hub drops a delivery id it
/// has already handled).
proto_list numbered_protos(uint64_t n) {
  std::vector<envelope> xs;
  xs.reserve(n);
  for (uint64_t k = 0; k < n; ++k) {
    auto d = make_proto(target_of(k));
    d.id = "r" + std::to_string(k);
    xs.push_back(std::move(d));
  }
  return protos_of(std::move(xs));
}

/// The silo: the default configuration but `routing.max_in_flight` 0 (no admission bound;
/// the driver offers a whole batch at once, as P1's rig does: at the default bound of 768
/// a flood of 5,000 posts is mostly refused `unavailable`).
caf::expected<lifecycle::silo> build_silo(caf::actor_system& sys, progress* landed) {
  config::mesh_config cfg;
  cfg.routing.max_in_flight = 0;
  return lifecycle::silo_builder{sys}
    .config(cfg)
    .log_level(log::level::error)
    .hub("node/bench/*",
         [landed](const envelope&) -> std::optional<reply> {
           landed->bump();
           return std::nullopt; // done: no response
         })
    .build();
}

/// The routing service's counters (blocking: not on the test coordinator).
routing_service_stats rs_stats(caf::actor_system& sys, const caf::actor& rs) {
  routing_service_stats out;
  caf::scoped_actor self{sys};
  self->request(rs, caf::infinite, rs_stats_atom::value)
    .receive([&](routing_service_stats& x) { out = std::move(x); }, [&](caf::error&) {});
  return out;
}

/// The P1r flow once on CAF's test coordinator: a silo started in virtual time, `warm`
/// posts (activating the node hubs), `n` counted posts by the local route the silo
/// registered (`shipped`), the routes removed, `warm` posts again, then `n` counted posts
/// by the router-core path (`core`).
struct silo_costs {
  flow_cost shipped;
  flow_cost core;
};

silo_costs count_silo_flow(uint64_t warm, uint64_t n) {
  silo_costs out;
  out.shipped.deliveries = n;
  out.core.deliveries = n;
  auto fail = [&](const std::string& why) {
    out.shipped.why = out.core.why = why;
    return out;
  };
  progress landed;     // outlive the system: its actors hold their addresses
  progress sink_count;
  counted_system cs;
  auto& sys = cs.sys();
  auto built = build_silo(sys, &landed);
  if (!built)
    return fail("silo: " + sys.render(built.error()));
  std::optional<lifecycle::silo> silo;
  silo.emplace(std::move(*built));
  auto active = std::make_shared<int>(0); // 1: ok, -1: error
  auto asker = sys.spawn([=, host = silo->host()](caf::event_based_actor* self) {
    self->request(host, caf::infinite, lifecycle::host_start_atom::value)
      .then([=](caf::ok_atom) { *active = 1; }, [=](caf::error&) { *active = -1; });
  });
  if (!cs.run_until([&] { return *active != 0; }, std::chrono::minutes(5)) || *active != 1)
    return fail("the silo did not reach Active in virtual time");
  auto drv = sys.spawn(bench_driver, &sink_count);
  auto rs = silo->routing_service();
  auto protos = numbered_protos(2 * warm + 2 * n);
  uint64_t offset = 0;
  auto flow = [&](uint64_t k) {
    auto goal = landed.count.load() + k;
    caf::anon_send(drv, bn_post_atom::value, rs, k, protos, offset);
    offset += k;
    return cs.run_until([&] { return landed.count.load() >= goal; });
  };
  auto counted = [&](flow_cost& fc) {
    cs.reset();
    bool ok = flow(fc.deliveries);
    fc.t = cs.counted();
    fc.t.jobs -= fc.t.jobs > 0 ? 1 : 0; // less the driver's own `go` message
    fc.ok = ok;
    if (!ok)
      fc.why = "the counted flow did not land";
  };
  if (!flow(warm))
    return fail("the warm-up did not land");
  counted(out.shipped);
  for (uint64_t i = 0; i < target_count; ++i)
    caf::anon_send(rs, rs_unregister_atom::value, target_of(i));
  cs.run();
  if (!flow(warm)) {
    out.core.why = "the warm-up without local routes did not land";
    return out;
  }
  counted(out.core);
  caf::anon_send_exit(drv, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(asker, caf::exit_reason::user_shutdown);
  silo.reset(); // exits every actor of the silo
  cs.run();
  return out;
}

} // namespace

rows run_silo_path(const options& opt) {
  const int reps = 10;
  const uint64_t raw_n = opt.quick ? 100000 : 200000;
  const uint64_t batch = opt.quick ? 5000 : 10000;
  const uint64_t warm = batch / 10;
  const char* what = "silo_builder silo: post -> router core -> node-hub grain -> hub / raw one-way";
  rows out;
  auto box = std::make_unique<system_box>(opt.threads);
  auto& sys = *box->sys;
  progress landed;
  progress sunk;
  progress unused;
  auto built = build_silo(sys, &landed);
  if (!built) {
    out.push_back(failed_row("P1r", what, "silo: " + sys.render(built.error())));
    return out;
  }
  std::optional<lifecycle::silo> silo;
  silo.emplace(std::move(*built));
  auto snk = sys.spawn(bench_sink, &sunk);
  auto raw_drv = sys.spawn(bench_driver, &unused);
  auto drv = sys.spawn(bench_driver, &unused);
  auto teardown = [&] {
    for (auto h : {snk, raw_drv, drv})
      caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
    if (silo)
      silo->stop(false);
    silo.reset();
    box.reset();
  };
  if (auto err = silo->when_active()) {
    out.push_back(failed_row("P1r", what, "silo start: " + sys.render(err)));
    teardown();
    return out;
  }
  auto rs = silo->routing_service();
  auto protos = numbered_protos(2 * warm + reps * batch);
  uint64_t offset = 0;
  auto silo_batch = [&](uint64_t n) -> double {
    landed.arm(n);
    auto t0 = clock_type::now();
    caf::anon_send(drv, bn_post_atom::value, rs, n, protos, offset);
    offset += n;
    if (!landed.wait(30))
      return 0;
    return static_cast<double>(n) / seconds_since(t0);
  };
  auto raw_proto = make_proto(target_of(0));
  // Warm-up: activates the node hubs (each then registered as a local route), then the same
  // through the router core once the local routes are gone.
  bool ok = silo_batch(warm) > 0;
  {
    caf::scoped_actor self{sys};
    for (uint64_t i = 0; i < target_count; ++i)
      self->request(rs, caf::infinite, rs_unregister_atom::value, target_of(i))
        .receive([](caf::ok_atom) {}, [&](caf::error&) { ok = false; });
  }
  ok = ok && silo_batch(warm) > 0;
  raw_one_way_batch(raw_drv, snk, sunk, raw_n / 10, raw_proto);
  auto before = rs_stats(sys, rs);
  std::vector<double> ratios, silo_rates, raw_rates;
  for (int r = 0; r < reps && ok; ++r) {
    auto [raw_wall, raw_cpu] = raw_one_way_batch(raw_drv, snk, sunk, raw_n, raw_proto);
    static_cast<void>(raw_cpu);
    auto rate = silo_batch(batch);
    if (rate <= 0) {
      ok = false;
      break;
    }
    double raw_rate = static_cast<double>(raw_n) / raw_wall;
    raw_rates.push_back(raw_rate);
    silo_rates.push_back(rate);
    ratios.push_back(rate / raw_rate);
    std::fprintf(stderr, "  P1r rep %d: raw %.0f/s, silo %.0f/s (%.3f)\n", r + 1, raw_rate, rate,
                 ratios.back());
  }
  auto after = rs_stats(sys, rs);
  uint64_t timed = static_cast<uint64_t>(ratios.size()) * batch;
  uint64_t to_core = after.to_core - before.to_core;
  uint64_t local_hits = after.local_hits - before.local_hits;
  // Counted once on CAF's test coordinator (1,000 posts after a 100-post warm-up).
  auto costs = count_silo_flow(100, 1000);
  costs.core.report("P1r");
  costs.shipped.report("P1r (local route as shipped)");
  if (!ok) {
    out.push_back(failed_row("P1r", what,
                             "posts did not all land (" + std::to_string(landed.count.load())
                               + " landed)"));
  } else if (to_core != timed || local_hits != 0) {
    out.push_back(failed_row("P1r", what,
                             "not every timed post went to the router core (" + std::to_string(to_core)
                               + " of " + std::to_string(timed) + ", local route "
                               + std::to_string(local_hits) + ")"));
  } else {
    auto row = make_row("P1r", what, median(ratios), "x", 0.15, true);
    char buf[300];
    std::snprintf(buf, sizeof buf,
                  "median of %zu reps: silo %.0f/s, raw %.0f/s; per-rep range %.3f-%.3f; %llu "
                  "node hubs, all %llu timed posts via the router core",
                  ratios.size(), median(silo_rates), median(raw_rates),
                  *std::min_element(ratios.begin(), ratios.end()),
                  *std::max_element(ratios.begin(), ratios.end()),
                  static_cast<unsigned long long>(target_count),
                  static_cast<unsigned long long>(timed));
    row.detail = buf + costs.core.detail();
    if (costs.shipped.ok) {
      std::snprintf(buf, sizeof buf,
                    " (by the local route the silo registers for its own node hubs: %.3f "
                    "enqueues, %.3f timers)",
                    costs.shipped.enqueues_per_delivery(), costs.shipped.timers_per_delivery());
      row.detail += buf;
    }
    row.data = {{"ratios", ratios},          {"silo_per_s", silo_rates},
                {"raw_per_s", raw_rates},    {"batch", batch},
                {"raw_batch", raw_n},        {"targets", target_count},
                {"to_core", to_core},        {"local_hits", local_hits}};
    costs.core.add_to(row.data);
    nlohmann::json shipped;
    costs.shipped.add_to(shipped);
    row.data["local_route_as_shipped"] = shipped;
    out.push_back(std::move(row));
  }
  teardown();
  return out;
}

} // namespace cafmesh::bench
