// SPEC §14's costs, counted in virtual time (docs/delivery-costs.md): every mailbox enqueue
// and every clock entry a flow of deliveries causes anywhere in a silo built by
// `silo_builder`, landing reports and gauge deltas included. CAF's test coordinator resumes
// an actor for one message per job, so the jobs it runs are the messages enqueued.

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/detail/sim_network_state.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/routing/correlating_entry.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/nack_codec.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/silo_world.hpp"
#include "cafmesh/testing/test_cluster.hpp"

using namespace cafmesh;
using namespace cafmesh::lifecycle;
using routing::address;
using routing::envelope;

namespace {

using s14_go_atom = caf::atom_constant<caf::atom("s14go")>;

/// What a flow cost: jobs run per actor name, and clock entries scheduled.
struct flow_cost {
  std::map<std::string, size_t> by_actor;
  size_t jobs = 0;
  size_t timers = 0;

  std::string render() const {
    std::string out;
    for (auto& [name, n] : by_actor)
      out += "  " + name + ": " + std::to_string(n) + "\n";
    return out;
  }
};

/// Runs every ready actor until none is ready, counting the jobs by actor and the clock
/// entries added meanwhile (CAF 0.17 keeps a request's timeout on the clock until it fires).
flow_cost run_counting(testing::fixture& fx) {
  flow_cost c;
  auto timers_before = fx.sched.clock().schedule().size();
  while (!fx.sched.jobs.empty()) {
    auto* a = dynamic_cast<caf::local_actor*>(fx.sched.jobs.front());
    std::string name = a != nullptr ? a->name() : "?";
    if (!fx.sched.try_run_once())
      break;
    ++c.by_actor[name];
    ++c.jobs;
  }
  auto timers_after = fx.sched.clock().schedule().size();
  c.timers = timers_after > timers_before ? timers_after - timers_before : 0;
  return c;
}

/// One delivery from `portal/driver` to `node/bench/{k % 8}`.
envelope bench_post(uint64_t k) {
  envelope e;
  e.id = "p" + std::to_string(k);
  e.sender = address::from("portal/driver");
  e.target = address::from("node/bench/" + std::to_string(k % 8));
  e.payload_type = "bench";
  e.payload_json = "{\"n\":1}";
  return e;
}

/// Posts `n` deliveries through the co-hosted entry (`rs_post`), one-way, on
/// `(s14_go_atom, n)`.
caf::behavior entry_poster(caf::event_based_actor* self, caf::actor routing) {
  auto next = std::make_shared<uint64_t>(0);
  return {
    [=](s14_go_atom, uint64_t n) {
      for (uint64_t i = 0; i < n; ++i)
        self->send(routing, routing::rs_post_atom::value, bench_post(++*next));
    },
  };
}

/// Hands `n` deliveries straight to the co-hosted router core (`rc_route`, as a hub without
/// a local route for the target does, SPEC B5), on `(s14_go_atom, n)`.
caf::behavior core_poster(caf::event_based_actor* self, routing::router_core_actor core) {
  auto next = std::make_shared<uint64_t>(0);
  return {
    [=](s14_go_atom, uint64_t n) {
      for (uint64_t i = 0; i < n; ++i)
        self->send(core, routing::rc_route_atom::value, bench_post(++*next));
    },
  };
}

/// One silo with the application hub `node/bench/*` (each delivery ended at once, counted
/// in `handled`), started.
struct bench_silo {
  std::shared_ptr<uint64_t> handled = std::make_shared<uint64_t>(0);
  std::optional<silo> s;

  explicit bench_silo(testing::fixture& fx) {
    auto count = handled;
    auto built = silo_builder{fx.sys}
                   .config([] {
                     config::mesh_config c;
                     // A flow offers 1,000 deliveries at once: admission is not measured.
                     c.routing.max_in_flight = 0;
                     return c;
                   }())
                   .hub("node/bench/*",
                        [count](caf::event_based_actor*, const envelope&,
                                routing::hub_responder r) {
                          ++*count;
                          r.done();
                        })
                   .build();
    REQUIRE(built);
    s.emplace(std::move(*built));
    auto started = testing::ask(fx, s->host(), host_start_atom::value);
    REQUIRE(fx.run_until([&] { return started->done; }, std::chrono::minutes(1)));
    REQUIRE(started->ok());
  }
};

/// The calibration: one job of the coordinator is one message, at either priority.
void calibrate(testing::fixture& fx) {
  auto probe = fx.track(fx.sys.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](s14_go_atom, uint64_t) {}};
  }));
  for (int i = 0; i < 5; ++i) {
    caf::anon_send(probe, s14_go_atom::value, uint64_t{0});
    caf::anon_send<caf::message_priority::high>(probe, s14_go_atom::value, uint64_t{0});
  }
  REQUIRE(fx.run() == 10);
}

