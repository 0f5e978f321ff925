#include "cafmesh/routing/routing_service.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "routing_service_parts.hpp"

// The monolith backend of the routing service: every hub in-process, built on a miss
// (docs/behaviour/routing.md#monolith).

namespace cafmesh::routing::routing_service_detail {

namespace {

void monolith_build(rs_actor* self, const address& host) {
  auto& st = self->state;
  auto key = host.path();
  auto flush_failed = [=](const fault& f) {
    auto& st = self->state;
    auto waiting = std::move(st.building[key]);
    st.building.erase(key);
    for (auto& d : waiting) {
      auto v = contains_code(f, mesh_errc::not_found) ? verdict::not_found : classify(f);
      if (post_local_nack(self, d, v,
                          "Delivery to '" + d.target.to_string() + "' failed: " + f.render()))
        ++st.stats.monolith_nacks;
      else
        st.log.warning("monolith: delivery " + d.id + " to '" + d.target.to_string()
                       + "' failed without a NACK: " + f.render());
    }
  };
  if (!st.opts.hubs) {
    flush_failed(fault{mesh_errc::extension_missing,
                       "no hub factory in this monolith: nothing can build a hub for this "
                       "address; register one (monolith_builder::hub) before sending to it"});
    return;
  }
  self
    ->request(st.opts.hubs, std::chrono::milliseconds(st.opts.hub_build_timeout_ms),
              hf_build_atom::value, key)
    .then(
      [=](caf::actor hub) {
        auto& st = self->state;
        ++st.stats.hubs_built;
        st.routes[key] = hub;
        st.log.info("monolith: hub " + key + " created in-process");
        auto waiting = std::move(st.building[key]);
        st.building.erase(key);
        for (auto& d : waiting)
          self->send(hub, hb_in_atom::value, std::move(d));
      },
      [=](caf::error& e) { flush_failed(to_fault(e)); });
}

} // namespace

envelope monolith_deliver(rs_actor* self, envelope d) {
  auto& st = self->state;
  auto target = d.target.to_string();
  if (st.stopping) {
    auto text = "Mesh is shutting down, cannot route to " + target;
    bool posted = post_local_nack(self, d, verdict::shutting_down, text);
    if (posted)
      ++st.stats.monolith_nacks;
    return refused(std::move(d), posted, text);
  }
  auto host = host_address(d.target, st.opts.mesh_type);
  auto key = host.path();
  auto answer = accepted(d);
  auto i = st.building.find(key);
  if (i != st.building.end()) {
    i->second.push_back(std::move(d));
    return answer;
  }
  st.building[key].push_back(std::move(d));
  monolith_build(self, host);
  return answer;
}

} // namespace cafmesh::routing::routing_service_detail
