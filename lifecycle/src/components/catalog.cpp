// The catalog at GrainDeactivation 19998: a stop deactivates every activation (each bounded),
// then the gateway stops accepting client messages. It is registered at the message centre
// with the runtime services (runtime_services.cpp).

#include "silo_component.hpp"

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/routing/gateway_atoms.hpp"

namespace cafmesh::lifecycle::components {

namespace ev = silo_event_text;

extern const silo_component catalog{
  [](silo_wiring& w) {
    auto cc = make_catalog_config(w.cfg(), w.s.addr);
    w.s.catalog = spawn_catalog(w.sys, cc, w.s.registry, w.s.centre, w.s.placement);
  },
  [](silo_wiring& w) {
    auto catalog = w.s.catalog;
    auto gateway = w.s.gateway;
    auto lg = w.lg;
    w.subscribe(stages::grain_deactivation, "catalog", nullptr,
                [=](stage_self self, bool, stage_promise rp) mutable {
                  call(
                    self, catalog, 0,
                    [=](caf::error e) mutable {
                      log_step(*lg, e, "catalog deactivation", ev::all_deactivated);
                      call(
                        self, gateway, 0,
                        [=](caf::error) mutable {
                          lg->info(ev::gateway_closed);
                          rp.deliver(caf::ok_atom::value);
                        },
                        routing::gw_close_atom::value);
                    },
                    ct_deact_all_atom::value);
                });
  },
  [](const silo_components& s) { return handles(s.catalog); },
};

} // namespace cafmesh::lifecycle::components
