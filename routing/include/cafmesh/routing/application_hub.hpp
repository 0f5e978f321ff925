#pragma once

/// @file
/// Application hubs written as handlers (docs/hosting.md "Hubs"): the application says what
/// a hub does with one delivery, `(const envelope&) -> std::optional<reply>`; cafmesh takes
/// the delivery in, drops a repeated one, builds the response envelope and routes it back to
/// the sender. A hub table maps addresses to handlers and is the silo's hub factory: a node
/// hub grain that activates on this silo asks it for `node/{key}` (docs/behaviour/routing.md#hubs);
/// a monolith asks it for the target's host path (docs/behaviour/routing.md#monolith).
///
/// ## Hub protocol (what every application hub understands, hub_protocol.hpp)
/// - `(hb_in_atom, envelope)` one-way: a delivery handed over by the routing service;
/// - `(hb_deliver_atom, envelope) -> envelope`: a node hub grain's hand-over, answered once
///   the handler ended the delivery: state `processed`, or `failed` with
///   `properties["error"]` when it failed (the node hub grain then NACKs the sender).
/// A handler ends each delivery once: `respond(reply)`, `done()` or `fail(text)`
/// (`hub_responder`); a synchronous `hub_handler` does so when it returns (a reply, none, or
/// a throw). A delivery that may be answered (`may_answer`, a sender set) and that was ended
/// with a reply is answered with one response envelope: id `{delivery id}-response`, sender
/// = the hub, target = the delivery's sender, `request_id` = the delivery's id, routed
/// through the routing service of the hub's process. A failed delivery handed over by the
/// local route table is NACKed by the hub itself (`failed`, id `{delivery id}-nack`). A
/// response or NACK sent to the hub itself (it sent nothing) is dropped with a debug line.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/hub_protocol.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/routing/routing_quiescence_actor.hpp"