/// Warms `drv`'s path up with 100 deliveries (placement, activations, cached resolutions),
/// then counts a flow of `n`.
flow_cost measure(testing::fixture& fx, bench_silo& b, caf::actor drv, uint64_t n) {
  auto before = *b.handled;
  caf::anon_send(drv, s14_go_atom::value, uint64_t{100});
  REQUIRE(fx.run_until([&] { return *b.handled == before + 100; }, std::chrono::minutes(1)));
  fx.run();
  caf::anon_send(drv, s14_go_atom::value, n);
  auto cost = run_counting(fx);
  CHECK(*b.handled == before + 100 + n);
  // The driver's own job (the go message) is not a delivery's.
  cost.jobs -= 1;
  return cost;
}

} // namespace

TEST_CASE("S14.01 a co-hosted post to a node hub costs at most 6 mailbox enqueues and 0 CAF timers per delivery, through the entry and through the real grain port, activation and application hub") {
  testing::fixture fx;
  calibrate(fx);
  bench_silo b{fx};
  constexpr uint64_t n = 1000;

  auto at_most_6 = [&](const char* what, caf::actor drv) {
    auto cost = measure(fx, b, drv, n);
    MESSAGE(what << ": " << cost.jobs << " mailbox enqueues and " << cost.timers
                 << " clock entries for " << n << " deliveries\n"
                 << cost.render());
    CHECK(cost.jobs <= 6 * n);
    CHECK(cost.timers == 0);
  };
  SUBCASE("through the entry: the application hub is a local route of the silo's process") {
    at_most_6("entry", fx.track(fx.sys.spawn(entry_poster, b.s->components().routing)));
  }
  SUBCASE("through the router core: grain port, node-hub grain activation, application hub") {
    at_most_6("grain path", fx.track(fx.sys.spawn(core_poster, b.s->components().core)));
  }
}

TEST_CASE("direct route to a node-hub grain activation: it goes with the activation, and deliveries after an idle deactivation land on a new activation without a refused call") {
  testing::fixture fx;
  auto handled = std::make_shared<uint64_t>(0);
  silo_builder builder{fx.sys};
  builder
    .config([] {
      config::mesh_config c;
      c.routing.max_in_flight = 0;
      c.catalog.idle_deactivation_ms = 1000;
      return c;
    }())
    .hub("node/bench/*",
         [handled](caf::event_based_actor*, const envelope&, routing::hub_responder r) {
           ++*handled;
           r.done();
         });
  auto built = builder.build();
  REQUIRE(built);
  auto started = testing::ask(fx, built->host(), host_start_atom::value);
  REQUIRE(fx.run_until([&] { return started->done; }, std::chrono::minutes(1)));
  REQUIRE(started->ok());
  auto& c = built->components();
  auto drv = fx.track(fx.sys.spawn(core_poster, c.core));
  auto report = [&] {
    auto r = testing::ask<catalog_report>(fx, c.catalog, ct_stats_atom::value);
    fx.run();
    REQUIRE(r->done);
    return r->value;
  };
  auto hubs_active = [&] {
    auto rep = report();
    for (size_t i = 0; i < rep.grain_types.size(); ++i)
      if (rep.grain_types[i] == "messagehub")
        return rep.activations[i];
    return uint64_t{0};
  };
  // Two waves: the first places the 8 node hubs and the second goes over the direct routes
  // they offered.
  for (uint64_t wave = 1; wave <= 2; ++wave) {
    caf::anon_send(drv, s14_go_atom::value, uint64_t{80});
    REQUIRE(fx.run_until([&] { return *handled == 80 * wave; }, std::chrono::seconds(1)));
  }
  CHECK(hubs_active() == 8);
  auto before = report().counters;
  // Idle for longer than the idle bound: every node hub activation goes, and takes its route.
  fx.run_for(std::chrono::milliseconds(1500));
  CHECK(hubs_active() == 0);
  CHECK(report().counters.deactivated >= before.deactivated + 8);
  caf::anon_send(drv, s14_go_atom::value, uint64_t{80});
  REQUIRE(fx.run_until([&] { return *handled == 240; }, std::chrono::seconds(1)));
  auto after = report().counters;
  CHECK(hubs_active() == 8);
  CHECK(after.activated == before.activated + 8);
  // No call named an activation that had gone: the routes went with their activations.
  CHECK(after.refused == before.refused);
  CHECK(after.stale_unregistered == before.stale_unregistered);
}

