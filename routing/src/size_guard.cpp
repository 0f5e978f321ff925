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

size_check check_size(const envelope& d, size_crossing crossing, const config::size_section& cfg) {
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
                     + "): payload is " + with_thousands(check.bytes) + " bytes, at or above the "
                     + limit_name(check.crossing) + " limit of " + with_thousands(check.limit_bytes)
                     + " bytes; ";
  if (check.crossing == size_crossing::grain_call)
    line += "an oversized frame would close the shared silo-to-silo connection; ";
  else
    line += "nothing published; ";
  // Escape the composed fields first, then append the already-quoted head.
  return one_line(line) + "head: "
         + json_quote(
           utf8_prefix(d.payload_json, static_cast<size_t>(config::payload_preview_chars)));
}

void log_size_refusal(const envelope& d, const size_check& check) {
  log::get("routing").error(size_refusal_log_line(d, check));
}

std::string size_refusal_message(const envelope& d, const size_check& check) {
  return "Delivery to '" + d.target.to_string() + "' refused: payload of "
         + with_thousands(check.bytes) + " bytes is at or above the " + limit_name(check.crossing)
         + " limit of " + with_thousands(check.limit_bytes) + " bytes";
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

} // namespace cafmesh::routing
