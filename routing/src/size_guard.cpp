#include "cafmesh/routing/size_guard.hpp"

#include <utility>

#include <nlohmann/json.hpp>

#include "cafmesh/actors/log.hpp"

namespace cafmesh::routing {

using json = nlohmann::json;

std::string to_string(size_crossing x) {
  switch (x) {
    case size_crossing::grain_call: return "grain_call";
    case size_crossing::stream_block: return "stream_block";
  }
  return "size_crossing(" + std::to_string(static_cast<int>(x)) + ")";
}

int64_t size_limit_bytes(size_crossing crossing, const config::size_section& cfg) {
  return crossing == size_crossing::grain_call ? cfg.grain_call_body_limit_bytes
                                               : config::stream_block_limit_bytes;
}

size_check check_size(const envelope& d, size_crossing crossing,
                      const config::size_section& cfg) {
  return check_size(d, crossing, size_limit_bytes(crossing, cfg));
}

size_check check_size(const envelope& d, size_crossing crossing, int64_t limit_bytes) {
  size_check out;
  out.crossing = crossing;
  out.bytes = payload_bytes(d);
  out.limit_bytes = limit_bytes;
  out.refused = refuses_size(out.bytes, limit_bytes);
  return out;
}

std::string with_thousands(int64_t n) {
  // Work on the magnitude as unsigned so INT64_MIN renders correctly.
  bool negative = n < 0;
  uint64_t mag = negative ? uint64_t{0} - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  auto digits = std::to_string(mag);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3 + 1);
  if (negative)
    out += '-';
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

namespace {

/// Length of the valid UTF-8 sequence starting at `i`, or 1 for an invalid/truncated byte.
size_t utf8_seq_len(const std::string& s, size_t i) {
  auto b = static_cast<unsigned char>(s[i]);
  size_t len;
  if (b < 0x80)
    return 1;
  else if (b >= 0xC2 && b <= 0xDF)
    len = 2;
  else if (b >= 0xE0 && b <= 0xEF)
    len = 3;
  else if (b >= 0xF0 && b <= 0xF4)
    len = 4;
  else
    return 1;
  if (i + len > s.size())
    return 1;
  for (size_t k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
      return 1;
  return len;
}

/// Escapes raw control characters (and U+2028/U+2029) outside any quoting, so a composed
/// log line can never span more than one line.
std::string one_line(const std::string& s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x20 || b == 0x7F) {
      switch (b) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          out += "\\u00";
          out += hex[b >> 4];
          out += hex[b & 0xF];
      }
    } else if (b == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80
               && (static_cast<unsigned char>(s[i + 2]) == 0xA8
                   || static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

const char* limit_name(size_crossing x) {
  return x == size_crossing::grain_call ? "grain-call" : "stream block";
}

} // namespace

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += utf8_seq_len(s, i))
    ++n;
  return n;
}

std::string utf8_prefix(const std::string& s, size_t max_chars) {
  size_t i = 0;
  for (size_t n = 0; n < max_chars && i < s.size(); ++n)
    i += utf8_seq_len(s, i);
  return s.substr(0, i);
}

std::string json_quote(const std::string& s) {
  // nlohmann escapes '"', '\\' and every byte < 0x20; U+2028/U+2029 and DEL are left to
  // one_line (no raw control character survives either step).
  return one_line(json(s).dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string size_refusal_log_line(const envelope& d, const size_check& check) {
  std::string line = "size guard: refusing delivery " + d.id + " to '" + d.target.to_string()
                     + "' from '" + d.sender.to_string() + "' (payload type " + d.payload_type
                     + "): payload is " + with_thousands(check.bytes)
                     + " bytes, at or above the " + limit_name(check.crossing) + " limit of "
                     + with_thousands(check.limit_bytes) + " bytes; ";
  if (check.crossing == size_crossing::grain_call)
    line += "an oversized frame would close the shared silo-to-silo connection; ";
  else
    line += "nothing published; ";
  // Escape the composed fields first, then append the already-quoted head.
  return one_line(line) + "head: "
         + json_quote(utf8_prefix(d.payload_json,
                                  static_cast<size_t>(config::payload_preview_chars)));
}

void log_size_refusal(const envelope& d, const size_check& check) {
  log::get("routing").error(size_refusal_log_line(d, check));
}

std::string size_refusal_message(const envelope& d, const size_check& check) {
  return "Delivery to '" + d.target.to_string() + "' refused: payload of "
         + with_thousands(check.bytes) + " bytes is at or above the "
         + limit_name(check.crossing) + " limit of " + with_thousands(check.limit_bytes)
         + " bytes";
}

fault oversized_fault(const envelope& d, const size_check& check) {
  return fault{mesh_errc::oversized, size_refusal_message(d, check)};
}

std::string echo_note(const std::string& payload) {
  return "{\"payloadOmitted\":true,\"bytes\":" + std::to_string(payload.size()) + ",\"head\":"
         + json_quote(utf8_prefix(payload, static_cast<size_t>(config::payload_preview_chars)))
         + "}";
}

envelope strip_echo(envelope original) {
  if (echo_needs_stripping(original))
    original.payload_json = echo_note(original.payload_json);
  return original;
}

delivery_failure make_delivery_failure(const envelope& original, std::string message,
                                       verdict v, bool target_unserved,
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

envelope make_nack_envelope(const delivery_failure& failure, std::string nack_id,
                            address from) {
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

} // namespace cafmesh::routing
