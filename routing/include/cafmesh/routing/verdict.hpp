#pragma once

/// @file
/// Delivery states (docs/behaviour/envelope.md#delivery-states) and NACK verdicts
/// (docs/behaviour/envelope.md#verdicts).

#include <cstdint>
#include <string>

namespace cafmesh::routing {

/// Where a delivery stands (docs/behaviour/envelope.md#delivery-states).
enum class delivery_state : uint8_t {
  submitted = 0, ///< accepted by a target that processes it later (parked)
  forwarded,     ///< accepted by a router; a leg owns it
  processed,     ///< the target hub handled it
  not_found,     ///< the address names nothing
  rejected,      ///< refused by policy, e.g. size
  failed,        ///< failed; properties["error"] holds the text, maybe properties["verdict"]
  ignored,       ///< declined at intake; never NACKed
};

/// True for a value the enum names (what a state read from the wire must be).
constexpr bool is_known(delivery_state x) {
  return static_cast<uint8_t>(x) <= static_cast<uint8_t>(delivery_state::ignored);
}

/// Renders the state's name, e.g. `forwarded`.
std::string to_string(delivery_state x);

/// Parses a state's name; answers false (leaving `out` untouched) for an unknown name.
bool from_string(const std::string& name, delivery_state& out);

/// A NACK's classification (docs/behaviour/envelope.md#verdicts).
enum class verdict : uint8_t {
  shutting_down = 0,       ///< transient: the target or path is leaving; ask again later
  unavailable,             ///< transient: no verdict could be reached
  failed,                  ///< terminal
  not_found,               ///< terminal
  rejected,                ///< terminal: a policy refused it
  routing_loop,            ///< terminal
  unauthorized,            ///< terminal, carried back from the target
  forbidden,               ///< terminal, carried back from the target
  unknown,                 ///< carried verbatim
  exception,               ///< carried verbatim
  compilation_failed,      ///< carried verbatim
  compilation_in_progress, ///< carried verbatim
  startup_script_failed,   ///< carried verbatim
  ignored,                 ///< never in a NACK
};

/// True for a value the enum names (what a verdict read from the wire must be).
constexpr bool is_known(verdict x) {
  return static_cast<uint8_t>(x) <= static_cast<uint8_t>(verdict::ignored);
}

/// Renders the verdict's wire name, e.g. `shutting_down`.
std::string to_string(verdict x);

/// Parses a wire name; answers false (leaving `out` untouched) for an unknown name.
bool from_string(const std::string& name, verdict& out);

/// True for `shutting_down` and `unavailable` (docs/behaviour/envelope.md#verdicts "transient").
constexpr bool is_transient_verdict(verdict v) {
  return v == verdict::shutting_down || v == verdict::unavailable;
}

} // namespace cafmesh::routing
