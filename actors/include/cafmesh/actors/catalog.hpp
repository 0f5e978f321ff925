#pragma once

/// @file
/// The catalog (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion,
/// docs/behaviour/envelope.md#silo-addresses-and-activations): the per-silo actor that creates,
/// owns and deactivates activations. One CAF actor per activation; the catalog hands it one message
/// at a time (a turn), so turns never overlap even when the activation answers later.
///
/// ## Protocol (untyped `caf::actor`; reached through the message centre as
/// `component::catalog` and `component::activation`)
/// - `(ct_activate_atom, grain_id g) -> activation_address`: activate a
///   single-activation grain here and register it in the directory (first-wins; a
///   registration attempt failing `directory_unstable` or timing out is retried every
///   100 ms within `activation_timeout_ms`, then the activation leaves and the error is
///   answered). If an
///   activation of `g` already lives here, registers it again first (placement asks only
///   after a directory miss, and a ring change can lose an entry: docs/behaviour/routing.md#hubs)
///   and answers the winner (this one, or another that won and this one deactivates; this one
///   when the directory cannot be reached). If another activation won the
///   registration, the new one deactivates at once and the winner is answered. Errors:
///   `silo_unavailable` "silo {S} is not active, refusing to activate {g}" when this silo
///   is not Active in its latest view; `activation_deactivated` recorded = yes with the
///   activation error text when the type's check refuses (the error is recorded in the
///   activation-failure registry); `not_found` "grain type {type} is not registered on
///   silo {S}".
/// - `(ct_invoke_atom, grain_id g, activation_tag t, int32_t forward_count, caf::message
///   payload) -> <reply>`: one turn of activation `t` (single-activation; `t.value == 0`
///   for a stateless worker: the catalog picks or creates one, up to the local limit, new
///   ones only while Active). A message for an activation that is deactivating is held
///   and, once the activation is gone, rerouted through the local placement service with
///   `forward_count + 1` (placement refuses it `rejected` beyond max_forward_count).
///   A message for an activation no longer (or never) on this silo is refused
///   `activation_deactivated` ("{t} of {g} is not active on silo {S}") with
///   `activation_error_recorded` from the activation-failure registry: yes (and the text)
///   if activating `g` failed here, no if `t` lived here and left, unknown otherwise.
///   The directory entry the caller resolved is stale then: the catalog removes it if it
///   still names `t` on this silo and drops it from its placement's cache, so the caller's
///   retry activates the grain afresh instead of finding the same entry again.
/// - `(ct_call_atom, uint64_t id, grain_id g, activation_tag t, int32_t forward_count,
///   caf::message payload)` one-way: the same turn, answered to the sender as
///   `(ct_result_atom, id, caf::message reply)` or `(ct_result_atom, id, caf::error)` at the priority the
///   call came with: the co-hosted callers (placement, the router core's cached route to a local
///   activation) correlate by id instead of keeping a CAF response handler per call
///   (docs/delivery-costs.md).
/// - `(ct_calls_atom, std::vector<ct_call_item>)` one-way: several `ct_call`s in one message
///   (SPEC B1), in order; their answers go back in batches `(ct_results_atom,
///   std::vector<ct_result_item>)`, sent when the catalog's mailbox is empty or 64 answers
///   are waiting, never on a timer (docs/delivery-costs.md).
/// - `(ct_deact_atom, activation_tag t) -> ok_atom`: deactivate one activation (answers
///   once it is gone).
/// - `(dir_lost_atom, activation_address loser, activation_address winner)` one-way, from
///   a directory partition that kept `winner` when a hand-off brought `loser`
///   (docs/behaviour/directory-and-placement.md#lookup-registration-cache first-wins across a
///   hand-off): if `loser` lives here and is not deactivating, it deactivates (reason
///   `lost_registration`, warning "{tag} of {g} lost its registration to {winner}") and its held
///   messages are rerouted; a pending `ct_activate` of it is answered `winner`. A stale notice
///   changes nothing.
/// - `(ct_deact_all_atom) -> ok_atom`: docs/behaviour/lifecycle.md#stages stage 19998: every
///   activation deactivates in parallel; each finishes its current turn; one still in its
///   turn after
///   `deactivation_timeout_ms` is abandoned (killed) with a warning "… abandoned …".
///   Answers when every activation is gone and every held message it rerouted has been
///   answered (each reroute is bounded by placement's own timeouts).
/// - Activation side (sent by an activation to the catalog, which it learns as the sender
///   of its turns): `(ct_self_atom) -> activation_tag`: the asking activation's own tag
///   (error `not_found` from anyone else); `(ct_leave_atom)` one-way: the asking activation
///   deactivates (reason `request`) once its current turn is over; `(ct_pin_atom, bool)`
///   one-way: pin (true) or unpin the asking activation: a pinned activation is exempt from
///   idle deactivation (docs/behaviour/routing.md#hubs "kept alive",
///   docs/behaviour/routing.md#hubs "pins").
/// - `(mb_snapshot_atom, membership_snapshot)`: the latest view from the membership agent;
///   the catalog activates only while its own silo is Active in it.

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
#include "cafmesh/actors/placement.hpp"

