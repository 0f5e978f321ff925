// The process's stream transport (stream_transport.hpp): the router core's stream port, its
// peers the silos of the membership snapshots. The routing service's stage starts it.

#include "silo_component.hpp"

#include <caf/send.hpp>

#include "cafmesh/actors/membership.hpp"
#include "cafmesh/routing/stream_transport.hpp"

namespace cafmesh::lifecycle::components {

extern const silo_component stream_transport{
  [](silo_wiring& w) {
    w.s.streams = routing::spawn_stream_transport(
      w.sys, {w.s.addr, w.s.centre, w.cfg().routing.stream_transport_timeout_ms, {}});
    caf::anon_send(w.s.agent, mb_subscribe_atom::value, caf::actor_cast<caf::actor>(w.s.streams));
  },
  nullptr,
  [](const silo_components& s) { return handles(s.streams); },
};

} // namespace cafmesh::lifecycle::components
