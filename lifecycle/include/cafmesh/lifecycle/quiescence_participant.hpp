#pragma once

/// @file
/// The routing quiescence participant
/// (docs/behaviour/quiescence.md#the-participant-at-stage-active): a lifecycle observer at stage
/// Active (20000) that holds the silo stop until the gauge reads 0, bounded by its hold budget.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <caf/timespan.hpp>

#include "cafmesh/routing/leg_release.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/routing/routing_quiescence_actor.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace cafmesh::config {
struct lifecycle_section;
} // namespace cafmesh::config

namespace cafmesh::lifecycle {

/// Options of the participant (examples/config/README.md#keys `lifecycle.*`).
struct quiescence_participant_options {
  /// Rendered silo address (or any name) used as log context; may be empty.
  std::string silo_name;
  /// `lifecycle.quiescence_hold_ms`: hold budget; its rendering ("30 s") appears in the
  /// hold and expiry lines.
  caf::timespan quiescence_hold = std::chrono::seconds(30);
  /// `lifecycle.quiescence_residual_sample`: legs named on expiry and when abandoning.
  int64_t quiescence_residual_sample = 10;
  /// Called from the participant's turn when it answers a stop, with how long it held the
  /// silo at stage Active (on the actor clock, whole ms; 0 when nothing was in flight). May
  /// be empty.
  std::function<void(caf::timespan hold)> on_hold_ended;

  /// The options from a configuration's `lifecycle` section.
  static quiescence_participant_options from(const config::lifecycle_section& cfg,
                                             std::string silo_name = {});
};

/// Spawns the participant (docs/behaviour/quiescence.md#the-participant-at-stage-active), an
/// observer speaking `lifecycle_observer_actor`:
///
/// - `start_stage` answers `ok` at once and sets nothing up.
/// - `stop_stage(stage, graceful)` first samples the gauge (`oldest(sample)`), then:
///   - `graceful = false`: no hold; if the count is above 0, warning "stopping
///     NON-gracefully with {n} route leg(s) in flight; abandoning: {labels}" (at most
///     `quiescence_residual_sample` labels, oldest first, `; `-separated, then
///     " (+{k} more)"); answers ok.
///   - count 0: info "routing quiescence: no routing work in flight"; answers ok.
///   - else info "routing quiescence: holding silo stop for {n} route leg(s) (budget 30 s)",
///     sends `await_zero` to the gauge and arms a one-shot hold timer (`delayed_send` on the
///     actor clock). The first of these ends the hold and answers ok:
///     - the gauge answers `await_zero`: info "routing quiescence: work landed after {X} ms"
///       (X = virtual ms since `stop_stage` arrived);
///     - the hold timer: error "{n} route leg(s) did not land within 30 s: {entries}", the
///       entries being the `quiescence_residual_sample` oldest slots, oldest first,
///       `; `-separated, each as `render_entry` gives it, then " (+{k} more)";
///     - `budget_expired`: warning "routing quiescence: shutdown budget expired while
///       holding; releasing with {n} route leg(s) in flight".
///   Every answer is delivered from the participant's own turn (a response handler or a
///   timer message), never inside the gauge's turn. The participant never answers an error:
///   an unreachable gauge is logged at warning and the stop answered ok.
/// - `budget_expired` outside a hold is ignored.
///
/// A second `stop_stage` while one is open receives the same answer when it completes.
///
/// **Releasing with work in flight** (non-graceful stop, hold budget, shutdown budget): when
/// `legs` (the owner of the silo's legs) is set, the participant first asks it to end every
/// leg that has not landed with one NACK (`q_end_legs_atom`; the owner bounds that wait
/// itself), then logs the line above followed by "; residual: {ids}" with the delivery ids
/// it answered (at most 20, then "+N more"), then answers the stop. Without `legs` the line
/// is logged as above (each gauge label names its delivery) and the stop answered at once.
lifecycle_observer_actor spawn_quiescence_participant(caf::actor_system& sys,
                                                      routing::routing_quiescence_actor gauge,
                                                      quiescence_participant_options opts = {},
                                                      routing::leg_release_actor legs = {});

} // namespace cafmesh::lifecycle