namespace cafmesh {

/// One call of a `ct_calls` batch: `ct_call`'s arguments.
struct ct_call_item {
  uint64_t id = 0;
  grain_id grain;
  activation_tag tag;
  int32_t forward_count = 0;
  caf::message payload;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ct_call_item& x) {
  return f(caf::meta::type_name("cafmesh.ct_call_item"), x.id, x.grain, x.tag, x.forward_count,
           x.payload);
}

/// One answer of a `ct_results` batch: the turn's reply, or its error when `failure` is set.
struct ct_result_item {
  uint64_t id = 0;
  caf::message reply;
  caf::error failure;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ct_result_item& x) {
  return f(caf::meta::type_name("cafmesh.ct_result_item"), x.id, x.reply, x.failure);
}

namespace config {
struct mesh_config;
} // namespace config

/// The catalog's settings (examples/config/README.md#keys `catalog.*`,
/// `placement.max_forward_count`).
struct catalog_config {
  silo_address self;                        ///< this silo
  uint64_t seed = 1;                        ///< `simulation.seed`; tags draw from it
  int64_t deactivation_timeout_ms = 30000;  ///< `catalog.deactivation_timeout_ms`
  int64_t activation_timeout_ms = 30000;    ///< `catalog.activation_timeout_ms` (register)
  int64_t lookup_attempt_timeout_ms = 5000; ///< `directory.lookup_attempt_timeout_ms`
  bool stateless_worker_bypass = true;      ///< `directory.stateless_worker_bypass`
  int64_t max_forward_count = 2;            ///< `placement.max_forward_count`
  /// `catalog.idle_deactivation_ms`: idle time after which an activation deactivates; 0: never.
  int64_t idle_deactivation_ms = 0;
};

/// Fills a `catalog_config` for silo `self` from the examples/config/README.md#keys configuration.
catalog_config make_catalog_config(const config::mesh_config& cfg, const silo_address& self);

/// Why an activation deactivates.
enum class deactivation_reason : uint8_t { idle, shutting_down, lost_registration, request };

/// Renders `idle`, `shutting_down`, `lost_registration` or `request`.
std::string to_string(deactivation_reason x);

/// Counters of one catalog (tests and diagnostics).
struct catalog_stats {
  uint64_t activated = 0;   ///< activations created
  uint64_t deactivated = 0; ///< activations gone (including abandoned ones)
  uint64_t abandoned = 0;   ///< activations killed after the deactivation timeout
  uint64_t rerouted = 0;    ///< held messages sent back through placement
  uint64_t turns = 0;       ///< turns completed
  uint64_t refused = 0;     ///< invocations refused
  /// Directory entries removed because a call named an activation no longer here
  /// (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion).
  uint64_t stale_unregistered = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, catalog_stats& x) {
  return f(caf::meta::type_name("cafmesh.catalog_stats"), x.activated, x.deactivated, x.abandoned,
           x.rerouted, x.turns, x.refused, x.stale_unregistered);
}

/// What `(ct_stats_atom)` answers: the counters and the live activations per grain type.
struct catalog_report {
  catalog_stats counters;
  std::vector<std::string> grain_types; ///< grain types with live activations, sorted
  std::vector<uint64_t> activations;    ///< live activations of `grain_types[i]`
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, catalog_report& x) {
  return f(caf::meta::type_name("cafmesh.catalog_report"), x.counters, x.grain_types,
           x.activations);
}

/// Spawns the catalog of silo `cfg.self`. `centre` is the silo's message centre (directory
/// calls), `placement` its placement service (reroutes, cache invalidation). Register the
/// catalog with the centre as `component::catalog` and `component::activation`, and
/// subscribe it to the silo's membership agent.
caf::actor spawn_catalog(caf::actor_system& sys, catalog_config cfg, grain_registry_ptr registry,
                         caf::actor centre, caf::actor placement);

} // namespace cafmesh
