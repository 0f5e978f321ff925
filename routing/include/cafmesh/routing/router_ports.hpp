#pragma once

/// @file
/// The router core's ports: the small typed interfaces through which legs
/// (docs/behaviour/routing.md#legs, docs/behaviour/classification.md#retry-policies) and the NACK
/// transport ladder (docs/behaviour/routing.md#nacks) reach the outside. The router core holds one
/// handle of each (`router_core_options`); a null handle means "not available here" and turns every
/// leg step that needs it into a composition fault (docs/behaviour/routing.md#legs) or skips the
/// ladder rung. Every port answers asynchronously; the router core bounds each request and grain-port
/// call with its own deadline, so a port that never answers cannot wedge a leg.
///
/// Errors always travel as `caf::error` made by `to_error(fault)`
/// (docs/behaviour/classification.md#faults-and-caf-errors); the router core reads them back with
/// `to_fault`. CAF's own errors (request timeout, receiver down) are translated by `to_fault` as
/// docs/behaviour/classification.md#faults-and-caf-errors says.
///
/// | Port | Who implements it | Messages |
/// |---|---|---|
/// | `grain_port_actor` | the grain-call adapter (placement + catalog) | deliver, invalidate, invalidate_silo, activation error |
/// | `path_resolver_actor` | the application (docs/architecture.md#one-silo) | resolve |
/// | `stream_port_actor` | the stream transport (stream_transport.hpp) | probe, publish |
/// | `local_route_port_actor` | the routing service (it owns the local route table,
/// docs/behaviour/routing.md#the-entry) | local deliver |
/// | runtime probe | `lifecycle::runtime_registry_actor` (existing) | probe_runtime |

#include <string>

#include <caf/actor_control_block.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/router_atoms.hpp"

namespace cafmesh::routing {

// -- (a) grain delivery ------------------------------------------------------------------

/// The grain-delivery port: one grain call `deliver` on a hub grain through placement
/// (docs/behaviour/directory-and-placement.md#placement, docs/behaviour/routing.md#legs, #hubs),
/// plus the cache invalidation the retry loop needs
/// (docs/behaviour/classification.md#retry-policies).
///
/// - `(gp_call_atom, uint64_t call, grain_id, envelope, caf::timespan within)` one-way: ONE
///   attempt of
///   `{grain}.deliver(envelope)`, where grain is `messagehub/{node prefix}` (node hub) or
///   `podhub/{rendered host path}` (pod hub). The adapter places the grain (directory cache
///   permitting), sends the call and answers the caller (the message's sender) one-way
///   through a `grain_port_reply`: `(gp_result_atom, call, envelope)` with the hub's result
///   envelope (state `processed`, `submitted`, `forwarded`, `ignored`, `failed` with
///   `properties["error"]` and maybe `properties["verdict"]` / `sender_was_nacked`, ...),
///   or `(gp_result_atom, call, caf::error)` with the fault tree as `to_error(fault)`:
///   `placement_timeout` after `placement.timeout_ms` (30 s),
///   `response_timeout` after `grain_call.response_timeout_ms` (30 s) from leaving
///   placement, `no_compatible_silo`, `departed_silo` (with `fault::silo`),
///   `activation_deactivated` (with its `activation_error_recorded`), `silo_unavailable`,
///   `directory_unstable`, `rejected`, `pod_hub_not_here` (with `fault::silo` = the silo
///   that answered), `runtime_gone` (probe qualifier left `no_answer`: the router core
///   probes), `application`, ... The adapter never retries by itself: each call is one
///   fresh attempt, and the router core's retry loop decides
///   (docs/behaviour/classification.md#retry-policies). The router core bounds each call by
///   `within`, at most `placement.timeout_ms + grain_call.response_timeout_ms` and less for a
///   request whose requester waits less (docs/behaviour/routing.md#a-requests-remaining-time),
///   and treats its own timeout as `response_timeout` (not resendable); the adapter passes
///   `within` to placement, so the grain call itself never outlives it (its response bound and
///   time-to-live are cut to what is left). A call rather than a CAF request: CAF 0.17 keeps an
///   actor's awaited responses in a vector searched from the front, so a router core with
///   K legs in flight paid O(K) per answer; the router core finds a call's continuation by
///   its id in a hash map (docs/behaviour/routing.md#grain-port-calls).
/// - `(gp_invalidate_atom, grain_id)` one-way: drop the cached address of that grain so the
///   next `deliver` re-resolves through placement (and, for a pod hub, the owner's claim).
///   Sent before every retry (docs/behaviour/classification.md#retry-policies, S12.21).
/// - `(gp_inval_silo_atom, silo_address)` one-way: drop every cached address naming that
///   silo (sent for each `departed_silo` node before a retry,
///   docs/behaviour/classification.md#retry-policies).
/// - `(gp_act_error_atom, grain_id) -> std::string`: the activation error recorded for that
///   grain by the silo's activation-failure registry
///   (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion), or the empty
///   string when none is recorded. The fault arm asks once before building its NACK text
///   (docs/behaviour/routing.md#legs step 5: "detail = the activation error recorded for that grain
///   if any, else the fault text"). A fault answer counts as "none".
using grain_port_actor
  = caf::typed_actor<caf::reacts_to<gp_call_atom, uint64_t, grain_id, envelope, caf::timespan>,
                     caf::reacts_to<gp_invalidate_atom, grain_id>,
                     caf::reacts_to<gp_inval_silo_atom, silo_address>,
                     caf::replies_to<gp_act_error_atom, grain_id>::with<std::string>>;

/// The answer to one `gp_call` (see `grain_port_actor`): made in the handler of the call,
/// kept while the attempt runs, delivered once. It sends `(gp_result_atom, call, ...)` to the
/// call's sender from the port, at the priority the call came with.
class grain_port_reply {
public:
  grain_port_reply() = default;

