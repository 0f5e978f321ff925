#pragma once

/// @file
/// Payloads (docs/hosting.md "Payloads"): a delivery's payload is JSON text, opaque to the
/// router. An application with CAF-serialisable payload types (`inspect` + announced with
/// `cfg.add_message_type<T>`) sends them without writing JSON: `encode_payload(sys, x)` gives
/// the JSON string `"caf:{hex of CAF's binary serialisation}"`, `decode_payload<T>(sys, text)`
/// reads it back. Both ends must announce `T` the same way. `decode_response<R>` reads an
/// answer as an `R` either way (the typed `request<R>`, correlating_entry.hpp).

#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/detail/type_traits.hpp>
#include <caf/expected.hpp>

#include "cafmesh/actors/fault.hpp"

namespace cafmesh::routing {

/// `bytes` as the payload JSON text `"caf:{hex}"`.
std::string caf_payload_text(const std::vector<char>& bytes);

/// The bytes of a `"caf:{hex}"` payload; false if `text` is not one.
bool caf_payload_bytes(const std::string& text, std::vector<char>& out);

/// `x` as a payload (JSON text): CAF's binary serialisation, hex-encoded in a JSON string.
template <class T>
caf::expected<std::string> encode_payload(caf::actor_system& sys, const T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  if (auto err = sink(const_cast<T&>(x)))
    return err;
  return caf_payload_text(buf);
}

/// Reads a payload written by `encode_payload<T>`; fails `rejected` with the reason when
/// `text` is no such payload or does not deserialise as a `T`.
template <class T>
caf::expected<T> decode_payload(caf::actor_system& sys, const std::string& text) {
  std::vector<char> buf;
  if (!caf_payload_bytes(text, buf))
    return to_error(
      fault{mesh_errc::rejected, "the payload is no CAF payload: " + text.substr(0, 64)});
  T out;
  caf::binary_deserializer source{sys, buf};
  if (auto err = source(out))
    return to_error(fault{mesh_errc::rejected,
                          "the payload does not read as the expected type: " + sys.render(err)});
  return out;
}

/// Reads a response's payload as an `R`: `std::string` is the JSON text itself; a
/// `"caf:{hex}"` payload of a CAF-serialisable `R`, or any payload of a type nlohmann cannot
/// read (`from_json`), is decoded as by `decode_payload<R>`; otherwise the JSON text is read
/// with nlohmann. Fails
/// `rejected` with the reason when the text is no `R`.
template <class R>
caf::expected<R> decode_response(caf::actor_system& sys, const std::string& text) {
  if constexpr (std::is_same_v<R, std::string>) {
    return text;
  } else if constexpr (nlohmann::detail::has_from_json<nlohmann::json, R>::value) {
    if constexpr (caf::detail::is_serializable<R>::value)
      if (text.rfind("\"caf:", 0) == 0)
        return decode_payload<R>(sys, text);
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded())
      return to_error(
        fault{mesh_errc::rejected, "the response payload is no JSON: " + text.substr(0, 64)});
    try {
      return j.get<R>();
    } catch (const nlohmann::json::exception& e) {
      return to_error(
        fault{mesh_errc::rejected, std::string{"the response payload does not read as the expected "
                                               "type: "}
                                     + e.what()});
    }
  } else {
    static_assert(caf::detail::is_serializable<R>::value,
                  "decode_response<R> / request<R>: R must be std::string, a type nlohmann reads "
                  "(a from_json for it), or a CAF-serialisable type (an inspect for it)");
    return decode_payload<R>(sys, text);
  }
}

} // namespace cafmesh::routing
