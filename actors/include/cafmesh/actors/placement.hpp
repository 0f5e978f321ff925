#pragma once

/// @file
/// The placement service (docs/behaviour/directory-and-placement.md#placement) and the grain-call
/// entry (docs/behaviour/directory-and-placement.md#placement "Entry", "Response timeout",
/// docs/behaviour/classification.md#codes grain-call codes). One placement service per silo.
///
/// ## Protocol (untyped `caf::actor`)
/// - `(pl_call_atom, grain_id g, int32_t forward_count, caf::message payload) -> <reply>`:
///   a grain call. Answers exactly what the activation answered (the reply's elements), or
///   an error carrying a `fault` (`to_error`):
///   * `placement_timeout` "placement of {g} timed out after 30 s": the work item did not
///     finish within `timeout_ms` of its creation; every message batched on it fails at
///     the same instant (late joiners inherit the deadline). Resendable: never left.
///   * `no_compatible_silo` "no active silo is compatible with grain type {type} (interface
///     version {v}); silos known with this type: [{list}]" (list: rendered addresses of every
///     silo of the view whose manifest lists the type, any status, ordered, ", "-separated).
///   * `rejected` "forward count {n} exceeds placement.max_forward_count = {max}" when
///     `forward_count` > `max_forward_count`
///     (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion).
///   * `silo_unavailable` "silo {S} is shutting down" once the service was stopped.
///   * `response_timeout` "grain call to {g} timed out after 30 s": no answer within
///     `response_timeout_ms` after the message left placement.
///   * `response_timeout` "grain call to {g} not sent: its caller's time ran out" (only
///     with a caller's bound, below): the lookup ended after that bound; the message never
///     left.
///   * anything the activation, its catalog or the message centre answered, unchanged
///     (`departed_silo`, `activation_deactivated`, `silo_unavailable`, application errors).
///     `departed_silo` and `activation_deactivated` also drop the cached address.
///   The service always answers, so callers may use `caf::infinite` (see grain_call.hpp).
/// - `(pl_call_atom, grain_id g, int32_t forward_count, caf::message payload, caf::timespan
///   within)`: the same call from a caller that waits for its answer only `within` from now
///   (docs/behaviour/routing.md#a-requests-remaining-time): the message leaves with a response
///   bound, and a time-to-live on the wire, of the smaller of `response_timeout_ms` and what
///   is left of `within` when it leaves; with nothing left it is not sent. `within` <= 0: no
///   bound of the caller's, as the four-element call.
/// - `(mb_snapshot_atom, membership_snapshot)`: the latest view from the silo's membership
///   agent (docs/behaviour/membership.md#snapshots; subscribe the service with
///   `mb_subscribe_atom`). Every snapshot the agent sends is applied (the agent orders them). Cache
///   entries pointing at a silo that is not Active are dropped.
/// - `(pl_inval_atom, activation_address a)`: drop the cached address of `a.grain` if it
///   still names `a` (sent by a catalog whose activation left).
/// - `(pl_inval_atom, grain_id g)`: drop the cached address of `g`, whatever it names (the
///   router's retry loop before re-resolving, docs/behaviour/classification.md#retry-policies).
/// - `(pl_inval_atom, silo_address s)`: drop every cached address naming `s`
///   (docs/behaviour/classification.md#retry-policies
///   `departed_silo`).
/// - `(pl_leaving_atom, silo_address s)`: `s` refused a call because it is leaving (its
///   `silo_unavailable` answer named it) while the latest view still lists it Active. New
///   activations are not placed on `s` while another candidate exists, until a snapshot
///   shows `s` no longer Active (then it is no candidate anyway). `s` may be this silo (a
///   stopping silo's own legs then place new activations elsewhere); ignored for a silo
///   that is not Active in the view. Existing activations on `s` are still
///   called (their directory entries and cache entries are left alone): continuations of
///   work they accepted must reach them.
/// - `(pl_stop_atom) -> ok_atom`: docs/behaviour/lifecycle.md#stages stage 2001: every waiting
///   message fails
///   `silo_unavailable` ("silo {S} is shutting down"), and so does every later call.
///
/// ## Work items (docs/behaviour/directory-and-placement.md#placement)
/// `worker_count` workers, worker = `fnv1a64(rendered grain id) % worker_count`, each a
/// map grain id -> work item inside this one actor (no extra hop per message; a worker is a
/// partition of state, not a thread: CAF gives the whole service one turn at a time, and
/// the work it does per turn is a map lookup). A work item: (1) lookup through the directory
/// port, each attempt bounded by `lookup_attempt_timeout_ms` and retried on timeout or
/// `directory_unstable` until the item's deadline; (2) found -> use it; (3) else the
/// strategy picks a silo among the Active compatible candidates of the latest view;
/// (4) single-activation: ask that silo's catalog (`ct_activate_atom`) to activate and
/// register, first-wins; (5) cache the address; (6) send every batched message on.
///
/// ## Strategies (docs/behaviour/directory-and-placement.md#placement)
/// Candidates: silos Active in the latest view whose manifest lists the type with the same
/// interface version as the local registry's (the local silo only if it is Active too).
/// "At random": candidates ordered by rendered address, index `next() % n` of a
/// `std::mt19937_64` seeded `seed ^ fnv1a64("placement/" + rendered self address)`.
/// stateless worker and prefer-local: the local silo if it is a candidate, otherwise at
/// random; random: at random.
///
/// **Stateless workers and the local limit (interpretation of
/// docs/behaviour/directory-and-placement.md#placement).** The "fewer busy activations than the
/// local limit" test is made by the local catalog, which adds an activation while every existing
/// one is in a turn and fewer than the limit exist, and queues the message on the least-loaded one
/// beyond that. Placement never sends a stateless-worker message away from an Active compatible
/// local silo just because its activation is busy: such a spill picks uniformly among Active silos,
/// including an undetected stalled one (S12.59), and would turn a local queueing delay of
/// microseconds into a 30 s `response_timeout`. The burst test in
/// placement_scenarios_test.cpp shows the difference (20 calls at one instant: all served locally).
///
/// ## Directory
/// Lookups go through a `directory_client` (directory.hpp) inside the service, built with
/// this silo's `directory_resolver` (the local registry's manifest and
/// `stateless_worker_bypass`): stateless workers resolve to the in-process null directory
/// (no message at all) when the bypass is on, everything else to the ring partition of the
/// grain's owner. The address cache is a `directory_cache` fed with every snapshot.

