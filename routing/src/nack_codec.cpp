#include "cafmesh/routing/nack_codec.hpp"

#include <utility>

#include <nlohmann/json.hpp>

#include "cafmesh/routing/size_guard.hpp"

namespace cafmesh::routing {

using json = nlohmann::json;

delivery_failure make_delivery_failure(const envelope& original, std::string message, verdict v,
                                       bool target_unserved,
                                       caf::optional<silo_address> responding_silo) {
  delivery_failure out;
  out.request_id = original.id;
  out.original = strip_echo(original);
  out.message = std::move(message);
  out.verdict = v;
  out.target_unserved = target_unserved;
  out.responding_silo = std::move(responding_silo);
  return out;
}

// -- JSON ------------------------------------------------------------------------

namespace {

json opt_string(const caf::optional<std::string>& x) {
  return x ? json(*x) : json(nullptr);
}

/// The rendered address, or "" for the empty (default) address.
std::string addr_text(const address& a) {
  return a.empty() ? std::string{} : a.to_string();
}

json envelope_to_json(const envelope& e) {
  json props = json::object();
  for (const auto& [k, v] : e.properties)
    props[k] = v;
  json path = json::array();
  for (const auto& a : e.routing_path)
    path.push_back(a.to_string());
  return json{{"id", e.id},
              {"sender", addr_text(e.sender)},
              {"target", addr_text(e.target)},
              {"state", to_string(e.state)},
              {"properties", std::move(props)},
              {"accessContext", opt_string(e.access_context)},
              {"routingPath", std::move(path)},
              {"payloadType", e.payload_type},
              {"payloadJson", e.payload_json},
              {"orderingKey", opt_string(e.ordering_key)},
              {"answerSuppressed", e.answer_suppressed},
              {"requestId", opt_string(e.request_id)}};
}

bool get_string(const json& j, const char* key, std::string& out) {
  auto i = j.find(key);
  if (i == j.end() || !i->is_string())
    return false;
  out = i->get<std::string>();
  return true;
}

bool get_opt_string(const json& j, const char* key, caf::optional<std::string>& out) {
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

bool get_address(const json& j, const char* key, address& out) {
  std::string text;
  if (!get_string(j, key, text))
    return false;
  if (text.empty()) {
    out = address{};
    return true;
  }
  return address::parse(text, out);
}

bool parse_state(const std::string& name, delivery_state& out) {
  for (auto s : {delivery_state::submitted, delivery_state::forwarded, delivery_state::processed,
                 delivery_state::not_found, delivery_state::rejected, delivery_state::failed,
                 delivery_state::ignored})
    if (to_string(s) == name) {
      out = s;
      return true;
    }
  return false;
}

/// Parses `S{host}:{port}@{generation}`.
bool parse_silo(const std::string& text, silo_address& out) {
  if (text.size() < 4 || text[0] != 'S')
    return false;
  auto at = text.rfind('@');
  if (at == std::string::npos)
    return false;
  auto colon = text.rfind(':', at);
  if (colon == std::string::npos || colon < 1)
    return false;
  auto port_text = text.substr(colon + 1, at - colon - 1);
  auto gen_text = text.substr(at + 1);
  if (port_text.empty() || gen_text.empty()
      || port_text.find_first_not_of("0123456789") != std::string::npos
      || gen_text.find_first_not_of("0123456789") != std::string::npos || port_text.size() > 5
      || gen_text.size() > 20)
    return false;
  auto port = std::stoul(port_text);
  if (port > 65535)
    return false;
  silo_address tmp;
  tmp.host = text.substr(1, colon - 1);
  tmp.port = static_cast<uint16_t>(port);
  try {
    tmp.generation = std::stoull(gen_text);
  } catch (...) {
    return false; // out of range
  }
  out = std::move(tmp);
  return true;
}

bool envelope_from_json(const json& j, envelope& out) {
  if (!j.is_object())
    return false;
  envelope e;
  std::string state;
  if (!get_string(j, "id", e.id) || !get_address(j, "sender", e.sender)
      || !get_address(j, "target", e.target) || !get_string(j, "state", state)
      || !parse_state(state, e.state) || !get_opt_string(j, "accessContext", e.access_context)
      || !get_string(j, "payloadType", e.payload_type)
      || !get_string(j, "payloadJson", e.payload_json)
      || !get_opt_string(j, "orderingKey", e.ordering_key)
      || !get_bool(j, "answerSuppressed", e.answer_suppressed)
      || !get_opt_string(j, "requestId", e.request_id))
    return false;
  auto props = j.find("properties");
  if (props == j.end() || !props->is_object())
    return false;
  for (auto i = props->begin(); i != props->end(); ++i) {
    if (!i.value().is_string())
      return false;
    e.properties.emplace(i.key(), i.value().get<std::string>());
  }
  auto path = j.find("routingPath");
  if (path == j.end() || !path->is_array())
    return false;
  for (const auto& p : *path) {
    address a;
    if (!p.is_string() || !address::parse(p.get<std::string>(), a))
      return false;
    e.routing_path.push_back(std::move(a));
  }
  out = std::move(e);
  return true;
}

} // namespace

std::string to_json_text(const delivery_failure& x) {
  json j{{"$type", delivery_failure_payload_type},
         {"requestId", x.request_id},
         {"message", x.message},
         {"verdict", to_string(x.verdict)},
         {"targetUnserved", x.target_unserved},
         {"respondingSilo",
          x.responding_silo ? json(x.responding_silo->to_string()) : json(nullptr)},
         {"original", envelope_to_json(x.original)}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool from_json_text(const std::string& text, delivery_failure& out) {
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return false;
  std::string type;
  if (!get_string(j, "$type", type) || type != delivery_failure_payload_type)
    return false;
  delivery_failure tmp;
  std::string verdict_name;
  if (!get_string(j, "requestId", tmp.request_id) || !get_string(j, "message", tmp.message)
      || !get_string(j, "verdict", verdict_name) || !from_string(verdict_name, tmp.verdict)
      || !get_bool(j, "targetUnserved", tmp.target_unserved))
    return false;
  auto silo = j.find("respondingSilo");
  if (silo != j.end() && !silo->is_null()) {
    silo_address s;
    if (!silo->is_string() || !parse_silo(silo->get<std::string>(), s))
      return false;
    tmp.responding_silo = s;
  }
  auto original = j.find("original");
  if (original == j.end() || !envelope_from_json(*original, tmp.original))
    return false;
  out = std::move(tmp);
  return true;
}

envelope make_nack_envelope(const delivery_failure& failure, std::string nack_id, address from) {
  envelope out;
  out.id = std::move(nack_id);
  out.sender = std::move(from);
  out.target = failure.original.sender;
  out.state = delivery_state::submitted;
  out.access_context = failure.original.access_context
                         ? failure.original.access_context
                         : caf::optional<std::string>{std::string{system_identity}};
  out.payload_type = delivery_failure_payload_type;
  out.payload_json = to_json_text(failure);
  out.answer_suppressed = true;
  out.request_id = failure.request_id;
  return out;
}

namespace {

/// A property's JSON text as plain text: a JSON string unquoted, anything else verbatim.
std::string property_text(const std::string& json_text) {
  auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_discarded() && j.is_string())
    return j.get<std::string>();
  return json_text;
}

} // namespace

delivery_error to_delivery_error(const delivery_failure& f) {
  return delivery_error{f.verdict, f.message, is_transient_verdict(f.verdict), false};
}

delivery_error entry_refusal(const envelope& a) {
  delivery_error out;
  if (auto i = a.properties.find("verdict"); i != a.properties.end()) {
    verdict v;
    if (from_string(property_text(i->second), v))
      out.verdict = v;
  }
  if (auto i = a.properties.find("error"); i != a.properties.end())
    out.text = property_text(i->second);
  else
    out.text = "the entry refused delivery " + a.id + " to " + a.target.to_string();
  out.resendable = is_transient_verdict(out.verdict);
  return out;
}

} // namespace cafmesh::routing
