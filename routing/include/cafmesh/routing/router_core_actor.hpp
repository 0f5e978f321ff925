#pragma once

/// @file
/// The router core's message protocol (docs/behaviour/routing.md#the-router-core,
/// #saturation-report-and-refusal-log, docs/behaviour/lifecycle.md#the-host) and its diagnostics
/// snapshot. Spawn with `spawn_router_core` (router_core.hpp).
///
/// | sender -> router core | message | answer |
/// |---|---|---|
/// | routing service (co-hosted hand-over, docs/behaviour/routing.md#the-entry) |
/// `(rc_route_atom, envelope)` one-way; `(rc_route_atom, envelope, caf::timespan answer_within)` one-way for a request whose requester waits `answer_within` more, less the margin for the NACK's way back (every grain attempt of its leg is bounded by it, docs/behaviour/routing.md#a-requests-remaining-time) | none: the routing service answers its own caller |
/// | routing grain via `delegate` (docs/behaviour/routing.md#the-routing-grain) |
/// `(rc_grains_atom, std::vector<dispatch_item>, silo_address client) -> dispatch_verdicts`
/// (dispatch_batch.hpp; `client`: the pure client that called the routing grain, whose process
/// hosts the senders; empty: unknown; each item's `answer_within` bounds every grain attempt of
/// its leg, docs/behaviour/routing.md#a-requests-remaining-time) | per item, in order: no
/// error as soon as its leg is enqueued/admitted (docs/behaviour/routing.md#the-router-core),
/// or a routing loop's NACK was handed to the NACK machinery; after the stopping signal
/// `to_error(fault{silo_unavailable, "silo {S} is leaving; route elsewhere"})` with
/// `fault::silo` set (step 1); `overloaded` with `retry_after_ms` at an admission bound |
/// | host (docs/behaviour/lifecycle.md#the-host) | `(host_stopping_atom) -> ok_atom` | ok once the
/// core refuses grain-path envelopes; already-accepted legs continue and their grain calls are
/// never gated |
/// | tests, diagnostics | `(rc_stats_atom) -> router_core_stats` | the snapshot below |
/// | a node-hub grain activation of the silo | `(rc_local_atom, grain_id, activation_tag, caf::actor catalog)` one-way; `(rc_local_atom, grain_id, activation_tag)` one-way | none: the router core calls that activation through its catalog directly until it is gone, a call to it fails or membership changes (docs/delivery-costs.md) |
/// | the application, tests | `(rc_forget_atom, std::string host_path)` one-way | none: the cached resolution of that path is dropped (empty: all), docs/behaviour/routing.md#cacheable-resolutions |
/// | the membership agent (subscribed by the silo) | `(mb_snapshot_atom, membership_snapshot)` one-way | none: a new membership version drops every cached resolution |
/// | an application hub of the silo, after its routing service took a response or NACK | `(rc_sync_atom) -> ok_atom` | ok, after every message enqueued before it: the continuation the routing service handed over (`rc_route`) is accepted and tracked by the gauge by then, so the hub may release its own gauge slot (docs/behaviour/lifecycle.md) |
/// | quiescence participant (the stop lets go with work in flight) | `(q_end_legs_atom, why) -> std::vector<std::string>` | every accepted leg that has not landed ends now with one NACK: `shutting_down` "silo {S} stopped before the delivery to {target} was attempted" if no grain call or publish of it is outstanding (queued, waiting for a permit, between retries, resolving), else `failed` "silo {S} stopped while the delivery to {target} was in flight; its outcome is unknown"; answered at once with the residual's delivery ids |
/// | quiescence participant, after `q_end_legs` | `(q_nacks_out_atom) -> ok` | once no NACK is on the ladder, or `release_bound_ms` after the release began (one error line then names the NACKs that could not leave, which are dropped) |
/// | wiring (routing service or silo builder) | `(rc_locals_atom, local_route_port_actor)` one-way
/// | none: replaces the local-route port used by NACK rung a (docs/behaviour/routing.md#nacks). The
/// routing service needs the router core's handle and the router core needs the routing service's
/// local-route port; spawn the router core first (with a null `local_routes`), then the routing
/// service, then send this. NACKs already on the ladder are unaffected. |
///
/// Both entries feed the same ordered dispatcher
/// (docs/behaviour/routing.md#the-ordered-dispatcher). A co-hosted envelope after the stopping
/// signal cannot happen by contract (the routing service refuses it first); if one arrives anyway
/// it is accepted like before the signal (accepted work must land).
///
/// The router core is also the owner of its legs towards the routing I/O pool: its full
/// behaviour includes `routing::io_pool_owner_actor` (admitted, refused, cancel, down) and
/// internal timers; those are not part of this public interface.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/routing/leg_release.hpp"
#include "cafmesh/routing/dispatch_batch.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/router_atoms.hpp"
#include "cafmesh/routing/router_ports.hpp"

