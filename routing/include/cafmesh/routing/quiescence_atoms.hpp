#pragma once

/// @file
/// Message tags of routing quiescence (docs/behaviour/quiescence.md) and of the routing I/O pool
/// (docs/behaviour/quiescence.md#the-routing-io-pool): CAF 0.17 atoms, at most 10 characters,
/// prefixed `q` (gauge, participant) or `pool` (pool, pool teardown participant) so they never
/// clash with CAF's or another component's.

#include <caf/atom.hpp>

namespace cafmesh::routing {

// -- quiescence gauge -----------------------------------------------------------------------------
// docs/behaviour/quiescence.md#the-gauge
using q_track_atom = caf::atom_constant<caf::atom("qtrack")>;
using q_mark_atom = caf::atom_constant<caf::atom("qmark")>;
using q_handover_atom = caf::atom_constant<caf::atom("qhandover")>;
using q_release_atom = caf::atom_constant<caf::atom("qrelease")>;
/// `(q_units_atom, source, units)`: the units a source (the router core) holds now.
using q_units_atom = caf::atom_constant<caf::atom("qunits")>;
using q_count_atom = caf::atom_constant<caf::atom("qcount")>;
using q_oldest_atom = caf::atom_constant<caf::atom("qoldest")>;
using q_await_atom = caf::atom_constant<caf::atom("qawait")>;
using q_teardown_atom = caf::atom_constant<caf::atom("qteardown")>;

// -- quiescence participant internals -------------------------------------------------------------
// docs/behaviour/quiescence.md#the-participant-at-stage-active
using q_hold_expired_atom = caf::atom_constant<caf::atom("qholdexp")>;

// -- routing I/O pool -----------------------------------------------------------------------------
// docs/behaviour/quiescence.md#the-routing-io-pool
using pool_admit_atom = caf::atom_constant<caf::atom("pooladmit")>;
using pool_admitted_atom = caf::atom_constant<caf::atom("pooladmtd")>;
using pool_refused_atom = caf::atom_constant<caf::atom("poolrefuse")>;
using pool_watch_atom = caf::atom_constant<caf::atom("poolwatch")>;
using pool_started_atom = caf::atom_constant<caf::atom("poolstart")>;
using pool_ended_atom = caf::atom_constant<caf::atom("poolended")>;
using pool_cancel_atom = caf::atom_constant<caf::atom("poolcancel")>;
using pool_down_atom = caf::atom_constant<caf::atom("pooldown")>;
using pool_drain_atom = caf::atom_constant<caf::atom("pooldrain")>;
using pool_stats_atom = caf::atom_constant<caf::atom("poolstats")>;
/// `(pool_attach_atom, owner)`: an owner that admits its legs itself until the drain.
using pool_attach_atom = caf::atom_constant<caf::atom("poolattach")>;
/// `(pool_handover_atom) -> std::vector<uint64_t>`: the drain asks such an owner for its legs.
using pool_handover_atom = caf::atom_constant<caf::atom("poolhandov")>;

// -- routing I/O pool internals (timers) ------------------------------------------------
using pool_grace_atom = caf::atom_constant<caf::atom("poolgrace")>;
using pool_cwait_atom = caf::atom_constant<caf::atom("poolcwait")>;
using pool_join_atom = caf::atom_constant<caf::atom("pooljoin")>;
using pool_td_timer_atom = caf::atom_constant<caf::atom("pooltdtime")>;

} // namespace cafmesh::routing
