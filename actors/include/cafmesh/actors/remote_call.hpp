#pragma once

/// @file
/// A grain call to an activation of another silo, correlated by id through the caller's own
/// message centre (SPEC §14 B6, docs/delivery-costs.md#the-remote-frame-path).
///
/// A component sends its silo's centre `(mc_calls_atom, std::vector<remote_call_item>)`
/// one-way; the centre sends each item to the activation's silo as one request frame
/// (component `activation`, payload `(ct_invoke_atom, grain, tag, forward_count, payload)`,
/// time-to-live `ttl_ms`) and answers the sender by id in batches `(ct_results_atom,
/// std::vector<ct_result_item>)` (catalog.hpp), flushed when its mailbox is empty, never on a
/// timer. The answers are those of a bounded `mc_call_atom`: the catalog's reply or error,
/// `departed_silo` (resendable, or "outcome is unknown" after a non-graceful departure),
/// `silo_unavailable` from a leaving silo, `response_timeout` for a frame that expired. The
/// centre sets no timeout: the caller bounds its calls by id (one timer at its earliest
/// deadline) and ignores a late answer.

#include <cstdint>
#include <vector>

#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/ids.hpp"

namespace cafmesh {

/// `(mc_calls_atom, std::vector<remote_call_item>)` one-way to the caller's own message
/// centre: grain calls answered by id (see above).
using mc_calls_atom = caf::atom_constant<caf::atom("mccalls")>;

/// One grain call of an `mc_calls` batch: `call` to silo `dst`, waited for at most `ttl_ms`
/// milliseconds by its caller (the frame's time-to-live, `make_bounded_call`).
struct remote_call_item {
  silo_address dst;
  int64_t ttl_ms = 0;
  ct_call_item call;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_call_item& x) {
  return f(caf::meta::type_name("cafmesh.remote_call_item"), x.dst, x.ttl_ms, x.call);
}

} // namespace cafmesh
