// The silo process's routing service (role `silo_host`) at ApplicationServices 10000: its start
// hands it the router core and starts the stream transport; the routing actors stay up until
// First. It receives the host's stopping signal.

#include "silo_component.hpp"

#include <caf/send.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/routing_service.hpp"
#include "cafmesh/routing/stream_transport.hpp"

namespace cafmesh::lifecycle::components {

namespace ev = silo_event_text;

extern const silo_component routing_service{
  [](silo_wiring& w) {
    auto ro = routing::routing_service_options::from(w.cfg());
    ro.streams = w.s.streams;
    ro.role = config::process_role::silo_host;
    ro.process_name = w.name;
    auto service = routing::spawn_routing_service(w.sys, ro);
    w.routing_service = service;
    w.s.routing = caf::actor_cast<caf::actor>(service);
    // The routing service ends the held requests of its hubs whose landing silo departs
    // abruptly (docs/behaviour/routing.md#requests-whose-silo-departs): it learns departures
    // from the centre and graceful leaves from membership.
    caf::anon_send(w.s.centre, mc_watch_atom::value, w.s.routing);
    caf::anon_send(w.s.agent, mb_subscribe_atom::value, w.s.routing);
    w.stopping_recipients.push_back(service);
  },
  [](silo_wiring& w) {
    auto service = w.s.routing;
    auto core = w.s.core;
    auto streams = w.s.streams;
    auto lg = w.lg;
    w.subscribe(
      stages::application_services, "routing",
      [=](stage_self, bool, stage_promise rp) mutable {
        caf::anon_send(service, routing::rs_core_atom::value, core);
        caf::anon_send(streams, routing::st_start_atom::value);
        lg->info(ev::routing_ready);
        rp.deliver(caf::ok_atom::value);
      },
      [=](stage_self, bool, stage_promise rp) mutable {
        lg->info(ev::routing_stays_up);
        rp.deliver(caf::ok_atom::value);
      });
  },
  [](const silo_components& s) { return handles(s.routing); },
};

} // namespace cafmesh::lifecycle::components
