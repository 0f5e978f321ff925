#pragma once

/// @file
/// The router core's in-flight count and saturation report
/// (docs/behaviour/routing.md#saturation-report-and-refusal-log). A plain single-threaded class
/// driven by the router core: the owner passes the virtual time in and logs the events it hands
/// back (`render`, `log_saturation_event`). It measures and never limits: no call refuses or delays
/// anything.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/ordered_route_dispatcher.hpp"

namespace cafmesh::routing {

/// Where an accepted leg stands (docs/behaviour/routing.md#the-router-core,
/// docs/behaviour/quiescence.md#the-gauge).
enum class leg_phase : uint8_t {
  queued,     ///< accepted, not started: behind a channel head or waiting for a permit
  dispatched, ///< started (its first asynchronous step was issued)
};

/// The ages the report is about, at one instant
/// (docs/behaviour/routing.md#saturation-report-and-refusal-log last bullet).
struct in_flight_ages {
  size_t in_flight = 0;                            ///< accepted legs not yet terminated
  std::optional<int64_t> oldest_dispatched_age_ms; ///< since dispatch; none if none dispatched
  std::optional<int64_t> oldest_queued_age_ms;     ///< since acceptance; none if none queued
};

/// Renders `oldest dispatched leg {A} ms since dispatch; oldest queued leg {Q} ms (queued,
/// not dispatched)`; a missing age renders as `none dispatched` / `none queued`.
std::string render_ages(const in_flight_ages& x);

/// What the monitor asks its owner to log
/// (docs/behaviour/routing.md#saturation-report-and-refusal-log).
enum class saturation_event_kind : uint8_t {
  report,     ///< the in-flight count reached `saturation_report_count`: one report
  escalation, ///< a review found the oldest dispatched leg at or past `leg_self_bound_ms`
  cleared,    ///< the count fell to `saturation_clear_count` or below
  lasting,    ///< a report logged at info is still latched `saturation_warn_after_ms` later
};

/// One event for the owner to log.
struct saturation_event {
  saturation_event_kind kind = saturation_event_kind::report;
  /// warning, or critical (docs/behaviour/routing.md#saturation-report-and-refusal-log)
  log::level lvl = log::level::warning;
  int64_t at_ms = 0;             ///< virtual time of the event
  in_flight_ages ages;           ///< at `at_ms`
  int64_t latched_ms = 0;        ///< for `cleared`: how long the episode lasted
  int64_t leg_self_bound_ms = 0; ///< the critical age in force
};

/// The log line for `ev`, with the dispatcher's `queues`
/// (docs/behaviour/routing.md#saturation-report-and-refusal-log):
/// - report: `routing saturation: {n} leg(s) in flight; {ages}; queues: {snapshot}`
/// - escalation: `routing saturation critical: oldest dispatched leg in flight {A} ms
///   (self bound {B} ms); {n} leg(s) in flight; {ages}; queues: {snapshot}`
/// - cleared: `routing saturation cleared after {X} ms; {n} leg(s) in flight`
/// - lasting: `routing saturation lasting {X} ms: {n} leg(s) in flight; {ages}; queues:
///   {snapshot}`
std::string render(const saturation_event& ev, const queue_snapshot& queues);

/// Logs `render(ev, queues)` at `ev.lvl` on `out` (by default component `router_core`).
void log_saturation_event(const saturation_event& ev, const queue_snapshot& queues,
                          const log::logger& out);
void log_saturation_event(const saturation_event& ev, const queue_snapshot& queues);

/// A leg's place in a `saturation_monitor` through the id API: its time and its neighbours
/// in its phase's list (the monitor keeps these itself).
struct saturation_link {
  int64_t since_ms = 0; ///< acceptance (queued) or dispatch (dispatched)
  saturation_link* prev = nullptr;
  saturation_link* next = nullptr;
  leg_phase phase = leg_phase::queued;
  bool counted = false; ///< accepted and not terminated
};

/// A leg counted by a `saturation_monitor` whose owner keeps its times (in the leg's own
/// record, one byte: counting a leg allocates nothing and links nothing). The owner answers
/// for the oldest of these legs through `saturation_monitor::oldest_source`.
struct counted_leg {
  leg_phase phase : 1;
  bool counted : 1; ///< accepted and not terminated

  counted_leg() : phase(leg_phase::queued), counted(false) {
    // nop
  }
};

/// The oldest of the legs an owner counts as `counted_leg`: the acceptance time of its oldest
/// queued leg and the dispatch time of its oldest dispatched leg (none: no such leg).
struct oldest_times {
  std::optional<int64_t> queued_since_ms;
  std::optional<int64_t> dispatched_since_ms;
};

/// In-flight accounting and the saturation latch
/// (docs/behaviour/routing.md#saturation-report-and-refusal-log).
///
/// Usage by the router core: `accept` every leg when it is enqueued (stream-routed branch,
/// `queued`) or admitted (node branch); `dispatched` when the leg reports started;
/// `terminated` on its one terminal event. Each call may answer an event to log. While
/// latched, the oldest dispatched leg is re-checked on dispatches at most every
/// `saturation_review_ms`; escalation to critical happens at most once per episode (a
/// report already at critical counts as the escalation).
///
/// With `saturation_warn_after_ms` > 0 a report below critical comes at info: a burst that
/// clears within that time is no warning. The owner calls `lasting` that many ms after the
/// report; if the episode is still latched then, its warning comes from there, and its
/// clearing is a warning too (a cleared episode that never warned clears at info).
///
/// Costs: O(1) per call (on average through the id API, which hashes the links). A leg of
/// the id API is linked into its phase's list by time (time running backwards costs a walk
/// from the list's tail); a `counted_leg` is only counted, and the ages (in every event, in
/// a review, in `ages`) ask the owner's `oldest_source`, which may walk its legs: events and
/// reviews are rare (a review at most every `saturation_review_ms` while latched).
class saturation_monitor {
public:
  /// Thresholds from `cfg`: `saturation_report_count`, `saturation_clear_count`,
  /// `leg_self_bound_ms`, `saturation_review_ms`, `saturation_warn_after_ms`.
  explicit saturation_monitor(const config::routing_section& cfg = {});

