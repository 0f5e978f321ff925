// SPEC S14.05: what a delivery holds in the router core's rig, in heap bytes in use, as
// cafmesh-bench P6 measures it (examples/bench/README.md "P6"): `mallinfo2()` (every arena
// plus mmapped blocks) before and after, once the actors are idle; queued and in-flight
// figures beyond the envelope (the heap bytes of as many envelopes held in a vector are
// subtracted). Runs on CAF's test coordinator, so every actor is idle when `run()` returns
// and no other thread allocates meanwhile, and without `fixture`'s log capture, which would
// hold every debug line (the benchmark logs nothing either).
// docs/delivery-costs.md#what-a-delivery-holds

#include <malloc.h>

#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/io_pool.hpp"
#include "cafmesh/routing/node_path_resolver.hpp"
#include "cafmesh/routing/router_core.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;

namespace {

/// Heap bytes in use (as cafmesh-bench P6).
int64_t heap_in_use() {
  auto mi = mallinfo2();
  return static_cast<int64_t>(mi.uordblks) + static_cast<int64_t>(mi.hblkhd);
}

/// A grain port that keeps nothing: it answers `processed` at once, or never (the call is
/// dropped: its leg stays in flight) for the grains `never` names.
grain_port_actor::behavior_type lean_grains(grain_port_actor::pointer self,
                                            std::string never_key, bool never_all) {
  return {
    [=](gp_call_atom, uint64_t call, const grain_id& g, envelope& d, caf::timespan) {
      if (never_all || g.key == never_key)
        return;
      d.state = delivery_state::processed;
      grain_port_reply{self, call}.deliver(std::move(d));
    },
    [](gp_invalidate_atom, const grain_id&) {},
    [](gp_inval_silo_atom, const silo_address&) {},
    [](gp_act_error_atom, const grain_id&) -> std::string { return {}; },
  };
}

/// Resolves `node/{prefix}` to the node prefix, cacheable (as the silo's default resolver).
path_resolver_actor::behavior_type lean_resolver(path_resolver_actor::pointer) {
  return {
    [=](pr_resolve_atom, const std::string& path) {
      resolve_result r;
      if (auto prefix = node_prefix_of("node", path)) {
        r.found = true;
        r.node_prefix = std::move(*prefix);
        r.cacheable = true;
      }
      return r;
    },
  };
}

/// An actor system on the test coordinator with no log capture (see the file comment).
struct quiet_world {
  cafmesh::testing::test_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  std::vector<caf::actor> tracked;

  quiet_world()
    : sys(cfg), sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {
    log::set_stderr_enabled(false);
  }

  ~quiet_world() {
    sched.run();
    for (auto& h : tracked)
      caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
    sched.run();
    sys.await_actors_before_shutdown(false);
  }

  template <class Handle>
  Handle track(Handle h) {
    tracked.push_back(caf::actor_cast<caf::actor>(h));
    return h;
  }

  size_t run() { return sched.run(); }
};

/// A delivery of P6's shape (7-byte JSON payload, no heap block in the envelope).
envelope small_delivery(uint64_t k, address target) {
  envelope d;
  d.id = "s14-" + std::to_string(k);
  d.sender = address{"portal", "bench", {}};
  d.target = std::move(target);
  d.payload_type = "bench.ping";
  d.payload_json = R"({"n":1})";
  return d;
}

/// The co-hosted router core with the real gauge and I/O pool, the lean grain port and
/// resolver.
struct lean_rig {
  quiet_world& fx;
  router_core_actor rc;

  lean_rig(quiet_world& f, std::string never_key, bool never_all = false) : fx(f) {
    silo_address silo{"127.0.0.1", 11111, 1};
    config::mesh_config cfg;
    cfg.routing.max_in_flight = 0; // the rows flood the core: no admission bound
    auto o = router_core_options::from(cfg, silo);
    o.gauge = fx.track(spawn_routing_quiescence(fx.sys, {silo.to_string()}));
    o.pool = fx.track(spawn_io_pool(fx.sys, io_pool_options::from(cfg.pool, silo.to_string())));
    o.grains = fx.track(fx.sys.spawn(lean_grains, std::move(never_key), never_all));
    o.resolver = fx.track(fx.sys.spawn(lean_resolver));
    rc = fx.track(spawn_router_core(fx.sys, o));
    fx.run();
  }

  /// Routes `n` deliveries, to `target(k)` for k in [first, first + n).
  template <class Target>
  void route(uint64_t first, uint64_t n, Target target) {
    for (uint64_t k = first; k < first + n; ++k)
      caf::anon_send(rc, rc_route_atom::value, small_delivery(k, target(k)));
    fx.run();
  }

