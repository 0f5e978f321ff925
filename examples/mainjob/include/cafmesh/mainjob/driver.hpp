#pragma once

/// @file
/// The demo driver: everything of a cafmesh-demo run except the mesh itself. It consumes the
/// traffic schedule, hands deliveries to a `mesh_port`, records what the mesh reports in the
/// outcome ledger, applies landed frames to the receivers' delta mirrors
/// (docs/behaviour/sync-guard.md), reacts to NACKs as the traffic generators must
/// (docs/testing.md#the-simulation-harness), runs the roll (stop each silo of
/// `roll.order` gracefully, restart it, wait until it is Active, next) and the scenario's
/// faults, feeds the progress line, and builds the final report.
///
/// The mesh plugs in through `mesh_port` (commands) and the `on_*` calls (events). No CAF,
/// no threads, no clock of its own: the caller passes the time (actor clock) in. The meshes
/// of net_mesh.hpp and client_mesh.hpp implement `mesh_port`.
///
/// Acceptance: the driver records every delivery in the ledger when it hands it to the mesh
/// (stricter than the documented "accepted": a delivery the mesh refuses must still reach one
/// terminal outcome, the refusal's NACK).
/// Mirrors: one `routing::delta_mirror` per (target, stream); a frame is applied when it lands;
/// a stale drop is recorded in the ledger. Their fresh-Full requests are not sent: the owner's
/// Full after a transient NACK covers every gap the demo can produce, and the final check
/// `every mirror ends equal to its owner` would show one that it did not cover.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "cafmesh/mainjob/ledger.hpp"
#include "cafmesh/mainjob/progress.hpp"
#include "cafmesh/mainjob/report.hpp"
#include "cafmesh/mainjob/scenario.hpp"
#include "cafmesh/mainjob/trace_replay.hpp"
#include "cafmesh/mainjob/traffic.hpp"
#include "cafmesh/routing/sync_guard.hpp"

namespace cafmesh::mainjob {

/// What the driver asks of the mesh. Every call returns at once; results come back through
/// the driver's `on_*` calls.
class mesh_port {
public:
  virtual ~mesh_port();

  /// Package `d` (payload: `render_payload(d)`, docs/behaviour/envelope.md#the-envelope packaging
  /// stamps from `d`) and send it from its sender hub.
  virtual void submit(const planned_delivery& d) = 0;

  /// Graceful host stop of silo `name` (docs/behaviour/lifecycle.md#the-host).
  virtual void stop_silo(const std::string& name) = 0;

  /// Start silo `name` again with the next generation
  /// (docs/behaviour/envelope.md#silo-addresses-and-activations).
  virtual void restart_silo(const std::string& name) = 0;

  /// Hold every message to and from silo `name` (docs/testing.md#the-simulation-harness `stall`);
  /// `detected` = the failure detector may declare it Dead.
  virtual void stall_silo(const std::string& name, bool detected) = 0;

  /// End a stall.
  virtual void unstall_silo(const std::string& name) = 0;

  /// End silo `name` without a lifecycle stop (fault `kill`: a crash). False when this mesh
  /// cannot (the default); the driver then fails the check `every fault was injected`.
  virtual bool kill_silo(const std::string& name);

  /// A second stop request to silo `name` (fault `second_signal`): a graceful stop in
  /// progress escalates to non-graceful. False when this mesh cannot (the default).
  virtual bool signal_silo_again(const std::string& name);

  /// Can the driver learn that `d` succeeded? True (the default) when the mesh reports its
  /// landing or response; false for a one-way delivery to a hub whose landing this process
  /// cannot see (a pure client's post or heartbeat to another process's hub): such a
  /// delivery ends in a NACK or, at the end of the run, `unconfirmed` (`mark_unconfirmed`).
  virtual bool observes_success(const planned_delivery& d) const;
};

/// A silo's lifecycle progress as the mesh reports it.
struct silo_event {
  std::string silo;
  uint64_t generation = 0;
  roll_phase phase = roll_phase::active;
  std::optional<lifecycle::stage> stage;          ///< stage being started or stopped
  std::optional<int64_t> quiescence_hold_ms;      ///< with `stopped`: how long the hold lasted
};

/// The driver (see the file comment). Single-threaded.
class demo_driver {
public:
  /// `mode` goes into the report (`in_process`, `processes` or `client`); paced ids are
  /// `{id_prefix}-{n}`, reactions `{id_prefix}-r{n}` (traffic.hpp).
  demo_driver(const scenario& s, mesh_port& mesh, std::string mode,
              std::string id_prefix = "demo");