namespace {

using s14_landed_atom = caf::atom_constant<caf::atom("s14landed")>;

struct frame_driver_state {
  uint64_t next = 0;     ///< frames sent so far
  uint64_t landed = 0;   ///< frames the hubs on B took so far
  uint64_t target = 0;   ///< frames to send in all
  uint64_t window = 256; ///< frames sent and not yet landed, at most
  static inline const char* name = "s14.frame_driver";
};

/// Silo A's side of S14.03: keeps `window` stream-routed frames to `portal/b{k % 64}` in
/// flight through A's router core (as a hub without a local route for them hands them over,
/// SPEC B5); told `(s14_landed_atom)` by the hubs on B for every frame they take.
caf::behavior frame_driver(caf::stateful_actor<frame_driver_state>* self,
                           routing::router_core_actor core) {
  auto pump = [=] {
    auto& st = self->state;
    while (st.next < st.target && st.next - st.landed < st.window) {
      auto k = st.next++;
      envelope e;
      e.id = "f" + std::to_string(k);
      e.sender = address::from("node/owner");
      e.target = address::from("portal/b" + std::to_string(k % 64));
      e.payload_type = "frame";
      e.payload_json = "{\"n\":1}";
      self->send(core, routing::rc_route_atom::value, std::move(e));
    }
  };
  return {
    [=](s14_go_atom, uint64_t n) {
      self->state.target += n;
      pump();
    },
    [=](s14_landed_atom) {
      ++self->state.landed;
      pump();
    },
  };
}

} // namespace

TEST_CASE("S14.03 stream-routed frames from silo A to pod hubs on silo B over 64 channels, 256 in flight, cross the link in at most 0.5 link messages per frame in each direction, and cost at most 10 mailbox enqueues and 0 CAF timers per frame over both silos") {
  testing::fixture fx;
  calibrate(fx);
  testing::silo_world w{fx};
  auto no_admission = [](config::mesh_config& c) { c.routing.max_in_flight = 0; };
  auto driver = std::make_shared<caf::actor>();
  auto handled = std::make_shared<uint64_t>(0);
  testing::silo_world_options ob;
  ob.configure = no_admission;
  for (int i = 0; i < 64; ++i)
    ob.hubs.emplace_back("portal/b" + std::to_string(i),
                         [driver, handled](caf::event_based_actor* self, const envelope&,
                                           routing::hub_responder r) {
                           ++*handled;
                           self->send(*driver, s14_landed_atom::value);
                           r.done();
                         });
  // B first: its hubs claim their pod hubs once it is Active, so they live on B.
  auto b_addr = w.add_silo("B", ob).addr;
  REQUIRE(w.last_start->ok());
  fx.run_for(std::chrono::seconds(2));
  testing::silo_world_options oa;
  oa.configure = no_admission;
  auto& a = w.add_silo("A", oa);
  REQUIRE(w.last_start->ok());
  auto& b = w.at(b_addr);
  *driver = fx.track(fx.sys.spawn(frame_driver, a.core));
  // Warm-up: the pod hubs' claims, placement and the cached resolutions.
  caf::anon_send(*driver, s14_go_atom::value, uint64_t{4 * 64});
  auto warm = fx.run_until([&] { return *handled == 4 * 64; }, std::chrono::minutes(1));
  if (!warm)
    for (auto& l : fx.logs.lines())
      if (l.lvl >= log::level::info)
        MESSAGE(l.t_ms << " " << l.component << " " << l.text);
  REQUIRE(warm);
  fx.run();
  auto& wire = cafmesh::detail::state_of(w.net);
  auto ab = std::make_pair(a.addr, b.addr);
  auto ba = std::make_pair(b.addr, a.addr);
  auto msgs_ab = wire.messages_by_link[ab];
  auto msgs_ba = wire.messages_by_link[ba];
  auto frames_ab = wire.frames_by_link[ab];
  auto frames_ba = wire.frames_by_link[ba];
  constexpr uint64_t n = 1000;
  caf::anon_send(*driver, s14_go_atom::value, n);
  auto cost = run_counting(fx);
  CHECK(*handled == 4 * 64 + n);
  // The driver's own jobs (the go message, the landings it is told of) are not the frames'.
  auto drv_jobs = cost.by_actor[frame_driver_state::name];
  cost.jobs -= drv_jobs;
  cost.by_actor.erase(frame_driver_state::name);
  // The simulated wire's jobs stand for the two processes' links (a frame or batch taken
  // from the sending centre, and handed on to the receiving one).
  auto wire_jobs = cost.by_actor["cafmesh.sim_network"];
  msgs_ab = wire.messages_by_link[ab] - msgs_ab;
  msgs_ba = wire.messages_by_link[ba] - msgs_ba;
  frames_ab = wire.frames_by_link[ab] - frames_ab;
  frames_ba = wire.frames_by_link[ba] - frames_ba;
  MESSAGE("S14.03: " << cost.jobs << " mailbox enqueues (" << wire_jobs << " at the simulated wire) "
                     << "and " << cost.timers << " clock entries for " << n << " frames; "
                     << "A->B " << msgs_ab << " link messages carrying " << frames_ab
                     << " frames, B->A " << msgs_ba << " carrying " << frames_ba << "\n"
                     << cost.render());
  // One request frame A -> B and its response B -> A per frame, in batches (SPEC §14 B7).
  CHECK(frames_ab == n);
  CHECK(frames_ba == n);
  CHECK(msgs_ab * 2 <= n);
  CHECK(msgs_ba * 2 <= n);
  // 21 per frame before the link batches, 15.2 before the remote route
  // (docs/delivery-costs.md#the-remote-frame-path).
  CHECK(cost.jobs <= 10 * n);
  // No CAF timer per frame (SPEC §14 B6): the remote grain call is answered by id.
  CHECK(cost.timers == 0);
}

