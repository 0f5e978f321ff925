#pragma once

/// @file
/// Building a pure client (docs/architecture.md#process-roles role `pure_client`, docs/hosting.md):
/// a process that hosts no grains and sends into the cluster through a gateway silo.
/// `client_builder{sys}` with the configuration and the client's hubs, then `build()`; the
/// `client` is a
/// `mesh_process`. Its hubs of a stream-routed address type (`portal`, `client`, ...) are
/// attached at its gateway, so answers from every silo reach them, and so do the answers to
/// its correlating entry.
///
/// Transport: an `in_process_cluster` given with `cluster(c)` (the silos of the same
/// system), or `network()`: CAF io, joining the primary at `network.primary_port`.

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/lifecycle/in_process_cluster.hpp"
#include "cafmesh/lifecycle/mesh_process.hpp"
#include "cafmesh/lifecycle/pure_client.hpp"

namespace cafmesh::testing {
struct builder_access;
} // namespace cafmesh::testing

namespace cafmesh::lifecycle {

/// A pure client an application embeds.
class client : public mesh_process {
public:
  /// Every component of the client (tests and diagnostics).
  const pure_client& components() const;
  /// Over CAF io: the network endpoint (link, oracle or its relay); in process: empty.
  const net_endpoint& endpoint() const;

private:
  friend class client_builder;
  explicit client(std::unique_ptr<state> st);
};

/// Builds a `client` (see the file comment).
class client_builder {
public:
  explicit client_builder(caf::actor_system& sys);

  /// The whole configuration; `mesh.process_role` must be `pure_client` (set it, the
  /// default is `silo_host`).
  client_builder& config(config::mesh_config cfg);
  client_builder& config_file(std::string path);
  /// An application hub (application_hub.hpp): a handler answering at once, or an
  /// asynchronous one ending each delivery through its responder.
  client_builder& hub(std::string pattern, routing::hub_handler handler);
  client_builder& hub(std::string pattern, routing::async_hub_handler handler);
  client_builder& cluster(in_process_cluster_ptr cluster);
  client_builder& network();
  client_builder& generation(uint64_t g);
  client_builder& log_level(log::level lvl);
  /// Serves the admin endpoint (admin_endpoint.hpp) on `host:port` (0: the OS chooses; read
  /// it from `admin()`), whatever the configuration's `admin` section says.
  client_builder& admin(std::string host = "127.0.0.1", uint16_t port = 0);
  /// Whether `when_active()` waits until the client's membership shows a gateway silo
  /// (default: true). A process that may start before any silo (a dedicated oracle
  /// process) turns it off.
  client_builder& wait_for_gateway(bool on);
  /// Tells `observer` the final failure of every answer-suppressed dispatch of this client,
  /// which no NACK may carry (docs/behaviour/routing.md#nacks):
  /// `(ep_event_atom, "suppressed", delivery id, uint8_t verdict, text)` one-way
  /// (`routing_service_options::failure_observer`), e.g. to a traffic driver keeping an
  /// outcome ledger. Default: none.
  client_builder& failure_observer(caf::actor observer);

  /// Validates, spawns and wires the client; `start()` it.
  caf::expected<client> build();

private:
  /// Test beds change the assembled options
  /// (tests/support/include/cafmesh/testing/builder_access.hpp).
  friend struct cafmesh::testing::builder_access;

  /// Changes the assembled options right before the client is spawned.
  client_builder& override_options(std::function<void(pure_client_options&)> f);

  caf::actor_system& sys_;
  config::mesh_config cfg_;
  std::string config_path_;
  std::vector<std::pair<std::string, routing::async_hub_handler>> hubs_;
  in_process_cluster_ptr cluster_;
  bool network_ = false;
  std::optional<uint64_t> generation_;
  std::optional<log::level> log_level_;
  std::optional<config::admin_section> admin_;
  bool config_given_ = false;
  bool wait_for_gateway_ = true;
  caf::actor failure_observer_;
  std::vector<std::function<void(pure_client_options&)>> overrides_;
};

} // namespace cafmesh::lifecycle
