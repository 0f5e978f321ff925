#pragma once

// The counter service's application, shared by its silo process and its tests: a typed
// counter grain, and the hub that answers requests by asking it.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/all.hpp>

#include "cafmesh/lifecycle/hosting.hpp"

namespace counter_service {

using add_atom = caf::atom_constant<caf::atom("add")>;

/// The counter grain: `(add_atom, n) -> total`. One activation per key holds its total.
using counter = caf::typed_actor<caf::replies_to<add_atom, int64_t>::with<int64_t>>;

/// Called after every completed turn of a counter activation with the grain's key and its
/// new total; empty (the default) for none. Set once before the silo is built: the partition
/// test's turn log (`cafmesh-counter-silo CONFIG.json TURN_LOG`) writes one line per turn.
inline std::function<void(const std::string& key, int64_t total)>& turn_observer() {
  static std::function<void(const std::string&, int64_t)> observer;
  return observer;
}

/// One activation of `counter/{key}`.
inline counter::behavior_type counter_grain(caf::event_based_actor*, const cafmesh::grain_id& id) {
  auto total = std::make_shared<int64_t>(0);
  return {[total, key = id.key](add_atom, int64_t n) {
    *total += n;
    if (auto& observe = turn_observer())
      observe(key, *total);
    return *total;
  }};
}

/// The hub `node/counter/{key}`: every request adds 1 to the grain `counter/{key}` (through
/// `placement`, the silo's placement service) and is answered `{"key":"{key}","count":N}`.
inline cafmesh::routing::async_hub_handler counter_hub(caf::actor placement) {
  return [placement](caf::event_based_actor* self, const cafmesh::routing::envelope& d,
                     cafmesh::routing::hub_responder r) {
    auto key = d.target.id.substr(d.target.id.find('/') + 1); // node/counter/{key}
    cafmesh::lifecycle::grain_ref<counter> ref{placement, {"counter", key}};
    ref.request(self, add_atom::value, int64_t{1})
      .then(
        [r, key](int64_t total) {
          r.respond({"{\"key\":\"" + key + "\",\"count\":" + std::to_string(total) + "}"});
        },
        // A transient fault (the grain's silo is leaving) reaches the sender as a verdict
        // it may send again on.
        [r](caf::error& err) { r.fail(err); });
  };
}

/// Adds the counter grain type and hub to a silo being built; call `register_hub` with
/// `counter_hub(silo.placement())` once it is built (the hub needs the silo's placement).
inline cafmesh::lifecycle::silo_builder& with_counter(cafmesh::lifecycle::silo_builder& b) {
  return b.grain<counter>("counter", counter_grain);
}

} // namespace counter_service
