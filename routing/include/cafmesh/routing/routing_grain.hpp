#pragma once

/// @file
/// The routing grain `routing/default` (docs/behaviour/routing.md#the-routing-grain): the stateless
/// worker (limit 1 per silo) a pure client's gateway places for every delivery it routes. Its turn
/// is O(1): it hands the delivery to its own silo's router core and is free for the next one.
///
/// ## Protocol
/// - `(hg_route_atom, envelope, silo_address client, caf::timespan answer_within) -> envelope`:
///   `delegate`s `(rc_grain_atom, envelope, client, answer_within)` to the silo's router core,
///   which answers the caller `forwarded` or `silo_unavailable`; `client` is the calling pure
///   client, whose local route the delivery's NACK tries first; `answer_within` how long the
///   requester still waits, less a margin (0: no bound,
///   docs/behaviour/routing.md#a-requests-remaining-time). A silo without a router core answers the error
///   `silo_unavailable` ("silo {S} has no router core; route elsewhere", `fault::silo` = S).

#include <caf/fwd.hpp>

#include "cafmesh/routing/hub_grains.hpp"

namespace cafmesh::routing {

/// The behaviour of one activation of `routing/default` on the silo of `slots`.
caf::behavior routing_grain_behavior(caf::event_based_actor* self, silo_routing_slots_ptr slots);

} // namespace cafmesh::routing
