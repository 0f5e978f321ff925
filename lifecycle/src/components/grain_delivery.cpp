// The grain-delivery adapter: the router core's grain port, delivering grain legs through
// placement.

#include "silo_component.hpp"

#include "cafmesh/routing/hub_grains.hpp"

namespace cafmesh::lifecycle::components {

extern const silo_component grain_delivery{
  [](silo_wiring& w) {
    w.s.grains = routing::spawn_grain_delivery(w.sys, w.s.placement, w.s.addr);
  },
  nullptr,
  [](const silo_components& s) { return handles(s.grains); },
};

} // namespace cafmesh::lifecycle::components
