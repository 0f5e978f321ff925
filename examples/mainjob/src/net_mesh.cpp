#include "cafmesh/mainjob/net_mesh.hpp"

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
#include <unordered_set>

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

extern char** environ;

namespace cafmesh::mainjob {

namespace {

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
void destroy_together(std::vector<std::unique_ptr<process>>& procs) {
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
                   .override_options([main](lifecycle::pure_client_options& po) {
                     po.failure_observer = main;
                   })
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
    if (d.answer_suppressed)
      suppressed_.insert(d.id);
    int64_t deadline = d.kind == delivery_kind::request ? request_deadline_ms_ : -1;
    if (!submit_from(d.sender, to_envelope(d, routing::address::from(d.sender)), deadline))
      std::cerr << "cafmesh-demo: no sender hub " << d.sender << "\n";
  }

  /// Was `id` sent answer-suppressed?
  bool is_suppressed(const std::string& id) const { return suppressed_.count(id) > 0; }

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
  std::unordered_set<std::string> suppressed_;
};

class in_process_mesh : public live_mesh {
public:
  in_process_mesh(const scenario& s, caf::actor_system& app, caf::actor main)
    : live_mesh(s), s_(s), app_(app), main_(std::move(main)),
      homing_(s.silos, {[this](const std::string& name) { return routing_of(name); },
                        [this](const std::string& name, const routing::address& a) {
                          auto& slot = silos_[name];
                          if (slot.current)
                            caf::anon_send(slot.current->ns.s.claimer,
                                           routing::pc_claim_atom::value, a);
                        }}) {
    // nop
  }

  /// Starts the client system's parts; false on failure (printed).
  bool start_client(uint16_t& primary_port) {
    auto loaded = process_config(s_, config::process_role::silo_host, "client-1");
    if (!loaded.ok) {
      std::cerr << "cafmesh-demo: client configuration: " << loaded.message() << "\n";
      return false;
    }
    client_cfg_ = loaded.value;
    client_cfg_.mesh.role = config::process_role::pure_client;
    client_cfg_.network.port = 0;
    client_cfg_.network.primary_port = 0; // the client hosts the oracle (file comment)
    if (!build_client(wall_generation()))
      return false;
    primary_port = client_.primary_port;
    return true;
  }

  /// Builds the application hubs (after the silos exist: homes). The node hubs that answer
  /// requests are not built here: every silo's application creates its own (`start_silo`).
  void build_hubs() {
    auto n = static_cast<int64_t>(s_.silos.size());
    auto& t = s_.traffic;
    auto& hubs = hubs_; // the factories hold this map; filled before any traffic
    for (int64_t i = 0; i < t.owner_hubs; ++i) {
      auto text = owner_hub_address(i);
      auto a = routing::address::from(text);
      auto home = s_.silos[static_cast<size_t>(i % n)];
      auto ep = spawn_app_hub(app_, a, routing_of(home), client_cfg_.routing, false, main_);
      (*hubs)[text.substr(5)] = ep;
      all_.push_back(ep);
      homing_.add(lifecycle::hub_home_kind::owner, a, ep, home);
    }
    for (int64_t i = 0; i < t.portal_hubs; ++i) {
      auto a = routing::address::from(portal_hub_address(i));
      auto origin = portal_origin(s_, i);
      if (origin.rfind("silo:", 0) == 0) {
        auto home = origin.substr(5);
        auto ep = spawn_app_hub(app_, a, routing_of(home), client_cfg_.routing, false, main_);
        homing_.add(lifecycle::hub_home_kind::portal, a, ep, home);
        all_.push_back(ep);
      } else {
        auto ep = spawn_app_hub(app_, a, client_.routing, client_cfg_.routing, false, main_);
        homing_.add(lifecycle::hub_home_kind::client, a, ep, {}, client_.routing);
        all_.push_back(ep);
      }
    }
  }

  /// Starts incarnation `generation` of silo `name` (blocking: binds its port).
  bool start_silo(const std::string& name) {
    auto& slot = silos_[name];
    slot.name = name;
    auto run = std::make_unique<silo_run>();
    run->proc = std::make_unique<process>();
    auto& sys = *run->proc->sys;
    auto loaded = process_config(s_, config::process_role::silo_host, "silo-" + name);
    if (!loaded.ok) {
      std::cerr << "cafmesh-demo: configuration of silo " << name << ": " << loaded.message()
                << "\n";
      return false;
    }
    auto cfg = loaded.value;
    cfg.network.host = "127.0.0.1";
    cfg.network.port = 0;
    cfg.network.primary_host = "127.0.0.1";
    cfg.network.primary_port = client_.primary_port;
    // The silo's application, in the silo's own actor system: the answering hub of a node
    // hub key is created there on its first activation on this silo and sends its
    // responses through this silo; the owner hubs are shared (`hubs_`).
    auto factory = spawn_echo_hub_factory(sys, cfg.routing, hubs_, main_);
    run->generation = next_generation();
    // The demo counts every pod hub and routing call of a silo: no correlating entry.
    auto built = lifecycle::silo_builder{sys}
                   .config(cfg)
                   .network()
                   .generation(run->generation)
                   .without_entry()
                   .override_options([&](lifecycle::silo_options& so) {
                     so.hubs = caf::actor_cast<routing::hub_factory_actor>(factory);
                     so.failure_observer = main_;
                   })
                   .build();
    if (!built) {
      std::cerr << "cafmesh-demo: silo " << name << ": " << sys.render(built.error()) << "\n";
      caf::anon_send_exit(factory, caf::exit_reason::user_shutdown);
      retired_.push_back(std::move(run->proc));
      return false;
    }
    run->ns = lifecycle::net_silo{built->components(), built->endpoint()};
    run->handle = std::make_unique<lifecycle::silo>(std::move(*built));
    caf::anon_send(factory, mp_routing_atom::value, run->ns.s.routing);
    run->extras = {factory};
    run->app = factory;
    auto probe = caf::actor_cast<caf::actor>(spawn_stage_probe(sys, main_, name, run->generation));
    run->extras.push_back(probe);
    for (auto st : demo_probe_stages())
      caf::anon_send(run->ns.s.subject, lifecycle::subscribe_atom::value, st,
                     std::string{"demo-probe"},
                     caf::actor_cast<lifecycle::lifecycle_observer_actor>(probe));
    auto gen = run->generation;
    auto host = run->ns.s.host;
    slot.current = std::move(run);
    ask_host(
      app_, host, main_,
      [name, gen](bool ok) { return caf::make_message(dm_up_atom::value, name, gen, ok); },
      lifecycle::host_start_atom::value);
    return true;
  }

