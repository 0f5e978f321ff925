#pragma once

/// @file
/// A pure-client process (docs/architecture.md#process-roles role `pure_client`,
/// docs/behaviour/membership.md#gateways-for-pure-clients, docs/behaviour/routing.md#the-entry):
/// the actors a process needs to send into the cluster through a gateway silo and to receive at the
/// hubs it hosts. `spawn_pure_client` is the one place that knows this wiring (simulation, and the
/// network client where `link` is a net_link and `oracle` a relay).
///
/// ## What is built
/// | actor | role |
/// |---|---|
/// | message centre | on `link` (or `opts.centre` when given); registers the routing service as component `client` |
/// | membership agent | talks to `oracle`; the centre and the routing service subscribe to it |
/// | routing service | role `pure_client`, inbound attach on (routing_service.hpp): sends through
/// `routing/default` at a gateway; attaches every stream-routed local route at its gateway, so that
/// pod hubs `podhub/{path}` hand deliveries, responses and NACKs to it (`lr_deliver`); handles
/// stop-send by re-homing (docs/behaviour/membership.md#gateways-for-pure-clients); watches the
/// centre's departures (`mc_watch_atom`): a gateway whose connection is lost is left at once and
/// never chosen again, and the requests it had accepted end in one NACK `failed` |
///
/// Hubs of the process register with the routing service (`rs_register_atom`); a
/// stream-routed one (`routing.stream_routed_address_types`, e.g. `portal/user1/tab1`) is
/// attached at the gateway at once, under the attach policy
/// (docs/behaviour/classification.md#retry-policies).

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/stream_transport.hpp"

namespace cafmesh::lifecycle {

/// What a pure client is built from.
struct pure_client_options {
  /// The whole configuration (examples/config/README.md#keys): client, attach, routing, size,
  /// placement and grain_call sections, `mesh.name` (empty: the rendered `self` names the
  /// process) and
  /// `simulation.seed` (gateway choice).
  config::mesh_config cfg;
  /// This process's address (host, port, generation); the gateways' pod hubs reach it here.
  silo_address self;
  /// The link the message centre is spawned on (`spawn_sim_network` or a net_link).
  link_actor link;
  /// The membership oracle (the oracle itself in simulation, a relay in network mode).
  membership_oracle_actor oracle;
  /// Optional: an already spawned message centre for `self` (then `link` is ignored).
  caf::actor centre;
  /// Optional: also receives every stop-send `(gw_stop_send_atom, silo_address gateway)`.
  caf::actor events;
  /// Optional: told the final failure of every answer-suppressed dispatch
  /// (`routing_service_options::failure_observer`).
  caf::actor failure_observer;
};

/// One assembled pure client.
struct pure_client {
  silo_address addr;
  caf::actor centre;
  membership_agent_actor agent;
  caf::actor routing; ///< the routing service (component `client` of the centre)
  /// The process's stream transport (stream_transport.hpp), started at once: a hub of this
  /// client subscribes its address here (`st_sub_atom`) to be reachable by the stream leg
  /// and NACK rung d (docs/behaviour/routing.md#legs, #nacks); peers = the silos of the membership
  /// snapshots.
  routing::stream_transport_actor streams;

  /// Sends an exit (`user_shutdown`) to every actor of the client. Idempotent.
  void stop_all() const;
};

/// Spawns a pure client (see the file comment). Registration with the centre and the
/// agent's subscriptions are sent before this returns; run the system to let them arrive.
/// The caller owns the actors (`stop_all` at teardown).
pure_client spawn_pure_client(caf::actor_system& sys, pure_client_options opts);

} // namespace cafmesh::lifecycle
