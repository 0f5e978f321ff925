#pragma once

/// @file
/// The wall-clock run loop every live mesh shares (cafmesh-demo in-process and
/// `--processes`, net_mesh.hpp; cafmesh-client, client_mesh.hpp): pace the driver, print
/// progress, wait for the mesh's events, end at quiescence or at the drain bound; and the
/// teardown watchdog. No CAF: the caller passes the clock and the event pump in.

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

#include "cafmesh/mainjob/driver.hpp"
#include "cafmesh/mainjob/progress.hpp"

namespace cafmesh::mainjob {

/// How `pace_driver` reports progress and ends.
struct pace_settings {
  progress_mode progress = progress_mode::automatic;
  bool is_tty = false;
  int width_cols = 0;                  ///< terminal width: a redrawn line is cut to fit; 0: not cut
  std::ostream* out = nullptr;         ///< progress lines; null: none
  int64_t progress_interval_ms = 1000; ///< plain progress lines (a terminal: 250 ms)
  int64_t drain_timeout_ms = 60000;    ///< after the traffic: bound of the wait for outcomes
  /// Once quiescent: how long deliveries whose success the mesh cannot observe
  /// (`demo_driver::unobservable_in_flight`) may still get a NACK; then the loop ends
  /// (the caller marks them `unconfirmed`). Irrelevant when the mesh observes everything.
  int64_t unconfirmed_settle_ms = 0;
};

/// Runs `driver` in the clock `now_ms` (ms since the traffic started): `advance` at each
/// wake-up (then `after_advance(now)`, if set), progress lines every interval, and between
/// them `handle_events(wait)`, which must feed the mesh's events to the driver and return
/// after at most `wait` without one. Ends when the driver is quiescent (and the settle time
/// passed or nothing unobservable is open) or at the drain bound after the traffic: then
/// prints `{program}: {n} deliveries still had no terminal outcome ...` on standard error
/// and answers true.
bool pace_driver(demo_driver& driver, const pace_settings& ps, const std::string& program,
                 const std::function<int64_t()>& now_ms,
                 const std::function<void(std::chrono::milliseconds)>& handle_events,
                 const std::function<void(int64_t)>& after_advance = {});

/// Takes a batch of the mesh's events: `receive_one(wait)` once (it must wait up to `wait`
/// for one message and answer whether it got one), then `receive_one(0 ms)` while messages
/// are queued, at most `max_batch` in all: the body of a `pace_driver` event pump.
void receive_batch(std::chrono::milliseconds wait,
                   const std::function<bool(std::chrono::milliseconds)>& receive_one,
                   int max_batch = 4096);

/// Starts a detached thread that, after `bound_ms`, prints `{program}: teardown took longer
/// than {bound_ms} ms; exiting with the report's code {code}`, calls `last` (if set) and
/// ends the process with `code` (`std::_Exit`): a teardown that hangs cannot change the
/// run's result.
void arm_teardown_watchdog(const std::string& program, int code, int64_t bound_ms,
                           std::function<void()> last = {});

} // namespace cafmesh::mainjob
