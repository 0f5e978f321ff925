#pragma once

/// @file
/// The outcome ledger (docs/testing.md#the-simulation-harness "Outcome ledger",
/// docs/behaviour/routing.md#nacks): per accepted delivery id, what was sent (kind, sender, target,
/// stream and owner version, accepted time), the terminal outcomes the sender's outcome tracker
/// passed on, and the landings recorded at targets.
/// `summarize()` checks "exactly one terminal outcome" against it and yields the counts the
/// demo report prints. A plain single-threaded class; the driver feeds it events with
/// times in ms from one clock (the actor clock, virtual in the simulation).
///
/// Terminal outcomes by kind (docs/behaviour/routing.md#nacks):
/// - request: the first of {response, NACK, deadline} the tracker passed on; a landing at
///   the target is recorded (latency) but is not the sender's outcome;
/// - one-way post or stream frame that may be answered: its landing, or its NACK;
/// - answer-suppressed post (heartbeat): its landing, or the router failure recorded with
///   its verdict (`suppressed_failure`, S12.58); a NACK for it is an anomaly;
/// - a one-way delivery whose success the sender cannot observe (a pure client's heartbeat
///   or post to a hub in another process: a landing there sends nothing back,
///   docs/behaviour/routing.md#nacks, docs/behaviour/routing.md#nacks) that got no NACK by the end
///   of the run: `unconfirmed` (recorded by the driver at the end,
///   `demo_driver::mark_unconfirmed`). Counted apart: neither landed nor lost.
/// Checks: lost = accepted with no terminal outcome; more than one terminal outcome (two
/// landings of one post count too); per-(target, stream) order violations = a frame landing
/// with version v after a landing of the same stream at that target with version v' > v,
/// unless its sender had been told "outcome is unknown" first (`late_copies`).
///
/// Memory does not grow per delivery: the ledger keeps a small record per delivery only
/// while it is in flight and `retain_ms` after its first terminal outcome (the window in
/// which later events for it, a second outcome or a late landing, are still attributed to
/// it); everything the summary and the timeline need beyond that is folded into counters,
/// exact latency histograms and per-second bins as events come. Every event is still
/// written to the event sink (the ledger file) in full. docs/operations.md#memory

#include <climits>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::mainjob {

/// What a delivery is (docs/testing.md#the-simulation-harness traffic generators).
enum class delivery_kind : uint8_t {
  request, ///< expects a response; tracked with a deadline
  post,    ///< one-way post (heartbeats are answer-suppressed posts)
  frame,   ///< one-way stream frame with an ordering key and an owner-stamped version
};

/// Renders `request`, `post` or `frame`.
std::string to_string(delivery_kind x);

/// Parses `request`, `post` or `frame`; answers false for anything else.
bool from_string(const std::string& name, delivery_kind& out);

/// One accepted delivery as the ledger records it.
struct accepted_delivery {
  /// the envelope id (docs/behaviour/envelope.md#the-envelope); unique per delivery
  std::string id;
  delivery_kind kind = delivery_kind::post;
  std::string sender;           ///< rendered address
  std::string target;           ///< rendered address
  std::string stream;           ///< frames: the ordering key; empty otherwise
  /// frames: the owner-stamped version (docs/behaviour/sync-guard.md)
  uint64_t version = 0;
  bool answer_suppressed = false;
  std::string origin;           ///< where the sender hub lives, e.g. `client:1`, `silo:A`
  int64_t accepted_ms = 0;
};

/// The kinds of terminal outcome.
enum class outcome_kind : uint8_t {
  landed,
  response,
  nack,
  deadline,
  suppressed_failure,
  unconfirmed, ///< no observable outcome at the sender by the end of the run (file comment)
};

/// Renders `landed`, `response`, `nack`, `deadline`, `suppressed_failure` or `unconfirmed`.
std::string to_string(outcome_kind x);

