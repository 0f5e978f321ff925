#pragma once

/// @file
/// Shared pieces of cafmesh-bench (examples/bench/README.md): the result rows, the run
/// options, the actor systems every row builds, wall and CPU clocks, counters the benchmark
/// thread waits on, and the rows' entry points (one .cpp file per group of rows).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <nlohmann/json.hpp>

namespace cafmesh::bench {

/// How much of each row a run measures.
struct options {
  bool quick = false;        ///< `--quick`: fewer repetitions and smaller batches
  bool p8 = false;           ///< `--p8`: run P8 (the demo rates) also in a quick run
  bool skip_p8 = false;      ///< `--no-p8`: never run P8
  /// `--p8-processes`: P8 also with `cafmesh-demo --processes` (every silo a cafmesh-node)
  bool p8_processes = false;
  std::string demo_binary;   ///< `--demo PATH`: cafmesh-demo for P8
  std::string only;          ///< `--only P1,P4`: run just these row groups (empty: all)
  size_t threads = 0;        ///< `--threads N`: scheduler.max-threads (0: CAF's default)
  /// `--channel-batch-max N`: `routing.channel_batch_max` of P3's sending silo (0: the
  /// configured default)
  int64_t channel_batch_max = 0;
};

/// One printed row: the headline figure, its goal and whether it is met.
struct row {
  std::string id;        ///< e.g. `P4 K=100`
  std::string what;      ///< what the figure is
  double value = 0;      ///< the headline figure
  std::string unit;      ///< `x`, `ms`, `B`, ...
  std::string goal;      ///< e.g. `>= 0.25`
  bool measured = false; ///< false: the row could not be measured (see `detail`)
  bool met = false;
  std::string detail;    ///< one line: the raw figures behind `value`
  nlohmann::json data;   ///< everything measured, for `--json`
};

using rows = std::vector<row>;

/// Builds a row whose goal is `value >= goal` (`at_least`) or `value <= goal`.
row make_row(std::string id, std::string what, double value, std::string unit, double goal,
             bool at_least);

/// A row that could not be measured, with the reason.
row failed_row(std::string id, std::string what, std::string why);

// -- actor systems ------------------------------------------------------------------------

/// One CAF actor system prepared for cafmesh (`lifecycle::prepare`: types and io
/// middleman), CAF's logger quiet, with `scheduler.max-threads` = `threads` when not 0.
struct system_box {
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  explicit system_box(size_t threads);
  ~system_box();
};

/// The scheduler settings an actor system of `system_box` runs with (policy, max threads,
/// max throughput), as JSON and as one line.
nlohmann::json scheduler_settings(size_t threads);
std::string scheduler_line(const nlohmann::json& s);

/// The malloc this process runs on: "mimalloc" or "jemalloc" when one is linked or
/// preloaded (LD_PRELOAD), else "glibc". P6 reads glibc's heap (`mallinfo2`) only.
std::string allocator_name();

/// Destroys the systems together (system_teardown.hpp) after every actor was told to exit.
void destroy_together(std::vector<std::unique_ptr<system_box>>& boxes);

// -- clocks -------------------------------------------------------------------------------

using clock_type = std::chrono::steady_clock;

/// Seconds since `t0`.
double seconds_since(clock_type::time_point t0);
/// The process's CPU time in seconds (CLOCK_PROCESS_CPUTIME_ID: every thread).
double process_cpu_s();
/// The 1-minute load average (/proc/loadavg).
double load_1min();
/// The whole /proc/loadavg line's first three fields.
std::string loadavg_text();

/// Nearest-rank percentile `p` (0..100) of `xs` (sorted in place); 0 when empty.
double percentile(std::vector<double>& xs, double p);
double median(std::vector<double> xs);

// -- counters -----------------------------------------------------------------------------

/// A counter actors bump and the benchmark thread waits on.
struct progress {
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> target{~uint64_t{0}};
  std::atomic<uint64_t> bad{0}; ///< answers that were not what the case expects, errors
  std::mutex mtx;
  std::condition_variable cv;

  void bump(uint64_t n = 1);
  /// Arms the next target `n` ahead of what was counted so far.
  void arm(uint64_t n) { target.store(count.load() + n); }
  /// Waits until the target is reached; false after `timeout_s` without it.
  bool wait(double timeout_s = 120);
  /// Waits until `count` >= `value`; false after `timeout_s`.
  bool wait_for_count(uint64_t value, double timeout_s = 120);
};

// -- row groups ---------------------------------------------------------------------------

/// P1, P1q, P1b, P7 (co_hosted.cpp): co-hosted router core (one-way posts, requests) and
/// local route vs raw one-way.
rows run_co_hosted(const options& opt, caf::actor_system& sys);
/// P1r (silo_path.cpp): one-way posts through a `silo_builder` silo's router-core path to
/// node hubs of an application hub vs raw one-way, in an actor system of its own.
rows run_silo_path(const options& opt);
/// P5 (channels.cpp): router-core cost per delivery with 10, 1,000, 100,000 open channels.
rows run_channels(const options& opt, caf::actor_system& sys);
/// P6 (memory.cpp): bytes per idle channel, queued delivery, in-flight leg.
rows run_memory(const options& opt, caf::actor_system& sys);

/// `run_memory` in a child process of this bench with glibc's per-thread caches off (whose
/// chunks `mallinfo2` counts as in use); in this process if that is not possible.
rows run_memory_isolated(const options& opt, caf::actor_system& sys);
/// P4 (stop.cpp): how long a graceful stop holds beyond its slowest leg's landing.
rows run_stop(const options& opt, caf::actor_system& sys);
/// P2, P3 (loopback.cpp): pure client -> gateway and cross-silo over loopback TCP vs raw
/// CAF io in the same actor systems; `p2` and `p3` choose the rows.
rows run_loopback(const options& opt, bool p2, bool p3);
/// P8 (demo_rate.cpp): the highest cafmesh-demo rate with p99 <= 50 ms during the roll.
/// P8 for the in-process demo, or with `--processes` when `processes`.
rows run_demo_rates(const options& opt, bool processes = false);

} // namespace cafmesh::bench
