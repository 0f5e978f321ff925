#pragma once

/// @file
/// What the two live meshes of cafmesh-demo share (net_mesh.hpp describes both): the actor
/// system of one process, the demo's pure client, a silo's incarnations, the sending hubs,
/// `live_mesh` (the driver's port plus the events and the teardown the run loop needs) and
/// the run loop itself. `in_process_mesh.cpp` and `process_mesh.cpp` build on it; it is
/// internal to the main job.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/net_link.hpp"
#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/actors/system_teardown.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/lifecycle/client_builder.hpp"
#include "cafmesh/lifecycle/silo_builder.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/lifecycle/hub_homing.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/mainjob/demo_process.hpp"
#include "cafmesh/mainjob/driver.hpp"
#include "cafmesh/mainjob/mesh_parts.hpp"
#include "cafmesh/mainjob/run_loop.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/routing/hub_grains.hpp"
#include "cafmesh/lifecycle/net_silo.hpp"
#include "cafmesh/routing/node_path_resolver.hpp"
#include "cafmesh/lifecycle/pure_client.hpp"
#include "cafmesh/routing/register_types.hpp"
#include "cafmesh/routing/router_ports.hpp"
#include "cafmesh/routing/routing_service.hpp"

#include "cafmesh/mainjob/net_mesh.hpp"

namespace cafmesh::mainjob::net_mesh_detail {

/// `(dm_down_atom, std::string silo, uint64_t generation)`: host stop answered.
using dm_down_atom = caf::atom_constant<caf::atom("dmdown")>;
/// `(dm_target_atom, caf::actor)`: an owner-hub proxy forwards to this hub from now on.
using dm_target_atom = caf::atom_constant<caf::atom("dmtarget")>;

using clock_type = std::chrono::steady_clock;

/// Asks `host` one thing and tells `main` the answer; then quits.
template <class Atom, class... Ts>
void ask_host(caf::actor_system& sys, lifecycle::host_actor host, caf::actor main,
              std::function<caf::message(bool)> report, Atom a, Ts... xs) {
  sys.spawn([=](caf::event_based_actor* self) {
    self->request(host, caf::infinite, a, xs...)
      .then(
        [=](caf::ok_atom) {
          self->send(main, report(true));
          self->quit();
        },
        [=](caf::error&) {
          self->send(main, report(false));
          self->quit();
        });
  });
}

/// One actor system with the configuration it was built from.
struct process {
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;

  process() : cfg(std::make_unique<caf::actor_system_config>()) {
    register_demo_types(*cfg);
    cfg->load<caf::io::middleman>();
    cfg->set("scheduler.max-threads", size_t{2});
    // Several actor systems share this process's cores: CAF's work-stealing workers poll
    // (100 spins, then 500 sleeps of 50 us) after every burst; eight of them on two cores
    // spent 11 % of the samples in those sleeps. The sharing policy's workers block until
    // work arrives (docs/building.md#the-scheduler).
    cfg->set("scheduler.policy", caf::atom("sharing"));
    cfg->set("logger.verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(*cfg);
  }

  ~process() {
    sys.reset(); // before its configuration
  }
};

/// Destroys the actor systems of `procs` together (system_teardown.hpp: one after another,
/// a system waits for a thread of another system that still refers to its logger), then
/// their configurations.
inline void destroy_together(std::vector<std::unique_ptr<process>>& procs) {
  std::vector<std::unique_ptr<caf::actor_system>> systems;
  for (auto& p : procs)
    if (p)
      systems.push_back(std::move(p->sys));
  destroy_systems_together(systems);
  procs.clear();
}

/// The demo's pure client (client_builder over CAF io, hosting the oracle), as both mesh
/// kinds hold it: its final failures of answer-suppressed deliveries go to the run loop.
struct demo_client {
  std::unique_ptr<lifecycle::client> handle; ///< owns the client's actors
  lifecycle::pure_client parts;
  net_endpoint ep;
  caf::actor routing;
  uint16_t primary_port = 0; ///< the client's own port: it hosts the oracle

  /// Builds it with `cfg` and `generation`; false, after an error line, when its endpoint
  /// could not be opened.
  bool build(caf::actor_system& app, const config::mesh_config& cfg, uint64_t generation,
             caf::actor main) {
    auto built = lifecycle::client_builder{app}
                   .config(cfg)
                   .network()
                   .generation(generation)
                   .wait_for_gateway(false)
                   .failure_observer(main)
                   .build();
    if (!built) {
      std::cerr << "cafmesh-demo: client network endpoint: " << app.render(built.error())
                << "\n";
      return false;
    }
    handle = std::make_unique<lifecycle::client>(std::move(*built));
    parts = handle->components();
    ep = handle->endpoint();
    routing = parts.routing;
    primary_port = ep.addr.port;
    return true;
  }
};

/// One incarnation of a scenario silo.
struct silo_run {
  std::unique_ptr<process> proc;
  lifecycle::net_silo ns;                  ///< the components of `handle`
  std::unique_ptr<lifecycle::silo> handle; ///< the builder's silo (exits its actors at the end)
  std::vector<caf::actor> extras; ///< factory, probes
  caf::actor app;                 ///< the application (hub factory; its hubs are linked to it)
  uint64_t generation = 0;

