#pragma once

// The question placement asks its own silo's catalog when the directory cannot answer a
// lookup (not installed): which live activation of a grain this silo holds
// (docs/behaviour/directory-and-placement.md#own-catalog-when-the-directory-cannot-answer).
// Placement (placement.cpp) asks, the catalog (catalog.cpp) answers; no other actor sends it,
// and it never crosses the network.

#include <caf/atom.hpp>

namespace cafmesh {

/// `(ct_find_atom, grain_id g) -> activation_tag`: the live single-activation activation of
/// `g` in this catalog, tag 0 if none. Live is what `ct_activate` would answer without
/// activating: not deactivating (a deactivating one holds its messages and reroutes them, so
/// it is no answer), its first registration answered or still running. Nothing is
/// registered: the directory stays the one that names the grain's activation whenever it can
/// answer.
using ct_find_atom = caf::atom_constant<caf::atom("ctfind")>;

} // namespace cafmesh