  /// Replays `trace` (cafmesh-client `--trace`) instead of the scenario's paced schedule;
  /// `s` gives the rest (name, roll, faults, expectations; its traffic section is unused).
  /// The report of a replay does not measure mirrors (`report_input::mirrors_diverged` is
  /// none): each frame line steps its stream's clock (trace_replay.hpp), so two targets of
  /// one stream each see every other version and cannot end equal to the owner.
  demo_driver(const scenario& s, mesh_port& mesh, std::string mode, trace_replay trace);

  /// Submits every delivery due at `now_ms` and fires due roll and fault steps.
  void advance(int64_t now_ms);

  /// When `advance` has something to do next; none when only mesh events can move things.
  std::optional<int64_t> next_wakeup_ms() const;

  // -- events from the mesh (times in the same clock) --------------------------

  /// Delivery `id` reached its target hub.
  void on_landed(const std::string& id, int64_t t_ms);

  /// The sender's tracker passed on a response for request `id`.
  void on_response(const std::string& id, int64_t t_ms);

  /// The sender's tracker passed on a NACK for `id`; reactions are submitted at once.
  void on_nack(const std::string& id, routing::verdict v, const std::string& text,
               int64_t t_ms);

  /// The sender's tracker passed on the deadline of request `id`.
  void on_deadline(const std::string& id, int64_t t_ms);

  /// The router recorded the failure of answer-suppressed delivery `id`.
  void on_suppressed_failure(const std::string& id, routing::verdict v, const std::string& text,
                             int64_t t_ms);

  /// A sender's tracker dropped a later outcome for `id`.
  void on_duplicate_dropped(const std::string& id, int64_t t_ms);

  /// One event of a hub endpoint's observer (`routing::ep_event_atom`: `kind` `received`,
  /// `response`, `nack`, `deadline`, `duplicate`, `suppressed` or `entry_failed`; `v` the
  /// verdict) passed to the matching `on_*` call. An entry failure is a NACK, or a
  /// suppressed failure when `answer_suppressed` (its verdict from the text rule,
  /// docs/behaviour/classification.md#results-that-carry-a-verdict, when the entry gave `failed`;
  /// `unavailable` when the text says "overloaded": the entry's admission refusal). Ids ending in
  /// `-response` (the responses node hubs send) are not scenario deliveries and are ignored.
  void on_hub_event(const std::string& kind, const std::string& id, routing::verdict v,
                    const std::string& text, bool answer_suppressed, int64_t t_ms);

  /// A silo's lifecycle progress (any silo; the roll reacts to the one it is rolling).
  void on_silo(const silo_event& e, int64_t t_ms);

  // -- state ------------------------------------------------------------------

  /// True once the paced schedule is exhausted, the roll is complete and every fault ended.
  bool traffic_done() const;

  /// True when `traffic_done` and no delivery is in flight whose success the mesh observes
  /// (`mesh_port::observes_success`): the others may still get a NACK, or end unconfirmed.
  bool quiescent() const;

  /// Deliveries in flight whose success the mesh cannot observe.
  size_t unobservable_in_flight() const { return unobservable_.size(); }

  /// Records `unconfirmed` at `now_ms` for every delivery in flight whose success the mesh
  /// cannot observe (call once at the end of the run, before `finish`).
  void mark_unconfirmed(int64_t now_ms);

  /// The progress sample at `now_ms` (the rate meter is fed here).
  progress_sample progress(int64_t now_ms);

  /// Sets the sender entries measured in the mesh's processes (`report_input::entries`);
  /// call before `finish`.
  void set_entries(std::vector<entry_use> xs) { entries_ = std::move(xs); }

  /// Evaluates the run: ledger summary, counters, roll records, mirrors, fault marks and the
  /// per-second timeline (`report_input::series`).
  report finish();

  const outcome_ledger& ledger() const { return ledger_; }

  /// Appends every later ledger event to `out` as a JSON line (`outcome_ledger::
  /// write_events_to`); nullptr stops.
  void write_ledger_events_to(std::ostream* out) { ledger_.write_events_to(out); }
  const std::vector<silo_stop_record>& stops() const { return stops_; }

  /// Mirrors whose version or state differs from their owner's (after `finish`, or now).
  uint64_t mirrors_diverged() const;

private:
  enum class roll_step { wait_stop, stopping, wait_restart, starting, wait_next, done };
  using source_type = std::variant<traffic_generator, trace_replay>;

  demo_driver(const scenario& s, mesh_port& mesh, std::string mode, source_type source);

