#pragma once

/// @file
/// The routing service (docs/behaviour/routing.md#the-entry, #monolith,
/// docs/architecture.md#process-roles): one actor per process, the entry point of every delivery a
/// hub of this process sends, owner of the local route table, the process role (declared once at
/// start, never changed), the stopping flag and, in a `pure_client`, the dispatch to
/// `routing/default` through a gateway under the client retry policy.
///
/// ## Protocol (untyped actor; `routing_service_actor` is the typed view of it)
/// | message | answer |
/// |---|---|
/// | `(rs_deliver_atom, envelope)` | at once, never after the outcome: the envelope with state `forwarded` when accepted (local route, router core, client dispatch, monolith hub); failed-and-NACKed when the entry posted its own NACK to the sender's local route; plain `failed` with `properties["error"]` otherwise |
/// | `(rs_post_atom, envelope)` one-way | none: as `rs_deliver_atom` for a post, a frame or a heartbeat whose sender needs no answer (docs/behaviour/routing.md#the-co-hosted-hot-path). A refusal reaches the sender as the entry's NACK where its local route is here, and is logged at warning where it is not; requests use `rs_request_atom`, which keeps its answer |
/// | `(rs_request_atom, envelope, int64_t timeout_ms)` | as `rs_deliver_atom`, for a request whose sender waits `timeout_ms` for its answer. A request handed on (a `pure_client`: accepted by its gateway; a `silo_host`: handed to the router core) is held until its answer passes this service or its deadline, with its gateway and the silo whose hub took it (`rs_landed_atom`): if one of them departs abruptly first, the request ends at once in one NACK `failed` ("silo {S} departed while the call was in flight; its outcome is unknown", or "... departed after its hub took the request, before the answer left; its outcome is unknown"; docs/behaviour/routing.md#requests-whose-silo-departs). A `pure_client` that knows no usable gateway (its view shows no Active silo) NACKs a new request at once `unavailable` "no active silo: …" instead (SPEC C5, docs/behaviour/routing.md#a-pure-client-without-an-active-silo) |
/// | `(mc_gone_atom, silo_address s)` | from the message centre (`mc_watch_atom`): the connection to `s` is lost or `s` is gone. A `pure_client` never chooses `s` as a gateway again (a restart comes with a newer generation) and re-homes if it was the current one; another silo's departure never moves it off its gateway. Every held request `s` had accepted or whose hub `s` hosts is NACKed as above, unless membership showed `s` ShuttingDown (a graceful leave finishes its accepted work and lets its hubs' answers leave) |
/// | `(mc_leaving_atom, silo_address s, bool graceful)` | from the message centre (`mc_watch_atom`): `s` is leaving (its centre's leaving notice, or membership shows it ShuttingDown or Stopping). With `graceful` (ShuttingDown) its later departure NACKs no held request, as if membership had shown it ShuttingDown (SPEC C2) |
/// | `(rs_landed_atom, std::string id, silo_address at)` | from the router core whose leg landed request `id` at a hub of `at` (another silo): the held request now depends on `at`; if `at` is already known gone, it is NACKed at once. Ignored for an id not held |
/// | `(rs_register_atom, address, caf::actor handler) -> ok` | registers a local route for the
/// address's host path (docs/behaviour/envelope.md#addresses) |
/// | `(rs_unregister_atom, address) -> ok` | removes it |
/// | `(rs_has_route_atom, address) -> bool` | is there a local route for the host path? |
/// | `(lr_deliver_atom, envelope) -> bool` | `local_route_port_actor` (router_ports.hpp): hand to the local route of the target's host path, `false` if none |
/// | `(lr_land_atom, envelope, silo_address landing, activation_tag tag, caf::actor activation) -> envelope` | `silo_host`: pod hub `activation`'s delivery, delegated to this service (no answer passes the activation, docs/delivery-costs.md#the-remote-frame-path): handed to the local route as `lr_deliver_atom` does and answered `forwarded`, stamped with `landing` (not for a continuation) and `tag` (unless 0); with no local route it is delegated back, `(ph_no_route_atom, envelope)` to `activation` |
/// | `(host_stopping_atom) -> ok` | `stopping_recipient_actor`
/// (docs/behaviour/lifecycle.md#the-host) |
/// | `(rs_core_atom, router_core_actor)` | `silo_host`: the co-hosted router core (set once, before traffic) |
/// | `(rs_role_atom) -> std::string` | the role's name (the one given at spawn: no message changes it) |
/// | `(mb_snapshot_atom, membership_snapshot)` | `pure_client`: the gateway list (the active set,
/// docs/behaviour/membership.md#gateways-for-pure-clients); every inbound attach is asserted
/// again; with no usable gateway left, every new request waiting for a retry ends with the
/// "no active silo" NACK |
/// | `(gw_stop_send_atom, silo_address gateway)` | `pure_client`: stop-send from a gateway
/// (docs/behaviour/membership.md#gateways-for-pure-clients): avoid it, re-home, re-attach |
/// | `(rs_reattach_atom, address path)` | `pure_client`: the pod hub of `path` was deactivated; assert its attach again |
/// | `(rs_home_atom, silo_address gateway) -> ok` | `pure_client`: home on `gateway` now (connect, re-attach) |
/// | `(rs_stats_atom) -> routing_service_stats` | the counters below (diagnostics; not part of the typed view) |
///
/// ## Pure-client inbound attach (docs/behaviour/routing.md#the-entry,
/// docs/behaviour/membership.md#gateways-for-pure-clients, docs/behaviour/routing.md#hubs;
/// `inbound_attach` on) Every local route whose host address type is in
/// `stream_routed_address_types` is attached at the client's current gateway:
/// `mc_call(gateway, component::gateway, (gw_attach_atom, self_silo, host path))`, bounded by
/// placement + response timeout, under the attach policy
/// (docs/behaviour/classification.md#retry-policies: 5 retries, min(250·2ⁿ, 4,000) ms, any
/// transient fault). The gateway attaches `podhub/{path}` (prefer-local: on the gateway silo) to
/// this client; the pod hub then hands every delivery to this service as
/// `(lr_deliver_atom, envelope)` through the message centres (the service is the client's component
/// `client`). An assertion starts at registration, on every membership snapshot, after every
/// re-homing and on `rs_reattach`; each has a fresh budget. A refused attach (`false`) is not
/// retried; a give-up logs one error "inbound attach of {path} gave up after {n} attempt(s):
/// {fault}". While the **first** assertion of some path is pending, outbound dispatches wait (in
/// arrival order) and start when no first assertion is pending any more. Choosing a gateway sends
/// it `gw_connect`. A gateway is dropped (and avoided while another Active one exists) on
/// stop-send, on `silo_unavailable` / `departed_silo` from an attach or a dispatch, on a response
/// timeout of an attach or a dispatch (cafmesh goes further than
/// docs/behaviour/membership.md#gateways-for-pure-clients: a stalled gateway the failure detector
/// has not caught is left like a stopping one; the timed-out delivery itself is not re-sent,
/// docs/behaviour/classification.md#why-a-response-timeout-is-never-resent), and when it leaves the
/// active set; the next attempt picks another and every path is attached there again. Unregistering
/// a route sends `gw_detach` to the gateway it was attached at. After the stopping signal nothing
/// is attached any more.
///
/// Order of checks in `deliver` (docs/behaviour/routing.md#the-entry):
/// 1. local route table hit (target reduced to its host address): `(hb_in_atom, envelope)`
///    to the handler; no gauge, no size check; also while stopping;
/// 2. stopping (not in `monolith`): a `silo_host` still hands every continuation of
///    accepted work (`is_continuation`: a response or a NACK from a hub of this process) to
///    the router core as in step 4, so it is tracked by the gauge and routed like any leg;
///    new work (a post, a frame, a heartbeat, a request answering nothing): if `may_answer`,
///    NACK `shutting_down` "Host is shutting down, cannot route to {target}" straight to the
///    sender's local route; failed-and-NACKed only if it was posted; nothing else is
///    attempted;
/// 3. size guard (`pure_client` only): grain-call limit -> NACK `rejected`;
/// 4. hand-over by role: `silo_host` -> `(rc_route_atom, envelope)` to the router core;
///    `pure_client` -> `mc_call(gateway, component::gateway, (pl_call_atom, routing/default,
///    0, (hg_routes_atom, items, this client's silo)))` through the process's message centre,
///    the dispatches of one turn in one call (docs/behaviour/routing.md#dispatch-batches), every attempt
///    choosing a gateway from the active set (none: fault `no_compatible_silo`) and bounded
///    by placement + response timeout (a timeout is `response_timeout`), retried under the
///    client policy (docs/behaviour/classification.md#retry-policies) while resendable; a gateway
///    answering `silo_unavailable` or
///    `departed_silo`, or whose call ends in a response timeout, is dropped and avoided while
///    another Active gateway exists (re-homing,
///    docs/behaviour/membership.md#gateways-for-pure-clients); every attempt's call carries the
///    attempt's bound as its time-to-live (message_center.hpp), so it never starts on the gateway
///    after the client stopped waiting; a dispatch taking longer than
///    `client.slow_dispatch_log_ms` is logged at info ("slow dispatch"); on final failure,
///    if `may_answer`, NACK `shutting_down` "Host is shutting down, cannot route to
///    {target}" when stopping at that moment, else `classify(fault)` "Delivery to '{target}'
///    failed: {fault}"; `monolith` -> the monolith router (docs/behaviour/routing.md#monolith): on
///    a miss build the target's hub with the hub factory (deliveries to a hub being built wait
///    in order), register it as a local route and hand over; while shutting down build nothing and
///    NACK `shutting_down` "Mesh is shutting down, cannot route to {target}".
/// Entry NACKs go straight to a local route and are not tracked work
/// (docs/behaviour/routing.md#nacks).

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/gateway_atoms.hpp"
#include "cafmesh/routing/held_requests.hpp"
#include "cafmesh/routing/hub_protocol.hpp"
#include "cafmesh/routing/ordered_route_dispatcher.hpp"
#include "cafmesh/routing/retry_policy.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/routing/router_ports.hpp"
#include "cafmesh/routing/stream_transport.hpp"

