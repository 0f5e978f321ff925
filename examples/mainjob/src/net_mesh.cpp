#include "cafmesh/mainjob/net_mesh.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
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
#include "cafmesh/lifecycle/atoms.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/lifecycle/observer.hpp"
#include "cafmesh/lifecycle/stage.hpp"
#include "cafmesh/mainjob/driver.hpp"
#include "cafmesh/mainjob/mesh_parts.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/routing/hub_grains.hpp"
#include "cafmesh/routing/net_silo.hpp"
#include "cafmesh/routing/node_path_resolver.hpp"
#include "cafmesh/routing/pure_client.hpp"
#include "cafmesh/routing/register_types.hpp"
#include "cafmesh/routing/router_ports.hpp"
#include "cafmesh/routing/routing_service.hpp"

namespace cafmesh::mainjob {

namespace {

/// `(dm_up_atom, std::string silo, uint64_t generation, bool ok)`: host start answered.
using dm_up_atom = caf::atom_constant<caf::atom("dmup")>;
/// `(dm_down_atom, std::string silo, uint64_t generation)`: host stop answered.
using dm_down_atom = caf::atom_constant<caf::atom("dmdown")>;

using clock_type = std::chrono::steady_clock;

/// The stages the probe watches (for the progress line and the owners' move).
const std::vector<lifecycle::stage> probe_stages{
  lifecycle::stages::active,           lifecycle::stages::become_active,
  lifecycle::stages::grain_deactivation, lifecycle::stages::application_services,
  lifecycle::stages::runtime_services, lifecycle::stages::runtime_initialize_plus_1,
  lifecycle::stages::runtime_initialize};

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
    register_types(*cfg);
    cfg->load<caf::io::middleman>();
    cfg->set("scheduler.max-threads", size_t{2});
    cfg->set("logger.verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(*cfg);
  }

  ~process() {
    sys.reset(); // before its configuration
  }
};

/// One incarnation of a scenario silo.
struct silo_run {
  std::unique_ptr<process> proc;
  routing::net_silo ns;
  std::vector<caf::actor> extras; ///< factory, resolver, probes
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
  caf::actor ep;
  routing::address addr;
  bool owner = false;
  std::string home;       ///< silo whose routing service it sends through ("" = client)
  bool moving = false;    ///< owner: frames held until the old home's Active stop ended
  std::deque<std::pair<routing::envelope, int64_t>> held; ///< (envelope, deadline ms or -1)
};

class in_process_mesh : public mesh_port {
public:
  in_process_mesh(const scenario& s, caf::actor_system& app, caf::actor main)
    : s_(s), app_(app), main_(std::move(main)) {
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
    auto ep = start_net_link(app_, client_cfg_.network, wall_generation());
    if (!ep) {
      std::cerr << "cafmesh-demo: client network endpoint: " << app_.render(ep.error())
                << "\n";
      return false;
    }
    client_ep_ = *ep;
    primary_port = ep->addr.port;
    primary_port_ = primary_port;
    routing::pure_client_options po;
    po.cfg = client_cfg_;
    po.self = ep->addr;
    po.link = ep->link;
    po.oracle = ep->oracle;
    client_ = routing::spawn_pure_client(app_, po);
    client_routing_ = client_.routing;
    return true;
  }

