// The pool teardown participant at First (docs/behaviour/quiescence.md#the-routing-io-pool):
// it captures the routing I/O pool at the start; a stop drains and joins the pool, bounded.

#include "silo_component.hpp"

#include "cafmesh/routing/pool_teardown_participant.hpp"

namespace cafmesh::lifecycle::components {

extern const silo_component pool_teardown{
  [](silo_wiring& w) {
    w.s.pool_teardown = routing::spawn_pool_teardown_participant(
      w.sys, w.s.pool, routing::pool_teardown_options::from(w.cfg().pool, w.name));
  },
  [](silo_wiring& w) { w.subscribe(stages::first, "pool-teardown", w.s.pool_teardown); },
  nullptr,
};

} // namespace cafmesh::lifecycle::components
