#include "cafmesh/actors/runtime_registry.hpp"

#include <map>

#include <caf/all.hpp>

#include "cafmesh/actors/log.hpp"

namespace cafmesh::lifecycle {

namespace {

struct registry_state {
  static inline const char* name = "cafmesh.runtime_registry";
  std::map<std::string, probe_answer> silos;
};

runtime_registry_actor::behavior_type
registry_impl(runtime_registry_actor::stateful_pointer<registry_state> self) {
  return {
    [=](host_register_atom, const std::string& silo) {
      self->state.silos[silo] = probe_answer::alive;
      return caf::ok_atom::value;
    },
    [=](host_torn_down_atom, const std::string& silo) {
      self->state.silos[silo] = probe_answer::torn_down;
      log::get("host").with_context(silo).info("runtime probe now answers torn_down");
      return caf::ok_atom::value;
    },
    [=](probe_runtime_atom, const std::string& silo) {
      auto i = self->state.silos.find(silo);
      return i == self->state.silos.end() ? probe_answer::no_answer : i->second;
    },
  };
}

} // namespace

runtime_registry_actor spawn_runtime_registry(caf::actor_system& sys) {
  return sys.spawn(registry_impl);
}

} // namespace cafmesh::lifecycle
