#include "cafmesh/routing/envelope.hpp"

#include <nlohmann/json.hpp>

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

// -- JSON text (the NACK payload, SPEC §2.8) -------------------------------------------------

namespace cafmesh::routing {

namespace {

using json = nlohmann::json;

json optional_to_json(const caf::optional<std::string>& x) {
  return x ? json(*x) : json(nullptr);
}

json envelope_to_json(const envelope& x) {
  json j = json::object();
  j["id"] = x.id;
  j["sender"] = x.sender.to_string();
  j["target"] = x.target.to_string();
  j["state"] = to_string(x.state);
  j["properties"] = json::object();
  for (const auto& [k, v] : x.properties)
    j["properties"][k] = v;
  j["access_context"] = optional_to_json(x.access_context);
  j["routing_path"] = json::array();
  for (const auto& a : x.routing_path)
    j["routing_path"].push_back(a.to_string());
  j["payload_type"] = x.payload_type;
  j["payload_json"] = x.payload_json;
  j["ordering_key"] = optional_to_json(x.ordering_key);
  j["answer_suppressed"] = x.answer_suppressed;
  j["request_id"] = optional_to_json(x.request_id);
  return j;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool get_string(const json& j, const char* key, std::string& out) {
  auto i = j.find(key);
  if (i == j.end() || !i->is_string())
    return false;
  out = i->get<std::string>();
  return true;
}

bool get_optional(const json& j, const char* key, caf::optional<std::string>& out) {
  auto i = j.find(key);
  if (i == j.end() || i->is_null()) {
    out = caf::none;
    return true;
  }
  if (!i->is_string())
    return false;
  out = i->get<std::string>();
  return true;
}

bool get_bool(const json& j, const char* key, bool& out) {
  auto i = j.find(key);
  if (i == j.end() || !i->is_boolean())
    return false;
  out = i->get<bool>();
  return true;
}

bool parse_address_or_empty(const std::string& text, address& out) {
  if (text.empty()) {
    out = address{};
    return true;
  }
  return address::parse(text, out);
}

bool envelope_from_json(const json& j, envelope& out) {
  if (!j.is_object())
    return false;
  envelope tmp;
  std::string sender, target, state;
  if (!get_string(j, "id", tmp.id) || !get_string(j, "sender", sender)
      || !get_string(j, "target", target) || !get_string(j, "state", state)
      || !parse_address_or_empty(sender, tmp.sender)
      || !parse_address_or_empty(target, tmp.target) || !from_string(state, tmp.state))
    return false;
  auto props = j.find("properties");
  if (props == j.end() || !props->is_object())
    return false;
  for (const auto& [k, v] : props->items()) {
    if (!v.is_string())
      return false;
    tmp.properties.emplace(k, v.get<std::string>());
  }
  auto path = j.find("routing_path");
  if (path == j.end() || !path->is_array())
    return false;
  for (const auto& hop : *path) {
    address a;
    if (!hop.is_string() || !address::parse(hop.get<std::string>(), a))
      return false;
    tmp.routing_path.push_back(std::move(a));
  }
  if (!get_optional(j, "access_context", tmp.access_context)
      || !get_string(j, "payload_type", tmp.payload_type)
      || !get_string(j, "payload_json", tmp.payload_json)
      || !get_optional(j, "ordering_key", tmp.ordering_key)
      || !get_bool(j, "answer_suppressed", tmp.answer_suppressed)
      || !get_optional(j, "request_id", tmp.request_id))
    return false;
  out = std::move(tmp);
  return true;
}

bool parse_json(const std::string& text, json& out) {
  out = json::parse(text, nullptr, false);
  return !out.is_discarded();
}

} // namespace

std::string to_json_text(const envelope& x) {
  return dump(envelope_to_json(x));
}

bool from_json_text(const std::string& text, envelope& out) {
  json j;
  return parse_json(text, j) && envelope_from_json(j, out);
}

std::string to_json_text(const delivery_failure& x) {
  json j = json::object();
  j["request_id"] = x.request_id;
  j["original"] = envelope_to_json(x.original);
  j["message"] = x.message;
  j["verdict"] = to_string(x.verdict);
  j["target_unserved"] = x.target_unserved;
  if (x.responding_silo)
    j["responding_silo"] = json{{"host", x.responding_silo->host},
                                {"port", x.responding_silo->port},
                                {"generation", x.responding_silo->generation}};
  else
    j["responding_silo"] = nullptr;
  return dump(j);
}

bool from_json_text(const std::string& text, delivery_failure& out) {
  json j;
  if (!parse_json(text, j) || !j.is_object())
    return false;
  delivery_failure tmp;
  std::string verdict_name;
  auto original = j.find("original");
  if (!get_string(j, "request_id", tmp.request_id) || original == j.end()
      || !envelope_from_json(*original, tmp.original) || !get_string(j, "message", tmp.message)
      || !get_string(j, "verdict", verdict_name) || !from_string(verdict_name, tmp.verdict)
      || !get_bool(j, "target_unserved", tmp.target_unserved))
    return false;
  auto silo = j.find("responding_silo");
  if (silo != j.end() && !silo->is_null()) {
    if (!silo->is_object())
      return false;
    auto host = silo->find("host");
    auto port = silo->find("port");
    auto gen = silo->find("generation");
    if (host == silo->end() || !host->is_string() || port == silo->end()
        || !port->is_number_unsigned() || port->get<uint64_t>() > 65535 || gen == silo->end()
        || !gen->is_number_unsigned())
      return false;
    tmp.responding_silo = silo_address{host->get<std::string>(),
                                       static_cast<uint16_t>(port->get<uint64_t>()),
                                       gen->get<uint64_t>()};
  }
  out = std::move(tmp);
  return true;
}

} // namespace cafmesh::routing