  void submit(planned_delivery d, int64_t now_ms);
  /// Offers `d` unless its sender backs off (docs/behaviour/admission-control.md "Senders
  /// back off"): a frame to a (receiver, stream) that is owed a fresh Full is carried by
  /// that Full; while the sender backs off a frame makes its (receiver, stream) owed a Full
  /// at the back-off's end, a heartbeat is not offered and a request waits for the end.
  void offer(planned_delivery d, int64_t now_ms);
  /// Queues `d` (a reaction or a held delivery) for `d.t_ms`; a frame whose (receiver,
  /// stream) is already owed a Full is dropped: that Full carries it.
  void defer(planned_delivery d);
  void terminal(const std::string& id, const observed_outcome& o, int64_t t_ms);
  void roll_advance(int64_t now_ms);
  /// Injects the next fault step (stall begin or end, kill, restart, second signal) and
  /// records its mark at `now_ms`.
  void inject_next_fault(int64_t now_ms);
  /// The earliest due time of a roll step that waits (sequential roll or `roll.steps`).
  std::optional<int64_t> next_roll_due_ms() const;
  void steps_advance(int64_t now_ms);
  /// Counts a landing in the stop record of every silo out (from its stopping signal until
  /// its new generation is Active).
  void count_in_stop();
  /// Starts the stop record of `name` and sends the stop; answers the record's index.
  size_t begin_stop(const std::string& name, int64_t now_ms);

  // The schedule source (generator or trace replay).
  std::optional<int64_t> next_due_ms() const;
  std::vector<planned_delivery> take_due(int64_t now_ms);
  std::vector<planned_delivery> on_outcome(const planned_delivery& d, const observed_outcome& o,
                                           int64_t now_ms);
  const owner_streams& streams() const;
  traffic_counters counters() const;

  scenario s_;
  mesh_port& mesh_;
  std::string mode_;
  source_type source_;
  outcome_ledger ledger_;
  std::unordered_map<std::string, planned_delivery> open_; ///< submitted, no terminal outcome
  std::set<std::string> unobservable_; ///< open ids whose success the mesh cannot observe
  /// (target, stream) -> (owner, mirror)
  std::map<std::pair<std::string, std::string>, std::pair<std::string, routing::delta_mirror>>
    mirrors_;
  std::map<std::string, uint64_t> generation_;
  // roll
  roll_step step_;
  size_t roll_index_ = 0;
  int64_t roll_due_ms_ = 0;
  std::optional<roll_status> roll_status_;
  std::vector<silo_stop_record> stops_;
  /// `roll.steps`: each step's own progress (same states as the sequential roll).
  struct step_state {
    roll_step step = roll_step::wait_stop;
    int64_t due_ms = 0;
    size_t record = 0; ///< index into `stops_` once stopped
    roll_status status;
  };
  std::vector<step_state> steps_;
  uint64_t faults_not_injected_ = 0; ///< kill / second_signal the mesh could not inject
  std::vector<fault_mark> fault_marks_; ///< every fault step taken, in order
  // faults: (time, index, begin?); a kill's end is its restart
  std::vector<std::pair<int64_t, std::pair<size_t, bool>>> fault_steps_;
  size_t fault_pos_ = 0;
  rate_meter meter_;
  /// Reactions not yet due (traffic.hpp: each waits `reaction_delay_ms`), by due time.
  std::multimap<int64_t, planned_delivery> deferred_;
  std::vector<entry_use> entries_;
  uint64_t fulls_superseded_ = 0; ///< deferred Fulls not sent: the mirror already equalled the stream
  /// Sender -> the actor-clock ms until which it backs off (the latest overload refusal's
  /// `retry_after_ms` after the refusal arrived).
  std::unordered_map<std::string, int64_t> backoff_until_;
  /// (receiver, stream) pairs with a fresh Full in `deferred_`.
  std::set<std::pair<std::string, std::string>> owed_full_;
  uint64_t withheld_frames_ = 0;
  uint64_t withheld_heartbeats_ = 0;
  uint64_t withheld_requests_ = 0;
  /// Of `owed_full_`, the pairs whose owed Full follows an overload refusal or stands for a
  /// frame shed during a back-off (frames folded into it are not carried).
  std::set<std::pair<std::string, std::string>> overload_owed_;
  /// (receiver, stream) -> withheld frames the next Full to it carries.
  std::map<std::pair<std::string, std::string>, uint64_t> owed_carries_;
  /// Submitted Full id -> withheld frames it carries (credited when it lands).
  std::unordered_map<std::string, uint64_t> full_carries_;
  uint64_t withheld_frames_carried_ = 0;
};

} // namespace cafmesh::mainjob