  /// Not copyable: the lists link the legs' links (a move keeps them).
  saturation_monitor(const saturation_monitor&) = delete;
  saturation_monitor& operator=(const saturation_monitor&) = delete;
  saturation_monitor(saturation_monitor&&) = default;
  saturation_monitor& operator=(saturation_monitor&&) = default;

  /// Counts `leg` in flight from `now_ms` in `phase`. Answers the report when this makes
  /// the count reach `saturation_report_count` while not latched; for a `dispatched` leg
  /// otherwise runs the review (`on_dispatch`). A leg already counted changes nothing.
  std::optional<saturation_event> accept(leg_id leg, leg_phase phase, int64_t now_ms);

  /// The same for a leg whose times its owner keeps (`counted_leg`, `oldest_source`).
  std::optional<saturation_event> accept(counted_leg& leg, leg_phase phase, int64_t now_ms);

  /// `leg` started at `now_ms`; its age now counts from here. Then runs the review.
  std::optional<saturation_event> dispatched(leg_id leg, int64_t now_ms);

  /// The same for a leg whose times its owner keeps: its dispatch time is `now_ms`.
  std::optional<saturation_event> dispatched(counted_leg& leg, int64_t now_ms);

  /// `leg`'s terminal event at `now_ms`: no longer in flight. Answers `cleared` when the
  /// count falls to `saturation_clear_count` or below while latched. Unknown ids are ignored.
  std::optional<saturation_event> terminated(leg_id leg, int64_t now_ms);

  /// The same for a leg whose times its owner keeps (a leg not counted is ignored).
  std::optional<saturation_event> terminated(counted_leg& leg, int64_t now_ms);

  /// Where the ages of the `counted_leg`s come from: `f` answers their oldest times. Set by
  /// an owner that counts any; called from inside the calls above (the leg being accepted
  /// or dispatched is counted in its new phase, the one terminating no longer).
  void oldest_source(std::function<oldest_times()> f) { oldest_source_ = std::move(f); }

  /// The review piggy-backed on a dispatch: while latched and not yet escalated, at most
  /// every `saturation_review_ms` since the report or the previous review, escalate to
  /// critical if the oldest dispatched leg is at least `leg_self_bound_ms` old.
  std::optional<saturation_event> on_dispatch(int64_t now_ms);

  /// The warning of a lasting episode: answers `lasting` (warning) if at `now_ms` the
  /// episode has been latched for at least `saturation_warn_after_ms` and has not warned
  /// yet; otherwise nothing (cleared meanwhile, a later episode, or warned already).
  std::optional<saturation_event> lasting(int64_t now_ms);

  /// When the owner should call `lasting` after a report at `report_ms` (none: the report
  /// itself warned).
  std::optional<int64_t> lasting_due(const saturation_event& report) const;

  /// The ages at `now_ms`.
  in_flight_ages ages(int64_t now_ms) const;

  /// Accepted legs not yet terminated.
  size_t in_flight() const { return count_; }

  /// True between a report and its clearing.
  bool latched() const { return latched_; }

  /// True once the current episode escalated to critical.
  bool escalated() const { return escalated_; }

  /// Reports produced so far (all episodes).
  uint64_t reports() const { return reports_; }

  /// Reviews run so far (all episodes); a review is one age check while latched.
  uint64_t reviews() const { return reviews_; }

private:
  /// One phase's legs, oldest first (an intrusive list through the links).
  struct age_list {
    saturation_link* head = nullptr;
    saturation_link* tail = nullptr;
  };

  saturation_event make_event(saturation_event_kind kind, log::level lvl, int64_t now_ms) const;

  age_list& list_of(leg_phase phase) { return phase == leg_phase::queued ? queued_ : dispatched_; }

  /// Links `x` into its phase's list by `since_ms` (at the tail unless time ran backwards).
  void link(saturation_link& x);

  /// Unlinks `x` from its phase's list.
  void unlink(saturation_link& x);

  /// The id API's steps on the link the monitor keeps for the id.
  std::optional<saturation_event> accept(saturation_link& x, leg_phase phase, int64_t now_ms);
  std::optional<saturation_event> dispatched(saturation_link& x, int64_t now_ms);
  std::optional<saturation_event> terminated(saturation_link& x, int64_t now_ms);

  /// The bookkeeping common to both APIs once a leg is counted in `phase`.
  std::optional<saturation_event> counted(leg_phase phase, int64_t now_ms);

  /// The same once a leg is no longer counted.
  std::optional<saturation_event> uncounted(int64_t now_ms);

  /// The oldest times over both APIs.
  oldest_times oldest() const;

  size_t report_count_;
  size_t clear_count_;
  int64_t leg_self_bound_ms_;
  int64_t review_ms_;
  int64_t warn_after_ms_;
  /// The links of the legs counted through the id API.
  std::unordered_map<leg_id, saturation_link> legs_;
  size_t count_ = 0; ///< legs counted (both APIs)
  age_list queued_;
  age_list dispatched_;
  std::function<oldest_times()> oldest_source_;
  bool latched_ = false;
  bool escalated_ = false;
  bool warned_ = false; ///< the current episode logged a warning or worse
  int64_t latched_at_ms_ = 0;
  int64_t last_review_ms_ = 0;
  uint64_t reports_ = 0;
  uint64_t reviews_ = 0;
};

} // namespace cafmesh::routing
