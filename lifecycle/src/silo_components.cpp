#include "cafmesh/lifecycle/silo_components.hpp"

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "components/silo_component.hpp"

namespace cafmesh::lifecycle {

namespace components {

// Each is defined in components/<name>.cpp.
extern const silo_component grain_types, message_centre, membership, directory_partition, placement,
  catalog, quiescence_gauge, io_pool, stream_transport, routing_service, grain_delivery,
  router_core, pod_hub_claimer, gateway, runtime_services, quiescence_participant, pool_teardown,
  death_watch;

} // namespace components

namespace {

/// The components of a silo (docs/architecture.md#one-silo) in the order they are spawned: each
/// one's spawn sees the components above it. The stages each subscribes are in its own file
/// (docs/behaviour/lifecycle.md#stages); within a stage the subject reaches them in this order.
/// `silo_components::all()` lists their actors in this order too.
const components::silo_component* const silo_parts[] = {
  &components::grain_types,      &components::message_centre,
  &components::membership,       &components::directory_partition,
  &components::placement,        &components::catalog,
  &components::quiescence_gauge, &components::io_pool,
  &components::stream_transport, &components::routing_service,
  &components::grain_delivery,   &components::router_core,
  &components::pod_hub_claimer,  &components::gateway,
  &components::runtime_services, &components::quiescence_participant,
  &components::pool_teardown,    &components::death_watch,
};

} // namespace

std::vector<caf::actor> silo_components::all() const {
  std::vector<caf::actor> xs;
  for (auto* part : silo_parts)
    if (part->actors)
      for (auto& a : part->actors(*this))
        xs.push_back(std::move(a));
  for (auto& o : observers)
    xs.push_back(caf::actor_cast<caf::actor>(o));
  xs.push_back(caf::actor_cast<caf::actor>(subject));
  xs.push_back(caf::actor_cast<caf::actor>(host));
  return xs;
}

void silo_components::stop_all() const {
  for (auto& a : all())
    if (a)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

silo_components spawn_silo(caf::actor_system& sys, silo_options opts) {
  components::silo_wiring w{sys, std::move(opts)};
  for (auto* part : silo_parts)
    if (part->spawn)
      part->spawn(w);
  for (auto* part : silo_parts)
    if (part->participate)
      part->participate(w);
  w.subscribe_declared();
  w.spawn_host();
  return std::move(w.s);
}

} // namespace cafmesh::lifecycle