/// A frame landing that broke per-stream order.
struct order_violation {
  std::string id;
  std::string target;
  std::string stream;
  uint64_t version = 0;       ///< the version that landed
  uint64_t after_version = 0; ///< the higher version that had landed before
  int64_t t_ms = 0;

  friend bool operator==(const order_violation& x, const order_violation& y) {
    return x.id == y.id && x.target == y.target && x.stream == y.stream
           && x.version == y.version && x.after_version == y.after_version && x.t_ms == y.t_ms;
  }
};

/// Counts of one kind or one origin.
struct outcome_counts {
  uint64_t accepted = 0;
  uint64_t landed = 0;   ///< terminal outcome landed (posts, frames) or response (requests)
  uint64_t nacked = 0;   ///< terminal outcome NACK
  uint64_t deadlines = 0;
  uint64_t suppressed_failures = 0;
  uint64_t unconfirmed = 0; ///< one-way, success unobservable, no NACK by the end (not lost)
  uint64_t lost = 0;

  friend bool operator==(const outcome_counts& x, const outcome_counts& y) {
    return x.accepted == y.accepted && x.landed == y.landed && x.nacked == y.nacked
           && x.deadlines == y.deadlines && x.suppressed_failures == y.suppressed_failures
           && x.unconfirmed == y.unconfirmed
           && x.lost == y.lost;
  }
};

/// What `outcome_ledger::summarize` finds. Sample lists hold at most `sample_max` ids, in
/// acceptance order.
struct ledger_summary {
  static constexpr size_t sample_max = 10;

  outcome_counts total;
  std::map<delivery_kind, outcome_counts> by_kind;
  std::map<std::string, outcome_counts> by_origin;
  std::map<routing::verdict, uint64_t> nacked_by_verdict;     ///< terminal NACKs only
  std::map<routing::verdict, uint64_t> suppressed_by_verdict; ///< router failures of suppressed posts
  std::vector<std::string> lost_ids;
  uint64_t multiple_terminal = 0; ///< deliveries with more than one terminal outcome
  std::vector<std::string> multiple_terminal_ids;
  /// Deliveries that landed once and whose sender was told `failed` either by a response
  /// timeout after the landing (a NACK or suppressed failure whose text says "timed out" or
  /// "expired": the answer was held or lost) or, before or after the landing, by the end of
  /// the silo the call went through ("outcome is unknown": killed, or stopped
  /// non-gracefully, while the call was in flight; what it had sent may still arrive).
  /// docs/behaviour/classification.md#why-a-response-timeout-is-never-resent: "the callee may
  /// already hold the delivery"; the sender's failure is its one report and says the
  /// delivery may have landed, so these do not count in `multiple_terminal`. Any other pair
  /// of outcomes does (a timeout before the landing too: an expired call is not carried
  /// out), and so does a third outcome.
  uint64_t landed_with_ambiguous_failure = 0;
  std::vector<std::string> landed_with_ambiguous_failure_ids;
  /// later outcomes the senders' trackers dropped (docs/behaviour/routing.md#nacks)
  uint64_t duplicates_dropped = 0;
  uint64_t order_violations = 0;
  std::vector<order_violation> order_violation_samples;
  /// frames the receivers' guards dropped as stale (docs/behaviour/sync-guard.md)
  uint64_t stale_drops = 0;
  /// Frames that landed behind a newer version of their stream at that target after their
  /// sender was told "outcome is unknown" (a silo ended while the frame's call was in flight
  /// and what it had sent arrived later): the receiver's guard drops such a copy as stale
  /// (docs/behaviour/sync-guard.md), so they are not `order_violations`; like stale drops
  /// they come only with kills and non-graceful stops. docs/testing.md#chaos
  uint64_t late_copies = 0;
  std::vector<std::string> late_copy_ids; ///< in landing order, at most `sample_max`
  uint64_t unknown_outcomes = 0;   ///< outcomes or landings for ids never accepted
  uint64_t duplicate_accepts = 0;  ///< `accept` for an id already accepted
  uint64_t nacks_on_suppressed = 0; ///< NACKs for answer-suppressed deliveries (never allowed)
  std::set<std::string> nack_texts; ///< every distinct NACK and suppressed-failure text
  /// The same texts by verdict.
  std::map<routing::verdict, std::set<std::string>> nack_texts_by_verdict;
  uint64_t latency_samples = 0;   ///< deliveries with a landing
  std::optional<int64_t> latency_p50_ms; ///< first landing - accepted, nearest rank
  std::optional<int64_t> latency_p99_ms;
  std::optional<int64_t> latency_max_ms; ///< the slowest first landing - accepted
};

