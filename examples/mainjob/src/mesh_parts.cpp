#include "cafmesh/mainjob/mesh_parts.hpp"

#include <chrono>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"

namespace cafmesh::mainjob {

caf::actor spawn_app_hub(caf::actor_system& sys, routing::address self_address,
                         caf::actor routing, config::routing_section cfg, bool respond,
                         caf::actor observer) {
  cfg.endpoint_record_max = 0;
  // A plain handle: hub factories answer one and the routing service registers one.
  return caf::actor_cast<caf::actor>(routing::spawn_hub_endpoint(
    sys, std::move(self_address), std::move(routing), cfg, respond, std::move(observer)));
}

lifecycle::lifecycle_observer_actor spawn_stage_probe(caf::actor_system& sys, caf::actor sink,
                                                      std::string silo, uint64_t generation) {
  using probe = lifecycle::lifecycle_observer_actor;
  return sys.spawn([=](probe::pointer) -> probe::behavior_type {
    return {
      [=](lifecycle::start_stage_atom, lifecycle::stage st) {
        caf::anon_send(sink, mp_stage_atom::value, silo, generation, true, st);
        return caf::ok_atom::value;
      },
      [=](lifecycle::stop_stage_atom, lifecycle::stage st, bool) {
        caf::anon_send(sink, mp_stage_atom::value, silo, generation, false, st);
        return caf::ok_atom::value;
      },
      [](lifecycle::budget_expired_atom) {},
    };
  });
}

routing::hub_factory_actor spawn_hub_map_factory(caf::actor_system& sys,
                                                 std::shared_ptr<const hub_map> hubs) {
  using factory = routing::hub_factory_actor;
  return sys.spawn([=](factory::pointer) -> factory::behavior_type {
    return {
      [=](routing::hf_build_atom, const std::string& key) -> caf::result<caf::actor> {
        auto i = hubs->find(key);
        if (i == hubs->end())
          return to_error(fault{mesh_errc::not_found, "the application has no hub '" + key + "'"});
        return i->second;
      },
    };
  });
}

namespace {

struct echo_factory_state {
  caf::actor routing;
  std::map<std::string, caf::actor> hubs;
  static const char* name;
};

const char* echo_factory_state::name = "echo-hub-factory";

} // namespace

caf::actor spawn_echo_hub_factory(caf::actor_system& sys, const config::routing_section& cfg,
                                  std::shared_ptr<const hub_map> fixed, caf::actor observer) {
  return sys.spawn([cfg, fixed, observer](caf::stateful_actor<echo_factory_state>* self)
                     -> caf::behavior {
    return {
      [=](mp_routing_atom, caf::actor& routing) { self->state.routing = std::move(routing); },
      [=](routing::hf_build_atom, const std::string& key) -> caf::result<caf::actor> {
        auto& st = self->state;
        if (fixed)
          if (auto i = fixed->find(key); i != fixed->end())
            return i->second;
        if (auto i = st.hubs.find(key); i != st.hubs.end())
          return i->second;
        if (!st.routing)
          return to_error(fault{mesh_errc::silo_unavailable,
                                "the echo application has no routing service yet"});
        auto addr = routing::address::from("node/" + key);
        auto ep = spawn_app_hub(self->system(), addr, st.routing, cfg, true, observer);
        self->link_to(ep);
        caf::anon_send(st.routing, routing::rs_register_atom::value, addr, ep);
        st.hubs.emplace(key, ep);
        return ep;
      },
    };
  });
}

} // namespace cafmesh::mainjob
