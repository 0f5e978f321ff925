#pragma once

/// @file
/// The network link's state and its peer connections, shared by net_link.cpp (the link's
/// behaviour: routing frames, probes, the heartbeat tick) and net_link_peers.cpp (connecting,
/// the hello, dropping a peer). Private to the actors library.

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/net_link.hpp"
#include "peer_gate.hpp"

namespace cafmesh::net_link_detail {

using endpoint = std::pair<std::string, uint16_t>;

inline std::string render(const endpoint& ep) {
  return ep.first + ":" + std::to_string(ep.second);
}

inline endpoint endpoint_of(const silo_address& s) {
  return {s.host, s.port};
}

enum class peer_phase { connecting, hello, up };

struct peer {
  peer_phase phase = peer_phase::connecting;
  uint64_t attempt = 0;         ///< tells answers of an earlier attempt apart
  silo_address addr;            ///< known once up
  caf::actor link;              ///< the peer's link (a remote proxy), once known
  std::deque<wire_frame> queue; ///< frames waiting for the connection
  /// Frames of this turn for the up connection, sent as one message at the turn's end
  /// (`flush_peers`, SPEC §14 B7).
  std::vector<wire_frame> out;
  /// The last frame or heartbeat received from the peer.
  caf::actor_clock::time_point last_heard;
  bool suspected = false;
  /// The pending silence check (`nl_silence_atom`), 0 if none: only the latest one counts.
  uint64_t silence_check = 0;
  /// Failed connects in a row; the frames wait while it is below `connect_retries`.
  int connect_failures = 0;
  /// The member a probe of this endpoint is meant to reach (docs/behaviour/membership.md#probes):
  /// suspected if the connection cannot be made.
  silo_address expected;
};

/// A connect that fails is tried again this often (every heartbeat interval) before the
/// frames waiting for it are bounced: two processes that connect to each other at the same
/// moment can make CAF close one of the two connections under the first hello.
constexpr int connect_retries = 3;

/// `(nl_reconnect_atom, host, port)`: connect to a peer again after a failed attempt.
using nl_reconnect_atom = caf::atom_constant<caf::atom("nlreconn")>;

/// `(nl_silence_atom, silo_address peer, uint64_t check)`: the peer's silence may have
/// reached the suspicion delay (docs/behaviour/membership.md#the-failure-detection-bound).
using nl_silence_atom = caf::atom_constant<caf::atom("nlsilence")>;

/// `(nl_flush_due_atom, silo_address src)`: the bound of the centre's flush waits for `src`
/// passed (docs/behaviour/membership.md#departures-and-the-wire).
using nl_flush_due_atom = caf::atom_constant<caf::atom("nlflushdue")>;

struct net_link_state {
  config::network_section cfg;
  /// Publishes and connects (docs/behaviour/peer-authentication.md); exited with the link.
  peer_gate gate;
  caf::io::middleman_actor mm;
  uint16_t port = 0;
  bool published = false;
  caf::error publish_error;
  std::vector<caf::response_promise> port_waiters;
  silo_address self_addr;
  caf::actor centre;
  caf::actor oracle; ///< local (primary) or a remote proxy (learnt by hello)
  bool oracle_is_local = false;
  /// The local oracle goes out in hello answers (`link_oracle::cluster`).
  bool oracle_shared = true;
  std::vector<caf::response_promise> oracle_waiters;
  /// Set once the primary refused this process's credentials or turned out to serve no
  /// oracle (its membership is on a shared table): the oracle stays unknown.
  caf::error oracle_refusal;
  bool asking_oracle = false; ///< `ask_primary_for_oracle` awaits its answer
  /// The primary's oracle was known once (this process joined through it); `oracle` is
  /// empty again while the primary is unreachable.
  bool oracle_known = false;
  std::map<endpoint, peer> peers;
  std::set<silo_address> reported_silent; ///< primary only: told the oracle "silent"
  /// With a local oracle: the other silos its latest view lists as not Dead, by endpoint;
  /// each is probed (docs/behaviour/membership.md#probes).
  std::map<endpoint, silo_address> members;
  uint64_t next_attempt = 1;
  uint64_t next_silence_check = 1;
  uint64_t primary_failures = 0; ///< failed connects to the primary since the last success
  bool ticking = false;
  bool stalled = false;             ///< `nl_stall_atom`: frames held both ways
  bool stall_detected = false;      ///< the stall also silences the heartbeats
  std::vector<wire_frame> held_out; ///< from the centre, while stalled
  std::vector<wire_frame> held_in;  ///< from peers, while stalled
  /// The centre's `sim_flush_atom` calls for a departed silo whose frames may still come:
  /// its connection is up, or frames from it are held by a stall.
  std::map<silo_address, std::vector<caf::response_promise>> flush_waiters;
  /// Frames and link-to-link messages each way (`nl_wire_atom`).
  link_wire_stats wire;
  log::logger log;
  static constexpr const char* name = "cafmesh.net_link";
};

/// The network link with its own messages: the heartbeat tick, a peer's silence check, a
/// reconnect attempt, the bound of a flush wait and a handshake's deadline (from its peer
/// gate).
using net_link_impl = net_link_actor::extend<
  caf::reacts_to<nl_tick_atom>, caf::reacts_to<nl_silence_atom, silo_address, uint64_t>,
  caf::reacts_to<nl_reconnect_atom, std::string, uint16_t>,
  caf::reacts_to<nl_flush_due_atom, silo_address>, caf::reacts_to<pg_expire_atom, uint64_t>>;
using link_self = net_link_impl::stateful_base<net_link_state>;

inline bool is_primary(const net_link_state& st) {
  return st.cfg.primary_port == 0;
}

inline endpoint primary_endpoint(const net_link_state& st) {
  return {st.cfg.primary_host, st.cfg.primary_port};
}

/// Tells a local oracle that `s` went silent (`alive` false) or speaks again.
void report_watch(link_self* self, const silo_address& s, bool alive);

/// Notes that the up peer `s` was heard from: it is no longer suspected.
void heard(link_self* self, const silo_address& s);

/// Checks the up peer `p`'s silence when it reaches `suspect_ms` from `p.last_heard`
/// (docs/behaviour/membership.md#the-failure-detection-bound); replaces a pending check.
void watch_silence(link_self* self, peer& p);

/// True if a frame from `src` is held by this link's stall.
inline bool held_from(const net_link_state& st, const silo_address& src) {
  return st.stalled && std::any_of(st.held_in.begin(), st.held_in.end(), [&](const wire_frame& f) {
           return f.src == src;
         });
}

/// True if frames `src` sent may still reach the centre: its connection is up, or a stall
/// holds some.
inline bool frames_may_come(const net_link_state& st, const silo_address& src) {
  auto i = st.peers.find(endpoint_of(src));
  bool connected = i != st.peers.end() && i->second.phase == peer_phase::up
                   && i->second.addr == src;
  return connected || held_from(st, src);
}

/// Answers the centre's flush waits for `s` (`sim_flush_atom`) unless a stall still holds
/// frames from `s`.
void release_flush(link_self* self, const silo_address& s);

/// Forgets the peer at `ep` and tells the centre, bouncing the frames it held.
void drop_peer(link_self* self, const endpoint& ep, const std::string& why);

/// Starts a connection attempt to `ep` (a new peer entry, or a retry of a failed one).
void connect(link_self* self, const endpoint& ep);

/// Connection attempt `attempt` to `ep` failed for `why`: retried (the primary every tick, a
/// peer with frames waiting up to `connect_retries` times when `retry`), or the peer dropped.
void fail_connect(link_self* self, const endpoint& ep, uint64_t attempt, const std::string& why,
                  bool retry = false);

/// The peer at `ep` introduced itself as `addr` with link `link`: mark it up and flush.
void peer_up(link_self* self, const endpoint& ep, const silo_address& addr, const caf::actor& link);

/// The primary is up but this process has no oracle yet: the primary's hello reached it
/// before its own hello to the primary (whose answer names the oracle) left, which happens
/// when the primary probes a departed member's endpoint that this process listens on now
/// (docs/behaviour/membership.md#probes). Sends the hello again over the primary's link;
/// one at a time, called on that hello and on every tick until the oracle is known.
void ask_primary_for_oracle(link_self* self);

/// Sends `f` to the peer at `ep` (with the other frames of this turn for it: `flush_peers`),
/// or queues it while the connection is not up.
void deliver_to(link_self* self, const endpoint& ep, peer& p, wire_frame f, bool fresh);

/// Sends the frames `p` collected this turn as one message (one frame: `nl_frame_atom`;
/// several: `nl_frames_atom`, at most `link_batch_max_frames` each), in order.
void flush_peer(link_self* self, peer& p);

/// `flush_peer` for every peer: the end of a turn that handed frames to `deliver_to`.
void flush_peers(link_self* self);

} // namespace cafmesh::net_link_detail
