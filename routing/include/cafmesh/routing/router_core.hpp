#pragma once

/// @file
/// The router core (docs/behaviour/routing.md#the-router-core, #legs,
/// docs/behaviour/classification.md#retry-policies, docs/behaviour/routing.md#nacks,
/// #saturation-report-and-refusal-log): one actor per silo, the single serialisation point for
/// accepted deliveries. It owns the ordered route dispatcher, the in-flight count and saturation
/// report, every leg (explicit state machines, no actor per delivery:
/// docs/behaviour/routing.md#legs) and the NACK machinery. Protocol: router_core_actor.hpp; ports:
/// router_ports.hpp.

#include <cstdint>
#include <string>

#include <caf/actor.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/io_pool_actor.hpp"
#include "cafmesh/routing/routing_quiescence_actor.hpp"
#include "cafmesh/actors/runtime_registry.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/routing/router_ports.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace cafmesh::routing {

/// Everything one router core needs. Null handles mean "not available": a leg step that
/// needs a missing port is a composition fault (NACK `failed` "Routing to '{addr}' failed
/// before the delivery could be attempted: …", docs/behaviour/routing.md#legs); a missing NACK
/// transport skips its rung (docs/behaviour/routing.md#nacks); a missing gauge or registry is
/// simply not used.
struct router_core_options {
  /// This silo (log context, `silo_unavailable` text and `fault::silo`, default address).
  silo_address silo;
  /// The router's own address, appended to every routed envelope's `routing_path` and used
  /// for loop detection (docs/behaviour/routing.md#the-router-core) and as the `sender` of its NACK
  /// envelopes. Empty: `router/{rendered silo}`.
  address self_address;
  /// Section `routing` (address classes, timeouts, retry policy, saturation thresholds,
  /// refusal log window).
  config::routing_section routing;
  /// Section `size` (grain-call body limit, docs/behaviour/size-guard.md#limits).
  config::size_section size;
  /// `placement.timeout_ms`: with `grain_call.response_timeout_ms` it bounds one grain
  /// attempt (docs/behaviour/routing.md#legs: placement 30,000 + response 30,000).
  int64_t placement_timeout_ms = 30000;
  int64_t grain_response_timeout_ms = 30000;
  /// Bound on one runtime probe (docs/behaviour/classification.md#codes); silence counts as
  /// `no_answer`. cafmesh choice, not a examples/config/README.md#keys key.
  int64_t runtime_probe_timeout_ms = 1000;
  /// The mesh's own address type for host-address reduction (docs/behaviour/envelope.md#addresses).
  std::string mesh_type = "mesh";
  /// How long the NACKs of legs ended by a stop (`q_end_legs_atom`, or the pool drain's
  /// cancel) may take to leave before they are logged at error as unsent and dropped:
  /// `pool.drain_grace_ms`, the grace a drain grants legs that keep finishing.
  int64_t release_bound_ms = 8000;
  /// The core grants its own start permits until the pool's drain takes its legs over
  /// (docs/behaviour/quiescence.md#admission-inside-the-router-core). False makes every leg
  /// ask the pool for its permit (four pool messages per leg).
  bool own_start_permits = true;

  /// The silo's quiescence gauge (docs/behaviour/quiescence.md#the-gauge).
  routing::routing_quiescence_actor gauge;
  /// The silo's routing I/O pool (docs/behaviour/quiescence.md#the-routing-io-pool); every leg and
  /// every NACK starts through it.
  routing::io_pool_actor pool;
  /// The process's runtime registry (docs/behaviour/lifecycle.md#the-host), probed for
  /// `runtime_gone` (docs/behaviour/classification.md#codes).
  lifecycle::runtime_registry_actor registry;

  /// Ports (router_ports.hpp).
  grain_port_actor grains;
  path_resolver_actor resolver;
  stream_port_actor streams;
  local_route_port_actor local_routes;
  /// The silo's message centre: a NACK for a delivery a pure client handed to the routing
  /// grain goes first to that client's local route through it (`lr_deliver_atom` to the
  /// client's component `client`), since the client's process hosts the sender. Null: that
  /// rung is skipped.
  caf::actor centre;
  /// Told every failure of an answer-suppressed delivery (no NACK may answer it,
  /// docs/behaviour/routing.md#nacks step 1):
  /// `(ep_event_atom, "suppressed", delivery id, uint8_t verdict, text)` one-way (entry_atoms.hpp),
  /// e.g. by a traffic driver keeping an outcome ledger. May be null.
  caf::actor failure_observer;

