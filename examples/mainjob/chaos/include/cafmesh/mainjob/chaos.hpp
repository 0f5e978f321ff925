#pragma once

/// @file
/// Seeded chaos on whole simulated silos (docs/testing.md#chaos): a seed gives a random
/// schedule of timed faults over 3 to 5 silos and the pure clients, run with live traffic
/// in the users' topology (answering hubs inside every silo, `sim_mesh.hpp`) in virtual
/// time; after the run the invariants are checked on the outcome ledger. The same seed
/// (and options) replays the same run: same event list, same trace digest.
///
/// Applications run it against their own grains and hubs (`chaos_options::app`) with their
/// own traffic mix (`chaos_options::mix`), through `run_chaos` or the command line of
/// `chaos_main`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cafmesh/mainjob/scenario.hpp"
#include "cafmesh/mainjob/sim_mesh.hpp"

namespace cafmesh::mainjob {

/// The fault kinds the chaos generator draws from.
enum class chaos_kind : uint8_t {
  graceful_restart,  ///< a silo stopped gracefully, restarted 200-2000 ms after its stop completed
  overlapping_stops, ///< two silos stopped gracefully 5-300 ms apart, both restarted
  second_signal,     ///< a graceful stop, then a second stop request 20-500 ms later
  kill,              ///< a silo ends without a lifecycle stop; started again 500-3000 ms later
  owner_stall,       ///< every frame to and from a silo (and the directory partitions it owns) held 100-1500 ms, undetected
  link_delay,        ///< one link between two processes takes 20-200 ms per frame for 500-3000 ms
  link_drop,         ///< the next 1-3 frames of one link are discarded
  partition,         ///< two processes cannot reach each other for 100-2000 ms
  overload_burst,    ///< 100-400 requests within 20-100 ms on top of the paced traffic
};

/// `graceful_restart`, `overlapping_stops`, ... (the enumerator's name).
std::string to_string(chaos_kind k);

/// The kind named `text`, or none.
std::optional<chaos_kind> parse_chaos_kind(const std::string& text);

/// Every kind, in declaration order.
const std::vector<chaos_kind>& all_chaos_kinds();

/// What the chaos runner runs.
struct chaos_options {
  int64_t min_silos = 3;
  int64_t max_silos = 5;
  int64_t pure_clients = 2;
  int64_t duration_s = 8;   ///< paced traffic
  int64_t rate_per_s = 300; ///< paced deliveries per second
  /// The traffic mix: frames (owner hub -> subscribers), heartbeats (one-way, to node hubs)
  /// and requests (to node hubs).
  mainjob::traffic_weights mix;
  /// The kinds drawn; each fault draws one of them uniformly.
  std::vector<chaos_kind> kinds = all_chaos_kinds();
  int64_t min_faults = 2;
  int64_t max_faults = 5;
  /// The application of every silo (sim_mesh.hpp); empty hubs: the echo application.
  sim_application app;
  /// Configuration overrides of every process (the scenario's `config` section).
  std::string config_json = "{}";
};

/// One fault of a schedule.
struct chaos_event {
  chaos_kind kind = chaos_kind::graceful_restart;
  int64_t at_ms = 0;    ///< since the traffic started
  std::string a;        ///< silo (or process) it acts on
  std::string b;        ///< the other silo or process: overlapping stops, links, partitions
  int64_t for_ms = 0;   ///< restart delay, stall, delay or partition length, second signal lag, burst spread
  int64_t count = 0;    ///< drops: frames; bursts: requests; delays: ms per frame

  /// One line: `{at_ms} {kind} {a} [{b}] for={for_ms} [n={count}]`.
  std::string to_string() const;
};

/// A seed's schedule.
struct chaos_schedule {
  uint64_t seed = 0;
  std::vector<std::string> silos;
  std::vector<chaos_event> events; ///< in `at_ms` order

  /// The events, one line each, numbered from 0.
  std::string render() const;
};

/// The schedule of `seed` (`std::mt19937_64` seeded `seed ^ fnv1a64("chaos")`). At most
/// silos - 1 silos get a lifecycle fault (stop, second signal, kill), each at most one.
chaos_schedule make_chaos_schedule(uint64_t seed, const chaos_options& o);

/// `x` with only the events at the indices `keep` (replaying a shrunk schedule).
chaos_schedule keep_events(const chaos_schedule& x, const std::vector<size_t>& keep);

/// One broken invariant.
struct chaos_violation {
  std::string invariant; ///< e.g. `every accepted delivery has exactly one terminal outcome`
  std::string detail;    ///< ids, counts, trace lines
};

/// The outcome of one chaos run.
struct chaos_result {
  chaos_schedule schedule;
  /// FNV-1a 64 over the ordered trace: every ledger event line, then the network trace
  /// digest. The same schedule and options give the same digest.
  uint64_t digest = 0;
  std::vector<chaos_violation> violations; ///< empty: every invariant held
  sim_run run;

  bool ok() const { return violations.empty(); }

  /// Seed, digest, the event list and the first violation (or the numbers of a passing run).
  std::string render() const;
};

/// The scenario a schedule runs (faults that the driver applies: stops, second signals,
/// kills, stalls, bursts).
mainjob::scenario chaos_scenario(const chaos_schedule& x, const chaos_options& o);

/// The network faults a schedule applies (delays, drops, partitions).
std::vector<net_fault> chaos_net_faults(const chaos_schedule& x);

/// Runs `x` and checks every invariant (docs/testing.md#chaos).
chaos_result run_chaos(const chaos_schedule& x, const chaos_options& o);

/// `run_chaos(make_chaos_schedule(seed, o), o)`.
chaos_result run_chaos(uint64_t seed, const chaos_options& o);

/// Shrinks a failing run: removes one event at a time while the run still breaks the same
/// first invariant, at most `max_runs` runs. Answers the smallest failing result found.
chaos_result shrink_chaos(const chaos_result& failing, const chaos_options& o,
                          int max_runs = 40);

/// The chaos command line for a test executable of the application:
/// `--seeds N` (seeds 1..N), `--from F` (first seed of `--seeds`, default 1), `--seed S`
/// (one seed, printing its schedule and digest), `--keep i,j,...` (with `--seed`: only
/// these events), `--ledger FILE` (with `--seed`: that run's outcome-ledger lines, one JSON
/// event per line, to FILE), `--shrink` (shrink a failing seed), `--kinds k1,k2` (draw only
/// these), `--quiet`. Prints one line per seed and each failure's `render()`; answers 0 when every
/// seed passed, 1 when one failed, 2 for bad arguments.
int chaos_main(int argc, char** argv, chaos_options o = {});

} // namespace cafmesh::mainjob
