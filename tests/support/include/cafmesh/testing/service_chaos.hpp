#pragma once

/// @file
/// Seeded chaos for a service's own grains and hubs (docs/hosting.md#chaos-for-your-own-grains):
/// a seed draws a schedule of faults — graceful stop and restart, kill and restart, stall,
/// partition and heal — that runs, one fault after the other, on a `test_cluster` of the
/// service's silos (built by its own `configure` function) while pure clients send it
/// seeded requests, in virtual time. After the run the invariants are checked on the
/// requests' outcomes. The same seed and options replay the same run (same schedule, same
/// digest); `CAFMESH_CHAOS_SEED` narrows `service_chaos_seeds` to one seed. Part of
/// cafmesh::testing (installed).

#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cafmesh/lifecycle/hosting.hpp"

namespace cafmesh::testing {

/// The fault kinds a schedule draws from.
enum class service_fault_kind : uint8_t {
  stop,      ///< a silo's graceful stop; it starts again `for_ms` after the stop completed
  kill,      ///< a silo ends without a stop (a crash); it starts again `for_ms` later
  stall,     ///< every frame to and from a silo held `for_ms`, unseen by membership
  partition, ///< every frame between two processes held `for_ms`, then delivered in order
};

/// `stop`, `kill`, `stall`, `partition`.
std::string to_string(service_fault_kind x);

/// One fault of a schedule.
struct service_fault {
  service_fault_kind kind = service_fault_kind::stop;
  int64_t after_ms = 0; ///< since the previous fault ended (the first: since traffic began)
  std::string a;        ///< the silo (stop, kill, stall) or one end of the partition
  std::string b;        ///< the partition's other end (a silo or a client)
  int64_t for_ms = 0;   ///< restart delay, stall or partition length

  /// `+{after_ms}ms {kind} {a}[ {b}] for {for_ms}ms`.
  std::string to_string() const;
};

/// The faults a seed draws, in the order they run.
struct service_chaos_schedule {
  uint64_t seed = 0;
  std::vector<service_fault> faults;

  /// One line per fault, numbered from 0.
  std::string render() const;
};

/// One request of the traffic: the address it goes to (an address path, e.g.
/// `node/orders/o1`) and its JSON payload.
struct service_request {
  std::string target;
  std::string payload_json;
};

/// What the runner runs.
struct service_chaos_options {
  /// The silos, built and started in this order; at least two (one fault at a time, so
  /// one silo is always up).
  std::vector<std::string> silos = {"a", "b", "c"};
  /// The pure clients `client1` ... `client{clients}`; requests go from each in turn.
  int64_t clients = 1;
  /// The service's own function adding its grains and hubs to each silo (and to each
  /// restarted one).
  std::function<void(lifecycle::silo_builder&)> configure;
  /// The latency of every link is drawn in [`link_min_ms`, `link_max_ms`] from the seed.
  int64_t link_min_ms = 5;
  int64_t link_max_ms = 20;
  /// Membership declares a silent (killed) silo Dead after this long.
  std::chrono::milliseconds failure_detection = std::chrono::seconds(10);
  /// The request `i` (0, 1, ...): draw it from `rng`, seeded by the chaos seed.
  std::function<service_request(uint64_t i, std::mt19937_64& rng)> next_request;
  /// One request every `interval_ms`, from before the first fault until `tail_ms` after
  /// the last one ended.
  int64_t interval_ms = 10;
  int64_t tail_ms = 500;
  /// Each request's deadline (`test_cluster::request`), resent while resendable.
  std::chrono::milliseconds request_timeout = std::chrono::seconds(30);
  /// The kinds drawn (each fault draws one uniformly) and how many faults, both bounds
  /// included.
  std::vector<service_fault_kind> kinds = {service_fault_kind::stop, service_fault_kind::kill,
                                           service_fault_kind::stall,
                                           service_fault_kind::partition};
  int64_t min_faults = 2;
  int64_t max_faults = 4;
  /// Optional: what is wrong with `answer` (a response's payload) to `request`, or empty
  /// when it is right.
  std::function<std::string(const service_request& request, const std::string& answer)> check;
};

/// The schedule of `seed` (`std::mt19937_64` seeded `seed ^ fnv1a64("service_chaos")`):
/// `min_faults` to `max_faults` faults, each `after_ms` 200 to 800 ms, of a kind drawn from
/// `kinds`, on a silo drawn from `silos` (a partition: two processes, silos or clients,
/// not two clients); `for_ms` 200 to 1,000 (stop), 200 to 2,000 (kill), 100 to 2,000
/// (stall, partition). Throws `std::invalid_argument` for options it cannot run (fewer
/// than two silos, no client, no kind, no `configure` or `next_request`, bad bounds).
service_chaos_schedule make_service_chaos_schedule(uint64_t seed,
                                                   const service_chaos_options& o);

/// How the requests of a run ended.
struct service_chaos_counts {
  uint64_t sent = 0;
  uint64_t answered = 0;
  uint64_t failed = 0;     ///< a classified delivery error other than a deadline
  uint64_t resendable = 0; ///< of `failed`: resendable (the re-sends ran out)
  uint64_t deadline = 0;   ///< ended by their deadline
  uint64_t excused = 0;    ///< of `failed` and `deadline`: explained by a kill
  uint64_t unclassified = 0; ///< an error that is no delivery error
  uint64_t pending = 0;    ///< no outcome when the run ended
};

/// One broken invariant.
struct service_chaos_violation {
  std::string invariant; ///< its name, as docs/hosting.md#chaos-for-your-own-grains lists it
  std::string detail;    ///< the first request or fault concerned, and how many
};

/// The outcome of one run.
struct service_chaos_result {
  service_chaos_schedule schedule;
  /// What happened when, one line each: `{t_ms} {event}` for every fault applied and
  /// undone, then `{i} {client} {target} {t_sent}ms -> {t_end}ms {outcome}` per request.
  std::vector<std::string> trace;
  /// FNV-1a 64 over the trace lines and the simulated network's trace digest: the same
  /// seed and options give the same digest.
  uint64_t digest = 0;
  service_chaos_counts counts;
  std::vector<service_chaos_violation> violations; ///< empty: every invariant held

  bool ok() const { return violations.empty(); }

  /// The seed, the schedule, the faults as applied, the counts, the digest, each broken
  /// invariant and how to replay the seed.
  std::string render() const;
};

/// Runs the schedule of `seed` with live traffic and checks every invariant
/// (docs/hosting.md#chaos-for-your-own-grains). Throws `std::invalid_argument` as
/// `make_service_chaos_schedule` does, and `std::logic_error` when the silos or clients do
/// not start before the traffic (a restart that fails is a broken invariant instead).
service_chaos_result run_service_chaos(uint64_t seed, const service_chaos_options& o);

/// The seeds a test runs: `first` to `first + count - 1`, or only the seed in the
/// environment variable `CAFMESH_CHAOS_SEED` when it is set (replaying a failing seed).
/// Throws `std::invalid_argument` when that variable is no number.
std::vector<uint64_t> service_chaos_seeds(uint64_t first, uint64_t count);

} // namespace cafmesh::testing