  router_core_stats stats() {
    router_core_stats out;
    caf::scoped_actor self{fx.sys};
    self->send(rc, rc_stats_atom::value);
    fx.run();
    bool got = false;
    self->receive([&](router_core_stats& x) {
      out = std::move(x);
      got = true;
    },
                  caf::after(std::chrono::seconds(0)) >> [] {});
    REQUIRE(got);
    return out;
  }
};

constexpr uint64_t n = 5000;

/// Heap bytes of one envelope of the rows' shape held in a vector.
double envelope_bytes() {
  auto proto = small_delivery(1, address{"portal", "q", {}});
  auto before = heap_in_use();
  std::vector<envelope> xs;
  xs.reserve(n);
  for (uint64_t i = 0; i < n; ++i)
    xs.push_back(proto);
  return static_cast<double>(heap_in_use() - before) / static_cast<double>(n);
}

/// Bytes an idle channel keeps: `m` stream-routed deliveries to distinct targets, all landed,
/// after a first round of `m` others (containers that keep their capacity are not per channel).
/// `m` = 4 `n`: the heap's thread cache moves the total by up to about 2 KB whatever `m` is.
double idle_channel_bytes(quiet_world& fx) {
  constexpr uint64_t m = 4 * n;
  lean_rig rig{fx, ""};
  auto warm = [](uint64_t k) { return address{"portal", "w" + std::to_string(k), {}}; };
  auto open = [](uint64_t k) { return address{"portal", "i" + std::to_string(k), {}}; };
  rig.route(0, m, warm);
  REQUIRE(rig.stats().landed == m);
  auto before = heap_in_use();
  rig.route(m, m, open);
  auto after = heap_in_use();
  auto st = rig.stats();
  REQUIRE(st.landed == 2 * m);
  REQUIRE(st.channels == 0);
  return static_cast<double>(after - before) / static_cast<double>(m);
}

/// Bytes a queued delivery holds beyond its envelope: one channel whose head's grain call
/// never returns, `n` deliveries queued behind it.
double queued_delivery_bytes(quiet_world& fx, double env_bytes) {
  lean_rig rig{fx, "portal/q"};
  auto q = [](uint64_t) { return address{"portal", "q", {}}; };
  rig.route(0, 1, q);
  auto before = heap_in_use();
  rig.route(1, n, q);
  auto after = heap_in_use();
  auto st = rig.stats();
  REQUIRE(st.queued == n);
  REQUIRE(st.channels == 1);
  return static_cast<double>(after - before) / static_cast<double>(n) - env_bytes;
}

/// Bytes a leg in flight holds beyond its envelope: `n` node legs whose grain call never
/// returns, after 100 others.
double in_flight_leg_bytes(quiet_world& fx, double env_bytes) {
  lean_rig rig{fx, "", true};
  auto node = [](uint64_t) { return address{"node", "Org/Bench", {}}; };
  rig.route(0, 100, node);
  auto before = heap_in_use();
  rig.route(100, n, node);
  auto after = heap_in_use();
  auto st = rig.stats();
  REQUIRE(st.in_flight == 100 + n);
  REQUIRE(st.queued == 0);
  return static_cast<double>(after - before) / static_cast<double>(n) - env_bytes;
}

} // namespace

// Under a sanitizer the heap is the sanitizer's: `mallinfo2()` does not see it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized_heap = true;
#else
constexpr bool sanitized_heap = false;
#endif

// The idle channel is 0 in whole bytes (see `idle_channel_bytes`).
TEST_CASE("S14.05 an idle channel holds 0 bytes, a queued delivery at most 64 bytes beyond its envelope and a leg in flight at most 256, heap in use"
          * doctest::skip(sanitized_heap)) {
  auto env_bytes = envelope_bytes();
  // The envelope has no heap block of its own: what a vector of them holds is its size.
  REQUIRE(env_bytes >= static_cast<double>(sizeof(envelope)));
  REQUIRE(env_bytes < static_cast<double>(sizeof(envelope)) + 1.0);
  double idle = 0;
  double queued = 0;
  double in_flight = 0;
  {
    quiet_world w;
    idle = idle_channel_bytes(w);
  }
  {
    quiet_world w;
    queued = queued_delivery_bytes(w, env_bytes);
  }
  {
    quiet_world w;
    in_flight = in_flight_leg_bytes(w, env_bytes);
  }
  MESSAGE("envelope " << env_bytes << " B; idle channel " << idle << " B, queued delivery "
                      << queued << " B, leg in flight " << in_flight << " B beyond it");
  CHECK(idle < 0.5);
  CHECK(queued <= 64.0);
  CHECK(in_flight <= 256.0);
}
