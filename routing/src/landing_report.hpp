#pragma once

/// @file
/// The router core's report of where a request landed (held_requests.hpp): a leg that
/// landed a request at a hub of another silo tells the entry that handed it on, so that the
/// entry ends the request at once if that silo dies before the answer leaves
/// (docs/behaviour/routing.md#requests-whose-silo-departs).

#include <optional>

#include <caf/actor.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/router_ports.hpp"

namespace cafmesh::routing {

/// Reports that request `env` landed at `at` (what the hub grain's answer says, `landing_of`),
/// unless that is none or `own` (this router core's silo) or `env` is no request that may be
/// answered: to pure client `entry_client` through `centre`, or (empty) to the co-hosted
/// routing service `entry`. One one-way message; an entry that no longer holds the request
/// ignores it.
void report_landing(const silo_address& own, const caf::actor& centre,
                    const local_route_port_actor& entry, const silo_address& entry_client,
                    const envelope& env, const std::optional<silo_address>& at);

} // namespace cafmesh::routing
