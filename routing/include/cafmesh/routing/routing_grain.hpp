#pragma once

/// @file
/// The routing grain `routing/default` (docs/behaviour/routing.md#the-routing-grain): the stateless
/// worker (limit 1 per silo) a pure client's gateway places for every delivery it routes. Its turn
/// is O(1): it hands a pure client's batch of deliveries to its own silo's router core and is free
/// for the next one.
///
/// ## Protocol
/// - `(hg_routes_atom, std::vector<dispatch_item>, silo_address client) -> dispatch_verdicts`:
///   `delegate`s `(rc_grains_atom, items, client)` to the silo's router core, which answers
///   the caller one verdict per item (dispatch_batch.hpp); `client` is the calling pure
///   client, whose local route a delivery's NACK tries first. A silo without a router core
///   answers the whole batch with the error `silo_unavailable` ("silo {S} has no router core;
///   route elsewhere", `fault::silo` = S).

#include <caf/fwd.hpp>

#include "cafmesh/routing/hub_grains.hpp"

namespace cafmesh::routing {

/// The behaviour of one activation of `routing/default` on the silo of `slots`.
caf::behavior routing_grain_behavior(caf::event_based_actor* self, silo_routing_slots_ptr slots);

} // namespace cafmesh::routing
