#include "cafmesh/mainjob/run_loop.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

namespace cafmesh::mainjob {

bool pace_driver(demo_driver& driver, const pace_settings& ps, const std::string& program,
                 const std::function<int64_t()>& now_ms,
                 const std::function<void(std::chrono::milliseconds)>& handle_events,
                 const std::function<void(int64_t)>& after_advance) {
  progress_printer printer{ps.out, ps.progress, ps.is_tty, ps.width_cols};
  auto interval = ps.is_tty ? std::min<int64_t>(250, ps.progress_interval_ms)
                            : ps.progress_interval_ms;
  int64_t next_progress = interval;
  std::optional<int64_t> drain_deadline;
  std::optional<int64_t> settle_deadline;
  bool drained_out = false;
  for (;;) {
    auto now = now_ms();
    driver.advance(now);
    if (after_advance)
      after_advance(now);
    if (now >= next_progress) {
      if (printer.mode() != progress_mode::off)
        printer.print(driver.progress(now));
      next_progress = now + interval;
    }
    if (driver.traffic_done()) {
      if (!drain_deadline)
        drain_deadline = now + ps.drain_timeout_ms;
      if (driver.quiescent()) {
        if (!settle_deadline)
          settle_deadline = now + ps.unconfirmed_settle_ms;
        if (driver.unobservable_in_flight() == 0 || now >= *settle_deadline)
          break;
      }
      if (now >= *drain_deadline) {
        drained_out = true;
        break;
      }
    }
    int64_t wait = next_progress - now;
    if (auto w = driver.next_wakeup_ms())
      wait = std::min(wait, *w - now);
    wait = std::clamp<int64_t>(wait, 0, 50);
    handle_events(std::chrono::milliseconds(wait));
  }
  printer.finish();
  if (drained_out)
    std::cerr << program << ": "
              << driver.ledger().in_flight() - driver.unobservable_in_flight()
              << " deliveries still had no terminal outcome " << ps.drain_timeout_ms
              << " ms after the traffic ended\n";
  return drained_out;
}

void receive_batch(std::chrono::milliseconds wait,
                   const std::function<bool(std::chrono::milliseconds)>& receive_one,
                   int max_batch) {
  if (max_batch < 1 || !receive_one(wait))
    return;
  for (int n = 1; n < max_batch && receive_one(std::chrono::milliseconds(0)); ++n) {
    // next
  }
}

void arm_teardown_watchdog(const std::string& program, int code, int64_t bound_ms,
                           std::function<void()> last) {
  std::thread([program, code, bound_ms, last] {
    std::this_thread::sleep_for(std::chrono::milliseconds(bound_ms));
    std::cerr << program << ": teardown took longer than " << bound_ms
              << " ms; exiting with the report's code " << code << "\n";
    if (last)
      last();
    std::_Exit(code);
  }).detach();
}

} // namespace cafmesh::mainjob