  /// Builds the application hubs (after the silos exist: homes).
  void build_hubs() {
    auto n = static_cast<int64_t>(s_.silos.size());
    auto& t = s_.traffic;
    auto& hubs = hubs_; // the factories hold this map; filled before any traffic
    for (int64_t i = 0; i < t.node_hubs; ++i) {
      auto a = routing::address::from(node_hub_address(i));
      auto home = s_.silos[static_cast<size_t>(i % n)];
      auto ep = routing::spawn_hub_endpoint(app_, a, routing_of(home), client_cfg_.routing,
                                            true, main_);
      node_hubs_[home].push_back(ep);
      (*hubs)[node_hub_address(i).substr(5)] = ep;
      all_.push_back(ep);
    }
    for (int64_t i = 0; i < t.owner_hubs; ++i) {
      auto text = owner_hub_address(i);
      auto a = routing::address::from(text);
      auto home = s_.silos[static_cast<size_t>(i % n)];
      auto ep = routing::spawn_hub_endpoint(app_, a, routing_of(home), client_cfg_.routing,
                                            false, main_);
      (*hubs)[text.substr(5)] = ep;
      all_.push_back(ep);
      sender_hub h;
      h.ep = ep;
      h.addr = a;
      h.owner = true;
      h.home = home;
      caf::anon_send(routing_of(home), routing::rs_register_atom::value, a, ep);
      senders_.emplace(text, std::move(h));
    }
    for (int64_t i = 0; i < t.portal_hubs; ++i) {
      auto text = portal_hub_address(i);
      auto a = routing::address::from(text);
      auto origin = portal_origin(s_, i);
      sender_hub h;
      h.addr = a;
      if (origin.rfind("silo:", 0) == 0) {
        h.home = origin.substr(5);
        h.ep = routing::spawn_hub_endpoint(app_, a, routing_of(h.home), client_cfg_.routing,
                                           false, main_);
        attach_portal(h);
      } else {
        h.ep = routing::spawn_hub_endpoint(app_, a, client_routing_, client_cfg_.routing,
                                           false, main_);
        caf::anon_send(client_routing_, routing::rs_register_atom::value, a, h.ep);
      }
      all_.push_back(h.ep);
      senders_.emplace(text, std::move(h));
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
    cfg.network.primary_port = primary_port_;
    routing::silo_options so;
    so.cfg = cfg;
    auto factory = caf::actor_cast<caf::actor>(spawn_hub_map_factory(sys, hubs_));
    auto resolver = caf::actor_cast<caf::actor>(routing::spawn_node_path_resolver(sys));
    so.hubs = caf::actor_cast<routing::hub_factory_actor>(factory);
    so.resolver = caf::actor_cast<routing::path_resolver_actor>(resolver);
    so.failure_observer = main_;
    run->generation = next_generation();
    auto started = routing::start_net_silo(sys, so, run->generation);
    if (!started) {
      std::cerr << "cafmesh-demo: silo " << name << ": " << sys.render(started.error())
                << "\n";
      caf::anon_send_exit(factory, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(resolver, caf::exit_reason::user_shutdown);
      return false;
    }
    run->ns = *started;
    run->extras = {factory, resolver};
    auto probe = caf::actor_cast<caf::actor>(spawn_stage_probe(sys, main_, name, run->generation));
    run->extras.push_back(probe);
    for (auto st : probe_stages)
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

  void submit(const planned_delivery& d) override {
    auto i = senders_.find(d.sender);
    if (i == senders_.end()) {
      std::cerr << "cafmesh-demo: no sender hub " << d.sender << "\n";
      return;
    }
    routing::envelope e;
    e.id = d.id;
    e.sender = i->second.addr;
    e.target = routing::address::from(d.target);
    e.payload_type = d.payload_type;
    e.payload_json = render_payload(d);
    if (!d.stream.empty())
      e.ordering_key = d.stream;
    e.answer_suppressed = d.answer_suppressed;
    if (d.answer_suppressed)
      suppressed_.insert(d.id);
    int64_t deadline = d.kind == delivery_kind::request ? s_.traffic.request_deadline_ms : -1;
    auto& h = i->second;
    if (h.moving) {
      h.held.emplace_back(std::move(e), deadline);
      return;
    }
    send(h, std::move(e), deadline);
  }

  void stop_silo(const std::string& name) override {
    auto& slot = silos_[name];
    slot.available = false;
    if (!slot.current)
      return;
    // Node hubs answer through another silo from now on; owners wait (file comment).
    auto next = next_available(name);
    for (auto& ep : node_hubs_[name])
      if (!next.empty()) {
        caf::anon_send(ep, routing::ep_rehome_atom::value, routing_of(next));
        node_hubs_[next].push_back(ep);
      }
    if (!next.empty())
      node_hubs_[name].clear();
    for (auto& [text, h] : senders_)
      if (h.owner && h.home == name)
        h.moving = true;
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

  /// The Active stage of `name` stopped: its legs ended; owners move.
  void active_stopped(const std::string& name) {
    auto next = next_available(name);
    if (next.empty())
      return; // no other silo: they move when one is Active again
    move_owners(name, next);
  }

  /// Silo `name` is Active (generation `gen`).
  void silo_up(const std::string& name) {
    silos_[name].available = true;
    // Owners stranded without any available silo move here.
    for (auto& [text, h] : senders_)
      if (h.owner && h.moving && !silos_[h.home].available)
        move_owner(h, name);
    // Co-hosted portals of this silo register and claim again on the new incarnation.
    for (auto& [text, h] : senders_)
      if (!h.owner && h.home == name) {
        caf::anon_send(h.ep, routing::ep_rehome_atom::value, routing_of(name));
        attach_portal(h);
      }
  }

  bool is_suppressed(const std::string& id) const { return suppressed_.count(id) > 0; }

  size_t start_failures() const { return start_failures_; }

  uint64_t generation_of(const std::string& name) {
    auto& slot = silos_[name];
    return slot.current ? slot.current->generation : 0;
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

  /// Stops everything and destroys every silo system (the application system is the
  /// caller's).
  void shutdown() {
    for (auto& a : all_)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    client_.stop_all();
    for (auto& a : {client_ep_.link, client_ep_.oracle})
      if (a)
        caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    for (auto& [name, slot] : silos_) {
      if (slot.current) {
        slot.current->stop_all();
        slot.past.push_back(std::move(slot.current));
      }
    }
    for (auto& [name, slot] : silos_)
      slot.past.clear();
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

  caf::actor routing_of(const std::string& name) {
    auto& slot = silos_[name];
    return slot.current ? slot.current->ns.s.routing : caf::actor{};
  }

  std::string next_available(const std::string& name) const {
    auto i = std::find(s_.silos.begin(), s_.silos.end(), name);
    auto start = i == s_.silos.end() ? 0 : static_cast<size_t>(i - s_.silos.begin());
    for (size_t k = 1; k <= s_.silos.size(); ++k) {
      auto& cand = s_.silos[(start + k) % s_.silos.size()];
      auto j = silos_.find(cand);
      if (cand != name && j != silos_.end() && j->second.available)
        return cand;
    }
    return {};
  }

  void send(sender_hub& h, routing::envelope e, int64_t deadline) {
    if (deadline >= 0)
      caf::anon_send(h.ep, routing::ep_request_atom::value, std::move(e), deadline);
    else
      caf::anon_send(h.ep, routing::ep_post_atom::value, std::move(e));
  }

  void move_owners(const std::string& from, const std::string& to) {
    for (auto& [text, h] : senders_)
      if (h.owner && h.home == from && h.moving)
        move_owner(h, to);
  }

  void move_owner(sender_hub& h, const std::string& to) {
    h.home = to;
    h.moving = false;
    auto r = routing_of(to);
    caf::anon_send(r, routing::rs_register_atom::value, h.addr, h.ep);
    caf::anon_send(h.ep, routing::ep_rehome_atom::value, r);
    while (!h.held.empty()) {
      auto [e, deadline] = std::move(h.held.front());
      h.held.pop_front();
      send(h, std::move(e), deadline);
    }
  }

  void attach_portal(sender_hub& h) {
    auto r = routing_of(h.home);
    if (!r)
      return;
    caf::anon_send(r, routing::rs_register_atom::value, h.addr, h.ep);
    caf::anon_send(silos_[h.home].current->ns.s.claimer, routing::pc_claim_atom::value,
                   h.addr);
  }

  scenario s_;
  caf::actor_system& app_;
  caf::actor main_;
  config::mesh_config client_cfg_;
  net_endpoint client_ep_;
  uint16_t primary_port_ = 0;
  routing::pure_client client_;
  caf::actor client_routing_;
  std::map<std::string, silo_slot> silos_;
  std::map<std::string, std::vector<caf::actor>> node_hubs_; ///< by home silo
  std::map<std::string, sender_hub> senders_;
  std::shared_ptr<std::map<std::string, caf::actor>> hubs_
    = std::make_shared<std::map<std::string, caf::actor>>();
  std::vector<caf::actor> all_;
  std::unordered_set<std::string> suppressed_;
  uint64_t last_generation_ = 0;
  size_t start_failures_ = 0;
};

bool ends_with(const std::string& x, const std::string& suffix) {
  return x.size() >= suffix.size()
         && x.compare(x.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

std::optional<report> run_in_process(const scenario& s, const run_settings& rs) {
  process app;
  auto& sys = *app.sys;
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
    demo_driver driver{s, mesh, "in_process"};
    driver.write_ledger_events_to(rs.ledger_out);
    auto t0 = clock_type::now();
    auto now_ms = [&] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0)
        .count();
    };
    // Wait until every silo is Active before the traffic starts (bounded).
    size_t up = 0;
    bool failed_start = !ok;
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
        [&](mp_stage_atom, const std::string&, uint64_t, bool, int32_t) { got = true; },
        [&](routing::ep_event_atom, const std::string&, const std::string&, uint8_t,
            const std::string&) { got = true; },
        caf::after(std::chrono::seconds(30)) >> [&] { failed_start = true; });
      if (failed_start || !got)
        break;
    }
    if (failed_start) {
      std::cerr << "cafmesh-demo: the mesh did not start; no traffic was sent\n";
      mesh.shutdown();
      return std::nullopt;
    }
    // Let the pod-hub claims and the client's first snapshot settle (bounded, 1 s).
    for (auto until = clock_type::now() + std::chrono::seconds(1); clock_type::now() < until;)
      self->receive([](caf::message&) {},
                    caf::after(std::chrono::milliseconds(50)) >> [] {});
    t0 = clock_type::now();
    auto mode = resolve(rs.progress, rs.is_tty);
    auto interval = rs.is_tty ? std::min<int64_t>(250, rs.progress_interval_ms)
                              : rs.progress_interval_ms;
    int64_t next_progress = interval;
    std::optional<int64_t> drain_deadline;
    std::map<std::string, int64_t> stop_started;  // silo -> when its stop began
    std::map<std::string, int64_t> active_stopped; // silo -> when stage Active's stop ended
    bool drained_out = false;
    auto handle_events = [&](std::chrono::milliseconds wait) {
      bool first = true;
      for (int n = 0; n < 4096; ++n) {
        bool got = false;
        self->receive(
          [&](routing::ep_event_atom, const std::string& kind, const std::string& id,
              uint8_t v, const std::string& text) {
            got = true;
            if (ends_with(id, "-response"))
              return; // the node hubs' own responses are not scenario deliveries
            auto t = now_ms();
            auto verdict = static_cast<routing::verdict>(v);
            if (kind == "received")
              driver.on_landed(id, t);
            else if (kind == "response")
              driver.on_response(id, t);
            else if (kind == "nack")
              driver.on_nack(id, verdict, text, t);
            else if (kind == "deadline")
              driver.on_deadline(id, t);
            else if (kind == "duplicate")
              driver.on_duplicate_dropped(id, t);
            else if (kind == "suppressed")
              driver.on_suppressed_failure(id, verdict, text, t);
            else if (kind == "entry_failed") {
              auto vv = verdict != routing::verdict::failed ? verdict : routing::text_rule(text);
              if (mesh.is_suppressed(id))
                driver.on_suppressed_failure(id, vv, text, t);
              else
                driver.on_nack(id, vv, text, t);
            }
          },
          [&](mp_stage_atom, const std::string& name, uint64_t gen, bool starting,
              int32_t st) {
            got = true;
            auto t = now_ms();
            if (!starting && st == lifecycle::stages::become_active) {
              active_stopped[name] = t;
              mesh.active_stopped(name);
            }
            driver.on_silo(silo_event{name, gen,
                                      starting ? roll_phase::starting : roll_phase::stopping,
                                      st, std::nullopt},
                           t);
          },
          [&](dm_up_atom, const std::string& name, uint64_t gen, bool started) {
            got = true;
            if (!started) {
              std::cerr << "cafmesh-demo: silo " << name << " (generation " << gen
                        << ") failed to start\n";
              return;
            }
            mesh.silo_up(name);
            driver.on_silo(
              silo_event{name, gen, roll_phase::active, std::nullopt, std::nullopt}, now_ms());
          },
          [&](dm_down_atom, const std::string& name, uint64_t gen) {
            got = true;
            auto t = now_ms();
            std::optional<int64_t> hold;
            auto a = stop_started.find(name);
            auto b = active_stopped.find(name);
            if (a != stop_started.end() && b != active_stopped.end() && b->second >= a->second)
              hold = b->second - a->second;
            driver.on_silo(silo_event{name, gen, roll_phase::stopped, std::nullopt, hold}, t);
          },
          caf::after(first ? wait : std::chrono::milliseconds(0)) >> [] {});
        first = false;
        if (!got)
          break;
      }
    };
    for (;;) {
      auto now = now_ms();
      auto before = driver.stops().size();
      driver.advance(now);
      if (driver.stops().size() > before)
        stop_started[driver.stops().back().name] = now;
      if (now >= next_progress) {
        if (rs.out && mode != progress_mode::off) {
          *rs.out << progress_text(driver.progress(now), mode);
          rs.out->flush();
        }
        next_progress = now + interval;
      }
      if (driver.traffic_done()) {
        if (!drain_deadline)
          drain_deadline = now + rs.drain_timeout_ms;
        if (driver.quiescent())
          break;
        if (now >= *drain_deadline) {
          drained_out = true;
          break;
        }
      }
      int64_t wait = next_progress - now;
      if (auto w = driver.next_wakeup_ms())
        wait = std::min(wait, *w - now);
      wait = std::clamp<int64_t>(wait, 0, 50);
      handle_events(std::chrono::milliseconds(wait));
    }
    if (rs.out && mode == progress_mode::terminal)
      *rs.out << "\n";
    if (drained_out)
      std::cerr << "cafmesh-demo: " << driver.ledger().in_flight()
                << " deliveries still had no terminal outcome " << rs.drain_timeout_ms
                << " ms after the traffic ended\n";
    out = driver.finish();
    if (rs.on_report)
      rs.on_report(*out);
    // Teardown, bounded: a watchdog ends the process with the report's exit code if the
    // actor systems do not come down within `teardown_timeout_ms`.
    auto code = out->exit_code;
    auto bound = rs.teardown_timeout_ms;
    std::thread([code, bound] {
      std::this_thread::sleep_for(std::chrono::milliseconds(bound));
      std::cerr << "cafmesh-demo: teardown took longer than " << bound
                << " ms; exiting with the report's code " << code << "\n";
      std::_Exit(code);
    }).detach();
    auto asked = mesh.halt_all();
    for (size_t got = 0; got < asked;) {
      bool any = false;
      self->receive([&](dm_down_atom, const std::string&, uint64_t) { any = true; ++got; },
                    [&](caf::message&) { any = true; },
                    caf::after(std::chrono::seconds(10)) >> [] {});
      if (!any)
        break;
    }
    mesh.shutdown();
  }
  return out;
}

} // namespace cafmesh::mainjob