  void stop_all() {
    ns.stop_all();
    for (auto& a : extras)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
};

/// A scenario silo across its incarnations.
struct silo_slot {
  std::string name;
  std::unique_ptr<silo_run> current;
  std::vector<std::unique_ptr<silo_run>> past;
  bool available = false; ///< Active and not being stopped
  bool stalled = false;
};

/// An application hub that sends.
struct sender_hub {
  caf::actor ep;          ///< current endpoint (null: its process is not there yet)
  routing::address addr;
  std::string origin;     ///< ledger origin (`--processes`: "grain", "silo:X", "client:N")
  caf::actor proxy;       ///< `--processes` owners: their entry in the hub map
  bool owner = false;
  std::string home;       ///< silo whose routing service it sends through ("" = client)
  bool moving = false;    ///< owner: frames held until the old home's Active stop ended
  std::deque<std::pair<routing::envelope, int64_t>> held; ///< (envelope, deadline ms or -1)
};

/// A live mesh the run loop (`run_live`) drives: the driver's `mesh_port` plus the events
/// and the teardown the loop needs.
class live_mesh : public mesh_port {
public:
  explicit live_mesh(const scenario& s)
    : request_deadline_ms_(s.traffic.request_deadline_ms), silo_order_(s.silos) {
    // nop
  }

  /// Sends `d` from its hub, or holds it while the hub is moving or not placed yet.
  void submit(const planned_delivery& d) override {
    int64_t deadline = d.kind == delivery_kind::request ? request_deadline_ms_ : -1;
    if (!submit_from(d.sender, to_envelope(d, routing::address::from(d.sender)), deadline))
      std::cerr << "cafmesh-demo: no sender hub " << d.sender << "\n";
  }

  /// Silo `name` is Active.
  virtual void silo_up(const std::string& name) = 0;

  /// The Active stage of `name` stopped: its legs ended; owners move.
  virtual void active_stopped(const std::string& name) = 0;

  /// Silo `name` reported a stage of its stop (`--processes`: its host has taken the first
  /// signal, so a second one is a second signal, not one that merges with the first).
  virtual void stop_stage_seen(const std::string&) {
    // nop
  }

  /// The host stop of `name` answered: the silo's process is over, and the application hubs
  /// it hosted end with it.
  virtual void silo_down(const std::string&) {
    // nop
  }

  /// A silo process said hello (`--processes` only).
  virtual void on_hello(const std::string&, uint64_t, caf::actor, caf::actor, caf::actor) {
    // nop
  }

  /// Silos whose stop completed since the last call, as (name, generation), detected
  /// without a message (a process exit); `failed` is set when a silo ended unexpectedly.
  virtual std::vector<std::pair<std::string, uint64_t>> poll_stops(bool& failed) {
    failed = false;
    return {};
  }

  /// Node processes stopped by the roll that exited so far, and how many not with 0 (none:
  /// not measured).
  virtual std::optional<std::pair<uint64_t, uint64_t>> node_exits() const {
    return std::nullopt;
  }

  /// The sender entries measured in the mesh's processes (none: not measured).
  virtual std::vector<entry_use> entries(caf::scoped_actor&) { return {}; }

  /// Stops everything (bounded); the application system is the caller's.
  virtual void teardown(caf::scoped_actor& self) = 0;

  /// Stops everything after a failed start.
  virtual void abandon(caf::scoped_actor& self) { teardown(self); }

protected:
  /// The routing service of silo `name`'s current incarnation (null: none).
  virtual caf::actor routing_of(const std::string& name) = 0;

  /// Is silo `name` Active and not being stopped?
  virtual bool is_available(const std::string& name) const = 0;

  /// The first available silo after `name` in scenario order ("" if none).
  std::string next_available(const std::string& name) const {
    return lifecycle::next_available_in(silo_order_, name,
                                        [this](const std::string& n) { return is_available(n); });
  }

  /// Sends `e` (deadline ms, or -1: a post) from the hub at `sender`, or holds it; false:
  /// no such hub.
  virtual bool submit_from(const std::string& sender, routing::envelope e,
                           int64_t deadline) = 0;

  int64_t request_deadline_ms_;
  std::vector<std::string> silo_order_;
};

/// Records a running node process (`--processes`): the teardown watchdog kills every one
/// still recorded before it ends the demo, so that no node outlives a demo that gave up.
void add_child(pid_t pid);

/// Forgets node process `pid` (it exited).
void remove_child(pid_t pid);

/// Sends SIGKILL to every recorded node process.
void kill_children();

/// The run loop shared by both live meshes: waits until every silo is Active, paces the
/// driver in wall-clock time, feeds it the mesh's events, reports and tears down.
std::optional<report> run_live(const scenario& s, const run_settings& rs, caf::scoped_actor& self,
                               live_mesh& mesh, bool ok, const std::string& mode);

} // namespace cafmesh::mainjob::net_mesh_detail
