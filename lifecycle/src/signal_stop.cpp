#include "cafmesh/lifecycle/host.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include <caf/all.hpp>

#include "cafmesh/actors/log.hpp"

namespace cafmesh::lifecycle {

namespace {

/// The self-pipe: written by the signal handler, read by the helper thread. -1 = none.
std::atomic<int> pipe_write_fd{-1};
std::atomic<bool> guard_installed{false};

constexpr char signal_byte = 'S';
constexpr char quit_byte = 'Q';

extern "C" void on_stop_signal(int) {
  auto saved = errno;
  auto fd = pipe_write_fd.load();
  if (fd >= 0) {
    auto ignored = ::write(fd, &signal_byte, 1);
    (void) ignored;
  }
  errno = saved;
}

} // namespace

struct signal_stop_guard::impl {
  int read_fd = -1;
  int write_fd = -1;
  struct sigaction old_term {};
  struct sigaction old_int {};
  std::thread worker;
  std::atomic<int> forwarded{0};

  ~impl() {
    // Restore the handlers first, so no signal writes into a closing pipe.
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGINT, &old_int, nullptr);
    pipe_write_fd.store(-1);
    if (write_fd >= 0) {
      auto ignored = ::write(write_fd, &quit_byte, 1);
      (void) ignored;
    }
    if (worker.joinable())
      worker.join();
    if (read_fd >= 0)
      ::close(read_fd);
    if (write_fd >= 0)
      ::close(write_fd);
    guard_installed.store(false);
  }
};

signal_stop_guard::signal_stop_guard() = default;
signal_stop_guard::signal_stop_guard(signal_stop_guard&&) noexcept = default;
signal_stop_guard& signal_stop_guard::operator=(signal_stop_guard&&) noexcept = default;
signal_stop_guard::~signal_stop_guard() = default;

bool signal_stop_guard::active() const noexcept {
  return impl_ != nullptr;
}

int signal_stop_guard::signals_forwarded() const noexcept {
  return impl_ ? impl_->forwarded.load() : 0;
}

signal_stop_guard install_signal_stop(caf::actor_system&, host_actor host) {
  auto lg = log::get("host");
  signal_stop_guard guard;
  bool expected = false;
  if (!guard_installed.compare_exchange_strong(expected, true)) {
    lg.error("install_signal_stop: a signal guard is already active; not installing another");
    return guard;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    lg.error("install_signal_stop: cannot create the self-pipe (errno " + std::to_string(errno)
             + ")");
    guard_installed.store(false);
    return guard;
  }
  auto p = std::make_unique<signal_stop_guard::impl>();
  p->read_fd = fds[0];
  p->write_fd = fds[1];
  pipe_write_fd.store(fds[1]);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, &p->old_term);
  sigaction(SIGINT, &sa, &p->old_int);
  auto raw = p.get();
  p->worker = std::thread([raw, host, lg] {
    for (;;) {
      char c = 0;
      auto n = ::read(raw->read_fd, &c, 1);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0 || c == quit_byte)
        return;
      auto k = ++raw->forwarded;
      lg.info(k == 1 ? "stop signal received: stopping the host gracefully"
                     : "stop signal received again: stopping the host NON-gracefully");
      caf::anon_send(host, host_halt_atom::value, k == 1);
    }
  });
  guard.impl_ = std::move(p);
  return guard;
}

} // namespace cafmesh::lifecycle
