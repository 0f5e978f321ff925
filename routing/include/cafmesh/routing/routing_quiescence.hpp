#pragma once

/// @file
/// The per-silo routing quiescence gauge (docs/behaviour/quiescence.md#the-gauge): counts accepted
/// routing work (legs and NACKs) from acceptance until termination. Protocol:
/// `routing_quiescence_actor.hpp`.

#include <string>

#include "cafmesh/routing/routing_quiescence_actor.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace cafmesh::routing {

/// Options of one gauge.
struct routing_quiescence_options {
  /// Rendered silo address (or any name) used as log context; may be empty.
  std::string silo_name;
};

/// Spawns a quiescence gauge (docs/behaviour/quiescence.md#the-gauge). The caller owns it and exits
/// it when the silo's runtime services go away; send `q_teardown_atom` first so stragglers
/// do nothing.
routing_quiescence_actor spawn_routing_quiescence(caf::actor_system& sys,
                                                  routing_quiescence_options opts = {});

/// The gauge label of a node leg (docs/behaviour/quiescence.md#the-gauge):
/// `dispatch -> {addr} (delivery {id})`.
std::string dispatch_label(const std::string& addr, const std::string& delivery_id);

/// The gauge label of a stream-routed leg: `stream-routed -> {addr} (delivery {id})`.
std::string stream_routed_label(const std::string& addr, const std::string& delivery_id);

/// The gauge label of a NACK: `NACK -> {sender} (delivery {id})`.
std::string nack_label(const std::string& sender, const std::string& delivery_id);

/// Renders a slot for a log line (docs/behaviour/quiescence.md#the-participant-at-stage-active):
/// `"{label}, in flight {S.S}s"` for a dispatched slot (age since dispatch),
/// `"{label} (queued, not dispatched), queued {S.S}s"` for a queued one (age since the slot was
/// taken); `now_ms` on the same clock.
std::string render_entry(const quiescence_entry& x, int64_t now_ms);

/// Renders milliseconds as seconds with one decimal, rounded half up: 31000 -> `31.0`,
/// 1950 -> `2.0`, 1949 -> `1.9`. Negative ages render as `0.0`.
std::string render_seconds_1(int64_t ms);

/// Renders a configured budget for log text: whole seconds as `"30 s"`, anything else as
/// `"200 ms"`.
std::string render_budget(int64_t ms);

} // namespace cafmesh::routing
