#include "cafmesh/actors/directory_resolver.hpp"

namespace cafmesh {

std::string to_string(directory_kind x) {
  return x == directory_kind::null ? "null" : "ring";
}

directory_resolver::directory_resolver(const std::vector<grain_type_info>& local_types,
                                       bool stateless_worker_bypass)
  : bypass_(stateless_worker_bypass) {
  for (const auto& t : local_types)
    if (t.strategy == placement_strategy::stateless_worker)
      stateless_workers_.insert(t.type);
}

directory_kind directory_resolver::resolve(const std::string& grain_type) const {
  if (bypass_ && stateless_workers_.count(grain_type) > 0)
    return directory_kind::null;
  return directory_kind::ring;
}

} // namespace cafmesh