/// The nearest-rank percentile: the value at rank ceil(percent / 100 * N) (1-based) of the
/// sorted values; none for no values. `percent` in [1, 100].
std::optional<int64_t> nearest_rank(std::vector<int64_t> values, int percent);

/// An exact histogram of integer samples (latencies in ms): one count per distinct value, so
/// its memory grows with the number of distinct values, not with the number of samples, and
/// its percentiles equal `nearest_rank` over every sample added.
class latency_histogram {
public:
  /// Adds one sample.
  void add(int64_t value);

  /// Samples added.
  uint64_t count() const { return count_; }

  /// Distinct values held.
  size_t distinct() const { return counts_.size(); }

  /// `nearest_rank` over every sample added; none for none. `percent` in [1, 100].
  std::optional<int64_t> nearest_rank(int percent) const;

private:
  std::vector<std::pair<int64_t, uint64_t>> counts_; ///< (value, count), ascending values
  uint64_t count_ = 0;
};

/// One second of the run as the ledger bins it while events come (timeline.hpp reads the
/// report's per-second series from these): second s covers [s * 1000, (s + 1) * 1000) ms.
struct ledger_second {
  uint64_t accepted = 0;  ///< deliveries accepted in this second
  uint64_t ended = 0;     ///< deliveries whose first terminal outcome came in this second
  uint64_t landed = 0;    ///< of those: a landing or a request's response
  std::map<routing::verdict, uint64_t> nacked; ///< of those: a NACK, not an overload refusal
  uint64_t refusals = 0;  ///< of those: an overload refusal (`overload_refusal`)
  uint64_t deadlines = 0; ///< of those: a request's deadline
  uint64_t suppressed = 0; ///< of those: a suppressed failure, not an overload refusal
  /// First landing - accepted of the deliveries accepted in this second that landed.
  latency_histogram latencies;
};

/// The outcome ledger (see the file comment).
///
/// With an event sink set (`write_events_to`), every call appends one JSON line to it, in
/// call order: `{"t_ms":…,"event":"accepted","id":…,"kind":…,"sender":…,"target":…,
/// "stream":…,"version":…,"answer_suppressed":…,"origin":…}`, `{"t_ms":…,"event":"landed",
/// "id":…}`, `{"t_ms":…,"event":"response","id":…}`, `{"t_ms":…,"event":"nack","id":…,
/// "verdict":…,"text":…}`, `{"t_ms":…,"event":"deadline","id":…}`,
/// `{"t_ms":…,"event":"suppressed_failure","id":…,"verdict":…,"text":…}`,
/// `{"t_ms":…,"event":"duplicate_dropped","id":…}`, `{"t_ms":…,"event":"unconfirmed","id":…}`, `{"t_ms":…,"event":"stale_dropped",
/// "target":…,"stream":…,"version":…}`. `read_event_line` parses them back.
class outcome_ledger {
public:
  /// Keeps a delivery's record until its first terminal outcome is `retain_ms` old (by the
  /// time of the latest event); a later event for it counts as an unknown outcome, an
  /// `accept` of its id again is not detected as a duplicate. The default keeps every
  /// record to the end of the run.
  explicit outcome_ledger(int64_t retain_ms = keep_all);

  /// `retain_ms` that never lets a record go.
  static constexpr int64_t keep_all = INT64_MAX;

