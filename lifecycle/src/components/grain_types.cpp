// The silo's grain types (the built-in `routing`, `messagehub` and `podhub`, then the
// application's) and the routing slots the built-in grains reach the silo through.

#include "silo_component.hpp"

namespace cafmesh::lifecycle::components {

extern const silo_component grain_types{
  [](silo_wiring& w) {
    w.s.registry = std::make_shared<cafmesh::grain_registry>();
    w.s.slots = std::make_shared<routing::silo_routing_slots>();
    w.s.slots->silo = w.s.addr;
    routing::register_routing_grains(*w.s.registry, w.s.slots);
    if (w.opts.grains)
      w.opts.grains(*w.s.registry);
  },
  nullptr,
  nullptr,
};

} // namespace cafmesh::lifecycle::components
