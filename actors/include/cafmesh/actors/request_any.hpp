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
#include <caf/sec.hpp>

#include "cafmesh/actors/atoms.hpp"

namespace cafmesh {

/// Sends `msg` from `self` (an event-based actor, typed or not) to `dst` as a request bounded
/// by `timeout_ms` (0 = no timeout) and calls exactly one of `on_reply` (the reply's
/// elements, possibly empty) or `on_error` (the error the callee answered,
/// `sec::request_timeout`, or `sec::request_receiver_down`). Both run in `self`'s turn.
///
/// How: the request registers a response handler that matches nothing real, so CAF turns
/// every reply into `sec::unexpected_response` whose context is the reply itself.
template <class Self>
void request_any(Self* self, const caf::actor& dst, int64_t timeout_ms, caf::message msg,
                 std::function<void(caf::message)> on_reply,
                 std::function<void(caf::error)> on_error) {
  auto handle_error = [on_reply, on_error](caf::error& e) {
    if (e == caf::sec::unexpected_response)
      on_reply(e.context());
    else
      on_error(std::move(e));
  };
  auto handle_never = [on_reply](mc_never_atom) {
    on_reply(caf::make_message(mc_never_atom::value));
  };
  if (timeout_ms > 0)
    self->request(dst, std::chrono::milliseconds(timeout_ms), std::move(msg))
      .then(handle_never, handle_error);
  else
    self->request(dst, caf::infinite, std::move(msg)).then(handle_never, handle_error);
}

} // namespace cafmesh