  // Move-only: `terminated_` points into `records_`, whose elements a move keeps in place.
  outcome_ledger(outcome_ledger&&) = default;
  outcome_ledger& operator=(outcome_ledger&&) = default;
  outcome_ledger(const outcome_ledger&) = delete;
  outcome_ledger& operator=(const outcome_ledger&) = delete;

  /// Appends every later event as a JSON line to `out` (not owned; nullptr stops).
  void write_events_to(std::ostream* out) { sink_ = out; }

  /// Records an accepted delivery; answers false (counted as `duplicate_accepts`, nothing
  /// else changes) if `d.id` was accepted before.
  bool accept(const accepted_delivery& d);

  /// The target hub received delivery `id` at `t_ms`.
  void landed(const std::string& id, int64_t t_ms);

  /// The sender's tracker passed on a response for request `id`.
  void response(const std::string& id, int64_t t_ms);

  /// The sender's tracker passed on a NACK for `id`.
  void nack(const std::string& id, routing::verdict v, const std::string& text, int64_t t_ms);

  /// The sender's tracker passed on the deadline of request `id`.
  void deadline(const std::string& id, int64_t t_ms);

  /// The router recorded the failure of answer-suppressed delivery `id` (no NACK is sent).
  void suppressed_failure(const std::string& id, routing::verdict v, const std::string& text,
                          int64_t t_ms);

  /// One-way delivery `id`, whose success its sender cannot observe, had no NACK by the end
  /// of the run (see the file comment): terminal outcome `unconfirmed`.
  void unconfirmed(const std::string& id, int64_t t_ms);

  /// A sender's tracker dropped a later outcome for `id` (docs/behaviour/routing.md#nacks).
  void duplicate_dropped(const std::string& id, int64_t t_ms);

  /// A receiver's guard dropped frame `version` of `stream` at `target` as stale
  /// (docs/behaviour/sync-guard.md).
  void stale_dropped(const std::string& target, const std::string& stream, uint64_t version,
                     int64_t t_ms);

  /// True if `id` was accepted, has at least one terminal outcome and its record is still
  /// kept (`retain_ms`).
  bool terminated(const std::string& id) const;

  /// True if `id` was accepted answer-suppressed and its record is still kept (in flight,
  /// or terminated less than `retain_ms` ago); false once it is retired. Lets a live mesh
  /// tell an entry failure of a heartbeat from a NACK without an id set of its own that
  /// grows with every heartbeat (docs/operations.md#memory).
  bool answer_suppressed(const std::string& id) const;

  /// Accepted deliveries without a terminal outcome so far ("in flight").
  uint64_t in_flight() const { return in_flight_; }

  /// Number of accepted deliveries.
  size_t size() const { return static_cast<size_t>(total_.accepted); }

  /// Deliveries whose record is kept: in flight, or terminated less than `retain_ms` ago.
  size_t records() const { return records_.size(); }

  /// Sizes the record table for `n` records at once: a table that grows while the run's
  /// window fills doubles its bucket array at some moment of the run (megabytes at a time at
  /// the demo's rates) and keeps it (docs/operations.md#memory).
  void reserve(size_t n) { records_.reserve(n); }

  /// The record table's bucket count (tests).
  size_t record_buckets() const { return records_.bucket_count(); }

  /// How long a terminated delivery's record is kept (the constructor's `retain_ms`).
  int64_t retain_ms() const { return retain_ms_; }

  /// Deliveries whose first terminal outcome is a landing or a response, so far.
  uint64_t landed_count() const { return landed_; }

  /// Deliveries whose first terminal outcome is a NACK, by verdict, so far.
  const std::map<routing::verdict, uint64_t>& nacked_counts() const { return nacked_; }

  /// Evaluates every check over what was recorded.
  ledger_summary summarize() const;

