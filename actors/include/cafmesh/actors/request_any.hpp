#pragma once

/// @file
/// A request whose reply may have any type: CAF 0.17 has no catch-all response handler, so
/// relays (the message centre, gateways, anything forwarding a grain call's answer) use
/// this.

#include <chrono>
#include <functional>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/message.hpp>

namespace cafmesh {

/// Sends `msg` from `self` to `dst` as a request bounded by `timeout_ms` (0 = no timeout)
/// and calls exactly one of `on_reply` (the reply's elements, possibly empty) or
/// `on_error` (the error the callee answered, `sec::request_timeout`, or
/// `sec::request_receiver_down`). Both run in `self`'s turn.
///
/// How: the request registers a response handler that matches nothing real, so CAF turns
/// every reply into `sec::unexpected_response` whose context is the reply itself.
void request_any(caf::event_based_actor* self, const caf::actor& dst, int64_t timeout_ms,
                 caf::message msg, std::function<void(caf::message)> on_reply,
                 std::function<void(caf::error)> on_error);

} // namespace cafmesh
