#include "cafmesh/routing/register_types.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/message.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/register_actor_types.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/delivery_error.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh {

void register_types(caf::actor_system_config& cfg) {
  register_actor_types(cfg);
  cfg.add_message_type<grain_id>("cafmesh.grain_id");
  cfg.add_message_type<silo_address>("cafmesh.silo_address");
  cfg.add_message_type<activation_tag>("cafmesh.activation_tag");
  // add_message_type<T> also announces std::vector<T> as `std::vector<name>`.
  cfg.add_message_type<mesh_errc>("cafmesh.mesh_errc");
  cfg.add_message_type<tri_bool>("cafmesh.tri_bool");
  cfg.add_message_type<probe_answer>("cafmesh.probe_answer");
  cfg.add_message_type<fault>("cafmesh.fault");
  cfg.add_message_type<routing::address>("cafmesh.address");
  cfg.add_message_type<routing::delivery_state>("cafmesh.delivery_state");
  cfg.add_message_type<routing::verdict>("cafmesh.verdict");
  cfg.add_message_type<routing::envelope>("cafmesh.envelope");
  cfg.add_message_type<routing::delivery_failure>("cafmesh.delivery_failure");
  cfg.add_error_category(mesh_error_category(),
                         [](uint8_t code, caf::atom_value, const caf::message& ctx) -> std::string {
                           if (ctx.match_elements<fault>())
                             return "mesh_error(" + to_string(static_cast<mesh_errc>(code))
                                    + ", " + ctx.get_as<fault>(0).render() + ")";
                           return "mesh_error(" + to_string(static_cast<mesh_errc>(code)) + ")";
                         });
  cfg.add_error_category(routing::delivery_error_category(),
                         [](uint8_t code, caf::atom_value, const caf::message& ctx) -> std::string {
                           routing::delivery_error x;
                           x.verdict = static_cast<routing::verdict>(code - 1);
                           if (ctx.match_elements<std::string, bool, bool>()) {
                             x.text = ctx.get_as<std::string>(0);
                             x.resendable = ctx.get_as<bool>(1);
                             x.deadline = ctx.get_as<bool>(2);
                           }
                           return "delivery_error(" + to_string(x) + ")";
                         });
}

} // namespace cafmesh
