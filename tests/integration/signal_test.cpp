// SIGTERM wiring of the host (docs/behaviour/lifecycle.md#the-host): a real signal on a real
// scheduler, so it lives in the integration suite (wall-clock polling allowed here, bounded).

#include <chrono>
#include <csignal>
#include <thread>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/lifecycle/host.hpp"

using namespace cafmesh;
using namespace cafmesh::lifecycle;

// -- SIGTERM wiring (real scheduler, real signal) ----------------------------------

TEST_CASE("host: install_signal_stop turns SIGTERM into a graceful host stop") {
  log::set_stderr_enabled(false);
  log::capture lines{[] { return int64_t{0}; }};
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", size_t{1});
  caf::actor_system sys{cfg};
  auto registry = spawn_runtime_registry(sys);
  host_options opts;
  opts.silo_name = "signal-test";
  opts.registry = registry;
  auto h = spawn_host(sys, opts);
  caf::scoped_actor self{sys};
  {
    auto guard = install_signal_stop(sys, h);
    REQUIRE(guard.active());
    CHECK_FALSE(install_signal_stop(sys, h).active()); // one guard at a time
    std::raise(SIGTERM);
    host_phase phase = host_phase::running;
    for (int i = 0; i < 200 && phase != host_phase::torn_down; ++i) {
      self->request(h, std::chrono::seconds(5), host_state_atom::value)
        .receive([&](host_phase p) { phase = p; }, [&](caf::error&) {});
      if (phase != host_phase::torn_down)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(phase == host_phase::torn_down);
    CHECK(guard.signals_forwarded() == 1);
  }
  CHECK(lines.count("stop signal received: stopping the host gracefully") == 1);
  CHECK(lines.count("a signal guard is already active", log::level::error) == 1);
  probe_answer a = probe_answer::no_answer;
  self->request(registry, std::chrono::seconds(5), probe_runtime_atom::value,
                std::string{"signal-test"})
    .receive([&](probe_answer x) { a = x; }, [&](caf::error&) {});
  CHECK(a == probe_answer::torn_down);
  self->send_exit(h, caf::exit_reason::user_shutdown);
  self->send_exit(registry, caf::exit_reason::user_shutdown);
}
