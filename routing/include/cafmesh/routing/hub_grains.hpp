#pragma once

/// @file
/// The routing layer's grains and their silo-side helpers
/// (docs/behaviour/envelope.md#grain-ids-and-grain-types,
/// docs/behaviour/routing.md#the-routing-grain, #hubs): the routing grain `routing/default`, the
/// node hub grain `messagehub/{prefix}`, the pod hub grain `podhub/{path}`, the grain-delivery
/// adapter (the router core's `grain_port_actor` on top of the placement service) and the
/// pod-hub claimer.
///
/// ## Grain protocols (turns handed over by the catalog, one at a time)
/// - `routing/default` (stateless worker, limit 1 per silo): its own header,
///   `cafmesh/routing/routing_grain.hpp`.
/// - `messagehub/{prefix}` (single activation, random): `(hg_deliver_atom, envelope) ->
///   envelope`, accept and park (docs/behaviour/routing.md#hubs); also `(hg_deliver_atom,
///   envelope, silo_address caller)` from a silo's grain port and `(hg_deliver_atom, envelope,
///   silo_address caller, bool)` over its own silo's direct route (docs/delivery-costs.md):
///   a delivery from its own silo goes to the hub with `delegate`, and one through the grain
///   port makes the activation offer its silo's router core the direct route (`rc_local_atom`),
///   which it takes back when it goes. On activation it asks the silo's hub factory for
///   the hub of `{prefix}` (the answer is a message to the activation itself) and pins itself
///   while building. Hub ready: the delivery is delegated to the hub `(hb_deliver_atom,
///   envelope)` and the caller gets the hub's own result. Building: answered `submitted` at
///   once and parked in arrival order; handed over in that order when the hub is ready, a
///   parked delivery the hub answers `failed` (not failed-and-NACKed) is NACKed by the node
///   hub (carried verdict, else the text rule). Build failed: every parked delivery is
///   NACKed `unavailable` ("Hub {address} could not be built: {fault}"), later deliveries are
///   answered failed with verdict `unavailable` and the activation deactivates; a build
///   answered `not_found` (no live silo serves the address,
///   docs/behaviour/routing.md#unserved-addresses) makes that verdict `not_found` and the
///   text "Delivery to '{address}' failed: {fault}". Deactivated
///   while deliveries are parked: each is NACKed `shutting_down` ("hub disposed before
///   delivery"). Hub disposed (exited): every later delivery is refused with the owner
///   banner "Hub {address} is shutting down ({activation tag}); the address may reactivate
///   after a recycle or restart. Rejecting now." (state failed, no verdict: the text rule
///   makes it `shutting_down`) and the activation deactivates. `ignored` is never NACKed.
///   Node-hub NACKs are posted through the silo's routing service (`rs_deliver_atom`, the
///   NACK envelope is answer-suppressed).
/// - `podhub/{path}` (single activation, prefer-local): `(ph_attach_atom) -> bool`: true and
///   pinned if this silo's process has a local route for `{path}`, else false and, unless it
///   serves a pure client, the activation deactivates so a retried claim places it anew
///   (idempotent);
///   `(hg_deliver_atom, envelope) -> envelope`: with the local route here hand the envelope
///   over (`lr_land_atom`, delegated to the routing service, which answers `forwarded`);
///   otherwise the error `pod_hub_not_here` (`fault::silo` = this silo) and the activation deactivates;
///   `(ph_detach_atom) -> ok`: deactivates (docs/behaviour/routing.md#hubs).
///   **Client-hosted pod hubs** (docs/behaviour/routing.md#the-entry "Pure client inbound attach"):
///   `(ph_attach_client_atom, silo_address client) -> bool`: from now on the hub lives in pure
///   client `client` (idempotent; the latest client wins): always true, pins the activation.
///   `deliver` then hands the envelope to the client:
///   `mc_call(client, component::client, (lr_deliver_atom, envelope))` through this silo's message
///   centre, awaited inside the turn (`request(...).await`: the non-reentrant activation never
///   reorders a channel) and bounded by `client_handover_timeout_ms`: true -> `forwarded`; false,
///   `departed_silo` or
///   `silo_unavailable` -> the client is forgotten, `pod_hub_not_here` (the client's fault as
///   its cause) and the activation deactivates; a timeout -> `response_timeout` (the client
///   may hold it: never answered not-here). `(ph_detach_client_atom, client) -> ok`: the
///   client unregistered: forgotten and deactivated if it is the one served. Deactivated
///   while serving a client, the activation tells it `(rs_reattach_atom, path)` (one-way, its
///   component `client`), so the client attaches again at once. With neither a client nor a
///   local route, `deliver` asks the silo's gateway part (`gw_lookup_atom`) for a client that
///   attached the path there and, if there is one, adopts it (as if attached) before
///   answering `pod_hub_not_here`: a delivery that created the activation just before the
///   client's attach (re-homing) still reaches the client.
///
/// ## Grain-delivery adapter (`grain_port_actor`, router_ports.hpp)
/// One attempt per `gp_call` (`pl_call` on the silo's placement service with
/// `(hg_deliver_atom, envelope)`); `gp_invalidate` / `gp_inval_silo` drop cached addresses in
/// placement (`pl_inval_atom`); `gp_act_error` answers the last activation error recorded for
/// the grain as seen in an `activation_deactivated` (recorded = yes) answer, else "".
/// A failed attempt whose fault names a silo in a `silo_unavailable` node tells the
/// placement service that silo is leaving (`pl_leaving_atom`, placement.hpp).
///
/// ## Pod-hub claimer (one per silo_host process; `stopping_recipient_actor`)
/// - `(pc_claim_atom, address)`: claim the pod hub of the address's host path: attach now and
///   on every membership snapshot, each assertion under the attach policy
///   (docs/behaviour/classification.md#retry-policies, transient faults retried). An attach
///   answered false reached an activation in a process without the local route (or came before the
///   route was registered): that activation deactivates itself and the claim is retried under the
///   same policy as a transient
///   `pod_hub_not_here` (cafmesh goes further than docs/behaviour/routing.md#hubs, which re-asserts
///   only on the next snapshot: a quiet membership would leave the hub unserved), logging a warning
///   "pod hub claim of {path} refused: no local route in this process" per refusal and the
///   error "pod hub claim of {path} gave up: …" when the budget is spent.
/// - `(pc_lost_atom, std::string path)`: the activation a claim attached is gone while this
///   silo is not stopping (docs/behaviour/routing.md#hubs "lost claims"): the claim is attached
///   again at once (at most `pod_claim_max_prompt_replacements` times per assertion, then
///   under the attach policy).
/// - `(pc_release_atom, address) -> ok`: detach, then remove the local route
///   (docs/behaviour/routing.md#hubs).
/// - `(mb_snapshot_atom, membership_snapshot)`: re-assert every claim.
/// - `(host_stopping_atom) -> ok`: from now on neither attach nor detach; sets the silo's
///   `silo_routing_slots::stopping` flag first when the claimer was given the slots.
///
/// ## A stopping silo's hub grains
/// Once `silo_routing_slots::stopping` is set, a node hub activation of the silo, and a pod
/// hub activation whose hub is a local route of this process, takes only continuations
/// (`is_continuation`: responses and NACKs, which answer work the hub's side accepted) and
/// the deliveries it already holds (a node hub still hands over what it parked while
/// building). Every other delivery is refused before the application hub sees it: error
/// `silo_unavailable` "silo {S} is leaving; route elsewhere" (`fault::silo` = this silo),
/// which the sender's leg treats as a transient hub condition (invalidate, re-resolve,
/// retry). A node hub then deactivates (once its parked deliveries
/// are handed over), so the directory no longer names it and the retry places the hub anew;
/// the sender's grain-delivery adapter tells its placement that this silo is leaving, so the
/// new activation goes to another silo. A node hub activated after the signal builds no hub
/// and refuses every delivery, continuations included, then deactivates. A pod hub whose
/// hub is a local route of this process refuses new work the same way but stays, since
/// that hub cannot move and continuations still have to reach it. A pod hub serving a pure
/// client is not affected: the client's hub lives in a process that is not stopping, and
/// the client attaches elsewhere once the gateway sends it stop-send.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/actors/stopping_recipient.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_protocol.hpp"
#include "cafmesh/routing/retry_policy.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/routing/router_ports.hpp"

