// The co-hosted router-core path's cost in mailbox enqueues
// (docs/behaviour/routing.md#the-co-hosted-hot-path): a post from a hub of a silo that has no
// local route for its target goes routing service -> router core -> grain port -> router
// core. Measured in virtual time on CAF's test coordinator, which resumes an actor for one
// message per job (checked below), so the jobs it runs are the messages enqueued.

#include "router_fakes.hpp"

#include "cafmesh/routing/routing_service.hpp"

using namespace cafmesh::testing::router_bed;
using cafmesh::testing::fixture;

namespace {

using hp_go_atom = caf::atom_constant<caf::atom("hpgo")>;
using hp_tick_atom = caf::atom_constant<caf::atom("hptick")>;

/// Counts what it is sent (the calibration of one job per message).
caf::behavior sink(caf::event_based_actor*) {
  return {[](hp_tick_atom) {}};
}

struct driver_state {
  caf::actor routing;
  uint64_t next = 0;
  static const char* name;
};

const char* driver_state::name = "hot-path-driver";

/// Posts `n` deliveries to `node/Org/Acme` through the co-hosted entry, one-way (a post
/// needs no answer: a failure reaches its sender as a NACK), on `(hp_go_atom, n)`.
caf::behavior driver(caf::stateful_actor<driver_state>* self, caf::actor routing) {
  self->state.routing = std::move(routing);
  return {
    [=](hp_go_atom, uint64_t n) {
      auto& st = self->state;
      for (uint64_t i = 0; i < n; ++i) {
        auto e = bed::make("p" + std::to_string(++st.next), "node/Org/Acme");
        self->send(st.routing, rs_post_atom::value, std::move(e));
      }
    },
  };
}

} // namespace

TEST_CASE_FIXTURE(fixture, "hot path: a co-hosted router-core delivery costs at most 4 mailbox enqueues in the steady state") {
  // The hook: one job of the test coordinator is one message, at either priority.
  auto s = track(sys.spawn(sink));
  for (int i = 0; i < 10; ++i) {
    caf::anon_send(s, hp_tick_atom::value);
    caf::anon_send<caf::message_priority::high>(s, hp_tick_atom::value);
  }
  REQUIRE(run() == 20);

  bed b(*this);
  // The flow offers 1,000 deliveries at once; admission control is not what this measures.
  b.cfg.routing.max_in_flight = 0;
  // Every hot-path interpretation on, as by default: the core's own start permits included
  // (docs/behaviour/quiescence.md#admission-inside-the-router-core).
  b.start();
  routing_service_options ro;
  ro.role = config::process_role::silo_host;
  ro.process_name = b.silo.to_string();
  ro.core = b.rc;
  auto rs = caf::actor_cast<caf::actor>(track(spawn_routing_service(sys, ro)));
  auto drv = track(sys.spawn(driver, rs));
  run();

  // Warm-up: the first deliveries fill what the path keeps between deliveries.
  constexpr uint64_t warm = 100;
  caf::anon_send(drv, hp_go_atom::value, warm);
  run();
  REQUIRE(b.stats().landed == warm);

  // 1,000 deliveries in one flow: the core stays busy from the first to the last.
  constexpr uint64_t n = 1000;
  caf::anon_send(drv, hp_go_atom::value, n);
  auto jobs = run() - 1; // less the `go` itself
  auto per_delivery = static_cast<double>(jobs) / static_cast<double>(n);
  MESSAGE("co-hosted router-core path: " << jobs << " mailbox enqueues for " << n
                                         << " deliveries = " << per_delivery
                                         << " per delivery");
  // Every delivery landed once, nothing is left in flight and the gauge is back at zero.
  auto st = b.stats();
  REQUIRE(st.landed == warm + n);
  CHECK(st.terminal_events == warm + n);
  CHECK(st.in_flight == 0);
  CHECK(b.grain().attempts.size() == warm + n);
  CHECK(b.local_nacks().empty());
  CHECK(b.gauge_count() == 0);
  // Entry, router core, grain port, router core: 4 per delivery. The gauge hears the core a
  // few times per flow (its count leaving or reaching 0, its mailbox running empty), never
  // per delivery (docs/behaviour/quiescence.md#the-router-cores-own-count).
  CHECK(jobs <= 4 * n + 4);
}
