#include "cafmesh/routing/node_path_resolver.hpp"

#include <caf/all.hpp>

namespace cafmesh::routing {

path_resolver_actor spawn_node_path_resolver(caf::actor_system& sys, std::string type) {
  auto prefix = type + "/";
  return sys.spawn([prefix](path_resolver_actor::pointer) -> path_resolver_actor::behavior_type {
    return {
      [prefix](pr_resolve_atom, const std::string& path) {
        resolve_result r;
        if (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0) {
          r.found = true;
          r.node_prefix = path.substr(prefix.size());
          r.cacheable = true; // a pure function of the path
        }
        return r;
      },
    };
  });
}

} // namespace cafmesh::routing
