#include "cafmesh/routing/register_types.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/message.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh {

namespace {

/// Renders a `mesh` error: `mesh_error(<code>, <fault rendering>)`, or `mesh_error(<code>)`
/// when the context carries no fault.
std::string render_mesh_error(uint8_t code, caf::atom_value, const caf::message& ctx) {
  auto result = "mesh_error(" + to_string(static_cast<mesh_errc>(code));
  if (ctx.match_elements<fault>()) {
    result += ", ";
    result += ctx.get_as<fault>(0).render();
  }
  result += ')';
  return result;
}

} // namespace

void register_types(caf::actor_system_config& cfg) {
  // SPEC §2.2, §2.3 identities.
  cfg.add_message_type<grain_id>("cafmesh.grain_id");
  cfg.add_message_type<silo_address>("cafmesh.silo_address");
  cfg.add_message_type<activation_tag>("cafmesh.activation_tag");
  // SPEC §2.10 faults (add_message_type<T> also announces std::vector<T>).
  cfg.add_message_type<mesh_errc>("cafmesh.mesh_errc");
  cfg.add_message_type<tri_bool>("cafmesh.tri_bool");
  cfg.add_message_type<probe_answer>("cafmesh.probe_answer");
  cfg.add_message_type<fault>("cafmesh.fault");
  // SPEC §2.1, §2.4, §2.6 - §2.8 routing vocabulary.
  cfg.add_message_type<routing::address>("cafmesh.address");
  cfg.add_message_type<routing::delivery_state>("cafmesh.delivery_state");
  cfg.add_message_type<routing::verdict>("cafmesh.verdict");
  cfg.add_message_type<routing::envelope>("cafmesh.envelope");
  cfg.add_message_type<routing::delivery_failure>("cafmesh.delivery_failure");
  cfg.add_error_category(mesh_error_category(), render_mesh_error);
}

} // namespace cafmesh