namespace cafmesh::routing {

/// Typed view of the routing service (see the file comment).
using routing_service_actor = caf::typed_actor<
  caf::replies_to<rs_deliver_atom, envelope>::with<envelope>,
  caf::reacts_to<rs_post_atom, envelope>,
  caf::replies_to<rs_request_atom, envelope, int64_t>::with<envelope>,
  caf::reacts_to<mc_gone_atom, silo_address>, caf::reacts_to<mc_leaving_atom, silo_address, bool>,
  caf::replies_to<rs_register_atom, address, caf::actor>::with<caf::ok_atom>,
  caf::replies_to<rs_unregister_atom, address>::with<caf::ok_atom>,
  caf::replies_to<rs_has_route_atom, address>::with<bool>,
  caf::replies_to<lr_deliver_atom, envelope>::with<bool>,
  caf::replies_to<lr_land_atom, envelope, silo_address, activation_tag, caf::actor>::with<envelope>,
  caf::replies_to<lifecycle::host_stopping_atom>::with<caf::ok_atom>,
  caf::reacts_to<rs_core_atom, router_core_actor>, caf::replies_to<rs_role_atom>::with<std::string>,
  caf::reacts_to<mb_snapshot_atom, membership_snapshot>,
  caf::reacts_to<gw_stop_send_atom, silo_address>, caf::reacts_to<rs_reattach_atom, address>,
  caf::replies_to<rs_home_atom, silo_address>::with<caf::ok_atom>>;

/// Settings of one routing service.
struct routing_service_options {
  /// `mesh.process_role`, read once here; nothing can change it later
  /// (docs/architecture.md#process-roles).
  config::process_role role = config::process_role::silo_host;
  /// Process tag: log context and NACK ids `{process}-entry-{n}`.
  std::string process_name = "process";
  /// Sender of the entry's own NACKs; empty: `routing/{process_name}`.
  address self_address;
  std::string mesh_type = "mesh";
  /// grain-call limit (pure_client, docs/behaviour/size-guard.md#limits)
  config::size_section size;
  config::client_section client;        ///< client retry policy and slow-dispatch log
  int64_t placement_timeout_ms = 30000; ///< with the next: bound of one client attempt
  int64_t grain_response_timeout_ms = 30000;
  /// docs/behaviour/classification.md#retry-policies, every policy
  int64_t placement_timeout_attempts = 2;
  /// gateway choice (docs/behaviour/membership.md#gateways-for-pure-clients,
  /// docs/testing.md#the-simulation-harness)
  uint64_t seed = 1;
  /// silo_host: the co-hosted router core (may also be set later with `rs_core_atom`).
  router_core_actor core;
  /// pure_client: the process's message centre.
  caf::actor centre;
  /// monolith: the hub factory (key = the target's rendered host path).
  hub_factory_actor hubs;
  int64_t hub_build_timeout_ms = 30000; ///< monolith: bound of one hub build
  /// pure_client: attach stream-routed local routes at the gateway
  /// (docs/behaviour/routing.md#the-entry). Off by default so that hand-built test clients without
  /// a gateway part stay unchanged;
  /// `spawn_pure_client` turns it on.
  bool inbound_attach = false;
  /// pure_client: this client's silo address (named in `gw_attach` / `gw_connect`).
  silo_address self_silo;
  /// `routing.stream_routed_address_types` (docs/behaviour/envelope.md#addresses): which local
  /// routes are attached.
  std::vector<std::string> stream_routed_address_types{"portal", "client", "cache", "mesh"};
  /// attach policy (docs/behaviour/classification.md#retry-policies)
  config::attach_section attach;
  /// pure_client: bound of this client's dispatches in progress (`gateway.max_outstanding`,
  /// the most its gateway takes from it); beyond it a delivery is refused at once, before it
  /// is accepted, with one NACK `unavailable` "overloaded" carrying `retry_after_ms`. Without
  /// this bound a client offered more than the cluster carries queues every delivery in its
  /// gateway's mailbox, where nothing refuses it. 0: no bound.
  /// docs/behaviour/admission-control.md
  int64_t max_outstanding = 0;
  /// The `retry_after_ms` of that refusal (`routing.overload_retry_after_ms`).
  int64_t overload_retry_after_ms = 500;
  /// pure_client: how long a channel remembers the gateway that accepted its latest
  /// delivery (`routing.leg_self_bound_ms`: a leg older than that is a defect), so that a
  /// re-homing waits until that gateway's router core let go of the channel
  /// (docs/behaviour/routing.md#a-pure-clients-streams-across-a-re-homing).
  int64_t channel_pin_ms = 100000;
  /// The process's stream transport (stream_transport.hpp); null: none. Every local route
  /// is subscribed there under its host address (`st_sub_atom`) while it is registered, so
  /// the stream leg and NACK rung d reach this process's hubs (docs/behaviour/routing.md#legs,
  /// #nacks, #the-entry "inbound stream"); re-registering an address moves the subscription to the
  /// new handler.
  stream_transport_actor streams;
  /// pure_client: also receives every stop-send `(gw_stop_send_atom, silo_address)` the
  /// service gets (applications, tests); null: none.
  caf::actor events;
  /// pure_client: told `(ep_event_atom, "suppressed", delivery id, uint8_t verdict, text)`
  /// when the dispatch of an answer-suppressed delivery fails for good (no NACK may carry
  /// it, docs/behaviour/routing.md#nacks), as the router core tells its `failure_observer`;
  /// null: none.
  caf::actor failure_observer;

