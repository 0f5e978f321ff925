#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh::config {

std::string to_string(process_role r) {
  switch (r) {
    case process_role::silo_host: return "silo_host";
    case process_role::pure_client: return "pure_client";
    default: return "monolith";
  }
}

} // namespace cafmesh::config
