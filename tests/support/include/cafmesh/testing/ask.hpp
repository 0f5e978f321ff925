#pragma once

/// @file
/// `ask`: send a request from a short-lived, tracked actor and record its answer with the
/// virtual time it arrived — the deterministic replacement for a blocking request in tests
/// (a blocking `request(...).receive(...)` deadlocks under the test coordinator, docs/caf-notes.md "The test coordinator").

#include <memory>
#include <utility>

#include <caf/actor_addr.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/testing/fixture.hpp"

namespace cafmesh::testing {

/// The recorded answer of one request whose reply is a `T` (default: `caf::ok_atom`).
template <class T = caf::ok_atom>
struct reply {
  bool done = false;
  int64_t t_ms = -1;     ///< virtual time the answer arrived
  T value{};
  caf::error err;        ///< empty on success
  caf::actor_addr from;  ///< who sent the answer

  /// Answered without an error.
  bool ok() const { return done && !err; }

  /// The fault code of an error answer (docs/behaviour/classification.md#faults-and-caf-errors
  /// translation for CAF's own codes).
  mesh_errc code() const { return to_fault(err).code; }
};

/// Sends `xs...` as a request without deadline to `h` from a fresh actor tracked by `fx`
/// and records the answer (or the error). Run the fixture to let it arrive.
template <class T = caf::ok_atom, class Handle, class... Ts>
std::shared_ptr<reply<T>> ask(fixture& fx, const Handle& h, Ts... xs) {
  auto out = std::make_shared<reply<T>>();
  auto fxp = &fx;
  auto a = fx.sys.spawn([=](caf::event_based_actor* self) {
    self->request(h, caf::infinite, xs...)
      .then(
        [=](T& v) {
          out->done = true;
          out->t_ms = fxp->now_ms();
          out->value = std::move(v);
          out->from = caf::actor_cast<caf::actor_addr>(self->current_sender());
        },
        [=](caf::error& e) {
          out->done = true;
          out->t_ms = fxp->now_ms();
          out->err = std::move(e);
          out->from = caf::actor_cast<caf::actor_addr>(self->current_sender());
        });
  });
  fx.track(a);
  return out;
}

} // namespace cafmesh::testing