namespace {

using s14_answered_atom = caf::atom_constant<caf::atom("s14answer")>;

struct request_driver_state {
  uint64_t next = 0;     ///< requests issued so far
  uint64_t answered = 0; ///< requests answered with the node hub's response so far
  uint64_t failed = 0;   ///< requests answered with an error so far
  uint64_t target = 0;   ///< requests to issue in all
  uint64_t window = 8;   ///< requests issued and not yet answered, at most
  static inline const char* name = "s14.request_driver";
};

/// The pure client's side of S14.02: keeps `window` requests to `node/bench/{k % 8}`
/// outstanding through the client's correlating entry, on `(s14_go_atom, n)`.
caf::behavior request_driver(caf::stateful_actor<request_driver_state>* self,
                             routing::correlating_entry_actor entry) {
  auto pump = std::make_shared<std::function<void()>>();
  std::weak_ptr<std::function<void()>> weak = pump;
  *pump = [=] {
    auto& st = self->state;
    while (st.next < st.target && st.next - st.answered - st.failed < st.window) {
      auto k = st.next++;
      self
        ->request(entry, caf::infinite, routing::ce_request_atom::value,
                  address::from("node/bench/" + std::to_string(k % 8)), std::string{"bench"},
                  std::string{"{\"n\":1}"}, int64_t{30000}, false)
        .then(
          [=](const std::string&) {
            ++self->state.answered;
            if (auto p = weak.lock())
              (*p)();
          },
          [=](caf::error&) {
            ++self->state.failed;
            if (auto p = weak.lock())
              (*p)();
          });
    }
  };
  return {
    [=, keep = pump](s14_go_atom, uint64_t n) {
      self->state.target += n;
      (*keep)();
    },
  };
}

} // namespace

