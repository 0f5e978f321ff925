#include "cafmesh/mainjob/sim_mesh.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/lifecycle/hub_homing.hpp"
#include "cafmesh/mainjob/driver.hpp"
#include "cafmesh/mainjob/mesh_parts.hpp"
#include "cafmesh/mainjob/traffic.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/silo_world.hpp"

namespace cafmesh::mainjob {

using testing::fixture;

namespace {

/// `(sr_up_atom, std::string silo, uint64_t generation, bool ok)`: host start answered.
using sr_up_atom = caf::atom_constant<caf::atom("srup")>;
/// `(sr_down_atom, std::string silo, uint64_t generation)`: host stop answered.
using sr_down_atom = caf::atom_constant<caf::atom("srdown")>;

/// One event the recorder collected, stamped with the virtual ms it arrived at.
struct sim_event {
  enum class what { ep, stage, up, down } kind = what::ep;
  int64_t t_ms = 0;
  std::string a; ///< ep: event kind; others: silo name
  std::string id;
  uint8_t verdict = 0;
  std::string text;
  uint64_t generation = 0;
  bool flag = false; ///< stage: starting; up: ok
  int32_t stage = 0;
};

struct recorder_state {
  fixture* fx = nullptr;
  std::vector<sim_event> events;
  static inline const char* name = "test.sim_mesh.recorder";
};

/// Collects every hub-endpoint event, failure-observer report, probe report and host answer;
/// the run loop drains them into the driver.
caf::behavior recorder(caf::stateful_actor<recorder_state>* self, fixture* fx) {
  self->state.fx = fx;
  auto push = [self](sim_event e) {
    e.t_ms = self->state.fx->now_ms();
    self->state.events.push_back(std::move(e));
  };
  return {
    [=](routing::ep_event_atom, const std::string& kind, const std::string& id, uint8_t v,
        const std::string& text) {
      sim_event e;
      e.kind = sim_event::what::ep;
      e.a = kind;
      e.id = id;
      e.verdict = v;
      e.text = text;
      push(std::move(e));
    },
    [=](mp_stage_atom, const std::string& silo, uint64_t gen, bool starting, int32_t st) {
      sim_event e;
      e.kind = sim_event::what::stage;
      e.a = silo;
      e.generation = gen;
      e.flag = starting;
      e.stage = st;
      push(std::move(e));
    },
    [=](sr_up_atom, const std::string& silo, uint64_t gen, bool ok) {
      sim_event e;
      e.kind = sim_event::what::up;
      e.a = silo;
      e.generation = gen;
      e.flag = ok;
      push(std::move(e));
    },
    [=](sr_down_atom, const std::string& silo, uint64_t gen) {
      sim_event e;
      e.kind = sim_event::what::down;
      e.a = silo;
      e.generation = gen;
      push(std::move(e));
    },
  };
}

/// Asks `host` one thing and tells the recorder `answer(ok)`; then quits.
template <class Atom, class... Ts>
void ask_host(fixture& fx, lifecycle::host_actor host, caf::actor rec,
              std::function<caf::message(bool)> answer, Atom a, Ts... xs) {
  fx.track(fx.sys.spawn([=](caf::event_based_actor* self) {
    self->request(host, caf::infinite, a, xs...)
      .then(
        [=](caf::ok_atom) {
          self->send(rec, answer(true));
          self->quit();
        },
        [=](caf::error&) {
          self->send(rec, answer(false));
          self->quit();
        });
  }));
}

const std::vector<lifecycle::stage> probe_stages{
  lifecycle::stages::active,           lifecycle::stages::become_active,
  lifecycle::stages::grain_deactivation, lifecycle::stages::application_services,
  lifecycle::stages::runtime_services, lifecycle::stages::runtime_initialize_plus_1,
  lifecycle::stages::runtime_initialize};

bool ends_with(const std::string& x, const std::string& suffix) {
  return x.size() >= suffix.size()
         && x.compare(x.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Applies the scenario's `config` section (every section but `mesh`, `simulation` and
/// `network`) to a process configuration of the world; none when the section is empty.
std::function<void(config::mesh_config&)> scenario_configure(const scenario& s) {
  if (s.config_json == "{}")
    return nullptr;
  auto loaded = process_config(s, config::process_role::silo_host, "sim");
  if (!loaded.ok)
    throw std::runtime_error("scenario config: " + loaded.message());
  auto over = loaded.value;
  return [over](config::mesh_config& c) {
    auto keep_mesh = c.mesh;
    auto keep_sim = c.simulation;
    auto keep_net = c.network;
    c = over;
    c.mesh = keep_mesh;
    c.simulation = keep_sim;
    c.network = keep_net;
  };
}

struct layered_factory_state {
  static inline const char* name = "test.sim_mesh.hub_factory";
};

/// A hub factory answering the keys of `fixed` (hubs shared by every silo: the owners) with
/// their hub and every other key with what `app` (the application's hub table) answers.
caf::actor spawn_layered_hub_factory(caf::actor_system& sys, std::shared_ptr<const hub_map> fixed,
                                     routing::hub_factory_actor app) {
  return sys.spawn([fixed, app](caf::stateful_actor<layered_factory_state>* self)
                     -> caf::behavior {
    return {
      [=](routing::hf_build_atom, const std::string& key) -> caf::result<caf::actor> {
        if (auto i = fixed->find(key); i != fixed->end())
          return i->second;
        return self->delegate(app, routing::hf_build_atom::value, key);
      },
    };
  });
}

/// The simulated mesh: `mesh_port` over a `silo_world` (file comment of sim_mesh.hpp).
class sim_mesh : public mesh_port {
public:
  sim_mesh(fixture& fx, testing::silo_world& w, const scenario& s, caf::actor rec,
           sim_topology topo)
    : fx_(fx), w_(w), s_(s), rec_(std::move(rec)), topo_(std::move(topo)),
      configure_(scenario_configure(s)),
      homing_(s.silos, {[this](const std::string& name) { return routing_of(name); },
                        [this](const std::string& name, const routing::address& a) {
                          caf::anon_send(w_.at(current_.at(name)).claimer,
                                         routing::pc_claim_atom::value, a);
                        }}) {
    // nop
  }

  /// Builds and starts every silo (answers arrive at the recorder as `sr_up`).
  void start_silos() {
    for (auto& name : s_.silos)
      build_silo(name);
  }

  /// Adds the pure clients: client k (from 1) homed on silo (k - 1) % silos.
  void add_clients() {
    for (int64_t k = 1; k <= s_.pure_clients; ++k) {
      auto gw = current_.at(s_.silos[static_cast<size_t>(k - 1) % s_.silos.size()]);
      auto c = w_.add_client("client" + std::to_string(k), gw, configure_, rec_);
      clients_.push_back(c.routing);
      client_addrs_["client" + std::to_string(k)] = c.addr;
    }
  }

  /// Builds the application hubs (after the silos are Active and the clients exist).
  void build_hubs() {
    auto n = static_cast<int64_t>(s_.silos.size());
    auto& t = s_.traffic;
    for (int64_t i = 0; i < t.node_hubs && !topo_.answering_hubs_in_silos; ++i) {
      auto a = routing::address::from(node_hub_address(i));
      auto home = s_.silos[static_cast<size_t>(i % n)];
      // Homing and the hub factory hold application hubs: plain handles.
      auto ep = caf::actor_cast<caf::actor>(fx_.track(
        routing::spawn_hub_endpoint(fx_.sys, a, routing_of(home), w_.cfg.routing, true, rec_)));
      homing_.add(lifecycle::hub_home_kind::answering, a, ep, home);
      (*hubs_)[node_hub_address(i).substr(5)] = ep;
    }
    for (int64_t i = 0; i < t.owner_hubs; ++i) {
      auto text = owner_hub_address(i);
      auto a = routing::address::from(text);
      auto home = s_.silos[static_cast<size_t>(i % n)];
      auto ep = caf::actor_cast<caf::actor>(fx_.track(routing::spawn_hub_endpoint(
        fx_.sys, a, routing_of(home), w_.cfg.routing, false, rec_)));
      (*hubs_)[text.substr(5)] = ep;
      homing_.add(lifecycle::hub_home_kind::owner, a, ep, home);
    }
    for (int64_t i = 0; i < t.portal_hubs; ++i) {
      auto a = routing::address::from(portal_hub_address(i));
      auto origin = portal_origin(s_, i);
      if (origin.rfind("silo:", 0) == 0) {
        auto home = origin.substr(5);
        auto ep = caf::actor_cast<caf::actor>(fx_.track(routing::spawn_hub_endpoint(
          fx_.sys, a, routing_of(home), w_.cfg.routing, false, rec_)));
        homing_.add(lifecycle::hub_home_kind::portal, a, ep, home);
      } else {
        auto k = std::stoul(origin.substr(7)); // client:{k}
        auto r = clients_.at(k - 1);
        auto ep = caf::actor_cast<caf::actor>(fx_.track(
          routing::spawn_hub_endpoint(fx_.sys, a, r, w_.cfg.routing, false, rec_)));
        homing_.add(lifecycle::hub_home_kind::client, a, ep, {}, r);
      }
    }
  }

  // -- mesh_port ----------------------------------------------------------------------

  void submit(const planned_delivery& d) override {
    if (d.answer_suppressed)
      suppressed_.insert(d.id);
    int64_t deadline = d.kind == delivery_kind::request ? s_.traffic.request_deadline_ms : -1;
    if (!homing_.submit(d.sender, to_envelope(d, routing::address::from(d.sender)), deadline))
      throw std::logic_error("sim_mesh: no hub " + d.sender + " to send " + d.id);
  }

  void stop_silo(const std::string& name) override {
    auto addr = current_.at(name);
    // Node hubs answer through another silo from now on; owners wait (file comment).
    homing_.stopping(name);
    stopped_.push_back(addr);
    auto gen = addr.generation;
    w_.entry(addr).gone = true;
    ask_host(
      fx_, w_.at(addr).host, rec_,
      [name, gen](bool) { return caf::make_message(sr_down_atom::value, name, gen); },
      lifecycle::host_halt_atom::value, true);
  }

  void restart_silo(const std::string& name) override { build_silo(name); }

  void stall_silo(const std::string& name, bool detected) override {
    caf::anon_send(w_.net, sim_stall_atom::value, current_.at(name), detected);
  }

  void unstall_silo(const std::string& name) override {
    caf::anon_send(w_.net, sim_unstall_atom::value, current_.at(name));
  }

  bool kill_silo(const std::string& name) override {
    auto addr = current_.at(name);
    // A crash: the network discards its traffic, its actors and its application end at
    // once, no lifecycle stop; owners homed there move now (nothing will drain).
    caf::anon_send(w_.net, sim_kill_atom::value, addr);
    w_.at(addr).stop_all();
    w_.entry(addr).gone = true;
    end_app(addr);
    homing_.killed(name);
    killed_.insert(addr);
    return true;
  }

  bool signal_silo_again(const std::string& name) override {
    auto addr = current_.at(name);
    if (killed_.count(addr) > 0)
      return true;
    auto gen = addr.generation;
    ask_host(
      fx_, w_.at(addr).host, rec_,
      [name, gen](bool) { return caf::make_message(sr_down_atom::value, name, gen); },
      lifecycle::host_halt_atom::value, false);
    return true;
  }

  bool observes_success(const planned_delivery& d) const override {
    // The user's application hubs report no landing (sim_application).
    return d.kind == delivery_kind::request || topo_.app.hubs.empty()
           || d.target.rfind("node/Org/", 0) != 0;
  }

  // -- events ---------------------------------------------------------------------------

  /// The Active stage of `name` stopped: its legs ended; owners move.
  void active_stopped(const std::string& name) { homing_.active_stopped(name); }

  /// The host stop of incarnation `gen` of `name` answered: its runtime services are torn
  /// down, so the hubs co-hosted in its process (the portals) cannot send until it runs
  /// again. Its application ends with it (users' topology).
  void silo_down(const std::string& name, uint64_t gen) {
    auto cur = current_.at(name);
    if (cur.generation != gen)
      return; // a late answer (second signal) of an incarnation already replaced
    end_app(cur);
    homing_.down(name);
  }

  /// Silo `name` is Active.
  void silo_up(const std::string& name) { homing_.up(name); }

  bool is_suppressed(const std::string& id) const { return suppressed_.count(id) > 0; }

  /// Every incarnation that was stopped gracefully, in order.
  const std::vector<silo_address>& stopped() const { return stopped_; }

  /// The current incarnation of silo `name`, or the address of pure client `name`.
  silo_address address_of(const std::string& name) const {
    if (auto i = current_.find(name); i != current_.end())
      return i->second;
    if (auto i = client_addrs_.find(name); i != client_addrs_.end())
      return i->second;
    throw std::logic_error("sim_mesh: no silo or client '" + name + "'");
  }

private:
  void end_app(const silo_address& addr) {
    if (auto i = apps_.find(addr); i != apps_.end()) {
      caf::anon_send_exit(i->second, caf::exit_reason::kill);
      apps_.erase(i);
    }
  }

  void build_silo(const std::string& name) {
    testing::silo_world_options o;
    o.start = false;
    o.failure_observer = rec_;
    o.configure = configure_;
    o.grains = topo_.app.grains;
    // The user's hubs get this incarnation's components once it is built.
    std::vector<std::pair<std::shared_ptr<routing::async_hub_handler>, sim_hub_maker>> later;
    if (topo_.answering_hubs_in_silos)
      for (auto& [pattern, make] : topo_.app.hubs) {
        auto h = std::make_shared<routing::async_hub_handler>();
        o.hubs.emplace_back(pattern, [h](caf::event_based_actor* self,
                                         const routing::envelope& d,
                                         routing::hub_responder r) { (*h)(self, d, r); });
        later.emplace_back(h, make);
      }
    lifecycle::silo_components* s = nullptr;
    auto i = current_.find(name);
    if (i == current_.end())
      s = &w_.add_silo(name, o);
    else
      s = &w_.restart(i->second, o);
    current_[name] = s->addr;
    for (auto& [h, make] : later)
      *h = make(*s);
    caf::actor factory;
    if (topo_.answering_hubs_in_silos && !topo_.app.hubs.empty()) {
      // The silo's hub table (the application's hubs) ends with its process.
      apps_[s->addr] = caf::actor_cast<caf::actor>(s->slots->hubs);
      factory = fx_.track(spawn_layered_hub_factory(fx_.sys, hubs_, s->slots->hubs));
    } else if (topo_.answering_hubs_in_silos) {
      factory = fx_.track(spawn_echo_hub_factory(fx_.sys, w_.cfg.routing, hubs_, rec_));
      caf::anon_send(factory, mp_routing_atom::value, s->routing);
      apps_[s->addr] = factory;
    } else {
      factory = fx_.track(caf::actor_cast<caf::actor>(spawn_hub_map_factory(fx_.sys, hubs_)));
    }
    s->slots->hubs = caf::actor_cast<routing::hub_factory_actor>(factory);
    auto gen = s->addr.generation;
    auto probe = fx_.track(caf::actor_cast<caf::actor>(spawn_stage_probe(fx_.sys, rec_, name, gen)));
    for (auto st : probe_stages)
      caf::anon_send(s->subject, lifecycle::subscribe_atom::value, st,
                     std::string{"test-probe"},
                     caf::actor_cast<lifecycle::lifecycle_observer_actor>(probe));
    ask_host(
      fx_, s->host, rec_,
      [name, gen](bool ok) { return caf::make_message(sr_up_atom::value, name, gen, ok); },
      lifecycle::host_start_atom::value);
  }

  caf::actor routing_of(const std::string& name) {
    return w_.at(current_.at(name)).routing;
  }

  fixture& fx_;
  testing::silo_world& w_;
  scenario s_;
  caf::actor rec_;
  sim_topology topo_;
  std::function<void(config::mesh_config&)> configure_;
  /// Users' topology: the application (echo hub factory) of every running incarnation.
  std::map<silo_address, caf::actor> apps_;
  std::map<std::string, silo_address> current_;
  std::map<std::string, silo_address> client_addrs_;
  std::vector<caf::actor> clients_;
  std::shared_ptr<std::map<std::string, caf::actor>> hubs_
    = std::make_shared<std::map<std::string, caf::actor>>();
  std::set<std::string> suppressed_;
  /// The application's sending hubs, kept homed on an available silo (hub_homing.hpp).
  lifecycle::hub_homing homing_;
  std::vector<silo_address> stopped_;
  std::set<silo_address> killed_;
};

/// Sends net fault `f` to the network (endpoints resolved now).
void apply(fixture& fx, testing::silo_world& w, const sim_mesh& mesh, const net_fault& f) {
  auto a = mesh.address_of(f.a);
  auto b = mesh.address_of(f.b);
  caf::anon_send(w.net, sim_note_atom::value, "chaos " + to_string(f));
  switch (f.kind) {
    case net_fault::what::delay:
      caf::anon_send(w.net, sim_delay_atom::value, a, b, f.min_ms, f.max_ms);
      break;
    case net_fault::what::partition:
      caf::anon_send(w.net, sim_partition_atom::value, a, b);
      break;
    case net_fault::what::heal:
      caf::anon_send(w.net, sim_heal_atom::value, a, b);
      break;
    case net_fault::what::drop: {
      drop_rule r;
      r.src = a;
      r.dst = b;
      r.count = f.count;
      caf::anon_send(w.net, sim_drop_atom::value, r);
      break;
    }
  }
  fx.run();
}

} // namespace

std::string to_string(const net_fault& f) {
  std::ostringstream o;
  o << f.at_ms << " ";
  switch (f.kind) {
    case net_fault::what::delay:
      o << "delay " << f.a << "->" << f.b << " " << f.min_ms << ".." << f.max_ms << "ms";
      break;
    case net_fault::what::partition:
      o << "partition " << f.a << "|" << f.b;
      break;
    case net_fault::what::heal:
      o << "heal " << f.a << "|" << f.b;
      break;
    case net_fault::what::drop:
      o << "drop " << f.a << "->" << f.b << " x" << f.count;
      break;
  }
  return o.str();
}

scenario sim_roll_scenario(uint64_t seed) {
  auto s = default_scenario();
  s.name = "sim-roll-three-silos";
  s.seed = seed;
  s.duration_s = 16;
  s.rate_per_s = 500;
  s.silos = {"A", "B", "C"};
  s.pure_clients = 2;
  s.traffic.streams = 20;
  s.traffic.subscribers_per_stream = 2;
  s.traffic.owner_hubs = 6;
  s.traffic.node_hubs = 6;
  s.traffic.portal_hubs = 12;
  s.traffic.senders = sender_placement::pure_client;
  s.roll.order = {"A", "B", "C"};
  s.roll.first_stop_at_ms = 2000;
  s.roll.restart_delay_ms = 1000;
  s.roll.interval_ms = 2000;
  s.expect.max_request_deadlines.reset();
  return s;
}

sim_run run_sim(const scenario& s, sim_topology topo) {
  sim_options o;
  o.topology = std::move(topo);
  return run_sim(s, o);
}

sim_run run_sim(const scenario& s, const sim_options& opts) {
  auto wall0 = std::chrono::steady_clock::now();
  sim_run out;
  fixture fx;
  {
    testing::silo_world w{fx, s.seed, opts.link_latency_min_ms, opts.link_latency_max_ms};
    auto rec = fx.track(fx.sys.spawn(recorder, &fx));
    auto& events = fixture::state_of<recorder_state>(rec).events;
    sim_mesh mesh{fx, w, s, rec, opts.topology};
    demo_driver driver{s, mesh, "simulation"};
    std::ostringstream ledger_out;
    driver.write_ledger_events_to(&ledger_out);
    auto net_faults = opts.net_faults;
    std::stable_sort(net_faults.begin(), net_faults.end(),
                     [](const net_fault& x, const net_fault& y) { return x.at_ms < y.at_ms; });
    size_t net_pos = 0;
    int64_t t0 = 0;
    std::map<std::string, int64_t> stop_started;
    std::map<std::string, int64_t> active_stopped_at;
    std::set<std::pair<std::string, uint64_t>> down_seen;
    std::vector<std::pair<silo_address, int64_t>> answered; // incarnation, fixture ms
    auto drain = [&]() -> bool {
      if (events.empty())
        return false;
      std::vector<sim_event> batch;
      batch.swap(events);
      // Hold first: a reaction to an earlier event of this batch must not be sent through
      // a routing service that is already gone.
      for (auto& e : batch)
        if (e.kind == sim_event::what::down)
          mesh.silo_down(e.a, e.generation);
      for (auto& e : batch) {
        auto t = e.t_ms - t0;
        switch (e.kind) {
          case sim_event::what::ep: {
            if (ends_with(e.id, "-response"))
              break; // the node hubs' own responses are not scenario deliveries
            auto verdict = static_cast<routing::verdict>(e.verdict);
            if (e.a == "received")
              driver.on_landed(e.id, t);
            else if (e.a == "response")
              driver.on_response(e.id, t);
            else if (e.a == "nack")
              driver.on_nack(e.id, verdict, e.text, t);
            else if (e.a == "deadline")
              driver.on_deadline(e.id, t);
            else if (e.a == "duplicate")
              driver.on_duplicate_dropped(e.id, t);
            else if (e.a == "suppressed")
              driver.on_suppressed_failure(e.id, verdict, e.text, t);
            else if (e.a == "entry_failed")
              driver.on_hub_event(e.a, e.id, verdict, e.text, mesh.is_suppressed(e.id), t);
            break;
          }
          case sim_event::what::stage:
            if (!e.flag && e.stage == lifecycle::stages::become_active) {
              active_stopped_at[e.a] = t;
              mesh.active_stopped(e.a);
            }
            driver.on_silo(silo_event{e.a, e.generation,
                                      e.flag ? roll_phase::starting : roll_phase::stopping,
                                      e.stage, std::nullopt},
                           t);
            break;
          case sim_event::what::up:
            if (!e.flag)
              throw std::runtime_error("silo " + e.a + " failed to start");
            mesh.silo_up(e.a);
            driver.on_silo(silo_event{e.a, e.generation, roll_phase::active, std::nullopt,
                                      std::nullopt},
                           t);
            break;
          case sim_event::what::down: {
            if (!down_seen.emplace(e.a, e.generation).second) {
              ++out.second_answers; // the answer to a second signal: joined the first
              break;
            }
            out.stop_answers.emplace_back(e.a + "#" + std::to_string(e.generation), t);
            answered.emplace_back(mesh.address_of(e.a), e.t_ms);
            std::optional<int64_t> hold;
            auto a = stop_started.find(e.a);
            auto b = active_stopped_at.find(e.a);
            if (a != stop_started.end() && b != active_stopped_at.end()
                && b->second >= a->second)
              hold = b->second - a->second;
            driver.on_silo(silo_event{e.a, e.generation, roll_phase::stopped, std::nullopt,
                                      hold},
                           t);
            break;
          }
        }
      }
      return true;
    };
    // Start: every silo Active, then the clients, the hubs, and 1 s to settle.
    mesh.start_silos();
    size_t up = 0;
    auto started = fx.run_until(
      [&] {
        for (auto& e : events)
          if (e.kind == sim_event::what::up)
            ++up;
        drain();
        return up == s.silos.size();
      },
      std::chrono::seconds(30));
    if (!started)
      throw std::runtime_error("run_sim: not every silo started within 30 s");
    mesh.add_clients();
    mesh.build_hubs();
    fx.run_for(std::chrono::seconds(1));
    drain();
    // Traffic, in virtual time. The end: quiescent after the traffic, or the drain bound.
    t0 = fx.now_ms();
    std::optional<int64_t> drain_deadline;
    for (;;) {
      // Events first: the driver must know of every stop before it submits again.
      fx.run();
      if (drain())
        continue;
      auto now = fx.now_ms() - t0;
      if (net_pos < net_faults.size() && net_faults[net_pos].at_ms <= now) {
        apply(fx, w, mesh, net_faults[net_pos++]);
        continue;
      }
      auto before = driver.stops().size();
      driver.advance(now);
      if (driver.stops().size() > before)
        stop_started[driver.stops().back().name] = now;
      fx.run();
      if (drain())
        continue;
      if (driver.traffic_done() && net_pos == net_faults.size()) {
        if (!drain_deadline)
          drain_deadline = now + opts.drain_ms;
        if (driver.quiescent() || now >= *drain_deadline)
          break;
      }
      auto wake = driver.next_wakeup_ms();
      if (net_pos < net_faults.size()
          && (!wake || net_faults[net_pos].at_ms < *wake))
        wake = net_faults[net_pos].at_ms;
      auto timer = fx.next_timeout_ms();
      if (wake && (timer < 0 || *wake + t0 <= timer))
        fx.run_to(std::max(*wake + t0, fx.now_ms()));
      else if (timer >= 0 && (!drain_deadline || timer - t0 <= *drain_deadline))
        fx.fire_next_timeout();
      else if (drain_deadline)
        fx.run_to(*drain_deadline + t0);
      else
        break; // nothing left to move anything
    }
    out.quiescent = driver.quiescent();
    out.end_ms = fx.now_ms() - t0;
    driver.mark_unconfirmed(out.end_ms);
    driver.write_ledger_events_to(nullptr);
    out.rep = driver.finish();
    for (auto& m : out.rep.input.faults)
      if (m.kind == "kill")
        out.kills.emplace_back(m.silo, m.at_ms);
    out.ledger_lines = ledger_out.str();
    if (auto dump = std::getenv("SIMROLL_LEDGER_DUMP"))
      std::ofstream{dump} << out.ledger_lines;
    if (auto dump = std::getenv("SIMROLL_LOG_DUMP")) {
      std::ofstream f{std::string{dump} + "." + std::to_string(s.seed)};
      for (auto& l : fx.logs.lines())
        f << (l.t_ms - t0) << " " << l.component << " " << static_cast<int>(l.lvl) << " "
          << l.text << "\n";
    }
    out.ledger_digest = fnv1a64(out.ledger_lines);
    auto digest = testing::ask<uint64_t>(fx, w.net, sim_digest_atom::value);
    fx.run();
    if (!digest->ok())
      throw std::runtime_error("run_sim: the network did not answer its digest");
    out.network_digest = digest->value;
    if (auto dump = std::getenv("SIMROLL_DIR_DUMP")) {
      std::ofstream f{dump};
      for (auto& e : w.silos) {
        if (e.gone)
          continue;
        auto xs = testing::ask<std::vector<activation_address>>(fx, e.s.partition,
                                                                 dir_entries_atom::value);
        fx.run();
        for (auto& a : xs->value)
          f << e.s.addr.to_string() << ": " << a.to_string() << "\n";
      }
    }
    if (auto dump = std::getenv("SIMROLL_NET_DUMP")) {
      auto tr = testing::ask<std::vector<std::string>>(fx, w.net, sim_trace_atom::value);
      fx.run();
      std::ofstream f{dump};
      for (auto& l : tr->value)
        f << l << "\n";
    }
    // Each stopping silo logged its quiescence outcome (docs/behaviour/quiescence.md).
    for (auto& a : mesh.stopped()) {
      auto none = w.first(a, "routing quiescence: no routing work in flight");
      auto landed = w.first(a, "routing quiescence: work landed after");
      if (none.t_ms < 0 && landed.t_ms < 0)
        out.stop_log_failures.push_back(a.to_string());
    }
    out.stops = mesh.stopped().size();
    // No routing code of a silo runs after its stop answered: none of its routing
    // components logs a line after that instant (docs/testing.md#chaos).
    static const std::set<std::string> routing_components{
      "entry", "hub", "hub_endpoint", "node_hub", "outcome_tracker", "pod_hub",
      "pod_hub_claimer", "pool", "quiescence", "router_core", "routing", "routing_service",
      "stream_transport", "sync"};
    for (auto& [addr, at] : answered)
      for (auto& l : w.trace_of(addr))
        if (l.t_ms > at && routing_components.count(l.component) > 0)
          out.routing_after_stop.push_back(addr.to_string() + " +"
                                           + std::to_string(l.t_ms - at) + " ms "
                                           + l.component + ": " + l.text);
    // No leg abandoned, none stuck.
    for (auto needle : {"abandoning", "did not land within", "releasing with"})
      for (auto& l : fx.logs.find(needle))
        out.abandoned.push_back(l.text);
    // Every re-sent request landed: its chain ends in a response.
    std::map<std::string, std::string> kind_of, outcome_of;
    std::set<std::string> landed_ids;
    std::istringstream in{out.ledger_lines};
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      auto ev = j.at("event").get<std::string>();
      auto id = j.value("id", std::string{});
      if (ev == "accepted")
        kind_of[id] = j.at("kind").get<std::string>();
      else if (ev == "landed")
        landed_ids.insert(id);
      else if (ev == "response" || ev == "nack" || ev == "deadline")
        outcome_of.emplace(id, ev == "nack" ? "nack " + j.at("verdict").get<std::string>()
                                            : ev);
    }
    for (auto& [id, o] : outcome_of)
      if (o == "deadline") {
        ++out.deadlines;
        if (landed_ids.count(id) == 0)
          out.deadline_not_landed.push_back(id);
      }
    for (auto& [id, kind] : kind_of)
      if (kind == "request" && id.find("-r") != std::string::npos) {
        ++out.resent_requests;
        auto o = outcome_of.find(id);
        auto text = o == outcome_of.end() ? std::string{"none"} : o->second;
        // Landed at its target, or a transient NACK followed by the next re-send of the
        // chain (the chain then ends later).
        if (landed_ids.count(id) == 0 && text != "nack shutting_down"
            && text != "nack unavailable")
          out.resent_not_landed.push_back(id + ": " + text);
      }
  }
  fx.shutdown();
  out.real_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - wall0)
                  .count();
  return out;
}

} // namespace cafmesh::mainjob