  // -- mesh_port ----------------------------------------------------------------------

  void stop_silo(const std::string& name) override {
    auto& slot = silos_[name];
    slot.available = false;
    if (!slot.current)
      return;
    homing_.stopping(name);
    auto gen = slot.current->generation;
    ask_host(
      app_, slot.current->ns.s.host, main_,
      [name, gen](bool) { return caf::make_message(dm_down_atom::value, name, gen); },
      lifecycle::host_halt_atom::value, true);
  }

  void restart_silo(const std::string& name) override {
    auto& slot = silos_[name];
    if (slot.current) {
      slot.current->stop_all();
      slot.past.push_back(std::move(slot.current));
    }
    if (!start_silo(name))
      start_failures_++;
  }

  bool kill_silo(const std::string& name) override {
    auto& slot = silos_[name];
    slot.available = false;
    if (!slot.current)
      return true;
    // A crash: every actor of the silo's system ends at once, no lifecycle stop; its TCP
    // connections close with them. Owners homed there move now (nothing will drain).
    slot.current->stop_all();
    slot.past.push_back(std::move(slot.current));
    homing_.killed(name);
    return true;
  }

  bool signal_silo_again(const std::string& name) override {
    auto& slot = silos_[name];
    if (!slot.current)
      return true;
    auto gen = slot.current->generation;
    ask_host(
      app_, slot.current->ns.s.host, main_,
      [name, gen](bool) { return caf::make_message(dm_down_atom::value, name, gen); },
      lifecycle::host_halt_atom::value, false);
    return true;
  }

  void silo_down(const std::string& name) override {
    auto& slot = silos_[name];
    if (slot.current && slot.current->app)
      caf::anon_send_exit(slot.current->app, caf::exit_reason::user_shutdown);
    homing_.down(name);
  }

  void stall_silo(const std::string& name, bool detected) override {
    auto& slot = silos_[name];
    slot.stalled = true;
    if (slot.current)
      caf::anon_send(slot.current->ns.endpoint.link, nl_stall_atom::value, true, detected);
  }

  void unstall_silo(const std::string& name) override {
    auto& slot = silos_[name];
    slot.stalled = false;
    if (slot.current)
      caf::anon_send(slot.current->ns.endpoint.link, nl_stall_atom::value, false, false);
  }

  // -- events ---------------------------------------------------------------------------

  void active_stopped(const std::string& name) override {
    homing_.active_stopped(name);
  }

  void silo_up(const std::string& name) override {
    silos_[name].available = true;
    homing_.up(name);
  }


  void abandon(caf::scoped_actor&) override { shutdown(); }

  void teardown(caf::scoped_actor& self) override {
    auto asked = halt_all();
    for (size_t got = 0; got < asked;) {
      bool any = false;
      self->receive([&](dm_down_atom, const std::string&, uint64_t) { any = true; ++got; },
                    [&](caf::message&) { any = true; },
                    caf::after(std::chrono::seconds(10)) >> [] {});
      if (!any)
        break;
    }
    shutdown();
  }

  /// Stops every current silo non-gracefully through its host (catalog deactivation
  /// included); each answer arrives at `main` as `dm_down_atom`. Answers how many were asked.
  size_t halt_all() {
    size_t n = 0;
    for (auto& [name, slot] : silos_)
      if (slot.current) {
        auto gen = slot.current->generation;
        auto nm = name;
        ask_host(
          app_, slot.current->ns.s.host, main_,
          [nm, gen](bool) { return caf::make_message(dm_down_atom::value, nm, gen); },
          lifecycle::host_halt_atom::value, false);
        ++n;
      }
    return n;
  }

  /// Tells every actor to exit and drops this mesh's handles into the silo systems; the
  /// systems themselves wait in `take_systems` (the application system is the caller's).
  void shutdown() {
    for (auto& a : all_)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    client_.parts.stop_all();
    for (auto& a : {client_.ep.link, client_.ep.oracle})
      if (a)
        caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    for (auto& [name, slot] : silos_) {
      if (slot.current) {
        slot.current->stop_all();
        slot.past.push_back(std::move(slot.current));
      }
      for (auto& run : slot.past)
        retired_.push_back(std::move(run->proc));
      slot.past.clear(); // the handles, before their systems
    }
  }

