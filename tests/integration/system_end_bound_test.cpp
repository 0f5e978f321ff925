// The bound on an executable's actor-system end (host.hpp, `system_end_bound`;
// docs/hosting.md#stopping-and-the-actor-system): each case runs an actor system in a child
// process, since the bound ends the process, and waits for it at most 10 s.

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/lifecycle/host.hpp"

namespace {

struct child_result {
  bool ended = false; ///< within 10 s
  int exit_code = -1;
  std::string err;    ///< what the child wrote to stderr
};

/// Runs `body` in a child process whose stderr is captured; `body` returns its exit code.
template <class Body>
child_result run_child(Body body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  auto pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], 2);
    cafmesh::log::set_stderr_enabled(true);
    cafmesh::log::set_stderr_level(cafmesh::log::level::warning);
    std::_Exit(body());
  }
  ::close(fds[1]);
  child_result out;
  int status = 0;
  for (int i = 0; i < 1000; ++i) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      out.ended = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!out.ended) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  } else if (WIFEXITED(status)) {
    out.exit_code = WEXITSTATUS(status);
  }
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0)
    out.err.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  return out;
}

caf::behavior idle(caf::event_based_actor*) {
  return {[](int) {}};
}

} // namespace

TEST_CASE("system end bound: an actor system whose end waits for a detached actor that something still references ends the process after the bound, with the run's exit code and a warning") {
  auto res = run_child([] {
    cafmesh::lifecycle::system_end_bound bound;
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    // Exited but referenced for good: ~actor_system waits for its thread forever.
    auto* kept = new caf::actor(sys.spawn<caf::detached>(idle));
    caf::anon_send_exit(*kept, caf::exit_reason::user_shutdown);
    bound.arm(std::chrono::milliseconds(200), 7);
    return 0; // ~actor_system: the bound ends the process first
  });
  CHECK(res.ended);
  CHECK(res.exit_code == 7);
  CHECK(res.err.find("the actor system did not end within 200 ms of the stop (CAF waits for an"
                     " actor, or for the thread of a detached actor that something still"
                     " references: docs/caf-notes.md \"Shutdown\"); exiting with code 7"
                     " without waiting for it")
        != std::string::npos);
}

TEST_CASE("system end bound: an actor system that ends within the bound ends the process as usual") {
  auto res = run_child([] {
    {
      cafmesh::lifecycle::system_end_bound bound;
      caf::actor_system_config cfg;
      caf::actor_system sys{cfg};
      caf::anon_send_exit(sys.spawn<caf::detached>(idle), caf::exit_reason::user_shutdown);
      bound.arm(std::chrono::seconds(10), 7);
    }
    return 3;
  });
  CHECK(res.ended);
  CHECK(res.exit_code == 3);
  CHECK(res.err.find("did not end") == std::string::npos);
}
