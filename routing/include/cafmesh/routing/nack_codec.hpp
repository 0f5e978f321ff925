#pragma once

/// @file
/// The NACK codec (docs/behaviour/envelope.md#the-nack): building a `delivery_failure` and its
/// envelope, the
/// `delivery_failure` as JSON text and back, and what a sending application makes of a NACK
/// or an entry's refusal (`delivery_error`, delivery_error.hpp).
///
/// **The `delivery_failure` JSON shape** (the NACK envelope's `payload_json`,
/// `payload_type` = `delivery_failure`), produced by `to_json_text` and read back by
/// `from_json_text`:
/// ```
/// { "$type": "delivery_failure",
///   "requestId": "<failed delivery's id>",
///   "message": "<human text>",
///   "verdict": "<verdict wire name, e.g. shutting_down>",
///   "targetUnserved": <bool>,
///   "respondingSilo": "S{host}:{port}@{generation}" | null,
///   "original": {                       // the echo, payload possibly stripped
///   (docs/behaviour/size-guard.md#stripping-the-echo)
///     "id": "<id>", "sender": "<rendered address>", "target": "<rendered address>",
///     "state": "<delivery_state name>",
///     "properties": { "<key>": "<the property's JSON text, as a string>", ... },
///     "accessContext": "<text>" | null,
///     "routingPath": [ "<rendered address>", ... ],
///     "payloadType": "<type>",
///     "payloadJson": "<the payload's JSON text, as a string: never parsed>",
///     "orderingKey": "<key>" | null,
///     "answerSuppressed": <bool>,
///     "requestId": "<id>" | null } }
/// ```
/// Strings are UTF-8; invalid UTF-8 bytes in any field are replaced by U+FFFD on output.

#include <string>

#include <caf/optional.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/delivery_error.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::routing {

/// Builds a NACK payload (docs/behaviour/envelope.md#the-nack): `request_id = original.id`, the
/// echo via `strip_echo`, the given message, verdict, target-unserved flag and responding silo.
delivery_failure make_delivery_failure(const envelope& original, std::string message, verdict v,
                                       bool target_unserved = false,
                                       caf::optional<silo_address> responding_silo = caf::none);

/// The `payload_type` of every NACK envelope: `delivery_failure`.
constexpr const char* delivery_failure_payload_type = "delivery_failure";

/// The access context a NACK carries when the original had none
/// (docs/behaviour/envelope.md#the-nack "system identity"): `system`.
constexpr const char* system_identity = "system";

/// The `delivery_failure` as JSON text (shape in the file comment).
std::string to_json_text(const delivery_failure& x);

/// Parses `to_json_text` output; answers false (leaving `out` untouched) on anything else.
/// Never throws.
bool from_json_text(const std::string& text, delivery_failure& out);

/// The NACK envelope for `failure` (docs/behaviour/envelope.md#the-nack): id `nack_id`, sender
/// `from` (the NACKing router or hub), target `failure.original.sender`,
/// `request_id = failure.request_id`,
/// `answer_suppressed = true` (a NACK is never NACKed), access context of the original or
/// `system_identity`, `payload_type = delivery_failure`, `payload_json = to_json_text(failure)`,
/// state `submitted`, no ordering key, empty routing path and properties.
envelope make_nack_envelope(const delivery_failure& failure, std::string nack_id, address from);

/// What the sender makes of NACK `f`: its verdict and message; resendable when the verdict is
/// transient (docs/behaviour/envelope.md#verdicts).
delivery_error to_delivery_error(const delivery_failure& f);

/// What the sender makes of an entry's plain `failed` answer `a` (accepted nothing, posted
/// no NACK): verdict `properties["verdict"]` when present (else `failed`), text
/// `properties["error"]` (JSON strings unquoted), resendable when the verdict is transient.
delivery_error entry_refusal(const envelope& a);

} // namespace cafmesh::routing
