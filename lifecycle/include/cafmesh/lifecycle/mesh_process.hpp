#pragma once

/// @file
/// What an application holds of the cafmesh process it embeds (docs/hosting.md): a silo, a
/// pure client or a monolith, built by `silo_builder`, `client_builder` or
/// `monolith_builder`. One surface for all three:
///
/// | call | what it does |
/// |---|---|
/// | `start()` | begins the start (host start, docs/behaviour/lifecycle.md#the-host); returns
/// at once |
/// | `when_active()` | blocks until the start completed: none when the silo reached Active (a pure client: once its table answered and its membership shows a gateway silo), the start's error otherwise (a join that did not reach its table within `membership.max_join_time_ms`: `departed_silo` naming the address tried) |
/// | `stop(graceful)` | the host's stop sequence (docs/behaviour/lifecycle.md#the-host,
/// #non-graceful-stops-and-crashes); blocks until the runtime is torn down |
/// | `wait()` | blocks until the runtime is torn down (after a signal or a `stop` elsewhere) |
/// | `stop_on_signals()` | SIGTERM/SIGINT stop the process gracefully (`install_signal_stop`) |
/// | `register_hub(pattern, handler)` | an application hub (application_hub.hpp); does not block |
/// | `entry()` | the correlating entry: `send` and `request` (correlating_entry.hpp) |
/// | `admin()` | where the admin endpoint listens (admin_endpoint.hpp); port 0 without one |
///
/// The blocking calls are setup code for a process's main thread (or a test's), never for
/// an actor handler; an actor asks `host()` instead (`host_active_atom`, `host_halt_atom`,
/// `host_await_atom`, host.hpp). Destroying the handle exits every actor the process
/// spawned, so the `caf::actor_system` can end (declare the handle after the system); it
/// never blocks, so a process destroyed without `stop()` ends like a killed one.

#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/lifecycle/admin_endpoint.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/routing/application_hub.hpp"
#include "cafmesh/routing/correlating_entry.hpp"

namespace cafmesh::lifecycle {

/// A cafmesh process embedded in an application (see the file comment).
class mesh_process {
public:
  mesh_process(mesh_process&&) noexcept;
  mesh_process& operator=(mesh_process&&) noexcept;
  ~mesh_process();

  /// Begins the start; returns at once. A second call does nothing.
  void start();
  /// Blocks until the start completed (starting it first if `start` was not called): a silo
  /// reached Active; a pure client's membership shows a gateway silo (it waits for one).
  caf::error when_active();
  /// Stops the process and blocks until its runtime is torn down. Later calls answer at once.
  caf::error stop(bool graceful = true);
  /// Blocks until the runtime is torn down, without stopping it.
  void wait();
  /// SIGTERM/SIGINT stop this process gracefully (one process-wide guard).
  void stop_on_signals();
  /// Adds an application hub: `pattern` is an address path (`node/hello`, `portal/alice`) or
  /// a prefix ending in `/*` (`node/counter/*`). See `spawn_hub_table`. Does not block; the
  /// error is an invalid pattern (no address path, or one that can match nothing such as
  /// `node/inv*`), or, in a silo, a `node/...` pattern after `start()`: the silo publishes
  /// its node hub patterns with its membership row (docs/behaviour/routing.md#unserved-addresses).
  /// Register before `start()` so that no delivery finds the hub missing.
  caf::error register_hub(const std::string& pattern, routing::hub_handler handler);
  /// The same with an asynchronous handler.
  caf::error register_hub(const std::string& pattern, routing::async_hub_handler handler);

  /// The correlating entry of this process (`send`, `request`).
  const routing::correlating_entry_actor& entry() const;
  /// The host (actor-side start, stop and waits).
  const host_actor& host() const;
  /// This process's address (host, port, generation).
  const silo_address& address() const;
  /// The routing service (docs/behaviour/routing.md#the-entry) of this process.
  const caf::actor& routing_service() const;
  /// The process role's name: `silo_host`, `pure_client` or `monolith`.
  const std::string& role() const;
  /// Where the admin endpoint listens (`/metrics`, `/healthz/live`, `/healthz/ready`,
  /// `/cluster/members`; admin_endpoint.hpp); port 0 when the process serves none.
  admin_address admin() const;

  struct state;

protected:
  explicit mesh_process(std::unique_ptr<state> st);
  std::unique_ptr<state> st_;
};

} // namespace cafmesh::lifecycle
