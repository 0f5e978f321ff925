// The routing I/O pool (docs/behaviour/quiescence.md#the-routing-io-pool): the router core's
// blocking legs; drained and joined at First by the pool teardown (pool_teardown.cpp).

#include "silo_component.hpp"

#include "cafmesh/routing/io_pool.hpp"

namespace cafmesh::lifecycle::components {

extern const silo_component io_pool{
  [](silo_wiring& w) {
    w.s.pool = routing::spawn_io_pool(w.sys, routing::io_pool_options::from(w.cfg().pool, w.name));
  },
  nullptr,
  [](const silo_components& s) { return handles(s.pool); },
};

} // namespace cafmesh::lifecycle::components
