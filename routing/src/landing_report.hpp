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

/// The property of a hub grain's answer naming the activation that took the delivery
/// (its tag's 8 hex digits, a JSON string), stamped beside the landing silo (`stamp_landing`) when another silo's
/// router core called it through placement: that core calls the activation directly from
/// then on (docs/delivery-costs.md#the-remote-frame-path).
inline constexpr const char* landed_activation_property = "landed_activation";

/// What a pod-hub grain answers for delivery `d` once a local route took it: `d`'s id,
/// addresses, request id and stream id with state `forwarded`, without its payload, properties,
/// path or caller identity (its caller reads the state and the stamps only, and the answer of a
/// remote call crosses the link back).
envelope forwarded_answer(const envelope& d);

/// Stamps `tag` into `answer` (`landed_activation_property`).
void stamp_landed_activation(envelope& answer, activation_tag tag);

/// The activation tag `answer` carries, if any.
std::optional<activation_tag> landed_activation_of(const envelope& answer);

} // namespace cafmesh::routing
