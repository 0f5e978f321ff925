#include "cafmesh/routing/routing_service.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "routing_service_parts.hpp"
#include "cafmesh/routing/detail/routing_service_state.hpp"

namespace cafmesh::routing::routing_service_detail {

using cafmesh::routing::detail::client_channel;

// -- per-channel order across a re-homing ------------------------------------------------
// docs/behaviour/routing.md#a-pure-clients-streams-across-a-re-homing

/// The ordering channel of `d` as the router core forms it (host path, ordering key), or
/// none for the node branch, which the router core does not order.
std::optional<ordering_channel> dispatch_channel(rs_actor* self, const envelope& d) {
  auto host = host_address(d.target, self->state.opts.mesh_type);
  if (!is_stream_routed(self, host))
    return std::nullopt;
  return make_channel(host.path(), d.ordering_key ? *d.ordering_key : std::string{});
}

namespace {

/// Drops the channels that hold no dispatch and whose pin is older than `channel_pin_ms`
/// or names a gateway whose connection was lost (memory bound of `channels`).
void sweep_channels(rs_actor* self) {
  auto& st = self->state;
  auto now = now_ms(self);
  for (auto i = st.channels.begin(); i != st.channels.end();) {
    auto& c = i->second;
    if (c.pending.empty() && !c.draining
        && (c.pinned.empty() || st.lost.count(c.pinned) > 0
            || now - c.pinned_ms > st.opts.channel_pin_ms))
      i = st.channels.erase(i);
    else
      ++i;
  }
  st.channel_sweep_at = std::max<size_t>(1024, 2 * st.channels.size());
}

/// The old gateway of `ch` answered (or could not: gone, closed, silent within the bound).
void drain_done(rs_actor* self, const ordering_channel& ch, uint64_t tok) {
  auto& st = self->state;
  auto i = st.channels.find(ch);
  if (i == st.channels.end() || !i->second.draining || i->second.drain_token != tok)
    return;
  i->second.draining = false;
  i->second.pinned = silo_address{};
  pump_channel(self, ch);
}

/// Asks the gateway that accepted the latest dispatch of `ch` to answer once its router
/// core holds no leg of `ch` any more.
void start_drain(rs_actor* self, const ordering_channel& ch, client_channel& c) {
  auto& st = self->state;
  if (c.draining)
    return;
  c.draining = true;
  auto tok = ++c.drain_token;
  ++st.stats.drains;
  auto gw = c.pinned;
  auto bound
    = std::chrono::milliseconds(st.opts.placement_timeout_ms + st.opts.grain_response_timeout_ms);
  st.log.debug("channel " + ch.name() + " moves off gateway " + gw.to_string()
               + ": its next deliveries wait until that gateway's router core let go of it");
  self
    ->request(st.opts.centre, bound,
              make_call(gw, component::gateway, gw_drained_atom::value, ch.destination,
                        ch.key ? *ch.key : std::string{}))
    .then([=](caf::ok_atom) { drain_done(self, ch, tok); },
          [=](caf::error& e) {
            self->state.log.info("channel " + ch.name() + " at gateway " + gw.to_string()
                                 + ": no drain answer (" + to_fault(e).render()
                                 + "); its next deliveries go on");
            drain_done(self, ch, tok);
          });
}

} // namespace

/// True if dispatch `id` of channel `ch` may start on the current gateway now: every
/// earlier dispatch of the channel is in a call at that gateway, and the gateway that
/// accepted the channel's latest dispatch is this one or has let go of the channel. A
/// dispatch that waits only for the old gateway starts the drain there.
bool channel_allows(rs_actor* self, uint64_t id, const ordering_channel& ch) {
  auto& st = self->state;
  auto i = st.channels.find(ch);
  if (i == st.channels.end())
    return true;
  auto& c = i->second;
  auto gw = st.gateway;
  for (auto pid : c.pending) {
    if (pid == id)
      break;
    auto j = st.dispatches.find(pid);
    if (j != st.dispatches.end() && j->second.in_call != gw)
      return false; // it waits for a retry or its channel, or is in a call elsewhere
  }
  if (c.pinned.empty() || c.pinned == gw || gw.empty())
    return true;
  if (st.lost.count(c.pinned) > 0 || !st.opts.centre) {
    c.pinned = silo_address{}; // its legs ended with its connection
    return true;
  }
  start_drain(self, ch, c);
  return false;
}

/// Starts the held dispatches of `ch` that may start now, in arrival order; stops at the
/// first that still has to wait (everything behind it waits too).
void pump_channel(rs_actor* self, const ordering_channel& ch) {
  auto& st = self->state;
  auto i = st.channels.find(ch);
  if (i == st.channels.end())
    return;
  std::vector<uint64_t> ids(i->second.pending.begin(), i->second.pending.end());
  dispatch_scope scope{self}; // the dispatches it starts leave as one batch
  for (auto pid : ids) {
    auto j = st.dispatches.find(pid);
    if (j == st.dispatches.end() || !j->second.in_call.empty())
      continue;
    if (!j->second.held)
      return; // waits for its retry (or a first attach)
    client_attempt(self, pid);
    j = st.dispatches.find(pid);
    if (j != st.dispatches.end() && j->second.held)
      return;
  }
}

/// Dispatch `id` of `ch` ended (accepted by `gw`, or given up with `gw` empty).
void channel_finish(rs_actor* self, uint64_t id, const ordering_channel& ch,
                    const silo_address& gw) {
  auto& st = self->state;
  auto i = st.channels.find(ch);
  if (i == st.channels.end())
    return;
  auto& c = i->second;
  c.pending.erase(std::remove(c.pending.begin(), c.pending.end(), id), c.pending.end());
  if (!gw.empty()) {
    c.pinned = gw;
    c.pinned_ms = now_ms(self);
  }
  if (c.pending.empty() && c.pinned.empty() && !c.draining)
    st.channels.erase(i);
  else
    pump_channel(self, ch);
  if (st.channels.size() > st.channel_sweep_at)
    sweep_channels(self);
}

} // namespace cafmesh::routing::routing_service_detail