  /// Options from a whole configuration (role, name, size, client, placement, grain_call,
  /// simulation seed, `routing.stream_routed_address_types`, attach); handles stay null and
  /// `inbound_attach` stays off.
  static routing_service_options from(const config::mesh_config& cfg);
};

/// Counters of one routing service (tests and diagnostics).
struct routing_service_stats {
  uint64_t delivered = 0;              ///< `deliver` calls
  uint64_t local_hits = 0;             ///< step 1
  uint64_t stopping_nacks = 0;         ///< step 2 NACKs posted
  uint64_t stopping_refused = 0;       ///< step 2 without a posted NACK
  uint64_t stopping_continuations = 0; ///< step 2: responses and NACKs passed on while stopping
  uint64_t size_refused = 0;           ///< step 3
  uint64_t to_core = 0;                ///< silo_host hand-overs
  uint64_t client_dispatches = 0;      ///< pure_client dispatches started
  uint64_t client_attempts = 0;        ///< dispatch attempts (each retry counts)
  uint64_t client_batches = 0;         ///< calls to routing/default (each carries a batch)
  uint64_t client_accepted = 0;        ///< dispatches answered `forwarded`
  uint64_t client_failed = 0;          ///< dispatches given up
  uint64_t hubs_built = 0;             ///< monolith hubs created
  uint64_t monolith_nacks = 0;         ///< monolith NACKs posted (shutting down, build failed)
  uint64_t lr_delivered = 0;           ///< `lr_deliver` answered true
  uint64_t lr_refused = 0;             ///< `lr_deliver` answered false
  uint64_t attach_attempts = 0;        ///< gw_attach calls (each retry counts)
  uint64_t attach_ok = 0;              ///< attaches answered true
  uint64_t attach_gave_up = 0;         ///< assertions given up (logged at error)
  uint64_t gated = 0;                  ///< dispatches that waited for a first attach
  uint64_t stop_sends = 0;             ///< stop-sends received
  uint64_t rehomes = 0;                ///< gateways dropped (stop-send, refusal, departure)
  uint64_t gateways_lost = 0;          ///< gateways whose connection this client lost
  uint64_t departed_nacks = 0;         ///< accepted requests NACKed because their gateway departed
  uint64_t landings = 0;               ///< landing reports of held requests (`rs_landed_atom`)
  uint64_t landing_nacks = 0;          ///< held requests NACKed because their landing silo departed
  uint64_t refused_overloaded = 0;     ///< pure_client: refused at `max_outstanding`
  uint64_t order_held = 0;             ///< pure_client: dispatches that waited for their channel
  uint64_t drains = 0; ///< pure_client: `gw_drained` requests to a channel's old gateway
  /// pure_client: deliveries NACKed `unavailable` "no active silo" (no usable gateway: the
  /// last silo stopped or none started): new requests at the entry or while waiting for a
  /// retry, posts and frames at `max_outstanding`
  uint64_t no_silo_nacks = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, routing_service_stats& x) {
  return f(caf::meta::type_name("cafmesh.routing_service_stats"), x.delivered, x.local_hits,
           x.stopping_nacks, x.stopping_refused, x.stopping_continuations, x.size_refused,
           x.to_core, x.client_dispatches, x.client_attempts, x.client_accepted, x.client_failed,
           x.hubs_built, x.monolith_nacks, x.lr_delivered, x.lr_refused, x.attach_attempts,
           x.attach_ok, x.attach_gave_up, x.gated, x.stop_sends, x.rehomes, x.gateways_lost,
           x.departed_nacks, x.refused_overloaded, x.order_held, x.drains, x.landings,
           x.landing_nacks, x.no_silo_nacks, x.client_batches);
}

/// Spawns a routing service. The caller owns it (exit it at teardown).
routing_service_actor spawn_routing_service(caf::actor_system& sys, routing_service_options opts);

/// The grain id of the routing grain: `routing/default`
/// (docs/behaviour/envelope.md#grain-ids-and-grain-types).
inline grain_id routing_grain_id() {
  return grain_id{"routing", "default"};
}

} // namespace cafmesh::routing