TEST_CASE("S14.02 a pure client's request to a node hub of its gateway silo and the response back, 8 outstanding, cost at most 2 link messages per request in each direction, 0 CAF timers and at most 32 mailbox enqueues per request over both processes (the SPEC's 24 is not met yet: docs/known-limits.md)") {
  testing::fixture fx;
  calibrate(fx);
  testing::test_cluster cluster{fx};
  cluster.add_silo("gw", [](silo_builder& b) {
    b.hub("node/bench/*", [](const envelope&) -> std::optional<routing::reply> {
      return routing::reply{"{\"n\":1}", "bench.pong"};
    });
  });
  auto& client = cluster.add_client("cl");
  auto drv = fx.track(fx.sys.spawn(request_driver, client.entry()));
  auto& st = testing::fixture::state_of<request_driver_state>(drv);
  // Warm-up: the node hubs' activations, the entry's pod hub and its attach, the cached
  // resolutions.
  caf::anon_send(drv, s14_go_atom::value, uint64_t{100});
  REQUIRE(fx.run_until([&] { return st.answered + st.failed == 100; }, std::chrono::minutes(1)));
  REQUIRE(st.failed == 0);
  fx.run();
  auto& wire = cafmesh::detail::state_of(cluster.network());
  auto up = std::make_pair(cluster.address("cl"), cluster.address("gw"));
  auto down = std::make_pair(cluster.address("gw"), cluster.address("cl"));
  auto msgs_up = wire.messages_by_link[up];
  auto msgs_down = wire.messages_by_link[down];
  constexpr uint64_t n = 1000;
  caf::anon_send(drv, s14_go_atom::value, n);
  auto cost = run_counting(fx);
  CHECK(st.answered == 100 + n);
  CHECK(st.failed == 0);
  // The driver's own jobs (the go message, the answers it is told of) are not the requests'.
  cost.jobs -= cost.by_actor[request_driver_state::name];
  cost.by_actor.erase(request_driver_state::name);
  msgs_up = wire.messages_by_link[up] - msgs_up;
  msgs_down = wire.messages_by_link[down] - msgs_down;
  MESSAGE("S14.02: " << cost.jobs << " mailbox enqueues and " << cost.timers
                     << " clock entries for " << n << " requests; client->gateway " << msgs_up
                     << " link messages, gateway->client " << msgs_down << "\n"
                     << cost.render());
  CHECK(msgs_up <= 2 * n);
  CHECK(msgs_down <= 2 * n);
  // 31.56 per request (2026-12-07, dispatch batches; 43.73 before them, 49.98 before
  // responses rode channel batches, 54.97 before the direct route to a pod hub of the silo);
  // SPEC §14 S14.02 asks for 24
  // (docs/known-limits.md#a-pure-clients-request-costs-32-mailbox-enqueues).
  CHECK(cost.jobs <= 32 * n);
  CHECK(cost.timers == 0);
}

