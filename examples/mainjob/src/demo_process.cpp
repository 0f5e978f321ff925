#include "cafmesh/mainjob/demo_process.hpp"

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/mainjob/mesh_parts.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/routing/hub_grains.hpp"
#include "cafmesh/lifecycle/silo_builder.hpp"
#include "cafmesh/routing/node_path_resolver.hpp"
#include "cafmesh/routing/register_types.hpp"
#include "cafmesh/routing/routing_service.hpp"

namespace cafmesh::mainjob {

const std::vector<lifecycle::stage>& demo_probe_stages() {
  static const std::vector<lifecycle::stage> xs{
    lifecycle::stages::active,           lifecycle::stages::become_active,
    lifecycle::stages::grain_deactivation, lifecycle::stages::application_services,
    lifecycle::stages::runtime_services, lifecycle::stages::runtime_initialize_plus_1,
    lifecycle::stages::runtime_initialize};
  return xs;
}

void register_demo_types(caf::actor_system_config& cfg) {
  register_types(cfg);
  cfg.add_message_type<routing::routing_service_stats>("cafmesh.routing_service_stats");
}

std::optional<demo_link> parse_demo_link(const std::string& host_port, const std::string& silo) {
  auto colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= host_port.size() || silo.empty())
    return std::nullopt;
  uint32_t port = 0;
  for (auto c : host_port.substr(colon + 1)) {
    if (c < '0' || c > '9')
      return std::nullopt;
    port = port * 10 + static_cast<uint32_t>(c - '0');
    if (port > 65535)
      return std::nullopt;
  }
  if (port == 0)
    return std::nullopt;
  return demo_link{host_port.substr(0, colon), static_cast<uint16_t>(port), silo};
}

namespace {

struct agent_state {
  std::vector<caf::actor> endpoints; ///< every hub endpoint spawned here
  static inline const char* name = "cafmesh.demo_agent";
};

caf::behavior demo_agent(caf::stateful_actor<agent_state>* self, caf::actor routing,
                         caf::actor claimer, config::routing_section cfg, caf::actor sink) {
  self->set_exit_handler([=](caf::exit_msg& msg) {
    for (auto& ep : self->state.endpoints)
      self->send_exit(ep, caf::exit_reason::user_shutdown);
    self->quit(msg.reason);
  });
  return {
    [=](dp_spawn_atom, const routing::address& a) -> caf::result<caf::actor> {
      auto ep = spawn_app_hub(self->system(), a, routing, cfg, false, sink);
      self->state.endpoints.push_back(ep);
      auto rp = self->make_response_promise<caf::actor>();
      self->request(routing, std::chrono::seconds(10), routing::rs_register_atom::value, a, ep)
        .then([=](caf::ok_atom) mutable { rp.deliver(ep); },
              [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    },
    [=](dp_claim_atom, const routing::address& a) {
      self->send(claimer, routing::pc_claim_atom::value, a);
    },
    [=](dp_stats_atom) -> caf::result<routing::routing_service_stats> {
      auto rp = self->make_response_promise<routing::routing_service_stats>();
      self->request(routing, std::chrono::seconds(5), routing::rs_stats_atom::value)
        .then([=](const routing::routing_service_stats& x) mutable { rp.deliver(x); },
              [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    },
  };
}

} // namespace

int run_demo_silo(caf::actor_system& sys, const config::mesh_config& mc, const demo_link& link,
                  uint64_t generation, log::logger& lg) {
  auto control = sys.middleman().remote_actor(link.host, link.port);
  if (!control) {
    lg.error("cannot reach cafmesh-demo at " + link.host + ":" + std::to_string(link.port)
             + ": " + sys.render(control.error()));
    return 1;
  }
  caf::scoped_actor self{sys};
  auto hubs = std::make_shared<hub_map>();
  caf::actor sink;
  caf::error err;
  self->request(*control, std::chrono::seconds(10), dp_join_atom::value, link.silo)
    .receive(
      [&](const std::vector<std::string>& keys, const std::vector<caf::actor>& handles,
          const caf::actor& s) {
        for (size_t i = 0; i < keys.size() && i < handles.size(); ++i)
          (*hubs)[keys[i]] = handles[i];
        sink = s;
      },
      [&](caf::error& e) { err = e; });
  if (err || !sink) {
    lg.error("cafmesh-demo did not answer the join of silo " + link.silo + ": "
             + sys.render(err));
    return 1;
  }
  // This process's application: the answering hub of a node hub key is created here on its
  // first activation on this silo (and ends with the process); the demo's own hubs (the
  // owner proxies) are answered from its map. Their events go to the demo.
  auto factory = spawn_echo_hub_factory(sys, mc.routing, std::shared_ptr<const hub_map>(hubs),
                                        sink);
  std::vector<caf::actor> extras{factory};
  auto stop_extras = [&] {
    for (auto& a : extras)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  };
  // The demo counts every pod hub and routing call of a silo: no correlating entry.
  auto built = lifecycle::silo_builder{sys}
                 .config(mc)
                 .network()
                 .generation(generation)
                 .without_entry()
                 .hub_factory(factory)
                 // Router failures of answer-suppressed deliveries reach the demo's ledger
                 // (no NACK carries them, docs/behaviour/routing.md#nacks), as in the
                 // in-process mesh.
                 .failure_observer(sink)
                 .build();
  if (!built) {
    lg.error("silo not built: " + sys.render(built.error()));
    stop_extras();
    return 1;
  }
  auto& silo = *built;
  const auto& c = silo.components();
  caf::anon_send(factory, mp_routing_atom::value, c.routing);
  std::cout << "ADDR " << c.addr.to_string() << std::endl;
  auto probe = caf::actor_cast<caf::actor>(spawn_stage_probe(sys, sink, link.silo, generation));
  extras.push_back(probe);
  for (auto st : demo_probe_stages())
    caf::anon_send(c.subject, lifecycle::subscribe_atom::value, st, std::string{"demo-probe"},
                   caf::actor_cast<lifecycle::lifecycle_observer_actor>(probe));
  auto agent = sys.spawn(demo_agent, c.routing, caf::actor_cast<caf::actor>(c.claimer),
                         mc.routing, sink);
  extras.push_back(agent);
  self->send(*control, dp_hello_atom::value, link.silo, generation, agent, c.routing,
             caf::actor_cast<caf::actor>(silo.endpoint().link));
  err = silo.when_active();
  self->send(sink, dm_up_atom::value, link.silo, generation, !err);
  if (err) {
    lg.error("silo start failed: " + to_fault(err).render());
    silo.stop(false);
    stop_extras();
    return 1;
  }
  std::cout << "ACTIVE" << std::endl;
  silo.stop_on_signals();
  silo.wait();
  stop_extras();
  return 0;
}

} // namespace cafmesh::mainjob
