#include "cafmesh/routing/register_types.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/message.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/register_actor_types.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"

namespace cafmesh {

void register_types(caf::actor_system_config& cfg) {
  register_actor_types(cfg);
  cfg.add_message_type<grain_id>("cafmesh.grain_id");
  cfg.add_message_type<silo_address>("cafmesh.silo_address");
  cfg.add_message_type<activation_tag>("cafmesh.activation_tag");
  cfg.add_message_type<fault>("cafmesh.fault");
  cfg.add_message_type<std::vector<fault>>("cafmesh.fault_list");
  cfg.add_message_type<routing::address>("cafmesh.address");
  cfg.add_message_type<routing::envelope>("cafmesh.envelope");
  cfg.add_message_type<routing::delivery_failure>("cafmesh.delivery_failure");
  cfg.add_error_category(mesh_error_category(),
                         [](uint8_t code, caf::atom_value, const caf::message& ctx) -> std::string {
                           if (ctx.match_elements<fault>())
                             return "mesh_error(" + to_string(static_cast<mesh_errc>(code))
                                    + ", " + ctx.get_as<fault>(0).render() + ")";
                           return "mesh_error(" + to_string(static_cast<mesh_errc>(code)) + ")";
                         });
}

} // namespace cafmesh
