#pragma once

/// @file
/// Sending from a typed actor to a plain handle (docs/architecture.md "Handles"): not part of
/// the API.

#include <utility>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

namespace cafmesh::detail {

/// Sends `xs` from the typed actor `self` to the plain handle `dest` (a subscriber, a
/// watcher, a message centre, a peer's link), keeping `self` as the sender: a typed actor's
/// own `send` accepts typed receivers only.
template <class Self, class... Ts>
void tell(Self* self, const caf::actor& dest, Ts&&... xs) {
  caf::send_as(caf::actor_cast<caf::actor>(self), dest, std::forward<Ts>(xs)...);
}

} // namespace cafmesh::detail
