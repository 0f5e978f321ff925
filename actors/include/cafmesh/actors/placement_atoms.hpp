#pragma once

/// @file
/// Message tags of placement and the catalog (CAF 0.17 atoms, at most 10 characters).
/// Prefixes: `pl` placement service, `ct` catalog.
/// Kept apart from atoms.hpp, which belongs to the message centre / membership / directory.

#include <caf/atom.hpp>

namespace cafmesh {

// -- placement service (placement.hpp) -------------------------------------------
using pl_call_atom = caf::atom_constant<caf::atom("plcall")>;
using pl_inval_atom = caf::atom_constant<caf::atom("plinval")>;
using pl_stop_atom = caf::atom_constant<caf::atom("plstop")>;
using pl_deadline_atom = caf::atom_constant<caf::atom("pldeadline")>;
using pl_retry_atom = caf::atom_constant<caf::atom("plretry")>;
using pl_leaving_atom = caf::atom_constant<caf::atom("plleaving")>;
/// `(pl_catalog_atom, caf::actor catalog)` one-way: the silo's own catalog, registered with
/// its message centre (stage RuntimeServices): calls to a local activation go to it
/// directly from then on (docs/delivery-costs.md).
using pl_catalog_atom = caf::atom_constant<caf::atom("plcatalog")>;
/// `(pl_sweep_atom, int64_t due_ms)` to itself: the deadline of the earliest local call,
/// armed for `due_ms`, may have passed.
using pl_sweep_atom = caf::atom_constant<caf::atom("plsweep")>;
/// `(pl_stats_atom) -> placement_stats`: the placement service's counters (diagnostics,
/// the admin endpoint's metrics).
using pl_stats_atom = caf::atom_constant<caf::atom("plstats")>;

// -- catalog (catalog.hpp) -------------------------------------------------------
using ct_activate_atom = caf::atom_constant<caf::atom("ctactivate")>;
using ct_invoke_atom = caf::atom_constant<caf::atom("ctinvoke")>;
/// `(ct_call_atom, uint64_t id, grain_id, activation_tag, int32_t forward_count, caf::message)`
/// one-way: `ct_invoke` answered by id (catalog.hpp).
using ct_call_atom = caf::atom_constant<caf::atom("ctcall")>;
/// `(ct_result_atom, uint64_t id, caf::message reply)` or `(ct_result_atom, uint64_t id, caf::error)`:
/// the answer to a `ct_call` (catalog.hpp).
using ct_result_atom = caf::atom_constant<caf::atom("ctresult")>;
/// `(ct_calls_atom, std::vector<ct_call_item>)` one-way: several `ct_call`s in one message,
/// answered by `(ct_results_atom, std::vector<ct_result_item>)` (catalog.hpp).
using ct_calls_atom = caf::atom_constant<caf::atom("ctcalls")>;
using ct_results_atom = caf::atom_constant<caf::atom("ctresults")>;
using ct_deact_atom = caf::atom_constant<caf::atom("ctdeact")>;
using ct_deact_all_atom = caf::atom_constant<caf::atom("ctdeactall")>;
using ct_idle_atom = caf::atom_constant<caf::atom("ctidle")>;
using ct_abandon_atom = caf::atom_constant<caf::atom("ctabandon")>;
using ct_regretry_atom = caf::atom_constant<caf::atom("ctregretry")>;
using ct_self_atom = caf::atom_constant<caf::atom("ctself")>;
using ct_leave_atom = caf::atom_constant<caf::atom("ctleave")>;
using ct_pin_atom = caf::atom_constant<caf::atom("ctpin")>;
/// `(ct_stats_atom) -> catalog_report`: the catalog's counters and its activations by grain
/// type (diagnostics, the admin endpoint's metrics).
using ct_stats_atom = caf::atom_constant<caf::atom("ctstats")>;

} // namespace cafmesh
