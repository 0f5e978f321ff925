#pragma once

// Test helpers shared by quiescence_test.cpp and io_pool_test.cpp: `ask` sends a request
// from a short-lived event-based actor and records the answer with its virtual time.

#include <memory>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/testing/fixture.hpp"

namespace cafmesh::testing {

/// The recorded answer of one request.
template <class T>
struct reply {
  bool done = false;
  int64_t at_ms = -1;  ///< virtual time the answer arrived
  T value{};
  caf::error err;
  caf::actor_addr from; ///< who sent the answer
};

/// Sends `xs...` as a request to `h` from a fresh actor (tracked by `fx`) and records the
/// answer of type `T` (or the error) in the returned reply.
template <class T, class Handle, class... Ts>
std::shared_ptr<reply<T>> ask(fixture& fx, const Handle& h, Ts... xs) {
  auto out = std::make_shared<reply<T>>();
  auto fxp = &fx;
  auto a = fx.sys.spawn([=](caf::event_based_actor* self) {
    self->request(h, caf::infinite, xs...)
      .then(
        [=](T& v) {
          out->done = true;
          out->at_ms = fxp->now_ms();
          out->value = std::move(v);
          out->from = caf::actor_cast<caf::actor_addr>(self->current_sender());
        },
        [=](caf::error& e) {
          out->done = true;
          out->at_ms = fxp->now_ms();
          out->err = e;
          out->from = caf::actor_cast<caf::actor_addr>(self->current_sender());
        });
  });
  fx.track(a);
  return out;
}

} // namespace cafmesh::testing