namespace cafmesh::routing {

/// What a hub answers a delivery with: the response's payload (JSON text by default).
struct reply {
  std::string payload_json = "{}";
  std::string payload_type = "response";
};

/// A hub's behaviour: called once per delivery the hub takes in (a delivery id in progress
/// or handled is dropped before; a failed one is handled again when the sender retries it),
/// on the hub's own actor. Answer a reply to respond, `std::nullopt` for
/// none; throw to fail the delivery (the sender gets one NACK `failed` with the text).
using hub_handler = std::function<std::optional<reply>(const envelope&)>;

/// How an asynchronous hub ends one delivery: exactly one of `respond`, `done` or `fail`,
/// now or later (e.g. in the `.then` of a grain call). Copyable; later calls are ignored.
/// Until one is called the delivery is in progress: a node hub grain waits for it, bounded by
/// its sender's response timeout.
class hub_responder {
public:
  hub_responder() = default;
  hub_responder(caf::actor hub, std::string delivery_id);
  /// Handled; respond to the sender with `r` (when the delivery may be answered).
  void respond(reply r) const;
  /// Handled, no response.
  void done() const;
  /// Not handled: the delivery fails with `text`; its sender gets one NACK `failed`.
  void fail(std::string text) const;
  /// Not handled because of `err` (e.g. a grain call's fault): the sender's NACK carries
  /// `classify(to_fault(err))`, so a transient cause (`departed_silo`, a stopping silo, ...)
  /// reaches the sender as `unavailable` or `shutting_down`, which it may send again.
  void fail(const caf::error& err) const;
  const std::string& delivery_id() const { return id_; }

private:
  caf::actor hub_;
  std::string id_;
};

/// An asynchronous hub's behaviour: called once per delivery on the hub's own actor `self`,
/// which may send requests (grain calls, other services) and end the delivery from their
/// answers through `r`.
using async_hub_handler
  = std::function<void(caf::event_based_actor* self, const envelope& d, hub_responder r)>;

/// `h` as an asynchronous handler (it ends every delivery at once).
async_hub_handler as_async(hub_handler h);

/// Spawns one application hub at `self_address` whose responses go through `routing` (the
/// routing service of its process). It registers nothing; see `spawn_hub_table`.
caf::actor spawn_application_hub(caf::actor_system& sys, address self_address, caf::actor routing,
                                 async_hub_handler handler,
                                 const config::routing_section& cfg = {});

/// `(ht_add_atom, std::string pattern, async_hub_handler)` -> ok: adds a handler to a hub
/// table.
using ht_add_atom = caf::atom_constant<caf::atom("htadd")>;
/// `(ht_routing_atom, caf::actor routing, caf::actor claimer)` one-way: the routing service
/// of the table's process and (silo_host only) its pod-hub claimer, once they exist.
using ht_routing_atom = caf::atom_constant<caf::atom("htrouting")>;
/// `(ht_quiescence_atom, routing_quiescence_actor gauge, router_core_actor core)` one-way,
/// silo_host only: the
/// silo's quiescence gauge and router core. From then on every delivery a hub of the table
/// has in progress holds a gauge slot (`application_hub_slot_bit`) until the hub ended it
/// and the response or NACK it sent is accepted by the router core, so a graceful stop
/// holds at stage Active until what the hubs owe their senders has landed.
using ht_quiescence_atom = caf::atom_constant<caf::atom("htquiesce")>;

/// `(ht_patterns_atom) -> std::vector<std::string>`: the table's hub patterns, for the
/// silo's membership row (`hub_pattern_manifest`). From then on the table is **published**:
/// it refuses a new `node/...` pattern (docs/behaviour/routing.md#unserved-addresses).
using ht_patterns_atom = caf::atom_constant<caf::atom("htpatterns")>;

/// Empty when `pattern` is a valid hub pattern (see `spawn_hub_table`), else why not: it is
/// no address path, or it can match nothing (a `*` that is not a whole last segment, e.g.
/// `node/inv*`).
std::string hub_pattern_error(const std::string& pattern);

/// True if hub pattern `pattern` matches the rendered address path `path`: equal, or a
/// pattern `p/*` and a path below `p/`.
bool hub_pattern_matches(const std::string& pattern, const std::string& path);

/// The grain-manifest entry that says "this silo publishes its hub patterns" (type `@hubs`).
/// A `@` never starts a grain type placement looks for.
constexpr const char* hub_patterns_marker = "@hubs";

/// The manifest entries that publish `patterns` with a silo's membership row
/// (docs/behaviour/routing.md#unserved-addresses): the marker, then one entry per pattern,
/// type `@hub {pattern}`. Placement never looks for these types.
std::vector<grain_type_info> hub_pattern_manifest(const std::vector<std::string>& patterns);

/// The number of live silos (rows of `view` neither Dead nor departed) if every one of them
/// publishes its hub patterns (`hub_pattern_manifest`) and none of them matches `path`: then
/// no live process serves `path`. Nothing if some live silo does not publish its patterns,
/// one matches, or no silo is live.
std::optional<size_t> unserved_by(const membership_snapshot& view, const std::string& path);

/// How a hub table names the key of a hub factory request.
enum class hub_key_form : uint8_t {
  /// silo: the key is a node prefix, the hub is `node/{key}` (docs/behaviour/routing.md#hubs)
  node_prefix,
  /// monolith: the key is the target's rendered host path (docs/behaviour/routing.md#monolith)
  host_path,
};

/// The handle of a hub table (`spawn_hub_table`): the process's hub factory, the messages
/// that fill it, and the lifecycle observer of stage Active.
using hub_table_actor = hub_factory_actor::extend<
  caf::replies_to<ht_add_atom, std::string, async_hub_handler>::with<caf::ok_atom>,
  caf::reacts_to<ht_routing_atom, caf::actor, caf::actor>,
  caf::reacts_to<ht_quiescence_atom, routing_quiescence_actor, router_core_actor>,
  caf::replies_to<ht_patterns_atom>::with<std::vector<std::string>>,
  caf::reacts_to<mb_snapshot_atom,
                 membership_snapshot>>::extend_with<lifecycle::lifecycle_observer_actor>;

/// Spawns a hub table: the process's hub factory over handlers added by pattern. A pattern
/// is an address path (`node/hello`), or a path ending in `/*` that matches every path below
/// it (`node/counter/*` matches `node/counter/7`). The longest matching pattern wins.
/// - A factory request (`hf_build_atom`, key) for a path some pattern matches answers that
///   path's hub, spawned on the first request (linked to the table, registered as a local
///   route of the routing service so that answers addressed to it land here). No match, key
///   form `host_path` (a monolith, the whole mesh): error `not_found` ("no hub handler for
///   '{path}' in this process"). No match, key form `node_prefix` (a silo): error `not_found`
///   ("No live process serves '{path}': no hub pattern of the {n} live silo(s) matches it;
///   register a hub whose pattern matches it (...) or send to an address a hub serves") when
///   the latest membership view (`mb_snapshot_atom`, the silo subscribes the table to its
///   agent) proves it (`unserved_by`); else error `no_compatible_silo` ("no hub handler for
///   '{path}' in this process; another live silo may serve it"). The node hub NACKs the first
///   `not_found`, the second `unavailable` (docs/behaviour/routing.md#unserved-addresses).
/// - `(ht_patterns_atom)`: the patterns added so far; afterwards, key form `node_prefix`, a
///   new `node/...` pattern is refused (`config_invalid`, "hub pattern '{p}' comes after this
///   silo published its hub patterns with its membership row; register node hubs before the
///   silo starts"): the other silos judge by the published row.
/// - Adding an exact pattern whose address type is stream-routed
///   (`cfg.stream_routed_address_types`: `portal`, `client`, `cache`, `mesh`) spawns that hub
///   at once and registers it as a local route; in a silo the pod hub of its path is claimed
///   (`pc_claim_atom` to the claimer), in a pure client the routing service attaches it at
///   the gateway by itself. Such a hub is reachable from every process.
/// Requests that arrive before the routing service is known answer `silo_unavailable`.
///
/// The table is also a lifecycle observer (`lifecycle_observer_actor`; a silo subscribes it
/// at stage Active): a graceful stop of that stage is answered once no hub has a delivery in
/// progress, so that what asynchronous hubs still owe their senders (responses, NACKs)
/// leaves while the silo's routing is up; the shutdown budget ends the wait. Given the
/// silo's gauge (`ht_quiescence_atom`), the quiescence hold of the same stage also waits
/// until those responses and NACKs have landed.
hub_table_actor spawn_hub_table(caf::actor_system& sys, hub_key_form form,
                                const config::routing_section& cfg);

} // namespace cafmesh::routing

/// Handlers and responses travel in local messages only (`ht_add_atom`, the hub's own
/// `ah_end_atom`).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmesh::routing::async_hub_handler)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmesh::routing::reply)