namespace cafmesh::routing {

/// The handle of a pod-hub claimer: the protocol above, the membership view it re-asserts its
/// claims on, and the host's stopping signal. `pc_retry_atom` is its own timer.
using pod_hub_claimer_actor
  = caf::typed_actor<caf::reacts_to<pc_claim_atom, address>,
                     caf::replies_to<pc_release_atom, address>::with<caf::ok_atom>,
                     caf::reacts_to<pc_retry_atom, std::string, uint64_t>,
                     caf::reacts_to<pc_lost_atom, std::string>,
                     caf::reacts_to<mb_snapshot_atom, membership_snapshot>>::
    extend_with<lifecycle::stopping_recipient_actor>;

/// What one silo's routing grains need; filled once the silo's actors exist (the registry,
/// and thus the factories, must exist before the catalog is spawned).
struct silo_routing_slots {
  silo_address silo;
  router_core_actor core; ///< routing grain: delegate target
  caf::actor routing;     ///< the silo process's routing service
  hub_factory_actor hubs; ///< node hubs: the application's hub factory
  int64_t hub_build_timeout_ms = 30000;
  /// The silo's message centre: pod hubs reach client-hosted hubs through it
  /// (docs/behaviour/routing.md#the-entry).
  caf::actor centre;
  /// The silo's gateway part (`gw_lookup_atom`); null: none.
  caf::actor gateway;
  /// The silo's pod-hub claimer: a pod hub activation a claim attached tells it when it goes
  /// (`pc_lost_atom`); null: none.
  pod_hub_claimer_actor claimer;
  /// Bound of one pod-hub hand-over to a pure client (`lr_deliver` through the centres).
  /// Interpretation: the design gives no number; 10,000 ms (as the subscriber probe) keeps it
  /// well inside the leg's 30,000 ms response timeout.
  int64_t client_handover_timeout_ms = 10000;
  std::string mesh_type = "mesh";
  /// Set once the host's stopping signal reached this silo (by its pod-hub claimer, before
  /// it acknowledges): from then on the node hub and pod hub grains of this silo refuse new
  /// work before the application hub sees it. Read by activations on any thread.
  std::atomic<bool> stopping{false};
};

using silo_routing_slots_ptr = std::shared_ptr<silo_routing_slots>;

/// Registers `routing` (stateless worker, limit 1), `messagehub` (single, random) and
/// `podhub` (single, prefer-local) with the factories below. False if one was registered.
bool register_routing_grains(grain_registry& reg, silo_routing_slots_ptr slots);

/// The owner banner of docs/behaviour/routing.md#hubs for hub `addr` and activation `tag`.
std::string owner_refusal_text(const std::string& addr, const activation_tag& tag);

/// Spawns the grain-delivery adapter of one silo over its placement service.
grain_port_actor spawn_grain_delivery(caf::actor_system& sys, caf::actor placement,
                                      silo_address silo = {});

/// How many times one assertion of a claim is re-placed at once, without waiting out the
/// attach policy's backoff, when its attempt reached an activation of the pod hub on
/// another silo that had already left. A pod hub placed on a silo without its local route
/// (a delivery there, prefer-local) lives only until it notices and leaves, and legs
/// retrying on that silo keep placing new ones; waiting out a backoff that runs in step
/// with theirs lets each of them take the directory entry again just before the claim.
constexpr uint32_t pod_claim_max_prompt_replacements = 3;

/// Spawns the pod-hub claimer of one silo_host process: claims go through `placement` (the
/// local placement service: prefer-local puts the pod hub here), `routing` is the process's
/// routing service (local routes). Subscribe it to the membership agent.
/// `slots`, when set, are the routing slots of the claimer's silo: the stopping signal
/// sets their `stopping` flag before the claimer acknowledges it.
pod_hub_claimer_actor
spawn_pod_hub_claimer(caf::actor_system& sys, caf::actor placement, caf::actor routing,
                      const config::attach_section& attach, const std::string& context,
                      silo_routing_slots_ptr slots = nullptr);

} // namespace cafmesh::routing
