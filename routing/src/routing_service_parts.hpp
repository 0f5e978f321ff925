#pragma once
/// @file
/// The parts of the routing service (private to the routing library): the entry
/// (routing_service.cpp) answers every message and runs the steps every role shares, then hands
/// a delivery to its role's backend: the router core for a `silo_host` (in the entry), the
/// gateway dispatch for a `pure_client` (routing_service_client.cpp, with its per-channel order
/// in routing_service_channel_order.cpp), the in-process hubs for a `monolith`
/// (routing_service_monolith.cpp). Held requests whose silo departs are settled in
/// routing_service_departures.cpp. docs/architecture.md#process-roles,
/// docs/behaviour/routing.md#the-entry

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/routing/routing_service.hpp"
#include "cafmesh/routing/verdict.hpp"
#include "cafmesh/routing/detail/routing_service_state.hpp"

namespace cafmesh::routing::routing_service_detail {

using cafmesh::routing::detail::routing_service_state;

using rs_actor = caf::stateful_actor<routing_service_state>;

// -- shared by the entry and every backend (routing_service.cpp) ----------------------------

/// The actor clock's now in ms.
int64_t now_ms(rs_actor* self);

/// Appends `x` to a per-attach record, keeping its newest `max` entries (`max` <= 0: none).
/// Attaches happen per membership change, not per delivery: erasing at the front is cheap.
template <class T>
void keep_newest(std::vector<T>& record, T x, int64_t max) {
  if (max <= 0)
    return;
  record.push_back(std::move(x));
  if (record.size() > static_cast<size_t>(max))
    record.erase(record.begin(), record.end() - max);
}

/// Appends attempt time `now` to `attempts_by_id[id]` (bounded by `client.attempt_record_max`).
void record_attempt(routing_service_state& st, const std::string& id, int64_t now);

/// The route-table key of `a` (its host address's path).
std::string route_key(rs_actor* self, const address& a);

/// The local route of `a`'s host address, or null.
caf::actor* find_route(rs_actor* self, const address& a);

/// Posts a NACK straight to the sender's local route; true if it was posted.
bool post_local_nack(rs_actor* self, const envelope& d, verdict v, const std::string& text,
                     std::optional<int64_t> retry_after_ms = std::nullopt);

/// The entry's answer for a delivery it gave up on.
envelope refused(envelope d, bool posted, const std::string& text);

/// The entry's answer for a delivery it accepted (`forwarded`).
envelope accepted(envelope d);

/// True if `host`'s type is one of `routing.stream_routed_address_types`.
bool is_stream_routed(rs_actor* self, const address& host);

// -- pure client: gateway, inbound attach, dispatch (routing_service_client.cpp) ------------

/// Steps 3, 3b and 4 of `deliver` for a pure client: size guard, admission, dispatch.
envelope client_deliver(rs_actor* self, envelope& d, int64_t deadline_ms);

/// True if this pure client has a membership view and no gateway it could use: none is
/// current and none of the view's Active silos is a candidate (SPEC C5).
bool no_usable_gateway(rs_actor* self);

/// The text of the `unavailable` NACK of a pure client without a usable gateway, starting
/// "no active silo" (SPEC C5).
std::string no_active_silo_text(rs_actor* self);

/// The most a dispatch keeps back of its requester's remaining time for the NACK's way back.
constexpr int64_t answer_margin_cap_ms = 1000;

/// What a hand-over at `now_ms` tells a router core of its requester's remaining time: the
/// time left to `deadline_ms` less a tenth of it, at most `answer_margin_cap_ms`, for the
/// NACK's way back (at least 1 ms); 0 without a deadline (`deadline_ms` <= 0)
/// (docs/behaviour/routing.md#a-requests-remaining-time).
caf::timespan answer_within(int64_t deadline_ms, int64_t now_ms);

/// Dispatch `id`'s next attempt (or its wait for its channel).
void client_attempt(rs_actor* self, uint64_t id);

/// A retry timer of dispatch `id` fired.
void client_retry(rs_actor* self, uint64_t id, uint64_t tok);

/// `(rs_call_sweep_atom, int64_t due_ms)` to itself: the timer armed for the earliest
/// deadline of the gateway calls in progress (SPEC §14 B6).
using rs_call_sweep_atom = caf::atom_constant<caf::atom("rscallswp")>;

/// The call timer armed for `due_ms` fired: every gateway call whose deadline has passed
/// fails `response_timeout`, and the timer is armed for the next deadline.
void client_call_sweep(rs_actor* self, int64_t due_ms);

/// `(rs_flush_atom)` to itself: the dispatches collected while the mailbox held more work
/// leave as one batch (SPEC §14 B1, docs/behaviour/routing.md#dispatch-batches).
using rs_flush_atom = caf::atom_constant<caf::atom("rsflush")>;

/// Sends the collected dispatches to their gateway as one routing-grain call.
void flush_dispatches(rs_actor* self);

/// Collects the dispatches that a loop of one turn starts (answers of a batch, a released
/// gate) and sends them as one batch when the outermost scope ends.
struct dispatch_scope {
  explicit dispatch_scope(rs_actor* self);
  ~dispatch_scope();
  dispatch_scope(const dispatch_scope&) = delete;
  dispatch_scope& operator=(const dispatch_scope&) = delete;
  rs_actor* self;
};

/// Picks and connects a gateway if there is none.
void ensure_gateway(rs_actor* self);

/// Drops gateway `gw` if it is the current one (re-homing).
void drop_gateway(rs_actor* self, const silo_address& gw, const std::string& why);

/// A local route was registered under `key` (host address `host`): attach it if inbound.
void client_registered(rs_actor* self, const std::string& key, const address& host);

/// The local route of `key` was unregistered: detach it at its gateway.
void client_unregistered(rs_actor* self, const std::string& key);

/// The pod hub of `a` was deactivated: assert its attach again.
void client_reattach(rs_actor* self, const address& a);

/// An attach retry timer of `key` fired.
void client_attach_retry(rs_actor* self, const std::string& key, uint64_t tok);

/// Home on `gw` now (connect, re-attach).
void client_home(rs_actor* self, const silo_address& gw);

/// A membership snapshot reached a pure client: gateways, avoided silos, re-attaches.
void client_snapshot(rs_actor* self, const membership_snapshot& v);

/// The stopping signal reached a pure client: nothing is attached any more.
void client_stopping(rs_actor* self);

// -- pure client: per-channel order (routing_service_channel_order.cpp) ---------------------

/// The ordering channel of `d` as the router core forms it, or none.
std::optional<ordering_channel> dispatch_channel(rs_actor* self, const envelope& d);

/// True if dispatch `id` of `ch` may start on the current gateway now.
bool channel_allows(rs_actor* self, uint64_t id, const ordering_channel& ch);

/// Starts the held dispatches of `ch` that may start now, in arrival order.
void pump_channel(rs_actor* self, const ordering_channel& ch);

/// Dispatch `id` of `ch` ended (accepted by `gw`, or given up with `gw` empty).
void channel_finish(rs_actor* self, uint64_t id, const ordering_channel& ch,
                    const silo_address& gw);

// -- held requests whose silo departs (routing_service_departures.cpp) ----------------------

/// The centre reports `s` departed.
void silo_lost(rs_actor* self, const silo_address& s);

/// The centre reports that `s` is leaving (its own notice over the link, or membership
/// shows it ShuttingDown or Stopping). A graceful leave (ShuttingDown) lets the answers of
/// its hubs leave, so its departure NACKs no held request (SPEC C2); a non-graceful one
/// changes nothing here.
void silo_leaving(rs_actor* self, const silo_address& s, bool graceful);

/// The router core whose leg landed request `id` reports that a hub of `at` took it.
void on_landed(rs_actor* self, const std::string& id, const silo_address& at);

/// A membership snapshot: remembers graceful leaves and forgets departures it confirms.
void departures_snapshot(rs_actor* self, const membership_snapshot& v);

// -- monolith (routing_service_monolith.cpp) -----------------------------------------------

/// Step 4 of `deliver` for a monolith: its hub, built in-process on a miss.
envelope monolith_deliver(rs_actor* self, envelope d);

} // namespace cafmesh::routing::routing_service_detail
