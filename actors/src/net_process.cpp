#include "cafmesh/actors/net_process.hpp"

#include <chrono>

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/etcd_membership_table.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/membership_table_oracle.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/net_link.hpp"

namespace cafmesh {

void net_process::stop() const {
  for (auto& a : {centre, caf::actor_cast<caf::actor>(link), caf::actor_cast<caf::actor>(agent),
                  caf::actor_cast<caf::actor>(oracle)})
    if (a)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

caf::expected<net_endpoint> start_net_link(caf::actor_system& sys,
                                           const config::network_section& net, uint64_t generation,
                                           caf::timespan bind_timeout) {
  return start_net_link(sys, net, config::membership_section{}, generation, bind_timeout);
}

caf::expected<net_endpoint> start_net_link(caf::actor_system& sys,
                                           const config::network_section& net,
                                           const config::membership_section& membership,
                                           uint64_t generation, caf::timespan bind_timeout) {
  net_endpoint ep;
  membership_oracle_actor oracle;
  auto scope = link_oracle::cluster;
  auto link_net = net;
  if (membership.provider == "etcd") {
    // No process is special: this process's own oracle over the shared table, to which
    // its link reports suspicions as a primary's does; nobody connects to a primary.
    etcd_table_options opts;
    opts.endpoints = membership.etcd_endpoints;
    opts.prefix = membership.etcd_prefix;
    opts.request_timeout_ms = membership.etcd_request_timeout_ms;
    membership_table_oracle_config ocfg;
    ocfg.detection_ms = oracle_detection_ms(net);
    oracle = spawn_membership_table_oracle(sys,
                                           std::make_shared<etcd_membership_table>(std::move(opts)),
                                           ocfg);
    link_net.primary_port = 0;
    // Its handle never leaves the process: it is detached, and a peer's proxy of it could
    // keep it alive past the actor system's end (docs/caf-notes.md "Shutdown").
    scope = link_oracle::own;
  } else if (net.primary_port == 0) {
    // The table is named by this process's generation: a restart starts a newer table
    // (docs/behaviour/membership.md#when-the-development-tables-process-restarts).
    oracle = spawn_membership_oracle(sys, membership_oracle_config{oracle_detection_ms(net),
                                                                   generation});
  }
  bool primary = link_net.primary_port == 0;
  ep.link = spawn_net_link(sys, link_net, oracle, scope);
  caf::error err;
  uint16_t port = 0;
  {
    caf::scoped_actor self{sys};
    self->request(ep.link, bind_timeout, nl_port_atom::value)
      .receive([&](uint16_t x) { port = x; }, [&](caf::error& e) { err = std::move(e); });
    if (!err)
      self->request(ep.link, bind_timeout, nl_gate_atom::value)
        .receive([&](const caf::actor& g) { ep.gate = g.address(); },
                 [&](caf::error& e) { err = std::move(e); });
  }
  if (err) {
    for (auto& a : {caf::actor_cast<caf::actor>(ep.link), caf::actor_cast<caf::actor>(oracle)})
      if (a)
        caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    return err;
  }
  ep.addr = silo_address{net.host, port, generation};
  ep.oracle = primary ? oracle : spawn_oracle_relay(sys, ep.link);
  return ep;
}

caf::expected<net_process> start_net_process(caf::actor_system& sys,
                                             const config::network_section& net,
                                             uint64_t generation, caf::timespan bind_timeout) {
  auto ep = start_net_link(sys, net, generation, bind_timeout);
  if (!ep)
    return ep.error();
  bool primary = net.primary_port == 0;
  net_process p;
  p.addr = ep->addr;
  p.link = ep->link;
  p.oracle = ep->oracle;
  p.centre = spawn_message_center(sys, p.addr, p.link);
  p.agent = spawn_membership_agent(sys, p.addr, p.oracle);
  // The centre's registry holds plain handles (a typed one would not match its handler).
  caf::anon_send(p.centre, mc_register_atom::value, component::membership,
                 caf::actor_cast<caf::actor>(p.agent));
  if (primary)
    caf::anon_send(p.centre, mc_register_atom::value, component::oracle,
                   caf::actor_cast<caf::actor>(p.oracle));
  caf::anon_send(p.agent, mb_subscribe_atom::value, p.centre);
  return p;
}

} // namespace cafmesh
