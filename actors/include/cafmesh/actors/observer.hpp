#pragma once

/// @file
/// The lifecycle observer protocol (docs/behaviour/lifecycle.md#the-lifecycle-subject) and the
/// lifecycle subject's interface (docs/behaviour/lifecycle.md#the-lifecycle-subject) as CAF
/// typed actors.

#include <string>

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/stage.hpp"

namespace cafmesh::lifecycle {

/// An observer subscribed to one stage of a silo's lifecycle
/// (docs/behaviour/lifecycle.md#the-lifecycle-subject):
/// - `(start_stage_atom, stage) -> ok_atom` or an error (a `to_error(fault)`);
/// - `(stop_stage_atom, stage, bool graceful) -> ok_atom` or an error;
/// - `(budget_expired_atom)` one-way, only while this observer's stop is open.
/// An observer may answer later through a response promise; it answers exactly once.
using lifecycle_observer_actor
  = caf::typed_actor<caf::replies_to<start_stage_atom, stage>::with<caf::ok_atom>,
                     caf::replies_to<stop_stage_atom, stage, bool>::with<caf::ok_atom>,
                     caf::reacts_to<budget_expired_atom>>;

/// The lifecycle subject of one silo (docs/behaviour/lifecycle.md#the-lifecycle-subject):
/// - `(subscribe_atom, stage, name, observer) -> ok_atom`; after start began (or after a
///   stop): error `lifecycle_misuse`. The subject monitors the observer: one that dies with a
///   request open counts as that observer's error;
/// - `(run_start_atom) -> ok_atom` or the first failing observer's error (after the rest of
///   that stage answered), or `lifecycle_cancelled` if a stop arrived first (checked before
///   each stage; also for a start after a stop without start); a second start:
///   `lifecycle_misuse`;
/// - `(run_stop_atom, bool graceful) -> ok_atom`, answered when every started stage stopped
///   (at once if start never began); a stop arriving during start begins once the running
///   stage finished; a second stop joins the first (its flag is ignored);
/// - `(budget_expired_atom)` one-way, from the host when its shutdown budget runs out: it is
///   forwarded to every observer whose stop is open, and later stages stop non-gracefully.
/// No request of the subject carries a deadline
/// (docs/behaviour/lifecycle.md#the-lifecycle-subject).
using silo_lifecycle_actor = caf::typed_actor<
  caf::replies_to<subscribe_atom, stage, std::string, lifecycle_observer_actor>::with<caf::ok_atom>,
  caf::replies_to<run_start_atom>::with<caf::ok_atom>,
  caf::replies_to<run_stop_atom, bool>::with<caf::ok_atom>, caf::reacts_to<budget_expired_atom>>;

} // namespace cafmesh::lifecycle
