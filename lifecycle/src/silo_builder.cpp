#include "cafmesh/lifecycle/silo_builder.hpp"

#include <chrono>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/whole_ms.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/lifecycle/net_silo.hpp"
#include "cafmesh/routing/node_path_resolver.hpp"
#include "hosting_steps.hpp"
#include "mesh_process_state.hpp"

namespace cafmesh::lifecycle {

silo::silo(std::unique_ptr<state> st) : mesh_process(std::move(st)) {
  // nop
}

const caf::actor& silo::placement() const {
  return st_->placement;
}

const silo_components& silo::components() const {
  return st_->components;
}

const net_endpoint& silo::endpoint() const {
  return st_->endpoint;
}

silo_builder::silo_builder(caf::actor_system& sys) : sys_(sys) {
  // nop
}

silo_builder& silo_builder::config(config::mesh_config cfg) {
  cfg_ = std::move(cfg);
  config_given_ = true;
  return *this;
}

silo_builder& silo_builder::config_file(std::string path) {
  config_path_ = std::move(path);
  config_given_ = true;
  return *this;
}

silo_builder& silo_builder::grains(std::function<bool(grain_registry&)> add) {
  grain_types_.push_back(
    [add = std::move(add)](grain_registry& reg, const detail::placement_slot_ptr&) {
      return add(reg);
    });
  return *this;
}

silo_builder& silo_builder::hub(std::string pattern, routing::hub_handler handler) {
  return hub(std::move(pattern), routing::as_async(std::move(handler)));
}

silo_builder& silo_builder::hub(std::string pattern, routing::async_hub_handler handler) {
  hubs_.emplace_back(std::move(pattern), [handler = std::move(handler)](
                                           const detail::placement_slot_ptr&) { return handler; });
  return *this;
}

silo_builder& silo_builder::hub(std::string pattern, grain_hub_handler handler) {
  hubs_.emplace_back(std::move(pattern),
                     [handler = std::move(handler)](const detail::placement_slot_ptr& slot) {
                       return routing::async_hub_handler{
                         [handler, slot](caf::event_based_actor* self, const routing::envelope& d,
                                         routing::hub_responder r) {
                           handler(self, d, std::move(r), grain_factory{slot->get()});
                         }};
                     });
  return *this;
}

silo_builder& silo_builder::path_resolver(caf::actor resolver) {
  resolver_ = std::move(resolver);
  return *this;
}

silo_builder& silo_builder::cluster(in_process_cluster_ptr cluster) {
  cluster_ = std::move(cluster);
  network_ = false;
  return *this;
}

silo_builder& silo_builder::network() {
  network_ = true;
  cluster_ = nullptr;
  return *this;
}

silo_builder& silo_builder::generation(uint64_t g) {
  generation_ = g;
  return *this;
}

silo_builder& silo_builder::at(silo_address addr) {
  at_ = std::move(addr);
  return *this;
}

silo_builder& silo_builder::without_entry() {
  with_entry_ = false;
  return *this;
}

silo_builder& silo_builder::failure_observer(caf::actor observer) {
  failure_observer_ = std::move(observer);
  return *this;
}

silo_builder& silo_builder::hub_factory(caf::actor factory) {
  hub_factory_ = std::move(factory);
  return *this;
}

silo_builder& silo_builder::log_level(log::level lvl) {
  log_level_ = lvl;
  return *this;
}

silo_builder& silo_builder::admin(std::string host, uint16_t port) {
  admin_ = config::admin_section{true, std::move(host), port};
  return *this;
}

silo_builder& silo_builder::override_options(std::function<void(silo_options&)> f) {
  overrides_.push_back(std::move(f));
  return *this;
}

caf::expected<silo> silo_builder::build() {
  auto cfg = hosting::checked_config(cfg_, config_path_, config::process_role::silo_host,
                                     "silo_builder");
  if (!cfg)
    return cfg.error();
  hosting::apply_embedded_defaults(*cfg, log_level_, config_given_);
  auto admin = prepare_admin(sys_, *cfg, admin_);
  if (!admin)
    return admin.error();
  auto st = std::make_unique<mesh_process::state>();
  st->sys = &sys_;
  st->role = "silo_host";
  auto table = routing::spawn_hub_table(sys_, routing::hub_key_form::node_prefix, cfg->routing);
  std::vector<caf::actor> helpers{caf::actor_cast<caf::actor>(table)};
  if (admin->probe)
    helpers.push_back(caf::actor_cast<caf::actor>(admin->probe));
  auto exit_helpers = [helpers]() {
    for (auto& a : helpers)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  };
  // The grain factories of its grains and hubs: bound to its placement service once spawned.
  auto slot = std::make_shared<detail::placement_slot>();
  std::vector<std::pair<std::string, routing::async_hub_handler>> hubs;
  for (auto& [pattern, make] : hubs_)
    hubs.emplace_back(pattern, make(slot));
  if (auto err = hosting::add_hubs(table, hubs)) {
    exit_helpers();
    return err;
  }
  auto resolver = resolver_;
  if (!resolver) {
    resolver = caf::actor_cast<caf::actor>(routing::spawn_node_path_resolver(sys_));
    helpers.push_back(resolver);
  }
  silo_options so;
  so.cfg = *cfg;
  // The application's own hub factory is no hub table: it publishes no hub patterns.
  auto factory = hub_factory_ ? hub_factory_ : caf::actor_cast<caf::actor>(table);
  so.hubs = caf::actor_cast<routing::hub_factory_actor>(factory);
  so.hubs_is_table = !hub_factory_;
  so.failure_observer = failure_observer_;
  so.resolver = caf::actor_cast<routing::path_resolver_actor>(resolver);
  so.grains = [types = grain_types_, slot](grain_registry& reg) {
    for (auto& add : types)
      add(reg, slot);
  };
  if (admin->probe) {
    so.stopping_recipients.push_back(admin->probe);
    so.on_quiescence_hold = [meters = admin->meters](caf::timespan hold) {
      meters->on_hold(whole_ms(hold));
    };
  }
  auto apply_overrides = [&] {
    for (auto& f : overrides_)
      f(so);
    // A test bed's own hub factory is no hub table either.
    if (caf::actor_cast<caf::actor>(so.hubs) != caf::actor_cast<caf::actor>(table))
      so.hubs_is_table = false;
  };
  if (network_) {
    apply_overrides(); // the endpoint sets `self`, `link` and `oracle` itself
    auto gen = generation_ ? *generation_ : hosting::wall_generation();
    auto ns = start_net_silo(sys_, so, gen);
    if (!ns) {
      for (auto& a : helpers)
        caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
      return ns.error();
    }
    st->components = ns->s;
    st->endpoint = ns->endpoint;
    st->owned = ns->s.all();
    st->owned.push_back(caf::actor_cast<caf::actor>(ns->endpoint.link));
    st->owned.push_back(caf::actor_cast<caf::actor>(ns->endpoint.oracle));
  } else {
    st->cluster = cluster_ ? cluster_
                           : make_in_process_cluster(sys_, std::chrono::milliseconds(
                                                             cfg->network.failure_detection_ms));
    so.self = at_ ? *at_ : st->cluster->next_address();
    if (generation_)
      so.self.generation = *generation_;
    so.link = st->cluster->link();
    so.oracle = st->cluster->oracle();
    so.centre = caf::actor{};
    apply_overrides(); // may replace any of them (test beds: another oracle)
    st->components = spawn_silo(sys_, so);
    st->owned = st->components.all();
  }
  st->owned.insert(st->owned.end(), helpers.begin(), helpers.end());
  auto& c = st->components;
  st->addr = c.addr;
  st->host = c.host;
  st->routing = c.routing;
  st->placement = c.placement;
  slot->set(c.placement);
  st->hub_table = table;
  caf::anon_send(table, routing::ht_routing_atom::value, c.routing,
                 caf::actor_cast<caf::actor>(c.claimer));
  admin_sources src{st->role,  c.addr,           c.host,      caf::actor_cast<caf::actor>(c.core),
                    c.routing, c.catalog,        c.placement, c.agent,
                    c.gateway, st->endpoint.link};
  admin->serve_into(sys_, std::move(src), st->admin);
  // The hubs' deliveries in progress count in the gauge until what they sent has landed.
  caf::anon_send(table, routing::ht_quiescence_atom::value, c.gauge, c.core);
  // Each component declares its own stage: the application hubs hold the stop of Active
  // until their deliveries in progress ended (application_hub.hpp).
  caf::anon_send(c.subject, subscribe_atom::value, stages::active, std::string{"application-hubs"},
                 caf::actor_cast<lifecycle_observer_actor>(table));
  if (with_entry_) {
    // The entry's pod hub is claimed once this silo is Active (its stage Active starts after
    // BecomeActive published it): placement puts new activations on Active silos only, and
    // a claim made while Joining would place the pod hub on another silo.
    st->entry = hosting::spawn_entry(sys_, *cfg, c.addr, c.routing, caf::actor{});
    auto entry = caf::actor_cast<caf::actor>(st->entry);
    auto claim = hosting::spawn_claim_at_active(sys_, caf::actor_cast<caf::actor>(c.claimer),
                                                hosting::entry_address(*cfg, c.addr));
    caf::anon_send(c.subject, subscribe_atom::value, stages::active,
                   std::string{"correlating-entry"}, claim);
    st->owned.push_back(entry);
    st->owned.push_back(caf::actor_cast<caf::actor>(claim));
  }
  return silo{std::move(st)};
}

} // namespace cafmesh::lifecycle
