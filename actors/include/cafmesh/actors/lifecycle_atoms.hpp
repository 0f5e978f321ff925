#pragma once

/// @file
/// Message tags of the lifecycle folder (CAF 0.17 atoms, at most 10 characters, all with a
/// `lc`/`host`/`q`/`pool` prefix so they never clash with CAF's or another folder's atoms).

#include <caf/atom.hpp>

namespace cafmesh::lifecycle {

// -- observer protocol ----------------------------------------------------------------------------
// docs/behaviour/lifecycle.md#the-lifecycle-subject
using start_stage_atom = caf::atom_constant<caf::atom("lcstart")>;
using stop_stage_atom = caf::atom_constant<caf::atom("lcstop")>;
using budget_expired_atom = caf::atom_constant<caf::atom("lcbudget")>;

// -- lifecycle subject ----------------------------------------------------------------------------
// docs/behaviour/lifecycle.md#the-lifecycle-subject
using subscribe_atom = caf::atom_constant<caf::atom("lcsub")>;
using run_start_atom = caf::atom_constant<caf::atom("lcrun")>;
using run_stop_atom = caf::atom_constant<caf::atom("lchalt")>;

// -- host -----------------------------------------------------------------------------------------
// docs/behaviour/lifecycle.md#the-host
using host_stopping_atom = caf::atom_constant<caf::atom("hoststop")>;
using probe_runtime_atom = caf::atom_constant<caf::atom("hostprobe")>;
/// Host: start the silo (`run_start` on its lifecycle subject).
using host_start_atom = caf::atom_constant<caf::atom("hoststart")>;
/// Host: run the stop sequence, with a `graceful` flag.
using host_halt_atom = caf::atom_constant<caf::atom("hosthalt")>;
/// Host: query where the stop sequence stands.
using host_state_atom = caf::atom_constant<caf::atom("hoststate")>;
/// Host -> mesh teardown: dispose every hub of this process and drain their queues.
using host_teardown_atom = caf::atom_constant<caf::atom("hosttear")>;
/// Host -> itself: the shutdown budget ran out (internal).
using host_budget_atom = caf::atom_constant<caf::atom("hostbudget")>;
/// Host -> runtime registry: this silo's runtime is up (alive).
using host_register_atom = caf::atom_constant<caf::atom("hostreg")>;
/// Host -> runtime registry: this silo's runtime services are torn down.
using host_torn_down_atom = caf::atom_constant<caf::atom("hosttorn")>;
using host_active_atom = caf::atom_constant<caf::atom("hostactive")>;
using host_await_atom = caf::atom_constant<caf::atom("hostawait")>;

} // namespace cafmesh::lifecycle
