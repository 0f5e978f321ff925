// A process whose primary never answers (docs/hosting.md, docs/behaviour/lifecycle.md#the-host):
// a silo retries its join until it is stopped, and a stop (what SIGTERM sends) then ends it at
// once; `when_active()` answers that the start was cancelled. A pure client waiting for its
// first gateway is released the same way. Real sockets on 127.0.0.1, so label `integration`;
// every wait is bounded.

#include <chrono>
#include <future>
#include <string>
#include <utility>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/lifecycle/hosting.hpp"

using namespace cafmesh;
using namespace cafmesh::lifecycle;
using namespace std::chrono_literals;

namespace {

/// A port of 127.0.0.1 nothing listens on: bound, read and closed again.
uint16_t unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  socklen_t len = sizeof(a);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

config::mesh_config joining(config::process_role role, uint16_t primary_port) {
  config::mesh_config cfg;
  cfg.mesh.role = role;
  cfg.network.host = "127.0.0.1";
  cfg.network.port = 0;
  cfg.network.primary_host = "127.0.0.1";
  cfg.network.primary_port = primary_port;
  cfg.network.heartbeat_interval_ms = 100;
  cfg.network.failure_detection_ms = 1500;
  return cfg;
}

/// Starts `process` (a joining silo or client), checks that it is still joining after 1.5 s,
/// stops it as SIGTERM does and answers how long the stop took and what `when_active()`
/// answered.
template <class Process>
std::pair<std::chrono::steady_clock::duration, caf::error> stop_while_joining(Process& process) {
  auto active = std::async(std::launch::async, [&] { return process.when_active(); });
  // Joining: the start waits for the primary, retried every heartbeat.
  REQUIRE(active.wait_for(1500ms) == std::future_status::timeout);
  auto t0 = std::chrono::steady_clock::now();
  auto stopped = std::async(std::launch::async, [&] { return process.stop(); });
  REQUIRE(stopped.wait_for(20s) == std::future_status::ready);
  CHECK_FALSE(stopped.get());
  auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(active.wait_for(5s) == std::future_status::ready);
  return {took, active.get()};
}

} // namespace

TEST_CASE("join: a silo whose primary never answers stops when asked, and when_active answers that its start was cancelled") {
  caf::actor_system_config cfg;
  prepare(cfg);
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  auto silo = silo_builder{sys}
                .config(joining(config::process_role::silo_host, unused_port()))
                .network()
                .build();
  REQUIRE(silo);
  auto [took, err] = stop_while_joining(*silo);
  CHECK(took < 10s);
  REQUIRE(err);
  auto text = sys.render(err);
  INFO(text);
  CHECK(text.find("lifecycle_cancelled") != std::string::npos);
  CHECK(text.find("stopped before it joined the cluster") != std::string::npos);
}

TEST_CASE("join: a pure client whose primary never answers is released from when_active by its stop") {
  caf::actor_system_config cfg;
  prepare(cfg);
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  auto client = client_builder{sys}
                  .config(joining(config::process_role::pure_client, unused_port()))
                  .network()
                  .build();
  REQUIRE(client);
  auto [took, err] = stop_while_joining(*client);
  CHECK(took < 10s);
  REQUIRE(err);
  auto text = sys.render(err);
  INFO(text);
  CHECK(text.find("lifecycle_cancelled") != std::string::npos);
}
