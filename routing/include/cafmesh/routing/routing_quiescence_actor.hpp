#pragma once

/// @file
/// The quiescence gauge's message protocol (docs/behaviour/quiescence.md#the-gauge) and the value
/// types it answers with.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/routing/quiescence_atoms.hpp"

namespace cafmesh::routing {

/// A gauge slot's state (docs/behaviour/quiescence.md#the-gauge): `queued` while the leg waits in
/// its ordering channel or for a pool permit, `dispatched` once the leg has started.
enum class slot_state : uint8_t { queued = 0, dispatched = 1 };

/// Renders `queued` or `dispatched`.
std::string to_string(slot_state x);

/// One gauge slot as `oldest(n)` reports it. Times are milliseconds on the actor clock
/// (virtual in the simulation); they are only meaningful relative to each other and to
/// `quiescence_sample::now_ms`.
struct quiescence_entry {
  uint64_t slot = 0;
  std::string label;
  slot_state state = slot_state::queued;
  int64_t taken_ms = 0;       ///< when the slot was taken (`track`)
  int64_t dispatched_ms = -1; ///< when it turned dispatched; -1 while queued
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, quiescence_entry& x) {
  return f(caf::meta::type_name("cafmesh.quiescence_entry"), x.slot, x.label, x.state, x.taken_ms,
           x.dispatched_ms);
}

/// The answer to `oldest(n)`: the total count, the gauge's clock reading and at most `n`
/// entries, oldest slot first (sorted by `taken_ms`, ties by slot id).
struct quiescence_sample {
  uint64_t count = 0;
  int64_t now_ms = 0;
  std::vector<quiescence_entry> entries;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, quiescence_sample& x) {
  return f(caf::meta::type_name("cafmesh.quiescence_sample"), x.count, x.now_ms, x.entries);
}

/// A holder of units that names them itself (the router core): the gauge keeps only its
/// count and asks it for its oldest units when `oldest(n)` needs them
/// (docs/behaviour/quiescence.md#the-router-cores-own-count).
using quiescence_source_actor
  = caf::typed_actor<caf::replies_to<q_oldest_atom, uint64_t>::with<quiescence_sample>>;

/// Slot ids with this bit set are allocated by the gauge itself (request form of `track`);
/// caller-chosen slot ids must leave it clear.
inline constexpr uint64_t gauge_allocated_slot_bit = uint64_t{1} << 63;

/// Slot ids with this bit set (and `gauge_allocated_slot_bit` clear) are the application
/// hubs' (application_hub.hpp): one per delivery a hub of the silo has in progress. The
/// router core's leg ids leave both bits clear.
inline constexpr uint64_t application_hub_slot_bit = uint64_t{1} << 62;

/// The per-silo quiescence gauge (docs/behaviour/quiescence.md#the-gauge). Hot-path updates are
/// one-way messages:
///
/// - `(q_track_atom, slot, label, state)` one-way: take slot `slot` (chosen by the caller,
///   e.g. the leg id; the router core draws it from its own counter) with `label` and
///   `state`. **Design choice:** docs/behaviour/quiescence.md#the-gauge writes
///   `track(label, state) -> slot`; letting the caller choose the id makes `track` one-way, so the
///   router core never waits for the gauge and a leg's slot exists before any later update of it
///   can arrive (messages between one pair of actors keep their order). A track of a slot id
///   already held is ignored (count unchanged, warning logged).
/// - `(q_track_atom, label, state) -> slot` request form, for callers without an id of
///   their own: the gauge allocates an id with `gauge_allocated_slot_bit` set.
/// - `(q_mark_atom, slot)` one-way: the slot turns `dispatched` (time noted once).
/// - `(q_handover_atom, slot, new_label)` one-way: the leg's slot becomes its NACK's; only
///   the label changes, the count does not move and the slot keeps its times and state.
/// - `(q_release_atom, slot)` one-way: frees the slot; when the count reaches 0 every
///   pending `await_zero` is answered.
/// - `(q_units_atom, source, units)` one-way: `source` now holds `units` units of its own
///   (leg_accounting.hpp); the gauge keeps the count, not the units
///   (docs/behaviour/quiescence.md#the-router-cores-own-count).
/// - `(q_count_atom) -> uint64_t` the slots held plus the sources' units.
/// - `(q_oldest_atom, n) -> quiescence_sample` that count plus the `n` oldest units: the
///   gauge's own slots merged with what each source holding units names.
/// - `(q_await_atom) -> ok_atom` answered through a response promise as soon as the count
///   is 0, at once if it already is.
/// - `(q_teardown_atom) -> ok_atom` the runtime services are torn down
///   (docs/behaviour/lifecycle.md#the-host): from now on updates do nothing, queries answer the
///   frozen state, `await_zero` answers at once (no update can ever arrive), and every pending
///   `await_zero` is answered now. Nothing ever faults and the actor stays alive until its owner
///   exits it.
///
/// Updates naming an unknown slot are ignored.
using routing_quiescence_actor
  = caf::typed_actor<caf::reacts_to<q_track_atom, uint64_t, std::string, slot_state>,
                     caf::replies_to<q_track_atom, std::string, slot_state>::with<uint64_t>,
                     caf::reacts_to<q_mark_atom, uint64_t>,
                     caf::reacts_to<q_handover_atom, uint64_t, std::string>,
                     caf::reacts_to<q_release_atom, uint64_t>,
                     caf::reacts_to<q_units_atom, quiescence_source_actor, uint64_t>,
                     caf::replies_to<q_count_atom>::with<uint64_t>,
                     caf::replies_to<q_oldest_atom, uint64_t>::with<quiescence_sample>,
                     caf::replies_to<q_await_atom>::with<caf::ok_atom>,
                     caf::replies_to<q_teardown_atom>::with<caf::ok_atom>>;

} // namespace cafmesh::routing
