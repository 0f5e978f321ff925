#include "landing_report.hpp"

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/held_requests.hpp"
#include "cafmesh/routing/size_guard.hpp"

namespace cafmesh::routing {

void report_landing(const silo_address& own, const caf::actor& centre,
                    const local_route_port_actor& entry, const silo_address& entry_client,
                    const envelope& env, const std::optional<silo_address>& at) {
  if (!may_answer(env) || is_continuation(env))
    return;
  if (!at || *at == own)
    return; // landed here: this silo's own departure takes the entry's answers with it
  if (!entry_client.empty()) {
    if (centre)
      caf::anon_send(centre, mc_send_atom::value, entry_client, component::client,
                     caf::make_message(rs_landed_atom::value, env.id, *at));
    return;
  }
  if (entry) // the routing service's full interface takes the report
    caf::anon_send(caf::actor_cast<caf::actor>(entry), rs_landed_atom::value, env.id, *at);
}

envelope forwarded_answer(const envelope& d) {
  envelope a;
  a.id = d.id;
  a.sender = d.sender;
  a.target = d.target;
  a.state = delivery_state::forwarded;
  a.ordering_key = d.ordering_key;
  a.answer_suppressed = d.answer_suppressed;
  a.request_id = d.request_id;
  return a;
}

void stamp_landed_activation(envelope& answer, activation_tag tag) {
  answer.properties[landed_activation_property] = json_quote(tag.hex());
}

std::optional<activation_tag> landed_activation_of(const envelope& answer) {
  auto i = answer.properties.find(landed_activation_property);
  if (i == answer.properties.end())
    return std::nullopt;
  auto hex = unquote_json_string(i->second);
  if (hex.size() != 8)
    return std::nullopt;
  uint32_t value = 0;
  for (auto c : hex) {
    uint32_t digit;
    if (c >= '0' && c <= '9')
      digit = static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      digit = static_cast<uint32_t>(c - 'a' + 10);
    else
      return std::nullopt;
    value = value * 16 + digit;
  }
  return activation_tag{value};
}

} // namespace cafmesh::routing