#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>
#include <caf/response_promise.hpp>

#include "cafmesh/actors/activation_address.hpp"
#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/placement_atoms.hpp"

namespace cafmesh {

namespace config {
struct mesh_config;
} // namespace config

/// The placement service's settings (examples/config/README.md#keys `placement.*`, `directory.*`,
/// `grain_call.*`).
struct placement_config {
  silo_address self;                        ///< this silo
  /// `simulation.seed` (docs/testing.md#the-simulation-harness)
  uint64_t seed = 1;
  int64_t timeout_ms = 30000;               ///< `placement.timeout_ms`, per work item
  int64_t worker_count = 16;                ///< `placement.worker_count`
  int64_t max_forward_count = 2;            ///< `placement.max_forward_count`
  int64_t lookup_attempt_timeout_ms = 5000; ///< `directory.lookup_attempt_timeout_ms`
  int64_t response_timeout_ms = 30000;      ///< `grain_call.response_timeout_ms`
  int64_t unstable_retry_ms = 100;          ///< wait before re-asking after `directory_unstable`
  /// `directory.stateless_worker_bypass`
  /// (docs/behaviour/directory-and-placement.md#the-stateless-worker-bypass)
  bool stateless_worker_bypass = true;
};

/// Fills a `placement_config` for silo `self` from the examples/config/README.md#keys
/// configuration.
placement_config make_placement_config(const config::mesh_config& cfg, const silo_address& self);

/// Counters of one placement service (tests and diagnostics).
struct placement_stats {
  uint64_t calls = 0;            ///< `pl_call` requests received
  uint64_t cache_hits = 0;       ///< calls sent straight to a cached activation
  uint64_t items_created = 0;    ///< work items created
  uint64_t joined = 0;           ///< calls that joined an existing work item
  uint64_t lookups = 0;          ///< lookup attempts (null or ring directory)
  uint64_t activations = 0;      ///< `ct_activate` requests sent to catalogs
  uint64_t timeouts = 0;         ///< work items that failed `placement_timeout`
  uint64_t no_candidate = 0;     ///< work items that failed `no_compatible_silo`
  uint64_t leaving_skipped = 0;  ///< placements that passed over a leaving silo
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, placement_stats& x) {
  return f(caf::meta::type_name("cafmesh.placement_stats"), x.calls, x.cache_hits,
           x.items_created, x.joined, x.lookups, x.activations, x.timeouts, x.no_candidate,
           x.leaving_skipped);
}

/// Spawns the placement service of silo `cfg.self`. `centre` is the silo's message centre
/// (every call to a catalog, activation or directory partition goes through it, local ones
/// short-cut there). Subscribe the service to the silo's membership agent.
caf::actor spawn_placement_service(caf::actor_system& sys, placement_config cfg,
                                   grain_registry_ptr registry, caf::actor centre);

/// Picks the silo for a new activation of a grain of type `info`
/// (docs/behaviour/directory-and-placement.md#placement) among
/// `candidates` (Active, compatible, ordered by rendered address, non-empty).
/// `local_ok`: the local silo is a candidate.
silo_address pick_silo(placement_strategy strategy, const silo_address& self, bool local_ok,
                       const std::vector<silo_address>& candidates, std::mt19937_64& rng);

} // namespace cafmesh
