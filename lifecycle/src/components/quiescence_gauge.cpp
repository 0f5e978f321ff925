// The quiescence gauge (docs/behaviour/quiescence.md): counts the router core's legs in
// progress for the quiescence participant's hold.

#include "silo_component.hpp"

#include "cafmesh/routing/routing_quiescence.hpp"

namespace cafmesh::lifecycle::components {

extern const silo_component quiescence_gauge{
  [](silo_wiring& w) { w.s.gauge = routing::spawn_routing_quiescence(w.sys, {w.name}); },
  nullptr,
  [](const silo_components& s) { return handles(s.gauge); },
};

} // namespace cafmesh::lifecycle::components