namespace {

/// The number `k` of frame id `f{k}`.
uint64_t frame_number(const std::string& id) {
  return std::stoull(id.substr(1));
}

/// Sends `n` items `make(k)` (k counting from 1 over the driver's life) straight to a router
/// core in one turn, on `(s14_go_atom, n)`; as the local route of `node/owner` (a hub of the
/// silo, `rs_register_atom`), it records the item number of every NACK it is handed in
/// `nacked`.
caf::behavior item_driver(caf::event_based_actor* self, routing::router_core_actor core,
                          std::shared_ptr<std::vector<uint64_t>> nacked,
                          std::function<envelope(uint64_t)> make) {
  auto next = std::make_shared<uint64_t>(0);
  return {
    [=](routing::hb_in_atom, const envelope& d) {
      if (d.payload_type == routing::delivery_failure_payload_type && d.request_id)
        nacked->push_back(frame_number(*d.request_id));
    },
    [=](s14_go_atom, uint64_t n) {
      for (uint64_t i = 0; i < n; ++i)
        self->send(core, routing::rc_route_atom::value, make(++*next));
    },
  };
}

/// An item `id` from `node/owner` to `target` with payload type `type`.
envelope owner_item(std::string id, const char* target, const char* type) {
  envelope e;
  e.id = std::move(id);
  e.sender = address::from("node/owner");
  e.target = address::from(target);
  e.payload_type = type;
  e.payload_json = "{\"n\":1}";
  return e;
}

/// Stream-routed frame `f{k}` from `node/owner` to `portal/b0` (one channel).
envelope frame_item(uint64_t k) {
  return owner_item("f" + std::to_string(k), "portal/b0", "frame");
}

/// Response `r{k}` (the answer to request `q{k}`) from `node/owner` to the pure client's
/// `portal/p`.
envelope response_item(uint64_t k) {
  auto e = owner_item("r" + std::to_string(k), "portal/p", "bench.pong");
  e.request_id = "q" + std::to_string(k);
  return e;
}

/// Spawns `fn(args...)` as the local route of `node/owner` in the process of `routing`.
template <class F, class... Ts>
caf::actor owner_driver(testing::fixture& fx, const caf::actor& routing, F fn, Ts&&... args) {
  auto driver = fx.track(fx.sys.spawn(fn, std::forward<Ts>(args)...));
  caf::anon_send(routing, routing::rs_register_atom::value, address::from("node/owner"), driver);
  return driver;
}

/// The router core's stats, answered.
routing::router_core_stats core_stats(testing::fixture& fx,
                                      const routing::router_core_actor& core) {
  auto r = testing::ask<routing::router_core_stats>(fx, core, routing::rc_stats_atom::value);
  fx.run();
  REQUIRE(r->ok());
  return r->value;
}

/// S14.04's items per flow and `routing.channel_batch_max`.
constexpr uint64_t s14_04_n = 1000;
constexpr uint64_t s14_04_batch_max = 64;

/// S14.04's batches: after one item of warm-up, `driver` hands `core` a head and 1,000 items
/// behind it in one turn (the head's call leaves once the core has taken them all, so they
/// queue behind it); the target takes them in order, each once (`seen` holds item numbers),
/// in at most ceil(1,000 / 64) + 1 legs, all landed, none NACKed. The core's stats after.
routing::router_core_stats batch_phase(testing::fixture& fx,
                                       const routing::router_core_actor& core,
                                       const caf::actor& driver, const std::vector<uint64_t>& seen,
                                       const std::vector<uint64_t>& nacked, const char* what) {
  constexpr auto n = s14_04_n;
  caf::anon_send(driver, s14_go_atom::value, uint64_t{1});
  REQUIRE(fx.run_until([&] { return seen.size() == 1; }, std::chrono::minutes(1)));
  fx.run();
  auto before = core_stats(fx, core);
  caf::anon_send(driver, s14_go_atom::value, n + 1);
  REQUIRE(fx.run_until([&] { return seen.size() == n + 2; }, std::chrono::minutes(1)));
  fx.run();
  auto after = core_stats(fx, core);
  auto legs = after.grain_attempts - before.grain_attempts;
  MESSAGE(std::string{what} << ": " << legs << " legs for the head and " << n << " behind it; "
                            << after.batch_riders - before.batch_riders << " rode a batch");
  CHECK(legs <= (n + s14_04_batch_max - 1) / s14_04_batch_max + 1);
  CHECK(after.landed - before.landed == n + 1);
  CHECK(after.nacked == before.nacked);
  CHECK(after.in_flight == 0);
  // In order, each once (a stale or duplicate item would break the sequence).
  std::vector<uint64_t> expected(n + 2);
  for (uint64_t k = 0; k < n + 2; ++k)
    expected[k] = k + 1;
  CHECK(seen == expected);
  CHECK(nacked.empty());
  return after;
}

/// Hands the next 1,000 items to `driver` and runs one message at a time until the target
/// took 100 of them (a kill then comes mid-batch).
void run_to_100th(testing::fixture& fx, const caf::actor& driver,
                  const std::vector<uint64_t>& seen) {
  constexpr auto n = s14_04_n;
  caf::anon_send(driver, s14_go_atom::value, n);
  while (seen.size() < n + 2 + 100)
    if (!fx.sched.try_run_once() && !fx.fire_next_timeout())
      break;
  REQUIRE(seen.size() == n + 2 + 100);
}

/// After a kill mid-flow of the 1,000 items that followed `after`: one terminal outcome each
/// (reported landed or NACKed, never both), nothing in flight, reported landed no more than
/// the target took; each NACK once, for an item of this flow; every item the target never
/// took among them; what it took, it took in order.
void check_kill_outcomes(const routing::router_core_stats& after,
                         const routing::router_core_stats& end, const std::vector<uint64_t>& seen,
                         const std::vector<uint64_t>& nacked) {
  constexpr auto n = s14_04_n;
  auto first = n + 3;
  auto landed = end.landed - after.landed;
  auto nacks = end.nacked - after.nacked;
  CHECK(landed + nacks == n);
  CHECK(end.terminal_events - after.terminal_events == n);
  CHECK(end.in_flight == 0);
  CHECK(landed <= seen.size() - (n + 2));
  std::set<uint64_t> nack_set(nacked.begin(), nacked.end());
  CHECK(nack_set.size() == nacked.size());
  CHECK(nacked.size() == nacks);
  if (!nack_set.empty()) {
    CHECK(*nack_set.begin() >= first);
    CHECK(*nack_set.rbegin() <= first + n - 1);
  }
  std::set<uint64_t> took(seen.begin() + static_cast<std::ptrdiff_t>(n + 2), seen.end());
  uint64_t never_taken_unnacked = 0;
  for (auto k = first; k < first + n; ++k)
    if (took.count(k) == 0 && nack_set.count(k) == 0)
      ++never_taken_unnacked;
  CHECK(never_taken_unnacked == 0);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(took.size() == seen.size() - (n + 2));
}

} // namespace