  /// The reply to the call `call` that `port` is handling now.
  grain_port_reply(caf::local_actor* port, uint64_t call);

  /// Answers the hub's result envelope.
  void deliver(envelope result) const;

  /// Answers a failure (`to_error(fault)`).
  void deliver(caf::error failure) const;

private:
  template <class T>
  void send(T&& x) const; // grain_port_reply.cpp

  caf::local_actor* port_ = nullptr;
  caf::strong_actor_ptr caller_;
  uint64_t call_ = 0;
  bool urgent_ = false;
};

/// The node-hub grain of a node prefix: `messagehub/{prefix}`
/// (docs/behaviour/envelope.md#grain-ids-and-grain-types).
inline grain_id node_hub_grain(const std::string& node_prefix) {
  return grain_id{"messagehub", node_prefix};
}

/// The pod-hub grain of a host path: `podhub/{path}`
/// (docs/behaviour/envelope.md#grain-ids-and-grain-types), e.g. `podhub/portal/alice`.
inline grain_id pod_hub_grain(const std::string& host_path) {
  return grain_id{"podhub", host_path};
}

// -- (b) the path resolver (application-supplied, docs/architecture.md#one-silo) ------------------

/// The resolver's answer for one address path.
struct resolve_result {
  /// True if some mesh node was found for (a prefix of) the path.
  bool found = false;
  /// The node prefix, e.g. `Org/Acme` for `node/Org/Acme` (meaningful when `found`).
  std::string node_prefix;
  /// What is left of the path below the node; the router requires it to be empty
  /// (docs/behaviour/routing.md#legs: a non-empty remainder is "not found").
  std::string remainder;
  /// The closest existing ancestor, when known (docs/behaviour/routing.md#legs: ". Closest
  /// ancestor: '{a}'").
  caf::optional<std::string> closest_ancestor;
  /// The resolver says this answer stays valid: the router core may keep a found node for
  /// the path until a membership change, a transient fault of that node's hub or an
  /// explicit `rc_forget_atom` (docs/behaviour/routing.md#cacheable-resolutions). False: the
  /// path is resolved again for every leg.
  bool cacheable = false;

