#include "cafmesh/routing/hub_grains.hpp"

#include <chrono>
#include <deque>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/grain_call.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/gateway_atoms.hpp"
#include "cafmesh/routing/held_requests.hpp"
#include "cafmesh/routing/routing_grain.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "cafmesh/routing/detail/hub_grains_state.hpp"

namespace cafmesh::routing {

using cafmesh::routing::detail::grain_delivery_state;

const char* grain_delivery_state::name = "cafmesh.grain_delivery";

namespace {

// -- grain-delivery adapter --------------------------------------------------------------

using gd_actor = grain_port_actor::stateful_pointer<grain_delivery_state>;

grain_port_actor::behavior_type grain_delivery(gd_actor self, caf::actor placement,
                                               silo_address silo) {
  self->state.placement = std::move(placement);
  return {
    [=](gp_call_atom, uint64_t call, const grain_id& g, envelope& d, caf::timespan within) {
      auto& st = self->state;
      ++st.attempts;
      grain_port_reply rp{self, call};
      // A hub grain learns that its own silo's router core calls it through placement (the
      // core has no direct route to it): it offers one (docs/delivery-costs.md).
      auto payload = !silo.empty() && (g.type == "messagehub" || g.type == "podhub")
                       ? caf::make_message(hg_deliver_atom::value, std::move(d), silo)
                       : caf::make_message(hg_deliver_atom::value, std::move(d));
      grain_call_within(self, st.placement, g, std::move(payload), within)
        .then([=](envelope& r) { rp.deliver(std::move(r)); },
              [=](caf::error& e) {
                auto f = to_fault(e);
                if (auto n = find_code(f, mesh_errc::activation_deactivated))
                  if (n->activation_error_recorded == tri_bool::yes)
                    self->state.act_errors[g] = n->text;
                if (auto n = find_code(f, mesh_errc::silo_unavailable))
                  if (n->silo) {
                    ++self->state.leaving_reports;
                    caf::anon_send(self->state.placement, pl_leaving_atom::value, *n->silo);
                  }
                rp.deliver(to_error(f));
              });
    },
    [=](gp_invalidate_atom, const grain_id& g) {
      ++self->state.invalidations;
      caf::anon_send(self->state.placement, pl_inval_atom::value, g);
    },
    [=](gp_inval_silo_atom, const silo_address& s) {
      ++self->state.invalidations;
      caf::anon_send(self->state.placement, pl_inval_atom::value, s);
    },
    [=](gp_act_error_atom, const grain_id& g) {
      auto& m = self->state.act_errors;
      auto i = m.find(g);
      return i == m.end() ? std::string{} : i->second;
    },
  };
}

} // namespace

grain_port_actor spawn_grain_delivery(caf::actor_system& sys, caf::actor placement,
                                      silo_address silo) {
  return sys.spawn(grain_delivery, std::move(placement), std::move(silo));
}

} // namespace cafmesh::routing
