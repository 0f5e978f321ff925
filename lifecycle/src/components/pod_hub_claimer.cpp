// The pod-hub claimer (hub_grains.hpp): it claims pod hubs through placement, subscribes to
// membership with the runtime services (runtime_services.cpp) and receives the host's
// stopping signal.

#include "silo_component.hpp"

#include "cafmesh/routing/hub_grains.hpp"

namespace cafmesh::lifecycle::components {

extern const silo_component pod_hub_claimer{
  [](silo_wiring& w) {
    w.s.claimer = routing::spawn_pod_hub_claimer(w.sys, w.s.placement, w.s.routing, w.cfg().attach,
                                                 w.name, w.s.slots);
    w.stopping_recipients.push_back(stopping_recipient_actor{w.s.claimer});
  },
  nullptr,
  [](const silo_components& s) { return handles(s.claimer); },
};

} // namespace cafmesh::lifecycle::components
