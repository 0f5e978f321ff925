#include "cafmesh/routing/node_path_resolver.hpp"

#include <caf/all.hpp>

namespace cafmesh::routing {

std::optional<std::string> node_prefix_of(std::string_view type, std::string_view path) {
  if (path.size() <= type.size() + 1 || path.compare(0, type.size(), type) != 0
      || path[type.size()] != '/')
    return std::nullopt;
  return std::string{path.substr(type.size() + 1)};
}

path_resolver_actor spawn_node_path_resolver(caf::actor_system& sys, std::string type) {
  return sys.spawn([type](path_resolver_actor::pointer) -> path_resolver_actor::behavior_type {
    return {
      [type](pr_resolve_atom, const std::string& path) {
        resolve_result r;
        if (auto prefix = node_prefix_of(type, path)) {
          r.found = true;
          r.node_prefix = std::move(*prefix);
          r.cacheable = true; // a pure function of the path
        }
        return r;
      },
    };
  });
}

} // namespace cafmesh::routing
