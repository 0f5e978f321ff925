#pragma once

/// @file
/// A hub endpoint (docs/behaviour/routing.md#nacks sender side): an in-process hub registered as a
/// local route of its process's routing service, sending through that routing service and
/// keeping an
/// `outcome_tracker`, so that the application sees exactly one terminal outcome per
/// delivery id. It doubles as a simple application hub (it records what it receives and
/// answers node-hub deliveries `processed`), which the tests use as subscriber and target.
///
/// ## Protocol (`hub_endpoint_actor`)
/// - `(ep_request_atom, envelope, int64_t timeout_ms)`: send a request (sender = this hub)
///   to the routing service as `(rs_request_atom, envelope, timeout_ms)`:
///   tracked as pending until the first of {response, NACK, deadline `now + timeout_ms`}.
/// - `(ep_post_atom, envelope)`: a one-way post; not tracked; its first NACK is passed on.
/// - `(hb_in_atom, envelope)` (from the routing service): a NACK (`payload_type` =
///   `delivery_failure`), a response (`request_id` set) or a delivery to this hub (recorded
///   in `received`; a delivery that is itself a request is answered with a response envelope
///   when `respond` is on).
/// - `(hb_deliver_atom, envelope) -> envelope`: a node hub's hand-over: recorded in
///   `received`, answered with state `processed` (and, with `respond` on, answered with a
///   response envelope to its sender as for `hb_in`).
/// - `(ep_rehome_atom, caf::actor routing)`: send through `routing` from now on (its hub
///   was homed on another silo).
/// The routing service keeps its hubs as plain handles (`rs_register_atom`): register the
/// endpoint as `caf::actor_cast<caf::actor>(ep)`.
/// Records kept for inspection (`received`, `outcomes`, `entry_answers`) each hold at most
/// `routing.endpoint_record_max` entries, the oldest dropped first
/// (docs/behaviour/routing.md#bounded-records); the observer is told every event regardless.
/// Outcomes passed to the application are recorded in `outcomes`; duplicates are dropped by
/// the tracker with the debug line "duplicate outcome for delivery {id} dropped". A delivery
/// whose id this hub already took in (a retried hand-over whose first copy landed) is
/// dropped the same way, never recorded or answered twice.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/outcome_tracker.hpp"

namespace cafmesh::routing {

/// One terminal outcome the application saw.
struct hub_outcome {
  int64_t t_ms = 0;                           ///< actor-clock ms
  std::string id;                             ///< the delivery id
  std::string kind;                           ///< `response`, `nack`, `deadline` or `entry_failed`
  routing::verdict verdict = verdict::failed; ///< NACKs only
  bool target_unserved = false;               ///< NACKs only
  std::string message;                        ///< NACK text or entry error
};

/// One envelope received by the hub.
struct hub_received {
  int64_t t_ms = 0;
  envelope env;
};

/// The handle of a hub endpoint (see the file comment).
using hub_endpoint_actor
  = caf::typed_actor<caf::reacts_to<ep_request_atom, envelope, int64_t>,
                     caf::reacts_to<ep_post_atom, envelope>, caf::reacts_to<hb_in_atom, envelope>,
                     caf::replies_to<hb_deliver_atom, envelope>::with<envelope>,
                     caf::reacts_to<ep_rehome_atom, caf::actor>>;

/// Spawns a hub endpoint for `self_address` sending through `routing` (a routing service).
/// It does NOT register itself: register it with `rs_register_atom` (tests do so).
/// `observer`, when set, is told every received delivery and every outcome as it happens
/// (`ep_event_atom`, entry_atoms.hpp), e.g. by a traffic driver.
hub_endpoint_actor spawn_hub_endpoint(caf::actor_system& sys, address self_address,
                                      caf::actor routing, const config::routing_section& cfg = {},
                                      bool respond = false, caf::actor observer = caf::actor{});

} // namespace cafmesh::routing
