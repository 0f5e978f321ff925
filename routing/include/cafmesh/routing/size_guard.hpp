#pragma once

/// @file
/// The size guard (docs/behaviour/size-guard.md): measuring `payload_json`, the grain-call and
/// stream-block limits, the one-line refusal log (docs/behaviour/size-guard.md#the-refusal-line)
/// and stripping an oversized NACK echo (docs/behaviour/size-guard.md#stripping-the-echo). Pure
/// functions; the caller decides when to check and where to send.
///
/// The NACK codec (the `delivery_failure` JSON text) is nack_codec.hpp.

#include <cstddef>
#include <cstdint>
#include <string>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/nack_codec.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::routing {

/// Which crossing a payload is checked for (docs/behaviour/size-guard.md#limits).
enum class size_crossing : uint8_t {
  grain_call,   ///< client -> routing grain, router core -> node/pod hub grain: configurable
  stream_block, ///< stream publish: 1,048,576 bytes, fixed
};

/// Renders `grain_call` or `stream_block`.
std::string to_string(size_crossing x);

/// The measure (docs/behaviour/size-guard.md#what-is-measured): the UTF-8 byte count of
/// `payload_json`, i.e. its `size()`. Characters are never counted: 400,000 "€" are
/// 1,200,000 bytes.
inline int64_t payload_bytes(const envelope& d) {
  return static_cast<int64_t>(d.payload_json.size());
}

/// Refuse when `bytes >= limit_bytes` (docs/behaviour/size-guard.md#what-is-measured: reaching the
/// limit already cannot fit).
constexpr bool refuses_size(int64_t bytes, int64_t limit_bytes) {
  return bytes >= limit_bytes;
}

/// The limit for `crossing` (docs/behaviour/size-guard.md#limits):
/// `cfg.grain_call_body_limit_bytes` (default 104,857,600, read at each call so a live
/// configuration applies) or the fixed
/// `config::stream_block_limit_bytes` = 1,048,576.
int64_t size_limit_bytes(size_crossing crossing, const config::size_section& cfg);

/// The outcome of one size check.
struct size_check {
  size_crossing crossing = size_crossing::grain_call;
  int64_t bytes = 0;       ///< measured payload bytes
  int64_t limit_bytes = 0; ///< the limit applied
  bool refused = false;    ///< `bytes >= limit_bytes`
};

/// Measures `d` against the limit of `crossing`.
size_check check_size(const envelope& d, size_crossing crossing, const config::size_section& cfg);

/// Measures `d` against an explicit limit (the caller already read it).
size_check check_size(const envelope& d, size_crossing crossing, int64_t limit_bytes);

/// Renders `n` with `,` as thousands separator: 37483597 -> `37,483,597`, -5000 -> `-5,000`.
std::string with_thousands(int64_t n);

/// Number of UTF-8 code points in `s`; an invalid or truncated byte counts as one.
size_t utf8_length(const std::string& s);

/// The first `max_chars` code points of `s`, cut without splitting a UTF-8 sequence (an
/// invalid byte counts as one character and is kept as is).
std::string utf8_prefix(const std::string& s, size_t max_chars);

/// `s` as a JSON string literal, quotes included: `"` `\` and every control character
/// escaped (newline -> `\n`), U+2028/U+2029 escaped too, invalid UTF-8 replaced by U+FFFD.
/// The result never contains a raw line break.
std::string json_quote(const std::string& s);

/// The one refusal line of docs/behaviour/size-guard.md#the-refusal-line (logged at error by the
/// caller or `log_size_refusal`):
/// `size guard: refusing delivery {id} to '{target}' from '{sender}' (payload type {type}):
/// payload is {bytes} bytes, at or above the {grain-call|stream block} limit of {limit}
/// bytes; ` then, for the grain-call variant, `an oversized frame would close the shared
/// silo-to-silo connection; ` or, for the stream variant, `nothing published; ` and finally
/// `head: {first 200 characters of the payload, JSON-quoted}`. Numbers carry thousands
/// separators. Raw control characters in any field are escaped, so the result is one line.
std::string size_refusal_log_line(const envelope& d, const size_check& check);

/// Logs `size_refusal_log_line` at error on the `routing` logger (exactly one line).
void log_size_refusal(const envelope& d, const size_check& check);

/// The NACK text for a size refusal (verdict `rejected`, docs/behaviour/size-guard.md#limits):
/// `Delivery to '{target}' refused: payload of {bytes} bytes is at or above the {grain-call|stream block} limit of
/// {limit} bytes`.
std::string size_refusal_message(const envelope& d, const size_check& check);

/// An `oversized` fault carrying `size_refusal_message` as its text.
fault oversized_fault(const envelope& d, const size_check& check);

/// True if the echo of `d` must be stripped: `payload_bytes(d) >= 1,048,576`
/// (docs/behaviour/size-guard.md#stripping-the-echo).
inline bool echo_needs_stripping(const envelope& d) {
  return refuses_size(payload_bytes(d), config::nack_echo_limit_bytes);
}

/// The stripping note for `payload` (docs/behaviour/size-guard.md#stripping-the-echo):
/// `{"payloadOmitted":true,"bytes":N,"head":"…"}`, head = `utf8_prefix(payload, 200)`,
/// JSON-quoted. Always under 4,096 characters.
std::string echo_note(const std::string& payload);

/// `original` as it is echoed in a NACK (docs/behaviour/size-guard.md#stripping-the-echo):
/// unchanged when its payload is under 1,048,576 bytes, else with `payload_json` replaced by
/// `echo_note(payload_json)`; `id` and every other field are kept.
envelope strip_echo(envelope original);

} // namespace cafmesh::routing
