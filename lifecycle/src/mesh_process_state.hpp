#pragma once

// The inside of a `mesh_process` handle, shared by the three builders (not installed).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/lifecycle/in_process_cluster.hpp"
#include "cafmesh/lifecycle/mesh_process.hpp"
#include "cafmesh/lifecycle/pure_client.hpp"
#include "cafmesh/lifecycle/silo_components.hpp"
#include "cafmesh/routing/correlating_entry.hpp"

namespace cafmesh::lifecycle {

struct mesh_process::state {
  caf::actor_system* sys = nullptr;
  std::string role;
  silo_address addr;
  host_actor host;
  caf::actor routing;
  routing::correlating_entry_actor entry;
  caf::actor hub_table;
  caf::actor placement;          ///< silo only
  silo_components components;    ///< silo only
  pure_client client_components; ///< pure client only
  net_endpoint endpoint;         ///< over CAF io only
  /// Exits every actor of the process (its components, endpoint, helpers). Idempotent.
  std::function<void()> exit_all;
  in_process_cluster_ptr cluster; ///< kept alive while the process lives
  std::unique_ptr<signal_stop_guard> signals;
  bool await_gateway = false; ///< pure client: `when_active` waits for a gateway silo
  bool started = false;
  bool torn_down = false;
};

} // namespace cafmesh::lifecycle