  /// The silo systems (every incarnation, all actors told to exit by `shutdown`), to be
  /// destroyed together with the application system (`destroy_together`).
  std::vector<std::unique_ptr<process>> take_systems() {
    shutdown(); // idempotent; a no-op after teardown
    return std::move(retired_);
  }

private:
  static uint64_t wall_generation() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
  }

  uint64_t next_generation() {
    last_generation_ = std::max(last_generation_ + 1, wall_generation());
    return last_generation_;
  }

  caf::actor routing_of(const std::string& name) override {
    auto& slot = silos_[name];
    return slot.current ? slot.current->ns.s.routing : caf::actor{};
  }

  bool is_available(const std::string& name) const override {
    auto i = silos_.find(name);
    return i != silos_.end() && i->second.available;
  }

  bool submit_from(const std::string& sender, routing::envelope e,
                   int64_t deadline) override {
    return homing_.submit(sender, std::move(e), deadline);
  }

  scenario s_;
  caf::actor_system& app_;
  caf::actor main_;
  config::mesh_config client_cfg_;
  bool build_client(uint64_t generation) {
    return client_.build(app_, client_cfg_, generation, main_);
  }

  demo_client client_; ///< the demo's pure client
  std::map<std::string, silo_slot> silos_;
  std::shared_ptr<std::map<std::string, caf::actor>> hubs_
    = std::make_shared<std::map<std::string, caf::actor>>();
  std::vector<caf::actor> all_;
  std::vector<std::unique_ptr<process>> retired_; ///< silo systems, for `take_systems`
  uint64_t last_generation_ = 0;
  size_t start_failures_ = 0;
  /// The application's sending hubs (owners, co-hosted portals, client portals), kept homed
  /// on an available silo (hub_homing.hpp).
  lifecycle::hub_homing homing_;
};

// -- the multi-process mesh (`--processes`) -------------------------------------------

/// Process ids of the running node processes: the teardown watchdog kills them before it
/// ends the demo, so that no node outlives a demo that gave up.
std::mutex children_mtx;
std::set<pid_t> children;

void add_child(pid_t pid) {
  std::lock_guard<std::mutex> guard{children_mtx};
  children.insert(pid);
}

void remove_child(pid_t pid) {
  std::lock_guard<std::mutex> guard{children_mtx};
  children.erase(pid);
}

void kill_children() {
  std::lock_guard<std::mutex> guard{children_mtx};
  for (auto pid : children)
    ::kill(pid, SIGKILL);
}

/// The demo's control actor (demo_process.hpp): answers joins with the hub map and passes
/// every event of the node processes on to `main`.
caf::behavior demo_control(caf::event_based_actor* self, caf::actor main,
                           std::shared_ptr<const hub_map> hubs) {
  return {
    [=](dp_join_atom, const std::string&) {
      std::vector<std::string> keys;
      std::vector<caf::actor> handles;
      for (auto& [k, v] : *hubs) {
        keys.push_back(k);
        handles.push_back(v);
      }
      return caf::make_message(std::move(keys), std::move(handles),
                               caf::actor_cast<caf::actor>(self));
    },
    [=](dp_hello_atom a, std::string& silo, uint64_t gen, caf::actor& agent,
        caf::actor& routing, caf::actor& link) {
      self->send(main, a, std::move(silo), gen, std::move(agent), std::move(routing),
                 std::move(link));
    },
    [=](routing::ep_event_atom a, std::string& kind, std::string& id, uint8_t v,
        std::string& text) {
      self->send(main, a, std::move(kind), std::move(id), v, std::move(text));
    },
    [=](mp_stage_atom a, std::string& silo, uint64_t gen, bool starting, int32_t st) {
      self->send(main, a, std::move(silo), gen, starting, st);
    },
    [=](dm_up_atom a, std::string& silo, uint64_t gen, bool ok) {
      self->send(main, a, std::move(silo), gen, ok);
    },
  };
}