  /// The options from a whole configuration (sections routing, size, placement,
  /// grain_call); handles stay null.
  static router_core_options from(const config::mesh_config& cfg, silo_address silo);
};

/// The router core's address for `silo` when none is configured: `router/{rendered silo}`.
address default_router_address(const silo_address& silo);

/// Spawns a router core (docs/behaviour/routing.md#the-router-core). The caller owns it: exit it
/// with the silo's runtime services (it holds no self-re-arming timer; pending leg timers die
/// with it).
///
/// **Accepting** `route(envelope)` (both entries), docs/behaviour/routing.md#the-router-core:
/// 1. grain path after the stopping signal -> error `silo_unavailable`;
/// 2. `self_address` already on `routing_path` -> NACK `routing_loop` (tracked work);
/// 3. host address (docs/behaviour/envelope.md#addresses); the router appends `self_address` to
/// `routing_path`;
/// 4. host type in `routing.stream_routed_address_types` -> pod-hub leg enqueued on
///    channel (host path, ordering key) of the ordered dispatcher, gauge slot
///    `stream-routed -> {host path} (delivery {id})`; else node leg admitted through the
///    pool at once, gauge slot `dispatch -> {host path} (delivery {id})`. Host types in
///    `routing.client_hosted_address_types` that are not stream-routed run a stream leg on
///    the node branch (docs/behaviour/routing.md#legs "Stream leg (client-hosted types …)");
/// 5. in-flight count + 1 and one gauge slot (state queued) at once; slot dispatched when the
///    leg starts (start permit granted, first asynchronous step issued); both released at its
///    one terminal event. The core counts its slots itself and publishes them to the gauge as
///    deltas (docs/behaviour/quiescence.md#the-router-cores-own-count); it grants its own start
///    permits until the pool's drain takes its legs over
///    (docs/behaviour/quiescence.md#admission-inside-the-router-core);
/// 6. grain path answered `forwarded`.
///
/// **Admission control.** Before step 2, a delivery that finds `routing.max_in_flight` legs
/// accepted and not terminated is refused, never accepted: co-hosted with a NACK (not
/// tracked as a leg) of verdict `unavailable`, text "silo {S} overloaded: {n} deliveries in
/// flight (routing.max_in_flight {m}); retry after {r} ms" and the NACK envelope's property
/// `retry_after_ms` = `routing.overload_retry_after_ms`; on the grain path with the error
/// `overloaded` (same text) carrying `retry_after_ms`, which the pure client's retry honours
/// and which classifies as `unavailable`. 0 disables the bound.
///
/// **Legs** (docs/behaviour/routing.md#legs) run inside the router core: every step is a
/// `request(...).then` continuation or a `delayed_send` timer, tagged with the leg id and a step
/// token so late answers of a finished or cancelled leg are ignored. A leg ends with `leg_done`,
/// run at the end of the turn in which it landed or its NACK was handed over
/// (docs/behaviour/routing.md#one-turn-per-step); the latch keeps exactly one
/// terminal event among `leg_done`, the pool's cancel (`abandoned`; after the stopping
/// signal plus one NACK as for `q_end_legs_atom`, started without a pool permit since the
/// pool is draining, and a refused admission likewise gets its `shutting_down` NACK), the pool's
/// down (`leg_crashed`: NACK `failed` "Routing to '{addr}' failed before the delivery could
/// be attempted: …" unless failed-and-NACKed) and the pool's refusal (`pool_refused`).
///
/// **NACKs** (docs/behaviour/routing.md#nacks) are tracked work: the leg's gauge slot is handed
/// over (label
/// `NACK -> {sender} (delivery {id})`), the NACK is admitted through the pool (refused ->
/// debug, carries nothing) and climbs the ladder: the local route of the pure client that
/// handed the delivery to the routing grain, if one did -> a (local route) -> b (node hub of the
/// sender, router retry loop) / c (pod hub of the sender) -> d (stream, probe then publish;
/// "BOTH transports failed for NACK to {sender} (delivery {id})" windowed at error).
router_core_actor spawn_router_core(caf::actor_system& sys, router_core_options opts);

} // namespace cafmesh::routing
