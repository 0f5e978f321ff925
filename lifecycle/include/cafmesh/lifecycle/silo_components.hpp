#pragma once

/// @file
/// The components of a whole silo (docs/behaviour/lifecycle.md#stages, #the-host,
/// #non-graceful-stops-and-crashes, docs/behaviour/quiescence.md#the-participant-at-stage-active,
/// docs/testing.md#the-simulation-harness): every per-silo actor, assembled and subscribed to the
/// silo's lifecycle subject at the docs/behaviour/lifecycle.md#stages stages, plus the host around
/// it. `spawn_silo` is the one place that knows the standard wiring.
///
/// ## Stage wiring (docs/behaviour/lifecycle.md#stages)
/// | stage | observer (name) | start | stop |
/// |---|---|---|---|
/// | Active 20000 | `gateway` | gateway opens to pure clients | stop-send to every connected pure client (at once if `graceful = false`) |
/// | Active 20000 | `routing-quiescence` | (participant,
/// docs/behaviour/quiescence.md#the-participant-at-stage-active) | hold until the gauge reads 0 |
/// | BecomeActive 19999 | `membership` | publish Active | graceful: ShuttingDown racing `membership.shutdown_grace_ms`, on loss warning + Stopping; else Stopping |
/// | GrainDeactivation 19998 | `catalog` | — | catalog deactivates every activation; then the gateway stops accepting client messages |
/// | ApplicationServices 10000 | `routing` | router core + routing service ready | routing actors deliberately stay up |
/// | RuntimeServices 4000 | `runtime-services` | directory partition registered, catalog registered, membership publishes Joining | message centre blocks application messages; directory partition stops |
/// | 2001 | `placement` | placement subscribed to the membership agent | placement stops (waiting messages fail `silo_unavailable`); Dead published, bounded by `membership.dead_publish_ms` |
/// | RuntimeInitialize 2000 | `message-centre` | message centre starts serving the silo's components | message centre stops; silo status Terminated |
/// | First | `pool-teardown` | captures the routing I/O pool | drain and join the pool
/// (docs/behaviour/quiescence.md#the-routing-io-pool) |
///
/// Every action logs one info line through the logger `silo` with the rendered silo address
/// as context; the texts are listed at `silo_event_text`. Tests read the order from them.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/timespan.hpp>

#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/routing/io_pool_actor.hpp"
#include "cafmesh/actors/mesh_teardown.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/routing/routing_quiescence_actor.hpp"
#include "cafmesh/actors/runtime_registry.hpp"
#include "cafmesh/routing/gateway_atoms.hpp"
#include "cafmesh/routing/hub_grains.hpp"
#include "cafmesh/routing/hub_protocol.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/routing/router_ports.hpp"
#include "cafmesh/routing/stream_transport.hpp"