  friend bool operator==(const resolve_result& x, const resolve_result& y) {
    return x.found == y.found && x.node_prefix == y.node_prefix && x.remainder == y.remainder
           && x.closest_ancestor == y.closest_ancestor && x.cacheable == y.cacheable;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, resolve_result& x) {
  return f(caf::meta::type_name("cafmesh.resolve_result"), x.found, x.node_prefix, x.remainder,
           x.closest_ancestor, x.cacheable);
}

/// The path resolver (docs/architecture.md#one-silo): `(pr_resolve_atom, path) -> resolve_result`,
/// where `path` is the rendered host path of the target (`type/id`, e.g. `node/Org/Acme`) or of
/// a NACK's sender (docs/behaviour/routing.md#nacks rung b). "Unknown path" is `found = false`
/// (optionally with
/// `closest_ancestor`), never an error; an error answer is a resolver fault. The router core
/// bounds each call by `routing.resolve_timeout_ms` (30 s); a timeout is a resolver fault.
using path_resolver_actor
  = caf::typed_actor<caf::replies_to<pr_resolve_atom, std::string>::with<resolve_result>>;

// -- (c) the stream transport ---------------------------------------------------------------------
// docs/behaviour/routing.md#legs stream leg, docs/behaviour/routing.md#nacks rung d

/// The stream transport port.
///
/// - `(sp_probe_atom, address) -> bool`: is there a live subscriber for this (host)
///   address? `true` = yes, `false` = definitely none. The router core bounds it by
///   `routing.subscriber_probe_timeout_ms` (10 s); no answer (timeout or error) counts as
///   "yes" (docs/behaviour/routing.md#legs).
/// - `(sp_publish_atom, address, envelope) -> ok_atom`: publish the envelope on the
///   address's stream. The transport bounds itself by `routing.stream_transport_timeout_ms`
///   (30 s) and answers a fault on failure; the router core guards each publish with
///   `routing.stream_post_timeout_ms` (60 s, "Stream post to '{addr}' never completed within
///   60 s").
/// - Either message answered with `lifecycle_misuse` means the transport has not started:
///   the stream leg ends in the composition fault of docs/behaviour/routing.md#legs (NACK `failed`
///   "Routing to '{addr}' failed before the delivery could be attempted: the stream transport
///   has not started"); on NACK rung d it is a publish failure like any other.
using stream_port_actor
  = caf::typed_actor<caf::replies_to<sp_probe_atom, address>::with<bool>,
                     caf::replies_to<sp_publish_atom, address, envelope>::with<caf::ok_atom>>;

// -- (d) local routes of this process -------------------------------------------------------------
// docs/behaviour/routing.md#nacks rung a

/// The local-route port, implemented by the routing service (which owns the local route
/// table, docs/behaviour/routing.md#the-entry): `(lr_deliver_atom, envelope) -> bool` hands the
/// envelope to the in-process handler of `envelope.target` (reduced to its host address by
/// the routing service) and answers `true` if a local route took it, `false` if this process has no
/// local route for it (nothing was delivered). The router core uses it for NACKs only
/// (rung a); it bounds the call by `routing.resolve_timeout_ms` and treats a timeout or an
/// error as `false`. A routing service includes this signature in its own interface and
/// passes `caf::actor_cast<local_route_port_actor>(self)` to the router core.
using local_route_port_actor
  = caf::typed_actor<caf::replies_to<lr_deliver_atom, envelope>::with<bool>>;

// -- (e) the runtime probe: lifecycle::runtime_registry_actor (runtime_registry.hpp) --------
// The router core asks `(probe_runtime_atom, silo name)` when a fault tree holds
// `runtime_gone` with probe `no_answer`, writes the answer into those nodes' `probe`
// qualifier, then classifies (docs/behaviour/classification.md#codes). No registry, an error or
// silence within
// `router_core_options::runtime_probe_timeout_ms` leave `no_answer` (verdict `failed`).

} // namespace cafmesh::routing
