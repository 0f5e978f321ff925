#include "cafmesh/actors/request_any.hpp"

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"

namespace cafmesh {

void request_any(caf::event_based_actor* self, const caf::actor& dst, int64_t timeout_ms,
                 caf::message msg, std::function<void(caf::message)> on_reply,
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
