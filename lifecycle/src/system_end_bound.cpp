#include "cafmesh/lifecycle/host.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/whole_ms.hpp"

namespace cafmesh::lifecycle {

struct system_end_bound::impl {
  std::mutex mtx;
  std::condition_variable cv;
  bool ended = false;
  std::thread watcher;
};

system_end_bound::system_end_bound() : impl_(std::make_unique<impl>()) {
  // nop
}

system_end_bound::~system_end_bound() {
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    impl_->ended = true;
  }
  impl_->cv.notify_all();
  if (impl_->watcher.joinable())
    impl_->watcher.join();
}

void system_end_bound::arm(caf::timespan bound, int exit_code) {
  if (impl_->watcher.joinable())
    return;
  auto* p = impl_.get();
  auto bound_ms = whole_ms(bound);
  p->watcher = std::thread{[p, bound_ms, exit_code] {
    std::unique_lock<std::mutex> guard{p->mtx};
    if (p->cv.wait_for(guard, std::chrono::milliseconds(bound_ms), [p] { return p->ended; }))
      return;
    log::get("host").warning(
      "the actor system did not end within " + std::to_string(bound_ms)
      + " ms of the stop (CAF waits for an actor, or for the thread of a detached actor that"
        " something still references: docs/caf-notes.md \"Shutdown\"); exiting with code "
      + std::to_string(exit_code) + " without waiting for it");
    std::fflush(nullptr);
    std::_Exit(exit_code);
  }};
}

} // namespace cafmesh::lifecycle
