#include "cafmesh/actors/register_actor_types.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/message.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/net_link.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/actors/remote_call.hpp"
#include "cafmesh/actors/sim_network.hpp"

namespace cafmesh {

void register_actor_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<grain_id>("cafmesh.grain_id");
  cfg.add_message_type<silo_address>("cafmesh.silo_address");
  cfg.add_message_type<activation_tag>("cafmesh.activation_tag");
  cfg.add_message_type<ct_call_item>("cafmesh.ct_call_item");
  cfg.add_message_type<ct_result_item>("cafmesh.ct_result_item");
  cfg.add_message_type<remote_call_item>("cafmesh.remote_call_item");
  // add_message_type<T> also announces std::vector<T> as `std::vector<name>`.
  cfg.add_message_type<mesh_errc>("cafmesh.mesh_errc");
  cfg.add_message_type<tri_bool>("cafmesh.tri_bool");
  cfg.add_message_type<probe_answer>("cafmesh.probe_answer");
  cfg.add_message_type<fault>("cafmesh.fault");
  cfg.add_message_type<component>("cafmesh.component");
  cfg.add_message_type<wire_frame>("cafmesh.wire_frame");
  cfg.add_message_type<link_wire_stats>("cafmesh.link_wire_stats");
  cfg.add_message_type<message_center_stats>("cafmesh.message_center_stats");
  cfg.add_message_type<drop_rule>("cafmesh.drop_rule");
  cfg.add_message_type<silo_status>("cafmesh.silo_status");
  cfg.add_message_type<placement_strategy>("cafmesh.placement_strategy");
  cfg.add_message_type<grain_type_info>("cafmesh.grain_type_info");
  cfg.add_message_type<std::vector<grain_type_info>>("cafmesh.grain_manifest");
  cfg.add_message_type<membership_row>("cafmesh.membership_row");
  cfg.add_message_type<membership_snapshot>("cafmesh.membership_snapshot");
  cfg.add_message_type<activation_address>("cafmesh.activation_address");
  cfg.add_message_type<std::vector<activation_address>>("cafmesh.activation_address_list");
  cfg.add_message_type<lookup_result>("cafmesh.lookup_result");
  cfg.add_message_type<catalog_report>("cafmesh.catalog_report");
  cfg.add_message_type<placement_stats>("cafmesh.placement_stats");
  cfg.add_error_category(mesh_error_category(),
                         [](uint8_t code, caf::atom_value, const caf::message& ctx) -> std::string {
                           if (ctx.match_elements<fault>())
                             return "mesh_error(" + to_string(static_cast<mesh_errc>(code)) + ", "
                                    + ctx.get_as<fault>(0).render() + ")";
                           return "mesh_error(" + to_string(static_cast<mesh_errc>(code)) + ")";
                         });
}

} // namespace cafmesh
