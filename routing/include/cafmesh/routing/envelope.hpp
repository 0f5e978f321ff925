#pragma once

/// @file
/// The delivery envelope (docs/behaviour/envelope.md#the-envelope) and the NACK payload
/// `delivery_failure` (docs/behaviour/envelope.md#the-nack).

#include <map>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>
#include <caf/sec.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::routing {

/// One delivery's record (docs/behaviour/envelope.md#the-envelope). `payload_json` is opaque UTF-8
/// JSON text: the router never parses it; only the packaging stamps (`ordering_key`,
/// `answer_suppressed`) steer it.
struct envelope {
  std::string id; ///< unique per delivery, `{process}-{n}`
  address sender; ///< receives the response or NACK
  address target; ///< where the delivery goes
  delivery_state state = delivery_state::submitted;
  std::map<std::string, std::string> properties; ///< string -> JSON text; survives every hop
  caf::optional<std::string> access_context;     ///< caller identity, passed through
  std::vector<address> routing_path;             ///< every forwarder appends itself
  std::string payload_type;                      ///< the payload's `$type`, for logs
  /// UTF-8 JSON text, measured by docs/behaviour/size-guard.md
  std::string payload_json;
  caf::optional<std::string> ordering_key; ///< stream id; empty id counts as none
  bool answer_suppressed = false;          ///< if true no NACK ever answers it
  caf::optional<std::string> request_id;   ///< on responses and NACKs: answered id

  friend bool operator==(const envelope& x, const envelope& y);
  friend bool operator!=(const envelope& x, const envelope& y) { return !(x == y); }
};

/// Read from the wire, a state the enum does not name is refused with
/// `sec::invalid_argument` (docs/behaviour/routing.md#envelopes-on-the-wire).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, envelope& x) {
  auto known_state = caf::meta::load_callback([&]() -> caf::error {
    if (is_known(x.state))
      return caf::none;
    return caf::make_error(caf::sec::invalid_argument,
                           "unknown delivery_state " + std::to_string(static_cast<int>(x.state)));
  });
  return f(caf::meta::type_name("cafmesh.envelope"), x.id, x.sender, x.target, x.state, known_state,
           x.properties, x.access_context, x.routing_path, x.payload_type, x.payload_json,
           x.ordering_key, x.answer_suppressed, x.request_id);
}

/// `may_answer(d)`: true iff `d.answer_suppressed` is false
/// (docs/behaviour/envelope.md#the-envelope).
inline bool may_answer(const envelope& d) {
  return !d.answer_suppressed;
}

/// True for a continuation of accepted work: a response or a NACK, i.e. an envelope whose
/// `request_id` names the delivery it answers. Everything else (a post, a frame, a
/// heartbeat, a request that answers nothing) is new work.
inline bool is_continuation(const envelope& d) {
  return d.request_id && !d.request_id->empty();
}

/// The property marking a failed envelope whose failing site already NACKed
/// (docs/behaviour/envelope.md#delivery-states).
constexpr const char* sender_was_nacked_property = "sender_was_nacked";

/// True for state `failed` with property `sender_was_nacked` = `true`
/// (docs/behaviour/envelope.md#delivery-states).
bool is_failed_and_nacked(const envelope& d);

/// Marks `d` failed-and-NACKed: state `failed`, property `sender_was_nacked` = `true`.
void mark_failed_and_nacked(envelope& d);

/// The NACK payload (docs/behaviour/envelope.md#the-nack).
struct delivery_failure {
  std::string request_id; ///< the failed delivery's id; the sender matches on it
  /// echo; payload >= 1,048,576 bytes stripped (docs/behaviour/size-guard.md#stripping-the-echo)
  envelope original;
  std::string message; ///< e.g. `Delivery to 'node/Org/Acme' failed: ...`
  routing::verdict verdict = verdict::failed;
  bool target_unserved = false; ///< docs/behaviour/envelope.md#the-nack
  caf::optional<silo_address> responding_silo;

  friend bool operator==(const delivery_failure& x, const delivery_failure& y);
  friend bool operator!=(const delivery_failure& x, const delivery_failure& y) { return !(x == y); }
};

/// Read from the wire, a verdict the enum does not name is refused with
/// `sec::invalid_argument` (docs/behaviour/routing.md#envelopes-on-the-wire).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delivery_failure& x) {
  auto known_verdict = caf::meta::load_callback([&]() -> caf::error {
    if (is_known(x.verdict))
      return caf::none;
    return caf::make_error(caf::sec::invalid_argument,
                           "unknown verdict " + std::to_string(static_cast<int>(x.verdict)));
  });
  return f(caf::meta::type_name("cafmesh.delivery_failure"), x.request_id, x.original, x.message,
           x.verdict, known_verdict, x.target_unserved, x.responding_silo);
}

} // namespace cafmesh::routing
