#include "hosting_steps.hpp"

#include <chrono>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/routing/entry_atoms.hpp"

namespace cafmesh::lifecycle::hosting {

caf::expected<config::mesh_config>
checked_config(const config::mesh_config& cfg, const std::string& path, config::process_role role,
               const std::string& builder) {
  auto loaded = path.empty() ? config::validate(cfg) : config::load_file(path);
  if (!loaded.ok)
    return to_error(fault{mesh_errc::config_invalid, builder + ": invalid configuration"
                                                       + (path.empty() ? std::string{} : " " + path)
                                                       + ": " + loaded.message()});
  if (loaded.value.mesh.role != role)
    return to_error(
      fault{mesh_errc::config_invalid, builder + " builds a " + config::to_string(role)
                                         + " process; mesh.process_role is "
                                         + config::to_string(loaded.value.mesh.role)});
  return std::move(loaded.value);
}

membership_join_bound join_bound_of(const config::mesh_config& cfg) {
  membership_join_bound b;
  b.bound = std::chrono::milliseconds(cfg.membership.max_join_time_ms);
  if (cfg.membership.provider == "etcd") {
    std::string endpoints;
    for (const auto& e : cfg.membership.etcd_endpoints)
      endpoints += (endpoints.empty() ? "" : ", ") + e;
    b.table = "on etcd at " + endpoints;
    b.remedy = "is etcd running and reachable from this host? start it, check "
               "membership.etcd_endpoints, or raise the bound";
  } else if (cfg.network.primary_port != 0) {
    b.table = "at " + cfg.network.primary_host + ":" + std::to_string(cfg.network.primary_port);
    b.remedy = "is the primary process (the one that hosts the development table) running "
               "there? start it first, check network.primary_host and "
               "network.primary_port, or raise the bound";
  } else {
    b.table = "in this process (the development table)";
    b.remedy = "this process hosts the table itself, so its actor system is overloaded or "
               "stopping; raise the bound or restart it";
  }
  return b;
}

void apply_embedded_defaults(config::mesh_config& cfg, std::optional<log::level> explicit_level,
                             bool config_given) {
  if (!config_given)
    cfg.routing.saturation_warn_after_ms = 1000;
  if (explicit_level)
    log::set_stderr_level(*explicit_level);
  else if (config_given)
    log::configure(cfg.log);
  else
    log::set_stderr_level(log::level::warning);
}

caf::error add_hubs(const routing::hub_table_actor& table,
                    const std::vector<std::pair<std::string, routing::async_hub_handler>>& hubs) {
  for (auto& [pattern, handler] : hubs)
    if (auto why = routing::hub_pattern_error(pattern); !why.empty())
      return to_error(fault{mesh_errc::config_invalid, why});
  // From one thread to one actor: the table takes them in this order, before anything the
  // silo sends it later.
  for (auto& [pattern, handler] : hubs)
    caf::anon_send(table, routing::ht_add_atom::value, pattern, handler);
  return caf::error{};
}

uint64_t wall_generation() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
}

routing::correlating_entry_actor spawn_entry(caf::actor_system& sys, const config::mesh_config& cfg,
                                             const silo_address& addr, const caf::actor& routing,
                                             const caf::actor& claimer) {
  routing::correlating_entry_options eo;
  eo.self_address = entry_address(cfg, addr);
  eo.routing = routing;
  eo.claimer = claimer;
  eo.routing_cfg = cfg.routing;
  eo.attach = cfg.attach;
  return routing::spawn_correlating_entry(sys, std::move(eo));
}

routing::address entry_address(const config::mesh_config& cfg, const silo_address& addr) {
  auto name = cfg.mesh.name.empty() ? std::string{"process"} : cfg.mesh.name;
  return routing::address{
    "client", name + "-" + std::to_string(addr.port) + "-" + std::to_string(addr.generation), {}};
}

lifecycle_observer_actor spawn_claim_at_active(caf::actor_system& sys, caf::actor claimer,
                                               routing::address addr) {
  return sys.spawn(
    [claimer, addr](lifecycle_observer_actor::pointer) -> lifecycle_observer_actor::behavior_type {
      return {
        [=](start_stage_atom, stage) {
          caf::anon_send(claimer, routing::pc_claim_atom::value, addr);
          return caf::ok_atom::value;
        },
        [=](stop_stage_atom, stage, bool) { return caf::ok_atom::value; },
        [=](budget_expired_atom) {},
      };
    });
}

} // namespace cafmesh::lifecycle::hosting