/// Stands in the hub map for an owner hub that lives in a node process and moves between
/// them: forwards to the current one.
caf::behavior owner_proxy(caf::event_based_actor* self) {
  auto target = std::make_shared<caf::actor>();
  return {
    [=](dm_target_atom, caf::actor& t) { *target = std::move(t); },
    [=](routing::hb_in_atom a, routing::envelope& e) {
      if (*target)
        self->send(*target, a, std::move(e));
    },
    [=](routing::hb_deliver_atom a, routing::envelope& e) -> caf::result<routing::envelope> {
      if (!*target)
        return to_error(fault{mesh_errc::silo_unavailable, "the owner hub has no process yet"});
      auto rp = self->make_response_promise<routing::envelope>();
      self->request(*target, caf::infinite, a, std::move(e))
        .then([=](routing::envelope& r) mutable { rp.deliver(std::move(r)); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
      return rp;
    },
  };
}

/// One `cafmesh-node` process (one incarnation of a scenario silo).
struct node_proc {
  pid_t pid = -1;
  int index = 0;             ///< incarnation number of its silo, from 1
  uint64_t generation = 0;   ///< from its hello
  caf::actor agent;
  caf::actor routing;
  caf::actor link;
  bool stopping = false;     ///< SIGTERM sent
  bool stop_seen = false;    ///< it reported a stage of its stop
  bool second_pending = false; ///< a second signal waits for `stop_seen`
  bool killed = false;       ///< SIGKILL sent by a `kill` fault
  bool exited = false;
  int status = 0;            ///< exit code, or 128 + signal
  bool measured = false;     ///< its entry counters were read
};

struct proc_slot {
  std::unique_ptr<node_proc> current;
  std::vector<std::unique_ptr<node_proc>> past;
  bool available = false;
  int incarnations = 0;
};

class process_mesh : public live_mesh {
public:
  process_mesh(const scenario& s, caf::actor_system& app, caf::actor main,
               std::string node_binary)
    : live_mesh(s), s_(s), app_(app), main_(std::move(main)),
      node_binary_(std::move(node_binary)) {
    // nop
  }

  /// Starts the client system's parts, the control actor and the demo-side hubs, then one
  /// node process per silo; false on failure (printed).
  bool start() {
    auto loaded = process_config(s_, config::process_role::silo_host, "client-1");
    if (!loaded.ok) {
      std::cerr << "cafmesh-demo: client configuration: " << loaded.message() << "\n";
      return false;
    }
    client_cfg_ = loaded.value;
    client_cfg_.mesh.role = config::process_role::pure_client;
    client_cfg_.network.host = "127.0.0.1";
    client_cfg_.network.port = 0;
    client_cfg_.network.primary_port = 0; // the demo hosts the oracle
    if (!build_client(wall_ms()))
      return false;
    build_hubs();
    control_ = app_.spawn(demo_control, main_, std::shared_ptr<const hub_map>(hubs_));
    auto port = app_.middleman().publish(control_, 0, "127.0.0.1");
    if (!port) {
      std::cerr << "cafmesh-demo: cannot publish the control actor: " << app_.render(port.error())
                << "\n";
      return false;
    }
    control_port_ = *port;
    char tmpl[] = "/tmp/cafmesh-demo-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      std::cerr << "cafmesh-demo: cannot create a directory for the node files\n";
      return false;
    }
    dir_ = tmpl;
    for (auto& name : s_.silos)
      if (!launch(name))
        return false;
    return true;
  }

  // -- mesh_port ----------------------------------------------------------------------

  void stop_silo(const std::string& name) override {
    auto& slot = slots_[name];
    slot.available = false;
    if (!slot.current)
      return;
    begin_stop(name);
    slot.current->stopping = true;
    ::kill(slot.current->pid, SIGTERM); // graceful host stop (docs/behaviour/lifecycle.md#the-host)
  }

  void restart_silo(const std::string& name) override {
    auto& slot = slots_[name];
    if (slot.current)
      slot.past.push_back(std::move(slot.current));
    if (!launch(name))
      start_failures_++;
  }

  bool kill_silo(const std::string& name) override {
    auto& slot = slots_[name];
    slot.available = false;
    if (!slot.current)
      return true;
    slot.current->killed = true;
    ::kill(slot.current->pid, SIGKILL);
    slot.past.push_back(std::move(slot.current));
    // Its hubs died with it: owners get a new endpoint elsewhere (or when a silo is back);
    // co-hosted portals wait for the next incarnation.
    auto next = next_available(name);
    for (auto& [text, h] : senders_) {
      if (h.home != name)
        continue;
      if (h.owner) {
        h.ep = caf::actor{};
        h.moving = true;
        if (!next.empty())
          place(h, next, false);
      } else {
        h.ep = caf::actor{};
        h.moving = true;
      }
    }
    return true;
  }

  bool signal_silo_again(const std::string& name) override {
    auto& slot = slots_[name];
    if (slot.current && !slot.current->exited) {
      // Two SIGTERMs sent before the process took the first are one pending signal: the
      // second waits until the node reported a stage of its stop.
      if (!slot.current->stop_seen) {
        slot.current->second_pending = true;
        return true;
      }
      slot.current->stopping = true;
      ::kill(slot.current->pid, SIGTERM); // the second signal: non-graceful
    }
    return true;
  }

  void stop_stage_seen(const std::string& name) override {
    auto& slot = slots_[name];
    if (!slot.current || slot.current->exited)
      return;
    slot.current->stop_seen = true;
    if (slot.current->second_pending) {
      slot.current->second_pending = false;
      ::kill(slot.current->pid, SIGTERM); // the second signal: non-graceful
    }
  }

  void stall_silo(const std::string& name, bool detected) override {
    auto& slot = slots_[name];
    if (slot.current && slot.current->link)
      caf::anon_send(slot.current->link, nl_stall_atom::value, true, detected);
  }

  void unstall_silo(const std::string& name) override {
    auto& slot = slots_[name];
    if (slot.current && slot.current->link)
      caf::anon_send(slot.current->link, nl_stall_atom::value, false, false);
  }

  // -- live_mesh ----------------------------------------------------------------------


  void on_hello(const std::string& name, uint64_t gen, caf::actor agent, caf::actor routing,
                caf::actor link) override {
    auto& slot = slots_[name];
    if (!slot.current)
      return;
    auto& p = *slot.current;
    p.generation = gen;
    p.agent = std::move(agent);
    p.routing = std::move(routing);
    p.link = std::move(link);
    // Owner hubs homed here that have no process yet (the first start) live here now; so do
    // this silo's co-hosted portal hubs (every incarnation: claimed once it is Active).
    for (auto& [text, h] : senders_) {
      if (h.home != name)
        continue;
      if (h.owner && !h.ep)
        place(h, name, false);
      else if (!h.owner) {
        h.moving = true; // held until Active
        place(h, name, true);
      }
    }
  }

  void silo_up(const std::string& name) override {
    slots_[name].available = true;
    for (auto& [text, h] : senders_)
      if (h.owner && h.moving && !slots_[h.home].available)
        move_owner(h, name);
    for (auto& [text, h] : senders_)
      if (!h.owner && h.home == name && h.ep) {
        caf::anon_send(agent_of(name), dp_claim_atom::value, h.addr);
        release_held(h);
      }
  }

  void active_stopped(const std::string& name) override {
    // Nothing co-hosted enters this silo any more: read its entry's counters now.
    auto& slot = slots_[name];
    if (slot.current)
      measure(*slot.current, name);
    // Its co-hosted portal hubs wait for the next incarnation.
    for (auto& [text, h] : senders_)
      if (!h.owner && h.home == name)
        h.moving = true;
    auto next = next_available(name);
    if (next.empty())
      return;
    for (auto& [text, h] : senders_)
      if (h.owner && h.home == name && h.moving)
        move_owner(h, next);
  }

  std::vector<std::pair<std::string, uint64_t>> poll_stops(bool& failed) override {
    failed = false;
    std::vector<std::pair<std::string, uint64_t>> out;
    for (auto& entry : slots_) {
      const std::string& name = entry.first;
      auto& slot = entry.second;
      auto check = [&](node_proc& p, bool current) {
        if (p.exited)
          return;
        int st = 0;
        if (::waitpid(p.pid, &st, WNOHANG) != p.pid)
          return;
        p.exited = true;
        remove_child(p.pid);
        p.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (p.killed)
          return; // the fault did it
        if (!p.stopping || p.status != 0) {
          std::cerr << "cafmesh-demo: node process of silo " << name << " (pid " << p.pid
                    << ") exited with " << p.status << (p.stopping ? "" : " unexpectedly")
                    << "; its output: " << log_path(name, p.index) << "\n";
          ++unclean_exits_;
        }
        if (!p.stopping)
          failed = true;
        if (current && p.stopping) {
          out.emplace_back(name, p.generation);
          if (!tearing_down_) {
            ++rolled_exits_;
            if (p.status != 0)
              ++rolled_unclean_;
          }
        } else if (!p.stopping && !tearing_down_) {
          ++rolled_unclean_; // a silo process that ended on its own
        }
      };
      for (auto& p : slot.past)
        check(*p, false);
      if (slot.current)
        check(*slot.current, true);
    }
    return out;
  }

  std::vector<entry_use> entries(caf::scoped_actor& self) override {
    std::vector<entry_use> out;
    for (auto& name : s_.silos) {
      auto& slot = slots_[name];
      if (slot.current)
        measure(*slot.current, name);
    }
    for (auto& name : s_.silos)
      for (auto& e : measured_[name])
        out.push_back(e);
    entry_use c;
    c.process = "client-1 (cafmesh-demo)";
    c.entry = "pure_client";
    std::set<std::string> origins;
    for (auto& [text, h] : senders_)
      if (h.home.empty())
        origins.insert(h.origin);
    for (auto& o : origins)
      c.origins += (c.origins.empty() ? "" : ", ") + o;
    self
      ->request(caf::actor_cast<caf::actor>(client_.routing), std::chrono::seconds(5),
                routing::rs_stats_atom::value)
      .receive(
        [&](const routing::routing_service_stats& x) {
          c.delivered = x.delivered;
          c.routing_default_calls = x.client_attempts;
        },
        [&](caf::error& e) {
          std::cerr << "cafmesh-demo: the client's entry counters: " << app_.render(e) << "\n";
        });
    out.push_back(std::move(c));
    return out;
  }

  std::optional<std::pair<uint64_t, uint64_t>> node_exits() const override {
    return std::make_pair(rolled_exits_, rolled_unclean_);
  }

  void teardown(caf::scoped_actor& self) override {
    tearing_down_ = true;
    // Graceful stop of every node still running (nothing is in flight any more), bounded.
    for (auto& [name, slot] : slots_)
      if (slot.current && !slot.current->exited) {
        slot.current->stopping = true;
        ::kill(slot.current->pid, SIGTERM);
      }
    auto until = clock_type::now() + std::chrono::seconds(10);
    for (;;) {
      bool failed = false;
      poll_stops(failed);
      if (all_exited() || clock_type::now() >= until)
        break;
      self->receive([](caf::message&) {},
                    caf::after(std::chrono::milliseconds(50)) >> [] {});
    }
    for (auto& [name, slot] : slots_)
      for (auto* p : procs(slot))
        if (!p->exited) {
          std::cerr << "cafmesh-demo: node process of silo " << name << " (pid " << p->pid
                    << ") did not stop within 10 s; killed\n";
          ::kill(p->pid, SIGKILL);
          ::waitpid(p->pid, nullptr, 0);
          p->exited = true;
          remove_child(p->pid);
          ++unclean_exits_;
        }
    for (auto& a : all_)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    client_.parts.stop_all();
    for (auto& a : {client_.ep.link, client_.ep.oracle, control_})
      if (a)
        caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    if (unclean_exits_ == 0 && start_failures_ == 0 && !dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  size_t unclean_exits() const { return unclean_exits_; }
  size_t start_failures() const { return start_failures_; }

private:
  static uint64_t wall_ms() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
  }

  static std::vector<node_proc*> procs(proc_slot& slot) {
    std::vector<node_proc*> out;
    for (auto& p : slot.past)
      out.push_back(p.get());
    if (slot.current)
      out.push_back(slot.current.get());
    return out;
  }

  bool all_exited() {
    for (auto& [name, slot] : slots_)
      for (auto* p : procs(slot))
        if (!p->exited)
          return false;
    return true;
  }

  std::string log_path(const std::string& name, int index) const {
    return dir_ + "/silo-" + name + "-" + std::to_string(index) + ".log";
  }

  /// The demo-side hubs: owner proxies and the client's portal hubs. Co-hosted hubs are
  /// placed when their silo says hello; the node hubs that answer requests are created by
  /// each node process's own application (demo_process.hpp).
  void build_hubs() {
    auto n = static_cast<int64_t>(s_.silos.size());
    auto& t = s_.traffic;
    for (int64_t i = 0; i < t.owner_hubs; ++i) {
      auto text = owner_hub_address(i);
      sender_hub h;
      h.addr = routing::address::from(text);
      h.origin = "grain";
      h.owner = true;
      h.home = s_.silos[static_cast<size_t>(i % n)];
      h.proxy = app_.spawn(owner_proxy);
      (*hubs_)[text.substr(5)] = h.proxy;
      all_.push_back(h.proxy);
      senders_.emplace(text, std::move(h));
    }
    for (int64_t i = 0; i < t.portal_hubs; ++i) {
      auto text = portal_hub_address(i);
      sender_hub h;
      h.addr = routing::address::from(text);
      h.origin = portal_origin(s_, i);
      if (h.origin.rfind("silo:", 0) == 0) {
        h.home = h.origin.substr(5);
      } else {
        h.ep = spawn_app_hub(app_, h.addr, client_.routing, client_cfg_.routing, false, main_);
        caf::anon_send(client_.routing, routing::rs_register_atom::value, h.addr, h.ep);
        all_.push_back(h.ep);
      }
      senders_.emplace(text, std::move(h));
    }
  }

  /// Starts the next incarnation of silo `name` as a `cafmesh-node` process.
  bool launch(const std::string& name) {
    auto& slot = slots_[name];
    auto loaded = process_config(s_, config::process_role::silo_host, "silo-" + name);
    if (!loaded.ok) {
      std::cerr << "cafmesh-demo: configuration of silo " << name << ": " << loaded.message()
                << "\n";
      return false;
    }
    auto cfg = loaded.value;
    cfg.network.host = "127.0.0.1";
    cfg.network.port = 0; // the OS chooses; the silo announces its address itself
    cfg.network.primary_host = "127.0.0.1";
    cfg.network.primary_port = client_.primary_port;
    auto index = ++slot.incarnations;
    auto cfg_path = dir_ + "/silo-" + name + "-" + std::to_string(index) + ".json";
    {
      std::ofstream out{cfg_path};
      out << config::to_json_text(cfg);
      out.flush();
      if (!out) {
        std::cerr << "cafmesh-demo: cannot write " << cfg_path << "\n";
        return false;
      }
    }
    auto out_path = log_path(name, index);
    std::vector<std::string> args{node_binary_,   "--config",    cfg_path,
                                  "--demo-control", "127.0.0.1:" + std::to_string(control_port_),
                                  "--demo-silo",  name};
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    pid_t pid = -1;
    auto rc = ::posix_spawn(&pid, node_binary_.c_str(), &fa, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      std::cerr << "cafmesh-demo: cannot start " << node_binary_ << ": " << std::strerror(rc)
                << "\n";
      return false;
    }
    add_child(pid);
    slot.current = std::make_unique<node_proc>();
    slot.current->pid = pid;
    slot.current->index = index;
    return true;
  }

  caf::actor routing_of(const std::string& name) override {
    auto& slot = slots_[name];
    return slot.current ? slot.current->routing : caf::actor{};
  }

  bool is_available(const std::string& name) const override {
    auto i = slots_.find(name);
    return i != slots_.end() && i->second.available;
  }

  caf::actor agent_of(const std::string& name) {
    auto& slot = slots_[name];
    return slot.current ? slot.current->agent : caf::actor{};
  }

  bool submit_from(const std::string& sender, routing::envelope e,
                   int64_t deadline) override {
    auto i = senders_.find(sender);
    if (i == senders_.end())
      return false;
    auto& h = i->second;
    if (h.moving || !h.ep)
      h.held.emplace_back(std::move(e), deadline);
    else
      send(h, std::move(e), deadline);
    return true;
  }

  /// Silo `name` starts stopping: its owners hold their frames until its Active stop has
  /// ended. The owners of this mesh live in the node processes (placed there by `place`),
  /// so they move by being placed again, not by `lifecycle::hub_homing`, which moves hubs
  /// of its own process; the node hubs that answer are each node's own.
  void begin_stop(const std::string& name) {
    for (auto& [text, h] : senders_)
      if (h.owner && h.home == name)
        h.moving = true;
  }

  void send(sender_hub& h, routing::envelope e, int64_t deadline) {
    if (deadline >= 0)
      caf::anon_send(h.ep, routing::ep_request_atom::value, std::move(e), deadline);
    else
      caf::anon_send(h.ep, routing::ep_post_atom::value, std::move(e));
  }

  /// `h` may send again: its held frames leave in order.
  void release_held(sender_hub& h) {
    h.moving = false;
    while (!h.held.empty()) {
      auto [e, deadline] = std::move(h.held.front());
      h.held.pop_front();
      send(h, std::move(e), deadline);
    }
  }

  /// Spawns `h`'s endpoint in the process of silo `name` (co-hosted there). Blocking: the
  /// agent answers within milliseconds.
  void place(sender_hub& h, const std::string& name, bool keep_held) {
    auto agent = agent_of(name);
    if (!agent)
      return;
    caf::scoped_actor self{app_};
    caf::actor ep;
    self->request(agent, std::chrono::seconds(10), dp_spawn_atom::value, h.addr)
      .receive([&](caf::actor& x) { ep = std::move(x); },
               [&](caf::error& e) {
                 std::cerr << "cafmesh-demo: cannot place hub " << h.addr.to_string()
                           << " on silo " << name << ": " << app_.render(e) << "\n";
               });
    if (!ep)
      return;
    h.ep = ep;
    h.home = name;
    if (h.proxy)
      caf::anon_send(h.proxy, dm_target_atom::value, ep);
    if (!keep_held)
      release_held(h);
  }

  void move_owner(sender_hub& h, const std::string& to) {
    place(h, to, false);
  }

  /// Reads the counters of `p`'s co-hosted entry once (bounded, blocking).
  void measure(node_proc& p, const std::string& name) {
    if (p.measured || !p.agent || p.exited)
      return;
    p.measured = true;
    entry_use e;
    e.process = "silo " + name + " gen " + std::to_string(p.generation) + " (pid "
                + std::to_string(p.pid) + ")";
    e.entry = "co-hosted";
    e.origins = "grain";
    for (auto& [text, h] : senders_)
      if (!h.owner && h.origin == "silo:" + name) {
        e.origins += ", silo:" + name;
        break;
      }
    bool ok = false;
    caf::scoped_actor self{app_};
    self->request(p.agent, std::chrono::seconds(5), dp_stats_atom::value)
      .receive(
        [&](const routing::routing_service_stats& x) {
          ok = true;
          e.delivered = x.delivered;
          e.routing_default_calls = x.client_attempts;
        },
        [&](caf::error& err) {
          std::cerr << "cafmesh-demo: entry counters of silo " << name << ": "
                    << app_.render(err) << "\n";
        });
    if (ok)
      measured_[name].push_back(std::move(e));
  }

  scenario s_;
  caf::actor_system& app_;
  caf::actor main_;
  std::map<std::string, sender_hub> senders_;
  std::string node_binary_;
  config::mesh_config client_cfg_;
  bool build_client(uint64_t generation) {
    return client_.build(app_, client_cfg_, generation, main_);
  }

  demo_client client_; ///< the demo's pure client
  uint16_t control_port_ = 0;
  caf::actor control_;
  std::string dir_;
  std::map<std::string, proc_slot> slots_;
  std::shared_ptr<hub_map> hubs_ = std::make_shared<hub_map>();
  std::vector<caf::actor> all_;
  std::map<std::string, std::vector<entry_use>> measured_;
  size_t start_failures_ = 0;
  size_t unclean_exits_ = 0;
  uint64_t rolled_exits_ = 0;
  uint64_t rolled_unclean_ = 0;
  bool tearing_down_ = false;
};

/// The run loop shared by both live meshes: waits until every silo is Active, paces the
/// driver in wall-clock time, feeds it the mesh's events, reports and tears down.
std::optional<report> run_live(const scenario& s, const run_settings& rs, caf::scoped_actor& self,
                               live_mesh& mesh, bool ok, const std::string& mode) {
  std::optional<report> out;
  demo_driver driver{s, mesh, mode};
  driver.write_ledger_events_to(rs.ledger_out);
  auto t0 = clock_type::now();
  auto now_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0)
      .count();
  };
  // Wait until every silo is Active before the traffic starts (bounded).
  size_t up = 0;
  bool failed_start = !ok;
  auto start_deadline = clock_type::now() + std::chrono::seconds(30);
  while (ok && up < s.silos.size()) {
    bool got = false;
    self->receive(
      [&](dm_up_atom, const std::string& name, uint64_t gen, bool started) {
        got = true;
        if (!started) {
          std::cerr << "cafmesh-demo: silo " << name << " failed to start\n";
          failed_start = true;
          return;
        }
        ++up;
        mesh.silo_up(name);
        driver.on_silo(silo_event{name, gen, roll_phase::active, std::nullopt, std::nullopt},
                       0);
      },
      [&](dp_hello_atom, const std::string& name, uint64_t gen, caf::actor& agent,
          caf::actor& routing, caf::actor& link) {
        got = true;
        mesh.on_hello(name, gen, std::move(agent), std::move(routing), std::move(link));
      },
      [&](mp_stage_atom, const std::string&, uint64_t, bool, int32_t) { got = true; },
      [&](routing::ep_event_atom, const std::string&, const std::string&, uint8_t,
          const std::string&) { got = true; },
      caf::after(std::chrono::milliseconds(100)) >> [] {});
    bool died = false;
    mesh.poll_stops(died);
    if (died || clock_type::now() >= start_deadline)
      failed_start = true;
    if (failed_start)
      break;
    (void) got;
  }
  if (failed_start) {
    std::cerr << "cafmesh-demo: the mesh did not start; no traffic was sent\n";
    mesh.abandon(self);
    return std::nullopt;
  }
  // Let the pod-hub claims and the client's first snapshot settle (bounded, 1 s).
  for (auto until = clock_type::now() + std::chrono::seconds(1); clock_type::now() < until;)
    self->receive([](caf::message&) {}, caf::after(std::chrono::milliseconds(50)) >> [] {});
  t0 = clock_type::now();
  std::map<std::string, int64_t> stop_started;  // silo -> when its stop began
  std::map<std::string, int64_t> active_stopped; // silo -> when stage Active's stop ended
  auto on_down = [&](const std::string& name, uint64_t gen) {
    auto t = now_ms();
    std::optional<int64_t> hold;
    auto a = stop_started.find(name);
    auto b = active_stopped.find(name);
    if (a != stop_started.end() && b != active_stopped.end() && b->second >= a->second)
      hold = b->second - a->second;
    mesh.silo_down(name);
    driver.on_silo(silo_event{name, gen, roll_phase::stopped, std::nullopt, hold}, t);
  };
  auto receive_one = [&](std::chrono::milliseconds wait) {
    bool got = false;
    self->receive(
        hub_event_handler(
          driver, [&](const std::string& id) { return mesh.is_suppressed(id); }, now_ms, got),
        [&](mp_stage_atom, const std::string& name, uint64_t gen, bool starting, int32_t st) {
          got = true;
          auto t = now_ms();
          if (!starting)
            mesh.stop_stage_seen(name);
          if (!starting && st == lifecycle::stages::become_active) {
            active_stopped[name] = t;
            mesh.active_stopped(name);
          }
          driver.on_silo(silo_event{name, gen,
                                    starting ? roll_phase::starting : roll_phase::stopping, st,
                                    std::nullopt},
                         t);
        },
        [&](dp_hello_atom, const std::string& name, uint64_t gen, caf::actor& agent,
            caf::actor& routing, caf::actor& link) {
          got = true;
          mesh.on_hello(name, gen, std::move(agent), std::move(routing), std::move(link));
        },
        [&](dm_up_atom, const std::string& name, uint64_t gen, bool started) {
          got = true;
          if (!started) {
            std::cerr << "cafmesh-demo: silo " << name << " (generation " << gen
                      << ") failed to start\n";
            return;
          }
          mesh.silo_up(name);
          driver.on_silo(silo_event{name, gen, roll_phase::active, std::nullopt, std::nullopt},
                         now_ms());
        },
        [&](dm_down_atom, const std::string& name, uint64_t gen) {
          got = true;
          on_down(name, gen);
        },
        caf::after(wait) >> [] {});
    return got;
  };
  auto handle_events = [&](std::chrono::milliseconds wait) {
    receive_batch(wait, receive_one);
    bool died = false;
    for (auto& [name, gen] : mesh.poll_stops(died))
      on_down(name, gen);
  };
  pace_settings ps;
  ps.progress = rs.progress;
  ps.is_tty = rs.is_tty;
  ps.width_cols = rs.width_cols;
  ps.out = rs.out;
  ps.progress_interval_ms = rs.progress_interval_ms;
  ps.drain_timeout_ms = rs.drain_timeout_ms;
  size_t stops_seen = 0;
  pace_driver(driver, ps, "cafmesh-demo", now_ms, handle_events, [&](int64_t now) {
    if (driver.stops().size() > stops_seen) {
      stops_seen = driver.stops().size();
      stop_started[driver.stops().back().name] = now;
    }
  });
  driver.set_entries(mesh.entries(self));
  out = driver.finish();
  if (auto exits = mesh.node_exits()) {
    auto in = out->input;
    in.node_exits = exits->first;
    in.node_exits_unclean = exits->second;
    out = make_report(std::move(in));
  }
  if (rs.on_report)
    rs.on_report(*out);
  // Teardown, bounded: a watchdog ends the process with the report's exit code if the
  // actor systems do not come down within `teardown_timeout_ms` (a safety net: it also
  // covers `run_in_process` destroying the systems after this returns; a normal run ends
  // long before it fires).
  arm_teardown_watchdog("cafmesh-demo", out->exit_code, rs.teardown_timeout_ms, kill_children);
  mesh.teardown(self);
  return out;
}

} // namespace

