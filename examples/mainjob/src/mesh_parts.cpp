#include "cafmesh/mainjob/mesh_parts.hpp"

#include <chrono>
#include <thread>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"

namespace cafmesh::mainjob {

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

void wait_until_torn_down(caf::actor_system& sys, const lifecycle::host_actor& host,
                          int64_t poll_ms) {
  caf::scoped_actor self{sys};
  for (;;) {
    auto phase = lifecycle::host_phase::running;
    self->request(host, std::chrono::seconds(5), lifecycle::host_state_atom::value)
      .receive([&](lifecycle::host_phase p) { phase = p; }, [](caf::error&) {});
    if (phase == lifecycle::host_phase::torn_down)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
}

} // namespace cafmesh::mainjob
