#pragma once

// The admin endpoint's server (not installed): what the builders start when
// `admin.enabled` is set (admin_endpoint.hpp, docs/operations.md).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/net_link.hpp"
#include "cafmesh/actors/stopping_recipient.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/lifecycle/admin_endpoint.hpp"
#include "cafmesh/lifecycle/host.hpp"

namespace cafmesh::lifecycle {

/// The process-level meters the components push into (each event is rare: a start, a
/// stop, a hold); everything per delivery is read from the components when scraped.
struct admin_meters {
  std::atomic<uint8_t> phase{static_cast<uint8_t>(admin_phase::starting)};
  std::atomic<int64_t> stopping_since_ms{-1}; ///< steady-clock ms of the stopping signal
  std::atomic<uint64_t> holds{0};             ///< quiescence holds ended
  std::atomic<int64_t> hold_ms_total{0};      ///< their durations, summed
  std::atomic<uint64_t> stops{0};             ///< stops completed (stopping signal to torn down)
  std::atomic<int64_t> stop_ms_total{0};      ///< their durations, summed

  /// Records one quiescence hold of `hold_ms`.
  void on_hold(int64_t hold_ms);
};

using admin_meters_ptr = std::shared_ptr<admin_meters>;

/// What the endpoint reads; a null handle is a component the process does not have.
struct admin_sources {
  std::string role;  ///< `silo_host`, `pure_client` or `monolith`
  silo_address addr; ///< this process
  host_actor host;
  caf::actor core;              ///< router core (silo)
  caf::actor routing;           ///< routing service
  caf::actor catalog;           ///< silo
  caf::actor placement;         ///< silo
  membership_agent_actor agent; ///< membership agent (silo, pure client)
  caf::actor gateway;           ///< gateway part (silo)
  net_link_actor link;          ///< network link (over CAF io)
};

/// The readiness probe: a receiver of the host's stopping signal that marks the phase
/// `stopping`, and, once given the host (`watch`), marks it `active` when the start
/// completed and `stopped` when the runtime is torn down.
stopping_recipient_actor spawn_admin_probe(caf::actor_system& sys, admin_meters_ptr meters);

/// Tells `probe` to watch `host` (after the host was spawned).
void watch_host(const stopping_recipient_actor& probe, const host_actor& host);

/// An HTTP admin server: bound by `bind_admin_server` (before the process is spawned, so a
/// port in use fails the build early), serving once `serve` is called; stops and joins its
/// threads when destroyed.
class admin_server {
public:
  ~admin_server();

  /// The bound address.
  const admin_address& address() const;

  /// Serves the paths of admin_endpoint.hpp on threads of its own. `probe` answers the
  /// liveness check. Call once.
  void serve(caf::actor_system& sys, admin_sources sources, admin_meters_ptr meters,
             caf::actor probe);

  struct impl;

private:
  friend caf::expected<std::unique_ptr<admin_server>>
  bind_admin_server(const config::admin_section&);
  explicit admin_server(std::unique_ptr<impl> x);
  std::unique_ptr<impl> impl_;
};

/// Binds `cfg.host:cfg.port`; fails `config_invalid` naming the address when it cannot.
caf::expected<std::unique_ptr<admin_server>> bind_admin_server(const config::admin_section& cfg);

/// What a builder keeps of an admin endpoint between binding it and serving it.
struct admin_setup {
  std::unique_ptr<admin_server> server;
  admin_meters_ptr meters;
  stopping_recipient_actor probe;

  /// With a server: the probe watches `src.host`, the server serves `src` and moves into
  /// `slot` (the process state's). Without one: nothing.
  void serve_into(caf::actor_system& sys, admin_sources src, std::unique_ptr<admin_server>& slot);
};

/// Applies a builder's `admin()` (`override`, when given) to `cfg.admin`, then binds the
/// endpoint it asks for and spawns its probe; an empty setup when `cfg.admin.enabled` is
/// false.
caf::expected<admin_setup> prepare_admin(caf::actor_system& sys, config::mesh_config& cfg,
                                         const std::optional<config::admin_section>& override);

} // namespace cafmesh::lifecycle
