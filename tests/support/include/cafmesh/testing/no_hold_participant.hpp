#pragma once

/// @file
/// A test double of the routing quiescence participant
/// (docs/behaviour/quiescence.md#the-participant-at-stage-active) that holds nothing: it
/// answers every `stop_stage` ok at once, whatever the gauge reads, and logs nothing. It is
/// the negative control of S12.20 (docs/testing.md#the-test-suite): the quiescence scenarios,
/// run against it, must fail.

#include <caf/fwd.hpp>

#include "cafmesh/actors/observer.hpp"
#include "cafmesh/lifecycle/quiescence_participant.hpp"
#include "cafmesh/routing/leg_release.hpp"
#include "cafmesh/routing/routing_quiescence_actor.hpp"

namespace cafmesh::testing {

/// Spawns the double, with the signature of `lifecycle::spawn_quiescence_participant`: it
/// answers `start_stage` and `stop_stage` ok at once and ignores `budget_expired`; `gauge`,
/// `opts` and `legs` are not used.
lifecycle::lifecycle_observer_actor
spawn_no_hold_participant(caf::actor_system& sys, routing::routing_quiescence_actor gauge,
                          lifecycle::quiescence_participant_options opts = {},
                          routing::leg_release_actor legs = {});

} // namespace cafmesh::testing
