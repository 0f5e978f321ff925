#include "cafmesh/lifecycle/monolith_builder.hpp"

#include <caf/all.hpp>

#include "cafmesh/routing/routing_service.hpp"
#include "hosting_steps.hpp"
#include "mesh_process_state.hpp"

namespace cafmesh::lifecycle {

monolith::monolith(std::unique_ptr<state> st) : mesh_process(std::move(st)) {
  // nop
}

monolith_builder::monolith_builder(caf::actor_system& sys) : sys_(sys) {
  cfg_.mesh.role = config::process_role::monolith;
}

monolith_builder& monolith_builder::config(config::mesh_config cfg) {
  if (cfg.mesh.role == config::process_role::silo_host)
    cfg.mesh.role = config::process_role::monolith;
  cfg_ = std::move(cfg);
  config_given_ = true;
  return *this;
}

monolith_builder& monolith_builder::config_file(std::string path) {
  config_path_ = std::move(path);
  config_given_ = true;
  return *this;
}

monolith_builder& monolith_builder::hub(std::string pattern, routing::hub_handler handler) {
  return hub(std::move(pattern), routing::as_async(std::move(handler)));
}

monolith_builder& monolith_builder::hub(std::string pattern, routing::async_hub_handler handler) {
  hubs_.emplace_back(std::move(pattern), std::move(handler));
  return *this;
}

monolith_builder& monolith_builder::log_level(log::level lvl) {
  log_level_ = lvl;
  return *this;
}

monolith_builder& monolith_builder::admin(std::string host, uint16_t port) {
  admin_ = config::admin_section{true, std::move(host), port};
  return *this;
}

caf::expected<monolith> monolith_builder::build() {
  auto cfg = hosting::checked_config(cfg_, config_path_, config::process_role::monolith,
                                     "monolith_builder");
  if (!cfg)
    return cfg.error();
  hosting::apply_embedded_defaults(*cfg, log_level_, config_given_);
  auto admin = prepare_admin(sys_, *cfg, admin_);
  if (!admin)
    return admin.error();
  auto st = std::make_unique<mesh_process::state>();
  st->sys = &sys_;
  st->role = "monolith";
  st->addr = silo_address{"local", 0, hosting::wall_generation()};
  auto table = routing::spawn_hub_table(sys_, routing::hub_key_form::host_path, cfg->routing);
  auto ro = routing::routing_service_options::from(*cfg);
  ro.role = config::process_role::monolith;
  if (cfg->mesh.name.empty())
    ro.process_name = "monolith";
  ro.hubs = caf::actor_cast<routing::hub_factory_actor>(table);
  auto service = routing::spawn_routing_service(sys_, ro);
  auto routing = caf::actor_cast<caf::actor>(service);
  caf::anon_send(table, routing::ht_routing_atom::value, routing, caf::actor{});
  host_options ho;
  ho.silo_name = "monolith";
  ho.recipients.push_back(service);
  if (admin->probe)
    ho.recipients.push_back(admin->probe);
  ho.budgets = cfg->host;
  auto host = spawn_host(sys_, std::move(ho));
  auto entry = hosting::spawn_entry(sys_, *cfg, st->addr, routing, caf::actor{});
  st->host = host;
  st->routing = routing;
  st->hub_table = table;
  st->entry = entry;
  st->owned = {caf::actor_cast<caf::actor>(table), caf::actor_cast<caf::actor>(entry),
               caf::actor_cast<caf::actor>(host), routing};
  if (admin->probe)
    st->owned.push_back(caf::actor_cast<caf::actor>(admin->probe));
  if (auto err = hosting::add_hubs(table, hubs_)) {
    release_actors(*st, false);
    st->torn_down = true;
    return err;
  }
  admin_sources src{st->role,     st->addr,        host,         caf::actor{},
                    routing,      caf::actor{},    caf::actor{}, membership_agent_actor{},
                    caf::actor{}, net_link_actor{}};
  admin->serve_into(sys_, std::move(src), st->admin);
  return monolith{std::move(st)};
}

} // namespace cafmesh::lifecycle