namespace cafmesh::lifecycle {

/// The info texts of the silo's stage actions (docs/behaviour/lifecycle.md#stages), each logged
/// once by logger
/// `silo` with the silo as context, in the order a graceful stop produces them.
namespace silo_event_text {
inline constexpr const char* gateway_open = "gateway open to pure clients";
inline constexpr const char* stop_send = "gateway stop-send sent to";
inline constexpr const char* active_published = "membership: Active published";
inline constexpr const char* joining_published = "membership: Joining published";
inline constexpr const char* shutting_down_published = "membership: ShuttingDown published";
inline constexpr const char* stopping_published = "membership: Stopping published";
inline constexpr const char* all_deactivated = "catalog: all activations deactivated";
inline constexpr const char* gateway_closed = "gateway stopped accepting client messages";
inline constexpr const char* routing_ready = "router core and routing service ready";
inline constexpr const char* routing_stays_up = "routing actors stay up until First";
inline constexpr const char* runtime_started = "directory partition and catalog started";
inline constexpr const char* messages_blocked = "message centre blocks application messages";
inline constexpr const char* directory_stopped = "directory partition stopped";
inline constexpr const char* placement_started = "placement service started";
inline constexpr const char* placement_stopped = "placement service stopped";
inline constexpr const char* dead_published = "membership: Dead published";
inline constexpr const char* centre_started = "message centre started";
inline constexpr const char* centre_stopped = "message centre stopped; silo status Terminated";
} // namespace silo_event_text

/// The test seams of a silo, defined privately to the library (docs/testing.md#builder-access).
struct silo_seams;

/// What a silo is built from.
struct silo_options {
  /// The whole configuration (examples/config/README.md#keys); every section is read from here.
  config::mesh_config cfg;
  /// This silo (host, port, generation).
  silo_address self;
  /// The link: a `spawn_sim_network` handle (simulation); the silo's message centre is
  /// spawned on it.
  link_actor link;
  /// Network mode: an already published message centre (`spawn_network_message_center`,
  /// which blocks while binding and must therefore be called by the application). When set,
  /// `link` is ignored and this centre is used (and stopped at RuntimeInitialize).
  caf::actor centre;
  /// The membership oracle (the actor itself in simulation).
  membership_oracle_actor oracle;
  /// Passed to the router core (`router_core_options::failure_observer`); may be null.
  caf::actor failure_observer;
  /// The application's hub factory (node hubs) and path resolver (docs/architecture.md#one-silo).
  routing::hub_factory_actor hubs;
  routing::path_resolver_actor resolver;
  /// `hubs` is a hub table (application_hub.hpp): the silo publishes its hub patterns with
  /// its membership row (`ht_patterns_atom`, `hub_pattern_manifest`) and subscribes it to
  /// the membership agent, so that an address no live silo serves is NACKed `not_found`
  /// (docs/behaviour/routing.md#unserved-addresses). False: the row publishes no patterns
  /// and no silo can prove an address unserved.
  bool hubs_is_table = false;
  /// The process's runtime registry (outlives the silo); null: none.
  lifecycle::runtime_registry_actor registry;
  /// The process's hub teardown (host step 4); null: skipped.
  lifecycle::mesh_teardown_actor teardown;
  /// Application grain types, added to the registry after the built-in ones.
  std::function<void(grain_registry&)> grains;
  /// The silo offers itself as gateway to pure clients.
  bool gateway = true;
  /// More receivers of the host's stopping signal (the admin endpoint's readiness probe):
  /// each acknowledges before the silo stop begins.
  std::vector<lifecycle::stopping_recipient_actor> stopping_recipients;
  /// Called with each quiescence hold's duration (the admin endpoint's meters); may be empty.
  std::function<void(caf::timespan hold)> on_quiescence_hold;
  /// The test seams (test proxies, negative controls); null in production: test beds set them
  /// through `cafmesh::testing::builder_access`.
  std::shared_ptr<const silo_seams> seams;
};

/// One assembled silo: the lifecycle subject, the host and every component handle.
struct silo_components {
  silo_address addr;
  std::shared_ptr<grain_registry> registry;
  routing::silo_routing_slots_ptr slots;
  lifecycle::silo_lifecycle_actor subject;
  lifecycle::host_actor host;
  caf::actor centre;
  membership_agent_actor agent;
  directory_partition_actor partition;
  caf::actor placement;
  caf::actor catalog;
  caf::actor routing;                     ///< the silo process's routing service
  routing::pod_hub_claimer_actor claimer; ///< pod-hub claimer
  caf::actor gateway;                     ///< gateway part (component `gateway`)
  /// Stops the silo non-gracefully once its membership view shows this incarnation Dead
  /// while it still runs (docs/behaviour/membership.md#dead-peers): a silo that the cluster
  /// declared Dead must not go on serving.
  caf::actor death_watch;
  routing::grain_port_actor grains;
  routing::router_core_actor core;
  /// The process's stream transport (stream_transport.hpp): the router core's stream port,
  /// peers = the silos of the membership snapshots plus the gateway's pure clients; started
  /// with the routing actors at ApplicationServices.
  routing::stream_transport_actor streams;
  routing::io_pool_actor pool;
  routing::routing_quiescence_actor gauge;
  lifecycle::lifecycle_observer_actor quiescence;
  lifecycle::lifecycle_observer_actor pool_teardown;
  /// Every stage observer, in subscription order (quiescence and pool teardown included).
  std::vector<lifecycle::lifecycle_observer_actor> observers;

  /// Every actor of the silo (runtime services, observers, subject, host).
  std::vector<caf::actor> all() const;

  /// Sends an exit (`user_shutdown`) to every actor of the silo (tests, teardown of a
  /// killed silo). Idempotent.
  void stop_all() const;
};

/// Spawns a whole silo (docs/behaviour/lifecycle.md#stages): message centre on `link`, membership
/// agent, directory partition, placement service, catalog (built-in `routing`, `messagehub`,
/// `podhub` plus
/// `opts.grains`), grain-delivery adapter, routing I/O pool, quiescence gauge, stream
/// transport (started at ApplicationServices with the router core), router core,
/// routing service (`silo_host`), pod-hub claimer, gateway part, the stage observers of the
/// table above, the lifecycle subject with every observer subscribed, and the host (stopping
/// recipients: routing service, router core, pod-hub claimer; teardown `opts.teardown`).
/// Nothing has started: send `host_start_atom` to `host` (or `run_start_atom` to `subject`).
/// Start fails `config_invalid` if the quiescence participant is not subscribed
/// (docs/behaviour/quiescence.md#the-participant-at-stage-active).
silo_components spawn_silo(caf::actor_system& sys, silo_options opts);

} // namespace cafmesh::lifecycle
