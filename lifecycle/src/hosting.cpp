#include "cafmesh/lifecycle/hosting.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

#include "cafmesh/routing/register_types.hpp"

namespace cafmesh::lifecycle {

void prepare(caf::actor_system_config& cfg) {
  register_types(cfg);
  cfg.load<caf::io::middleman>();
}

} // namespace cafmesh::lifecycle
