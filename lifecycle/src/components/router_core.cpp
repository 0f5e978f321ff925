// The router core (docs/behaviour/routing.md): it receives the host's stopping signal and the
// membership versions, which drop its cached resolutions
// (docs/behaviour/routing.md#cacheable-resolutions). The routing service's stage hands it over.

#include "silo_component.hpp"

#include <caf/send.hpp>

#include "cafmesh/actors/membership.hpp"
#include "cafmesh/routing/hub_grains.hpp"
#include "cafmesh/routing/router_core.hpp"

namespace cafmesh::lifecycle::components {

extern const silo_component router_core{
  [](silo_wiring& w) {
    auto& s = w.s;
    auto co = routing::router_core_options::from(w.cfg(), s.addr);
    co.gauge = s.gauge;
    co.pool = s.pool;
    co.registry = w.opts.registry;
    const auto& wrap = seams_of(w.opts).wrap_grain_port;
    co.grains = wrap ? wrap(s.grains) : s.grains;
    co.resolver = w.opts.resolver;
    co.failure_observer = w.opts.failure_observer;
    co.local_routes = w.routing_service;
    co.streams = routing::stream_port_actor{s.streams};
    co.centre = s.centre;
    s.core = routing::spawn_router_core(w.sys, co);
    caf::anon_send(s.agent, mb_subscribe_atom::value, caf::actor_cast<caf::actor>(s.core));
    s.slots->core = s.core;
    s.slots->routing = s.routing;
    s.slots->hubs = w.opts.hubs;
    s.slots->centre = s.centre;
    w.stopping_recipients.push_back(stopping_recipient_actor{s.core});
  },
  nullptr,
  [](const silo_components& s) { return handles(s.core); },
};

} // namespace cafmesh::lifecycle::components