  /// The run's seconds from second 0 to the last one with an accept or a first terminal
  /// outcome so far.
  const std::vector<ledger_second>& seconds() const { return seconds_; }

private:
  /// What the checks still need of one delivery (no texts, no addresses).
  struct record {
    uint64_t seq = 0;            ///< acceptance order
    int64_t accepted_ms = 0;
    int64_t first_terminal_ms = 0; ///< valid once `terminals` > 0
    uint64_t version = 0;        ///< frames
    uint32_t origin = 0;         ///< index into `origins_`
    uint32_t stream = 0;         ///< frames: index into `streams_`
    delivery_kind kind = delivery_kind::post;
    bool answer_suppressed = false;
    bool landed = false;         ///< has a landing (its first one gave the latency)
    uint8_t terminals = 0;       ///< terminal outcomes, counted up to 3
    outcome_kind first = outcome_kind::landed;
    /// The first two terminal outcomes are one landing (or response) and one ambiguous
    /// failure (`landed_with_ambiguous_failure`), in either order.
    bool landed_with_ambiguous_failure = false;
    bool first_unknown_outcome = false; ///< the first terminal outcome says "outcome is unknown"
  };
  using record_map = std::unordered_map<std::string, record>;

  /// A delivery with more than one terminal outcome, for the id samples.
  struct sample {
    uint64_t seq;
    std::string id;
  };

  record* find(const std::string& id);
  void add_terminal(const std::string& id, record& r, outcome_kind k, routing::verdict v,
                    const std::string& text, int64_t t_ms);
  ledger_second& second_at(int64_t t_ms);
  void retire_until(int64_t now_ms);
  void emit(const std::string& line);

  int64_t retain_ms_;
  record_map records_;
  /// Terminated records by first terminal time, oldest first (pointers stay valid in an
  /// unordered_map until the element is erased).
  std::deque<record_map::value_type*> terminated_;
  uint64_t next_seq_ = 0;
  int64_t latest_ms_ = INT64_MIN;
  std::vector<std::string> origins_;
  std::unordered_map<std::string, uint32_t> origin_index_;
  struct stream_state {
    std::string target;
    std::string stream;
    uint64_t max_landed = 0;
    bool any_landed = false;
  };
  std::vector<stream_state> streams_;
  std::map<std::pair<std::string, std::string>, uint32_t> stream_index_;
  outcome_counts total_;
  std::map<delivery_kind, outcome_counts> by_kind_;
  std::vector<outcome_counts> by_origin_; ///< parallel to `origins_`
  std::map<routing::verdict, uint64_t> suppressed_;
  std::set<std::string> nack_texts_;
  std::map<routing::verdict, std::set<std::string>> nack_texts_by_verdict_;
  latency_histogram latencies_;
  std::vector<ledger_second> seconds_;
  // Second outcomes of retired records (the kept ones are classified by `summarize`).
  uint64_t retired_multiple_ = 0;
  std::vector<sample> retired_multiple_ids_; ///< lowest `seq` first, at most sample_max
  uint64_t retired_ambiguous_ = 0;
  std::vector<sample> retired_ambiguous_ids_;
  uint64_t in_flight_ = 0;
  uint64_t landed_ = 0;
  std::map<routing::verdict, uint64_t> nacked_;
  uint64_t duplicates_dropped_ = 0;
  uint64_t order_violations_ = 0;
  std::vector<order_violation> violation_samples_;
  uint64_t stale_drops_ = 0;
  uint64_t late_copies_ = 0;
  std::vector<std::string> late_copy_ids_;
  uint64_t unknown_outcomes_ = 0;
  uint64_t duplicate_accepts_ = 0;
  uint64_t nacks_on_suppressed_ = 0;
  std::ostream* sink_ = nullptr;
};

/// Feeds one event line (as written by an event sink) into `ledger`. Answers an empty string
/// on success, else the reason, e.g. `expected "event" to be one of ..., got "x"`.
std::string read_event_line(const std::string& line, outcome_ledger& ledger);

} // namespace cafmesh::mainjob