TEST_CASE("S14.04 1,000 frames queued on one channel behind a held head are delivered in at most ceil(1,000 / routing.channel_batch_max) + 1 legs, in order, stale 0, and when the target's silo is killed mid-batch every unreported item gets exactly one NACK and no reported item gets one") {
  testing::fixture fx;
  testing::silo_world w{fx};
  // The hub on B records the frames it takes, in order; the sender's local route on A (the
  // driver) the NACKs.
  auto seen = std::make_shared<std::vector<uint64_t>>();
  auto nacked = std::make_shared<std::vector<uint64_t>>();
  testing::silo_world_options ob;
  ob.configure = [](config::mesh_config& c) {
    c.routing.max_in_flight = 0;
    c.routing.channel_batch_max = 64; // the default, set here so the count holds if it changes
  };
  ob.hubs.emplace_back("portal/b0", [seen](caf::event_based_actor*, const envelope& d,
                                           routing::hub_responder r) {
    seen->push_back(frame_number(d.id));
    r.done();
  });
  auto b_addr = w.add_silo("B", ob).addr;
  REQUIRE(w.last_start->ok());
  fx.run_for(std::chrono::seconds(2));
  testing::silo_world_options oa;
  oa.configure = ob.configure;
  auto& a = w.add_silo("A", oa);
  REQUIRE(w.last_start->ok());
  auto driver = owner_driver(fx, a.routing, item_driver, a.core, nacked, frame_item);
  // Warm-up: B's pod hub is placed and answers A's core, which keeps the route to it.
  auto after = batch_phase(fx, a.core, driver, *seen, *nacked, "S14.04");
  // The target's silo is killed while a batch is out: 100 frames of the next 1,000 taken.
  constexpr auto n = s14_04_n;
  run_to_100th(fx, driver, *seen);
  auto taken_before_kill = seen->size() - (n + 2);
  w.kill(b_addr);
  auto taken = seen->size() - (n + 2);
  REQUIRE(taken < n); // the kill came mid-flow
  // Every frame B never took gets its NACK once B is declared Dead and its pod hub has no
  // silo to serve it.
  REQUIRE(fx.run_until([&] { return nacked->size() >= n - taken; }, std::chrono::minutes(5)));
  fx.run_for(std::chrono::seconds(30));
  auto end = core_stats(fx, a.core);
  MESSAGE("S14.04 kill: B took " << taken_before_kill << " (" << taken << " by the kill); "
                                 << end.landed - after.landed << " reported landed, "
                                 << end.nacked - after.nacked << " NACKed");
  check_kill_outcomes(after, end, *seen, *nacked);
}

namespace {

/// The pure client's hub `portal/p`: records the number of every delivery it takes, in order.
caf::behavior response_recorder(caf::event_based_actor*,
                                std::shared_ptr<std::vector<uint64_t>> seen) {
  return {
    [=](routing::hb_in_atom, const envelope& d) { seen->push_back(frame_number(d.id)); },
  };
}

/// A gateway silo `gw` (`routing.channel_batch_max` 64; with `second_silo`, a silo `other`
/// beside it), a pure client homed on it whose hub `portal/p` records what it takes in
/// `seen`, and an `item_driver` of `response_item`s that is the local route of `node/owner` on the gateway.
struct response_flow {
  testing::silo_world w;
  lifecycle::silo_components* gw = nullptr;
  testing::world_client client;
  std::shared_ptr<std::vector<uint64_t>> seen = std::make_shared<std::vector<uint64_t>>();
  std::shared_ptr<std::vector<uint64_t>> nacked = std::make_shared<std::vector<uint64_t>>();
  caf::actor driver;

