#pragma once

// The inside of a `mesh_process` handle, shared by the three builders (not installed).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/lifecycle/in_process_cluster.hpp"
#include "cafmesh/lifecycle/mesh_process.hpp"
#include "cafmesh/lifecycle/pure_client.hpp"
#include "cafmesh/lifecycle/silo_components.hpp"
#include "cafmesh/routing/application_hub.hpp"
#include "cafmesh/routing/correlating_entry.hpp"
#include "admin_server.hpp"

namespace cafmesh::lifecycle {

struct mesh_process::state {
  caf::actor_system* sys = nullptr;
  std::string role;
  silo_address addr;
  host_actor host;
  caf::actor routing;
  routing::correlating_entry_actor entry;
  routing::hub_table_actor hub_table;
  caf::actor placement;          ///< silo only
  silo_components components;    ///< silo only
  pure_client client_components; ///< pure client only
  net_endpoint endpoint;         ///< over CAF io only
  /// Every actor the process spawned (components, endpoint, helpers): exited when the
  /// process is released (`release_actors`).
  std::vector<caf::actor> owned;
  bool released = false;
  in_process_cluster_ptr cluster; ///< kept alive while the process lives
  std::unique_ptr<signal_stop_guard> signals;
  /// The admin endpoint (null without one); stopped before the actors are released.
  std::unique_ptr<admin_server> admin;
  bool await_gateway = false; ///< pure client: `when_active` waits for a gateway silo
  bool started = false;
  bool torn_down = false;
};

/// Exits every actor in `st.owned` once. With `await` (the blocking calls only) it waits,
/// bounded by 10 s, until each is down, so that the actor system ends with no actor of the
/// process still terminating.
void release_actors(mesh_process::state& st, bool await);

/// Waits, bounded by 2 s, until the io middleman actor of `sys` has handed its BASP broker
/// every connect it was asked for (docs/hosting.md "Stopping and the actor system"). CAF
/// 0.17's middleman stops the broker and its multiplexer before it kills the middleman
/// actor, which runs on a thread of its own: a connect that actor takes in between leaves
/// its request in the stopped broker's mailbox, which is never emptied, and that request
/// keeps the middleman actor from being destroyed: `~actor_system` then waits forever in
/// `await_detached_threads`. The link connects through its own middleman actor, `gate`,
/// which exits after the link: `release_actors` calls this once the link is down, and it
/// waits for the gate first.
void drain_middleman(caf::scoped_actor& self, caf::actor_system& sys, const caf::actor_addr& gate);

} // namespace cafmesh::lifecycle