std::optional<report> run_in_process(const scenario& s, const run_settings& rs) {
  std::vector<std::unique_ptr<process>> systems;
  systems.push_back(std::make_unique<process>());
  auto& sys = *systems.front()->sys;
  std::optional<report> out;
  {
    caf::scoped_actor self{sys};
    in_process_mesh mesh{s, sys, caf::actor_cast<caf::actor>(self)};
    uint16_t primary_port = 0;
    bool ok = mesh.start_client(primary_port);
    // Silos first (homes), then the hubs; the factories read the hub map when asked.
    for (auto& name : s.silos)
      ok = ok && mesh.start_silo(name);
    if (ok)
      mesh.build_hubs();
    out = run_live(s, rs, self, mesh, ok, "in_process");
    for (auto& p : mesh.take_systems())
      systems.push_back(std::move(p));
  }
  // The application system and every silo system come down together (still under the
  // teardown watchdog run_live started): the application's workers ran silo actors that
  // spawned, and refer to those silos' loggers until they end (system_teardown.hpp).
  destroy_together(systems);
  return out;
}

std::optional<report> run_processes(const scenario& s, const run_settings& rs,
                                    const std::string& node_binary) {
  process app;
  auto& sys = *app.sys;
  std::optional<report> out;
  {
    caf::scoped_actor self{sys};
    process_mesh mesh{s, sys, caf::actor_cast<caf::actor>(self), node_binary};
    bool ok = mesh.start();
    out = run_live(s, rs, self, mesh, ok, "processes");
    if (out && mesh.unclean_exits() > 0)
      std::cerr << "cafmesh-demo: " << mesh.unclean_exits()
                << " node process(es) did not exit cleanly\n";
  }
  return out;
}

} // namespace cafmesh::mainjob
