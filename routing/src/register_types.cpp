#include "cafmesh/routing/register_types.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/message.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/register_actor_types.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/delivery_error.hpp"
#include "cafmesh/routing/dispatch_batch.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/frame_shapes.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh {

void register_types(caf::actor_system_config& cfg) {
  register_actor_types(cfg);
  // Every process of a mesh encodes these payloads flat on its links (SPEC §14 B7).
  if (!routing::register_frame_shapes())
    log::get("routing").error("a link frame shape id is taken by another shape: frames of "
                              "that id will not decode on this process's links");
  cfg.add_message_type<routing::address>("cafmesh.address");
  cfg.add_message_type<routing::delivery_state>("cafmesh.delivery_state");
  cfg.add_message_type<routing::verdict>("cafmesh.verdict");
  cfg.add_message_type<routing::envelope>("cafmesh.envelope");
  cfg.add_message_type<routing::delivery_failure>("cafmesh.delivery_failure");
  cfg.add_message_type<routing::dispatch_item>("cafmesh.dispatch_item"); // and its vector
  cfg.add_message_type<routing::dispatch_verdicts>("cafmesh.dispatch_verdicts");
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
