#include "cafmesh/lifecycle/net_silo.hpp"

#include <caf/all.hpp>

namespace cafmesh::lifecycle {

using namespace cafmesh::routing;

void net_silo::stop_all() const {
  s.stop_all();
  for (auto& a :
       {caf::actor_cast<caf::actor>(endpoint.link), caf::actor_cast<caf::actor>(endpoint.oracle)})
    if (a)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

caf::expected<net_silo> start_net_silo(caf::actor_system& sys, silo_options opts,
                                       uint64_t generation, caf::timespan bind_timeout) {
  auto ep = start_net_link(sys, opts.cfg.network, opts.cfg.membership, generation, bind_timeout);
  if (!ep)
    return ep.error();
  opts.self = ep->addr;
  opts.link = ep->link;
  opts.oracle = ep->oracle;
  // The link gives its join up when the silo stops before it joined.
  opts.stopping_recipients.push_back(caf::actor_cast<stopping_recipient_actor>(ep->link));
  opts.centre = caf::actor{};
  net_silo out;
  out.endpoint = *ep;
  out.s = spawn_silo(sys, std::move(opts));
  return out;
}

} // namespace cafmesh::lifecycle