  response_flow(testing::fixture& fx, bool second_silo) : w(fx) {
    testing::silo_world_options o;
    o.configure = [](config::mesh_config& c) {
      c.routing.max_in_flight = 0;
      c.routing.channel_batch_max = 64; // the default, set here so counts hold if it changes
    };
    gw = &w.add_silo("gw", o);
    REQUIRE(w.last_start->ok());
    if (second_silo) {
      w.add_silo("other", o);
      REQUIRE(w.last_start->ok());
    }
    client = w.add_client("p", gw->addr);
    auto recorder = fx.track(fx.sys.spawn(response_recorder, seen));
    caf::anon_send(client.routing, routing::rs_register_atom::value, address::from("portal/p"),
                   recorder);
    fx.run_for(std::chrono::seconds(1));
    driver = owner_driver(fx, gw->routing, item_driver, gw->core, nacked, response_item);
  }
};

} // namespace

TEST_CASE("S14.04 1,000 responses queued on a pure client's channel behind a held head ride its batches: delivered in at most ceil(1,000 / routing.channel_batch_max) + 1 legs, in order, each once, and when the client is killed mid-batch every response ends once") {
  testing::fixture fx;
  response_flow f{fx, false};
  // Warm-up: the client's pod hub on the gateway is placed, adopts the client and offers the
  // gateway's core its direct route; then the head's hand-over to the client is out while the
  // 1,000 queue behind it.
  auto after = batch_phase(fx, f.gw->core, f.driver, *f.seen, *f.nacked, "S14.04 responses");
  // The client is killed while a batch is out: 100 responses of the next 1,000 taken. A
  // continuation has no sender that would send it again, so each is tried within its router
  // budget and then ends: every response once, landed or NACKed, nothing left in flight.
  constexpr auto n = s14_04_n;
  run_to_100th(fx, f.driver, *f.seen);
  caf::anon_send(f.w.net, sim_kill_atom::value, f.client.addr);
  for (auto& a : {f.client.routing, f.client.centre, caf::actor_cast<caf::actor>(f.client.agent)})
    caf::anon_send_exit(a, caf::exit_reason::kill);
  fx.run();
  auto taken = f.seen->size() - (n + 2);
  // Once the route to the client's pod hub is gone, batches no longer form: each response
  // tries out a router budget of its own in turn, about 9 s each
  // (docs/known-limits.md#responses-to-a-dead-pure-client). Bounded at 3 hours of virtual time.
  int half_minutes = 0;
  for (; half_minutes < 360 && core_stats(fx, f.gw->core).terminal_events - after.terminal_events < n;
       ++half_minutes)
    fx.run_for(std::chrono::seconds(30));
  auto end = core_stats(fx, f.gw->core);
  MESSAGE("S14.04 responses, client killed: it took " << taken << "; "
                                                      << end.landed - after.landed
                                                      << " reported landed, "
                                                      << end.nacked - after.nacked
                                                      << " NACKed within " << half_minutes * 30
                                                      << " s");
  CHECK(half_minutes < 360);
  check_kill_outcomes(after, end, *f.seen, *f.nacked);
}

TEST_CASE("S14.04 responses riding a batch to a pure client leave a gateway stopped gracefully mid-batch: every response reaches the client through its next gateway, none NACKed, the stop ends") {
  testing::fixture fx;
  response_flow f{fx, true};
  caf::anon_send(f.driver, s14_go_atom::value, uint64_t{1});
  REQUIRE(fx.run_until([&] { return f.seen->size() == 1; }, std::chrono::minutes(1)));
  fx.run();
  constexpr uint64_t n = 1000;
  caf::anon_send(f.driver, s14_go_atom::value, n);
  // The gateway is stopped right after the client took its 100th response.
  while (f.seen->size() < 101)
    if (!fx.sched.try_run_once() && !fx.fire_next_timeout())
      break;
  REQUIRE(f.seen->size() == 101);
  auto stopped = f.w.stop(f.gw->addr, true);
  REQUIRE(fx.run_until([&] { return stopped->done; }, std::chrono::minutes(2)));
  CHECK(stopped->ok());
  fx.run_for(std::chrono::seconds(10));
  std::set<uint64_t> took(f.seen->begin(), f.seen->end());
  MESSAGE("S14.04 responses, gateway stopped: the client took " << took.size() << " of " << n + 1
                                                               << " (" << f.seen->size()
                                                               << " with copies); "
                                                               << f.nacked->size() << " NACKed");
  CHECK(took.size() == n + 1);
  CHECK(f.nacked->empty());
}
