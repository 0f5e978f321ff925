#include "cafmesh/actors/register_actor_types.hpp"

#include <caf/actor_system_config.hpp>

#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/sim_network.hpp"

namespace cafmesh {

void register_actor_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<component>("cafmesh.component");
  cfg.add_message_type<wire_frame>("cafmesh.wire_frame");
  cfg.add_message_type<message_center_stats>("cafmesh.message_center_stats");
  cfg.add_message_type<drop_rule>("cafmesh.drop_rule");
}

} // namespace cafmesh
