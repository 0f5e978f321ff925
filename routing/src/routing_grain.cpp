#include "cafmesh/routing/routing_grain.hpp"

#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/routing/dispatch_batch.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/router_atoms.hpp"

namespace cafmesh::routing {

caf::behavior routing_grain_behavior(caf::event_based_actor* self, silo_routing_slots_ptr slots) {
  return {
    [=](hg_routes_atom, std::vector<dispatch_item>& items,
        silo_address& client) -> caf::result<dispatch_verdicts> {
      if (!slots->core) {
        fault f{mesh_errc::silo_unavailable,
                "silo " + slots->silo.to_string() + " has no router core; route elsewhere"};
        f.silo = slots->silo;
        return to_error(f);
      }
      self->delegate(slots->core, rc_grains_atom::value, std::move(items), std::move(client));
      return caf::delegated<dispatch_verdicts>{};
    },
  };
}

} // namespace cafmesh::routing
