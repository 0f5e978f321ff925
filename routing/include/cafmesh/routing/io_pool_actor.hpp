#pragma once

/// @file
/// The routing I/O pool's message protocol (docs/behaviour/quiescence.md#the-routing-io-pool) and
/// the owner side of it.
///
/// Parties: the pool P (one per silo); the **owner** O of a leg, i.e. the actor that asked
/// for its admission and receives its terminal event (the router core, which may run many
/// legs as explicit state machines without an actor per delivery); optionally a **leg
/// actor** L when a leg runs as its own actor (O itself may be L). A leg is named by
/// (leg id, owner); leg ids are unique per pool and never reused (a per-silo counter).
///
/// Messages (all one-way except `drain` and `stats`):
///
/// | sender -> receiver | message | meaning |
/// |---|---|---|
/// | O -> P | `(pool_admit_atom, leg_id, O)` | ask for a start permit. P monitors O. |
/// | P -> O | `(pool_admitted_atom, leg_id)` | permit granted (at once, or later in FIFO order once fewer than `cap` permits are out); start the leg now. |
/// | P -> O | `(pool_refused_atom, leg_id, error)` | never admitted: `pool_refused` "pool drained; leg will not run" (draining or drained, including admissions still waiting when the drain began), or `invalid_operation` for a leg id already known. Always a separate message, never inline in the admission. |
/// | O or L -> P | `(pool_watch_atom, leg_id, L)` | optional: the leg runs as actor L (may be O). P monitors L. |
/// | O or L -> P | `(pool_started_atom, leg_id)` | the leg issued its first asynchronous step: its permit returns; the leg stays tracked. |
/// | O or L -> P | `(pool_ended_atom, leg_id)` | the leg is gone (landed, NACK handed over, crashed or abandoned). Also the confirmation of a cancel. Returns the permit if `started` never came. |
/// | P -> O | `(pool_cancel_atom, leg_id)` | drain, after grace: abort the leg (cancel its timers, ignore its late responses), emit its terminal event `abandoned`, hand its one NACK over when its silo stops (the router core starts that NACK without a permit, since the pool drains, and ends the leg in the pool once the NACK is through), then confirm with `pool_ended`. For a watched leg P also sends L an exit (`user_shutdown`); L's down confirms. If O is L, P sends only the exit. |
/// | P -> O | `(pool_down_atom, leg_id, reason)` | watched leg actor L (not O) went down while the leg was tracked; the owner's latch turns it into `leg_crashed` unless `leg_done` came first. |
/// | any -> P | `(pool_drain_atom) -> uint64_t` | drain (terminal, idempotent): answers the residual count once the drain finished; later calls answer the same residual at once. |
/// | any -> P | `(pool_stats_atom) -> io_pool_stats` | diagnostics. |
/// | O -> P | `(pool_attach_atom, O)` | O admits its legs itself, with a permit counter of its own, and tells P nothing per leg until the drain (docs/behaviour/quiescence.md#admission-inside-the-router-core). P monitors O. |
/// | P -> O | `(pool_handover_atom) -> std::vector<uint64_t>` | the drain began: O answers the ids of its admitted legs and NACKs that are not gone (P tracks them as started) and from then on uses the messages above for every leg (admissions are refused, as for any owner of a draining pool). |
///
/// A leg is gone for the pool on the first of: `pool_ended`, the down of its watched actor L,
/// or the down of its owner O. The owner keeps exactly one terminal event per leg with a
/// latch (`leg_latch_table`, cafmesh/routing/leg_latch.hpp; the router core's is a flag per leg).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/routing/quiescence_atoms.hpp"

namespace cafmesh::routing {

/// The pool's drain phase.
enum class pool_phase : uint8_t {
  open = 0,   ///< admitting
  grace,      ///< drain step 2: waiting while legs keep finishing
  cancelling, ///< drain step 3: cancels sent, waiting for confirmations
  joining,    ///< drain step 4: waiting for permits and tracked legs
  drained,    ///< drain finished; residual recorded
};

/// Renders `open`, `grace`, `cancelling`, `joining` or `drained`.
std::string to_string(pool_phase x);

/// A snapshot of the pool for diagnostics and tests.
struct io_pool_stats {
  uint64_t permits_out = 0; ///< admitted legs that have not reported `started`
  uint64_t running = 0;     ///< started legs not yet gone
  uint64_t waiting = 0;     ///< admissions waiting for a permit (FIFO)
  pool_phase phase = pool_phase::open;
  uint64_t residual = 0; ///< the drain's residual once `phase == drained`
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, io_pool_stats& x) {
  return f(caf::meta::type_name("cafmesh.io_pool_stats"), x.permits_out, x.running, x.waiting,
           x.phase, x.residual);
}

/// What an owner of legs must handle (the router core includes these in its interface and
/// passes `caf::actor_cast<io_pool_owner_actor>(self)` at admission). The pool sends them to
/// the owner handle given at admission.
using io_pool_owner_actor
  = caf::typed_actor<caf::replies_to<pool_handover_atom>::with<std::vector<uint64_t>>,
                     caf::reacts_to<pool_admitted_atom, uint64_t>,
                     caf::reacts_to<pool_refused_atom, uint64_t, caf::error>,
                     caf::reacts_to<pool_cancel_atom, uint64_t>,
                     caf::reacts_to<pool_down_atom, uint64_t, caf::error>>;

/// The routing I/O pool (docs/behaviour/quiescence.md#the-routing-io-pool); see the file comment
/// for the protocol.
using io_pool_actor
  = caf::typed_actor<caf::reacts_to<pool_admit_atom, uint64_t, io_pool_owner_actor>,
                     caf::reacts_to<pool_attach_atom, io_pool_owner_actor>,
                     caf::reacts_to<pool_watch_atom, uint64_t, caf::actor>,
                     caf::reacts_to<pool_started_atom, uint64_t>,
                     caf::reacts_to<pool_ended_atom, uint64_t>,
                     caf::replies_to<pool_drain_atom>::with<uint64_t>,
                     caf::replies_to<pool_stats_atom>::with<io_pool_stats>>;

} // namespace cafmesh::routing
