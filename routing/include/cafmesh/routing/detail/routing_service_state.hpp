#pragma once

/// @file
/// The state of the routing service: not part of the API. Only its own sources and the testing kit
/// include this header; tests read the state through `testing::fixture::state_of`
/// (docs/testing.md#reading-an-actors-state).

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/deadline_sweep.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/gateway_atoms.hpp"
#include "cafmesh/routing/held_requests.hpp"
#include "cafmesh/routing/hub_protocol.hpp"
#include "cafmesh/routing/ordered_route_dispatcher.hpp"
#include "cafmesh/routing/retry_policy.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/routing/router_ports.hpp"
#include "cafmesh/routing/routing_service.hpp"
#include "cafmesh/routing/stream_transport.hpp"

namespace cafmesh::routing::detail {

/// One inbound path of a pure client (docs/behaviour/routing.md#the-entry "Pure client inbound
/// attach").
struct inbound_route {
  address addr;                      ///< the registered address
  retry_state retry{retry_policy{}}; ///< the current assertion's budget
  uint64_t token = 0;                ///< invalidates stale answers and timers
  bool first = true;                 ///< the first assertion has not completed yet
  bool attached = false;             ///< the last assertion succeeded
  bool busy = false;                 ///< an attempt or a retry timer is outstanding
  silo_address at;                   ///< the gateway it was last attached at
  // Inspection records, each keeping its newest `client.attempt_record_max` entries.
  std::vector<int64_t> attempt_ms;       ///< virtual ms of every attach attempt
  std::vector<silo_address> attached_at; ///< gateway of every successful attach, in order
  std::vector<int64_t> attached_ms;      ///< virtual ms of every successful attach
};

/// One pure-client dispatch in progress.
struct client_dispatch {
  envelope env;
  /// A request (`rs_request_atom`): the actor-clock ms at which its sender stops waiting;
  /// 0 for every other delivery.
  int64_t deadline_ms = 0;
  retry_state retry{retry_policy{}};
  int64_t started_ms = 0;
  uint64_t token = 0;
  std::vector<int64_t> attempt_ms; ///< virtual ms of every attempt (tests)
  /// The ordering channel of a stream-routed target (as the router core forms it); none
  /// for the node branch, which the router core does not order.
  std::optional<ordering_channel> channel;
  /// The gateway of the attempt in progress; empty while the dispatch waits for a retry
  /// or for its channel.
  silo_address in_call;
  bool held = false; ///< waits for its channel (an earlier dispatch or the old gateway)
  /// The attempt in progress: the actor-clock ms at which it fails `response_timeout` (its
  /// key in `routing_service_state::call_deadlines`; 0: no call), and its bound in ms.
  int64_t call_due_ms = 0;
  int64_t call_bound_ms = 0;
};

/// One ordering channel of a pure client's dispatches
/// (docs/behaviour/routing.md#a-pure-clients-streams-across-a-re-homing).
struct client_channel {
  /// Its dispatches not yet accepted or given up, in arrival order.
  std::deque<uint64_t> pending;
  /// The gateway that accepted the channel's latest dispatch: its router core may still
  /// hold that leg. Empty: none that may.
  silo_address pinned;
  int64_t pinned_ms = 0; ///< actor-clock ms of that acceptance
  bool draining = false; ///< a `gw_drained` request to `pinned` is outstanding
  uint64_t drain_token = 0;
};

/// The routing service's state.
struct routing_service_state {
  routing_service_options opts;
  log::logger log;
  std::map<std::string, caf::actor> routes; ///< host path -> handler
  bool stopping = false;
  uint64_t next_id = 0;
  // pure_client
  std::vector<silo_address> gateways; ///< the active set of the latest snapshot
  silo_address gateway;               ///< current gateway (empty: choose)
  /// Gateways that refused (`silo_unavailable`) or departed: not chosen again while
  /// another Active gateway exists (docs/behaviour/membership.md#gateways-for-pure-clients
  /// "re-homes to another gateway").
  std::set<silo_address> avoided;
  /// Silos whose departure the centre reported: a pure client never chooses them as a
  /// gateway again (a restarted silo has a newer generation, hence another address); a
  /// landing reported at one of them is NACKed at once.
  std::set<silo_address> lost;
  /// Silos membership showed ShuttingDown (graceful leave): their departure NACKs nothing.
  std::set<silo_address> graceful;
  /// The latest membership view (a landing reported after its silo departed is NACKed).
  std::optional<membership_snapshot> view;
  /// Requests handed on (a pure client: accepted `forwarded` by a gateway; a silo host:
  /// handed to its router core) whose answer has not passed this service, with the gateway
  /// and the landing silo the answer depends on. When one of them departs abruptly before
  /// the request's deadline, the request ends in one NACK `failed` at once
  /// (docs/behaviour/routing.md#requests-whose-silo-departs).
  held_requests held;
  std::mt19937_64 rng;
  std::map<uint64_t, client_dispatch> dispatches;
  /// Dispatch attempts (id, token) collected for `batch_gateway`, sent as one routing-grain
  /// call (docs/behaviour/routing.md#dispatch-batches).
  std::vector<std::pair<uint64_t, uint64_t>> batch;
  silo_address batch_gateway;
  bool batch_flush_queued = false; ///< an `rs_flush_atom` to itself is in the mailbox
  int batch_scopes = 0;            ///< open `dispatch_scope`s: they send the batch at the end
  /// The deadlines of the gateway calls in progress, (due ms, dispatch id), earliest first:
  /// one timer, armed for the earliest, bounds them all (SPEC §14 B6, docs/delivery-costs.md).
  deadline_sweep<uint64_t> call_deadlines;
  /// Delivery id -> virtual ms of every dispatch attempt (inspection), at most
  /// `client.attempt_record_max` ids: the oldest id is dropped first
  /// (docs/behaviour/routing.md#bounded-records).
  std::map<std::string, std::vector<int64_t>> attempts_by_id;
  std::deque<std::string> attempt_ids;          ///< the ids of `attempts_by_id`, oldest first
  std::map<std::string, inbound_route> inbound; ///< host path -> inbound attach
  std::deque<uint64_t> gated; ///< dispatches waiting for a first attach, in arrival order
  /// Ordering channels with a dispatch in progress or a pinned gateway.
  std::map<ordering_channel, client_channel> channels;
  size_t channel_sweep_at = 1024; ///< sweep unpinned-by-age channels past this size
  // monolith
  std::map<std::string, std::deque<envelope>> building; ///< host path -> waiting deliveries
  routing_service_stats stats;

  static const char* name;
};

} // namespace cafmesh::routing::detail
