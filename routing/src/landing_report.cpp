#include "landing_report.hpp"

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/held_requests.hpp"

namespace cafmesh::routing {

void report_landing(const silo_address& own, const caf::actor& centre,
                    const local_route_port_actor& entry, const silo_address& entry_client,
                    const envelope& env, const std::optional<silo_address>& at) {
  if (!may_answer(env) || is_continuation(env))
    return;
  if (!at || *at == own)
    return; // landed here: this silo's own departure takes the entry's answers with it
  if (!entry_client.empty()) {
    if (centre)
      caf::anon_send(centre, mc_send_atom::value, entry_client, component::client,
                     caf::make_message(rs_landed_atom::value, env.id, *at));
    return;
  }
  if (entry) // the routing service's full interface takes the report
    caf::anon_send(caf::actor_cast<caf::actor>(entry), rs_landed_atom::value, env.id, *at);
}

} // namespace cafmesh::routing
