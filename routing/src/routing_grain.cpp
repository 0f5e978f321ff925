#include "cafmesh/routing/routing_grain.hpp"

#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/router_atoms.hpp"

namespace cafmesh::routing {

caf::behavior routing_grain_behavior(caf::event_based_actor* self, silo_routing_slots_ptr slots) {
  return {
    [=](hg_route_atom, envelope& d, silo_address& client,
        caf::timespan answer_within) -> caf::result<envelope> {
      if (!slots->core) {
        fault f{mesh_errc::silo_unavailable,
                "silo " + slots->silo.to_string() + " has no router core; route elsewhere"};
        f.silo = slots->silo;
        return to_error(f);
      }
      self->delegate(caf::actor_cast<caf::actor>(slots->core), rc_grain_atom::value, std::move(d),
                     std::move(client), answer_within);
      return caf::delegated<envelope>{};
    },
  };
}

} // namespace cafmesh::routing
