#pragma once

/// @file
/// Mailbox enqueues and CAF timers per delivery (examples/bench/README.md, P1, P1q, P1r): a
/// separate actor system on CAF 0.17's test coordinator (virtual time) runs the same flow as
/// a row once and counts the jobs the coordinator runs (one job is one message, at either
/// priority: tests/routing/hot_path_test.cpp checks it) and the entries added to its clock's
/// schedule (request timeouts, `delayed_send`s, behaviour timeouts) while the flow runs.
/// Only CAF's test coordinator is needed: nothing of tests/ is compiled in.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include <caf/fwd.hpp>
#include <nlohmann/json.hpp>

namespace cafmesh::bench {

/// What a counted stretch of a flow cost.
struct tally {
  uint64_t jobs = 0;         ///< messages handled (one coordinator job each)
  uint64_t timers_added = 0; ///< clock entries added (timeouts and delayed messages)
  uint64_t timers_fired = 0; ///< clock entries fired to let the flow go on
  /// The added entries by kind and actor, e.g. `delayed message to router_core`.
  std::map<std::string, uint64_t> timer_sources;
};

/// An actor system on the test coordinator, with cafmesh's types registered (no io
/// middleman), whose run loops count jobs and clock entries.
class counted_system {
public:
  counted_system();
  ~counted_system();
  counted_system(const counted_system&) = delete;
  counted_system& operator=(const counted_system&) = delete;

  caf::actor_system& sys();

  /// Runs ready actors one job at a time until none is ready; fires no timer. Counts into
  /// `counted()`.
  void run();
  /// Runs until `pred` holds, firing the earliest clock entry whenever no actor is ready
  /// (virtual time jumps to it); false when nothing is left or virtual time would pass
  /// now + `cap`. Counts into `counted()`.
  bool run_until(const std::function<bool()>& pred,
                 std::chrono::milliseconds cap = std::chrono::minutes(5));
  /// What was counted since the last `reset()`.
  const tally& counted() const { return tally_; }
  void reset() { tally_ = {}; }

  /// Sends every actor in `hs` an exit and runs until idle (call before destruction).
  void exit_all(const std::vector<caf::actor>& hs);

private:
  /// Counts the schedule's entries that were not there before the last job.
  void note_new_entries();

  struct impl;
  std::unique_ptr<impl> impl_;
  tally tally_;
  std::unordered_set<const void*> known_;
};

/// The figures of one counted flow of `n` deliveries.
struct flow_cost {
  bool ok = false;
  std::string why; ///< when not ok
  uint64_t deliveries = 0;
  tally t;
  double enqueues_per_delivery() const;
  double timers_per_delivery() const;
  /// " | N enqueues, T timers per delivery" (or why it could not be counted).
  std::string detail() const;
  /// `enqueues_per_delivery`, `timers_per_delivery` and the raw counts.
  void add_to(nlohmann::json& data) const;
  /// One progress line on stderr: the counts and where the timers came from.
  void report(const char* row) const;
};

} // namespace cafmesh::bench
