#pragma once

/// @file
/// Message tags of the lifecycle folder (CAF 0.17 atoms, at most 10 characters, all with a
/// `lc`/`host`/`q`/`pool` prefix so they never clash with CAF's or another folder's atoms).

#include <caf/atom.hpp>

namespace cafmesh::lifecycle {

// -- observer protocol (SPEC §3.4) ---------------------------------------------
using start_stage_atom = caf::atom_constant<caf::atom("lcstart")>;
using stop_stage_atom = caf::atom_constant<caf::atom("lcstop")>;
using budget_expired_atom = caf::atom_constant<caf::atom("lcbudget")>;

// -- lifecycle subject (SPEC §3.2, §3.3) ---------------------------------------
using subscribe_atom = caf::atom_constant<caf::atom("lcsub")>;
using run_start_atom = caf::atom_constant<caf::atom("lcrun")>;
using run_stop_atom = caf::atom_constant<caf::atom("lchalt")>;

// -- host (SPEC §3.7) -----------------------------------------------------------
using host_stopping_atom = caf::atom_constant<caf::atom("hoststop")>;
using probe_runtime_atom = caf::atom_constant<caf::atom("hostprobe")>;

} // namespace cafmesh::lifecycle
