#pragma once

/// @file
/// Building a monolith (docs/architecture.md#process-roles role `monolith`,
/// docs/behaviour/routing.md#monolith, docs/hosting.md): the whole mesh in one process, no network,
/// no silos, no grains: a delivery to a hub address is handed to the hub registered for it (built
/// on the first delivery), so a small service or a test runs its hubs with the same `send` /
/// `request` calls it uses on a cluster. While it stops it builds no hub and NACKs `shutting_down`.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/lifecycle/mesh_process.hpp"

namespace cafmesh::lifecycle {

/// A monolith an application embeds.
class monolith : public mesh_process {
private:
  friend class monolith_builder;
  explicit monolith(std::unique_ptr<state> st);
};

/// Builds a `monolith` (see the file comment).
class monolith_builder {
public:
  explicit monolith_builder(caf::actor_system& sys);

  /// The whole configuration; `mesh.process_role` is set to `monolith` when it is the
  /// default `silo_host`.
  monolith_builder& config(config::mesh_config cfg);
  monolith_builder& config_file(std::string path);
  /// An application hub (application_hub.hpp): a handler answering at once, or an
  /// asynchronous one ending each delivery through its responder.
  monolith_builder& hub(std::string pattern, routing::hub_handler handler);
  monolith_builder& hub(std::string pattern, routing::async_hub_handler handler);
  monolith_builder& log_level(log::level lvl);
  /// Serves the admin endpoint (admin_endpoint.hpp) on `host:port` (0: the OS chooses; read
  /// it from `admin()`), whatever the configuration's `admin` section says.
  monolith_builder& admin(std::string host = "127.0.0.1", uint16_t port = 0);

  /// Validates, spawns and wires the monolith; `start()` it.
  caf::expected<monolith> build();

private:
  caf::actor_system& sys_;
  config::mesh_config cfg_;
  std::string config_path_;
  std::vector<std::pair<std::string, routing::async_hub_handler>> hubs_;
  std::optional<log::level> log_level_;
  std::optional<config::admin_section> admin_;
  bool config_given_ = false;
};

} // namespace cafmesh::lifecycle