namespace cafmesh::routing {

/// Upper bounds (ms) of the router core's delivery latency histogram: a leg's time from its
/// acceptance to its terminal event falls into the first bucket whose bound it does not
/// exceed, or into the last bucket (`+Inf`) after all of them.
inline constexpr std::array<int64_t, 14> leg_latency_bounds_ms{1,    2,    5,     10,   25,
                                                               50,   100,  250,   500,  1000,
                                                               2500, 5000, 10000, 30000};

/// A snapshot of one router core (docs/behaviour/routing.md#the-ordered-dispatcher diagnostics,
/// docs/behaviour/routing.md#saturation-report-and-refusal-log in-flight count) plus counters
/// for tests.
struct router_core_stats {
  // -- accounting ---------------------------------------------------------------------------------
  // docs/behaviour/routing.md#the-router-core, #saturation-report-and-refusal-log
  uint64_t in_flight = 0;   ///< accepted legs not terminated (running, queued, waiting)
  uint64_t nacks_alive = 0; ///< NACKs posted and not yet through their ladder
  bool stopping = false;    ///< the stopping signal arrived
  bool saturation_latched = false;
  uint64_t saturation_reports = 0;
  /// Age of the oldest dispatched leg since its dispatch, -1 if none
  /// (docs/behaviour/routing.md#saturation-report-and-refusal-log).
  int64_t oldest_dispatched_age_ms = -1;
  /// Age of the oldest queued (not dispatched) leg since acceptance, -1 if none
  /// (docs/behaviour/routing.md#saturation-report-and-refusal-log).
  int64_t oldest_queued_age_ms = -1;
  // -- ordered dispatcher (docs/behaviour/routing.md#the-ordered-dispatcher queue_snapshot) --
  uint64_t channels = 0;
  uint64_t destinations = 0;
  uint64_t deepest = 0;
  std::string deepest_channel;
  int32_t max_dispatch_depth = 0; ///< deepest dispatcher nesting seen (S12.41: <= 1)
  // -- acceptance --
  uint64_t accepted = 0;           ///< legs accepted (both entries)
  uint64_t accepted_co_hosted = 0; ///< of those, handed over by the silo's own routing service
  uint64_t queued = 0; ///< accepted legs not dispatched yet (waiting for a channel or a permit)
  uint64_t refused_stopping = 0;   ///< grain-path envelopes refused `silo_unavailable`
  uint64_t refused_overloaded = 0; ///< deliveries refused at `routing.max_in_flight`
  /// deliveries refused at `routing.max_in_flight_per_destination` (SPEC C4)
  uint64_t refused_destination = 0;
  uint64_t routing_loops = 0; ///< envelopes NACKed `routing_loop`
  // -- legs' terminal events, one per accepted leg ------------------------------------------------
  // docs/behaviour/routing.md#legs, docs/behaviour/quiescence.md#the-routing-io-pool
  uint64_t terminal_events = 0;
  uint64_t landed = 0;
  uint64_t nacked = 0;           ///< legs that ended by handing a NACK over (or failed-and-NACKed)
  uint64_t abandoned = 0;        ///< cancelled by the pool drain (NACKed unless answer-suppressed)
  uint64_t ended_by_release = 0; ///< legs ended with a NACK when the stop let go of them
  uint64_t crashed = 0;          ///< `leg_crashed`
  uint64_t refused = 0;          ///< never admitted: `pool_refused`
  uint64_t grain_attempts = 0;   ///< grain calls issued by legs (each retry counts)
  /// Deliveries that rode a channel batch behind its head's attempt, each time one was sent
  /// (docs/behaviour/routing.md#channel-batches).
  uint64_t batch_riders = 0;
  uint64_t continuation_retries = 0; ///< responses/NACKs retried because their pod hub moved
  /// Responses/NACKs sent again after an attempt without answer
  /// (docs/behaviour/routing.md#continuations-sent-again).
  uint64_t continuation_resends = 0;
  /// Legs NACKed `failed` without another attempt: their requester's time ran out first
  /// (docs/behaviour/routing.md#a-requests-remaining-time).
  uint64_t requester_time_ran_out = 0;
  // -- NACK machinery (docs/behaviour/routing.md#nacks) --
  uint64_t nacks_posted = 0;       ///< NACKs handed to the machinery (tracked work)
  uint64_t nacks_pool_refused = 0; ///< NACKs the pool refused (logged at debug, carried nothing)
  /// Delivered to the local route of the pure client that handed the delivery to the
  /// routing grain (docs/behaviour/routing.md#nacks), before rung a.
  uint64_t nacks_client = 0;
  uint64_t nacks_local = 0;    ///< delivered on rung a (local route)
  uint64_t nacks_node_hub = 0; ///< delivered on rung b (messagehub)
  uint64_t nacks_pod_hub = 0;  ///< delivered on rung c (podhub)
  uint64_t nacks_stream = 0;   ///< published on rung d (stream)
  uint64_t nacks_failed = 0;   ///< every rung failed ("BOTH transports failed") or gave up
  uint64_t nacks_unsent = 0;   ///< NACKs of a stop that could not leave within its bound
  /// `cafmesh.routing.suppressed_failures` (docs/behaviour/envelope.md#the-envelope)
  uint64_t suppressed_failures = 0;
  /// NACKs posted, by verdict (index: the verdict's numeric value).
  std::vector<uint64_t> nacks_by_verdict;
  // -- delivery latency: acceptance to terminal event, per leg --
  /// Legs per bucket of `leg_latency_bounds_ms`, plus one last bucket beyond them.
  std::vector<uint64_t> latency_buckets;
  int64_t latency_sum_ms = 0; ///< sum of the legs' latencies
  // -- diagnostics --
  /// Delivery ids of the accepted legs not yet terminated, in acceptance order: what a crash
  /// of this silo would lose (docs/scenarios.md S12.61; the simulation records them as lost).
  std::vector<std::string> in_flight_ids;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, router_core_stats& x) {
  return f(caf::meta::type_name("cafmesh.router_core_stats"), x.in_flight, x.nacks_alive,
           x.stopping, x.saturation_latched, x.saturation_reports, x.oldest_dispatched_age_ms,
           x.oldest_queued_age_ms, x.channels, x.destinations, x.deepest, x.deepest_channel,
           x.max_dispatch_depth, x.accepted, x.accepted_co_hosted, x.queued, x.refused_stopping,
           x.refused_overloaded, x.refused_destination, x.routing_loops, x.terminal_events,
           x.landed, x.nacked, x.abandoned, x.ended_by_release, x.crashed, x.refused,
           x.grain_attempts, x.batch_riders, x.continuation_retries, x.continuation_resends,
           x.requester_time_ran_out, x.nacks_posted, x.nacks_pool_refused, x.nacks_client,
           x.nacks_local, x.nacks_node_hub, x.nacks_pod_hub, x.nacks_stream, x.nacks_failed,
           x.nacks_unsent, x.suppressed_failures, x.nacks_by_verdict, x.latency_buckets,
           x.latency_sum_ms, x.in_flight_ids);
}

/// The router core's public protocol (see the file comment). It is a
/// `lifecycle::stopping_recipient_actor`: `caf::actor_cast<stopping_recipient_actor>(rc)`.
using router_core_actor = caf::typed_actor<
  caf::reacts_to<rc_route_atom, envelope>, caf::reacts_to<rc_route_atom, envelope, caf::timespan>,
  caf::reacts_to<rc_forget_atom, std::string>,
  caf::reacts_to<rc_local_atom, grain_id, activation_tag, caf::actor>,
  caf::reacts_to<rc_local_atom, grain_id, activation_tag>,
  caf::reacts_to<mb_snapshot_atom, membership_snapshot>,
  caf::replies_to<rc_grains_atom, std::vector<dispatch_item>,
                  silo_address>::with<dispatch_verdicts>,
  caf::reacts_to<rc_locals_atom, local_route_port_actor>,
  caf::replies_to<lifecycle::host_stopping_atom>::with<caf::ok_atom>,
  caf::replies_to<routing::q_end_legs_atom, std::string>::with<std::vector<std::string>>,
  caf::replies_to<routing::q_nacks_out_atom>::with<caf::ok_atom>,
  caf::replies_to<rc_stats_atom>::with<router_core_stats>,
  caf::replies_to<rc_sync_atom>::with<caf::ok_atom>,
  caf::replies_to<rc_drained_atom, std::string, std::string>::with<caf::ok_atom>>;

} // namespace cafmesh::routing
