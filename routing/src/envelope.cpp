#include "cafmesh/routing/envelope.hpp"

namespace cafmesh::routing {

bool operator==(const envelope& x, const envelope& y) {
  return x.id == y.id && x.sender == y.sender && x.target == y.target && x.state == y.state
         && x.properties == y.properties && x.access_context == y.access_context
         && x.routing_path == y.routing_path && x.payload_type == y.payload_type
         && x.payload_json == y.payload_json && x.ordering_key == y.ordering_key
         && x.answer_suppressed == y.answer_suppressed && x.request_id == y.request_id;
}

bool is_failed_and_nacked(const envelope& d) {
  if (d.state != delivery_state::failed)
    return false;
  auto i = d.properties.find(sender_was_nacked_property);
  return i != d.properties.end() && i->second == "true";
}

void mark_failed_and_nacked(envelope& d) {
  d.state = delivery_state::failed;
  d.properties[sender_was_nacked_property] = "true";
}

bool operator==(const delivery_failure& x, const delivery_failure& y) {
  return x.request_id == y.request_id && x.original == y.original && x.message == y.message
         && x.verdict == y.verdict && x.target_unserved == y.target_unserved
         && x.responding_silo == y.responding_silo;
}

} // namespace cafmesh::routing
