// The gateway part (component `gateway`, gateway.hpp) at Active 20000: it opens to pure
// clients at the start; a stop tells every connected pure client to stop sending (at once if
// not graceful). The catalog's stage closes it (catalog.cpp).

#include "silo_component.hpp"

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/lifecycle/gateway.hpp"
#include "cafmesh/routing/gateway_atoms.hpp"

namespace cafmesh::lifecycle::components {

namespace ev = silo_event_text;

extern const silo_component gateway{
  [](silo_wiring& w) {
    auto go = gateway_options::from(w.cfg(), w.s.addr);
    go.placement = w.s.placement;
    go.centre = w.s.centre;
    go.streams = w.s.streams;
    go.core = w.s.core;
    w.s.gateway = spawn_gateway(w.sys, std::move(go));
    w.s.slots->gateway = w.s.gateway;
    const auto& wrap = seams_of(w.opts).wrap_gateway;
    w.served_gateway = wrap ? wrap(w.s.gateway) : w.s.gateway;
  },
  [](silo_wiring& w) {
    auto part = w.s.gateway;
    auto lg = w.lg;
    w.subscribe(
      stages::active, "gateway",
      [=](stage_self self, bool, stage_promise rp) {
        call_then_answer(self, part, lg, ev::gateway_open, rp, routing::gw_open_atom::value);
      },
      [=](stage_self self, bool graceful, stage_promise rp) mutable {
        request_any(
          self, part, 0, caf::make_message(routing::gw_stop_send_atom::value, graceful),
          [=](caf::message m) mutable {
            size_t n = 0;
            if (m.match_elements<size_t>())
              n = m.get_as<size_t>(0);
            lg->info(std::string{ev::stop_send} + " " + std::to_string(n) + " pure client(s)");
            rp.deliver(caf::ok_atom::value);
          },
          [=](caf::error e) mutable {
            lg->warning("gateway stop-send failed: " + to_fault(e).text);
            rp.deliver(caf::ok_atom::value);
          });
      });
  },
  [](const silo_components& s) { return handles(s.gateway); },
};

} // namespace cafmesh::lifecycle::components
