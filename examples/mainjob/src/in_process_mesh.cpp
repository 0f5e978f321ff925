#include "live_mesh.hpp"

namespace cafmesh::mainjob {

namespace net_mesh_detail {

namespace {

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
                   .hub_factory(factory)
                   .failure_observer(main_)
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
    for (auto& a : {caf::actor_cast<caf::actor>(client_.ep.link),
                    caf::actor_cast<caf::actor>(client_.ep.oracle)})
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

} // namespace

} // namespace net_mesh_detail

std::optional<report> run_in_process(const scenario& s, const run_settings& rs) {
  using namespace net_mesh_detail;
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

} // namespace cafmesh::mainjob
