#pragma once

/// @file
/// A pure client's dispatches to its gateway's routing grain travel in batches (SPEC §14 B1,
/// B4; docs/behaviour/routing.md#dispatch-batches): one `dispatch_item` per delivery out, one
/// `caf::error` per item back, in the items' order.

#include <cstddef>
#include <vector>

#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

#include "cafmesh/routing/envelope.hpp"

namespace cafmesh::routing {

/// The most dispatches one batch carries; a gateway refuses a larger one.
inline constexpr size_t dispatch_batch_max = 64;

/// One delivery of a dispatch batch and how long its requester still waits, less a margin
/// (0: no bound; docs/behaviour/routing.md#a-requests-remaining-time).
struct dispatch_item {
  envelope env;
  caf::timespan answer_within{0};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dispatch_item& x) {
  return f(caf::meta::type_name("cafmesh.dispatch_item"), x.env, x.answer_within);
}

/// The routing grain's answer to a batch: per item, in order, no error if the silo's router
/// core accepted it, else the fault that refused it (the texts of a lone call's refusals).
using dispatch_verdicts = std::vector<caf::error>;

} // namespace cafmesh::routing
