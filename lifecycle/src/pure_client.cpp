#include "cafmesh/lifecycle/pure_client.hpp"

#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/routing/routing_service.hpp"
#include "hosting_steps.hpp"

namespace cafmesh::lifecycle {

using namespace cafmesh::routing;

void pure_client::stop_all() const {
  for (auto& a :
       {routing, caf::actor_cast<caf::actor>(streams), caf::actor_cast<caf::actor>(agent), centre})
    if (a)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

pure_client spawn_pure_client(caf::actor_system& sys, pure_client_options opts) {
  pure_client c;
  c.addr = opts.self;
  c.centre = opts.centre ? opts.centre : spawn_message_center(sys, opts.self, opts.link);
  c.agent = spawn_membership_agent(sys, opts.self, opts.oracle, default_carry_bound,
                                   hosting::join_bound_of(opts.cfg));
  caf::anon_send(c.agent, mb_subscribe_atom::value, c.centre);
  c.streams = spawn_stream_transport(
    sys, {opts.self, c.centre, opts.cfg.routing.stream_transport_timeout_ms, {}});
  caf::anon_send(c.agent, mb_subscribe_atom::value, caf::actor_cast<caf::actor>(c.streams));
  caf::anon_send(c.streams, st_start_atom::value);
  auto ro = routing_service_options::from(opts.cfg);
  ro.streams = c.streams;
  ro.role = config::process_role::pure_client;
  if (opts.cfg.mesh.name.empty())
    ro.process_name = opts.self.to_string();
  ro.centre = c.centre;
  ro.self_silo = opts.self;
  ro.inbound_attach = true;
  ro.events = opts.events;
  ro.failure_observer = opts.failure_observer;
  c.routing = caf::actor_cast<caf::actor>(spawn_routing_service(sys, std::move(ro)));
  caf::anon_send(c.centre, mc_register_atom::value, component::client, c.routing);
  caf::anon_send(c.centre, mc_watch_atom::value, caf::actor_cast<caf::actor>(c.routing));
  caf::anon_send(c.agent, mb_subscribe_atom::value, c.routing);
  return c;
}

} // namespace cafmesh::lifecycle
