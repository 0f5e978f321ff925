#include "live_mesh.hpp"

extern char** environ;

namespace cafmesh::mainjob {

namespace net_mesh_detail {

namespace {

// -- the multi-process mesh (`--processes`) -------------------------------------------

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
        // Its actors died with it: drop the handles, which would keep the proxies of a
        // node that is gone alive for the rest of the run (one set per restart).
        p.agent = caf::actor{};
        p.routing = caf::actor{};
        p.link = caf::actor{};
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
    for (auto& a : {caf::actor_cast<caf::actor>(client_.ep.link),
                    caf::actor_cast<caf::actor>(client_.ep.oracle), control_})
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
                                  "--demo-silo",  name,
                                  // Three or more node processes share this machine's cores
                                  // with the demo (docs/building.md#the-scheduler).
                                  "--scheduler",  "sharing"};
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

} // namespace

} // namespace net_mesh_detail

std::optional<report> run_processes(const scenario& s, const run_settings& rs,
                                    const std::string& node_binary) {
  using namespace net_mesh_detail;
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
