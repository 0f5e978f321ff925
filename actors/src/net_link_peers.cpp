#include "net_link_state.hpp"

#include <algorithm>
#include <chrono>

#include "cafmesh/actors/detail/tell.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/peer_auth.hpp"

// Connecting to a peer, its hello, and dropping it (docs/behaviour/membership.md#probes).

namespace cafmesh::net_link_detail {

using cafmesh::detail::tell;

void report_watch(link_self* self, const silo_address& s, bool alive) {
  auto& st = self->state;
  if (!st.oracle_is_local || !st.oracle)
    return;
  if (alive) {
    if (st.reported_silent.erase(s) > 0)
      tell(self, st.oracle, sim_watch_atom::value, s, true);
  } else if (st.reported_silent.insert(s).second) {
    tell(self, st.oracle, sim_watch_atom::value, s, false);
  }
}

void bounce(link_self* self, wire_frame f) {
  if (self->state.centre)
    tell(self, self->state.centre, mc_bounce_atom::value, std::move(f));
}

void heard(link_self* self, const silo_address& s) {
  auto& st = self->state;
  auto i = st.peers.find(endpoint_of(s));
  if (i == st.peers.end() || i->second.phase != peer_phase::up || i->second.addr != s)
    return;
  auto& p = i->second;
  p.last_heard = self->clock().now();
  if (p.suspected) {
    p.suspected = false;
    st.log.info("peer " + s.to_string() + " speaks again");
    watch_silence(self, p);
  }
  report_watch(self, s, true);
}

void watch_silence(link_self* self, peer& p) {
  auto& st = self->state;
  p.silence_check = st.next_silence_check++;
  auto due = p.last_heard + std::chrono::milliseconds(suspect_ms(st.cfg));
  auto now = self->clock().now();
  self->delayed_send(self, due > now ? due - now : caf::timespan{0}, nl_silence_atom::value, p.addr,
                     p.silence_check);
}

void release_flush(link_self* self, const silo_address& s) {
  auto& st = self->state;
  auto i = st.flush_waiters.find(s);
  if (i == st.flush_waiters.end() || held_from(st, s))
    return;
  auto waiters = std::move(i->second);
  st.flush_waiters.erase(i);
  // A connection delivers in order what was written before it ended; a frame it lost
  // broke it, and the calls waiting on a broken connection already failed as in flight.
  for (auto& rp : waiters)
    rp.deliver(caf::ok_atom::value, false);
}

/// Forgets the peer at `ep` (if it is still the one named `addr`) and tells the centre.
void drop_peer(link_self* self, const endpoint& ep, const std::string& why) {
  auto& st = self->state;
  auto i = st.peers.find(ep);
  if (i == st.peers.end())
    return;
  flush_peer(self, i->second); // what was sent before the drop left before it
  auto p = std::move(i->second);
  st.peers.erase(i);
  // A member this process could not connect to is suspected like one that fell silent: a
  // silo killed before this process ever spoke to it would otherwise get no vote from it.
  std::set<silo_address> unreachable;
  if (p.expected.generation != 0)
    unreachable.insert(p.expected);
  for (auto& f : p.queue) {
    if (f.dst.generation != 0)
      unreachable.insert(f.dst);
    bounce(self, std::move(f));
  }
  if (p.phase != peer_phase::up) {
    for (auto& s : unreachable) {
      auto m = st.members.find(ep);
      if (m != st.members.end() && m->second == s)
        report_watch(self, s, false);
      release_flush(self, s);
    }
    return;
  }
  st.log.info("peer " + p.addr.to_string() + " gone: " + why);
  if (st.centre)
    tell(self, st.centre, mc_gone_atom::value, p.addr);
  // Everything the peer sent came before its connection broke.
  release_flush(self, p.addr);
  report_watch(self, p.addr, false);
  if (!is_primary(st) && ep == primary_endpoint(st)) {
    st.log.warning("lost the connection to the primary " + p.addr.to_string()
                   + "; reconnecting every " + std::to_string(st.cfg.heartbeat_interval_ms)
                   + " ms");
    // The oracle it handed out went with it: the next hello names the oracle again, a new
    // one if the primary restarted
    // (docs/behaviour/membership.md#when-the-development-tables-process-restarts).
    if (!st.oracle_is_local)
      st.oracle = caf::actor{};
  }
}

/// Sends `f` to the connected peer `p` at `ep`, or bounces it if its generation is gone.
void deliver_to(link_self* self, const endpoint& ep, peer& p, wire_frame f, bool fresh) {
  if (f.dst.generation == p.addr.generation) {
    if (!refresh_ttl(f, self->clock().now())) {
      // Its caller stopped waiting while the frame waited here (a stall, a connect).
      if (self->state.centre)
        tell(self, self->state.centre, mc_frame_atom::value,
             expired_response(f, "before it left " + self->state.self_addr.to_string()));
      return;
    }
    p.out.push_back(std::move(f));
    if (p.out.size() >= link_batch_max_frames)
      flush_peer(self, p);
    return;
  }
  if (f.dst.generation < p.addr.generation || fresh) {
    bounce(self, std::move(f));
    return;
  }
  // Our peer is an older incarnation than the frame's: it is stale, reconnect (what this
  // turn had for it leaves first, as it would have one by one).
  flush_peer(self, p);
  drop_peer(self, ep, "superseded by generation " + std::to_string(f.dst.generation));
  auto& np = self->state.peers[ep];
  np.queue.push_back(std::move(f));
  connect(self, ep);
}

void flush_peer(link_self* self, peer& p) {
  if (p.out.empty())
    return;
  auto& st = self->state;
  st.wire.frames_out += p.out.size();
  ++st.wire.messages_out;
  if (p.out.size() == 1) {
    auto f = std::move(p.out.front());
    p.out.clear();
    tell(self, p.link, nl_frame_atom::value, std::move(f));
    return;
  }
  auto batch = std::move(p.out);
  p.out.clear();
  tell(self, p.link, nl_frames_atom::value, std::move(batch));
}

void flush_peers(link_self* self) {
  for (auto& kv : self->state.peers)
    if (!kv.second.out.empty())
      flush_peer(self, kv.second);
}

/// The peer at `ep` introduced itself as `addr` with link `link`: mark it up and flush.
void peer_up(link_self* self, const endpoint& ep, const silo_address& addr,
             const caf::actor& link) {
  auto& st = self->state;
  auto& p = st.peers[ep];
  p.phase = peer_phase::up;
  p.connect_failures = 0;
  p.addr = addr;
  p.last_heard = self->clock().now();
  p.suspected = false;
  watch_silence(self, p);
  ++p.attempt; // answers of a connect still in flight are stale now
  if (p.link != link)
    self->monitor(link); // a link this process connected to is watched since its hello
  p.link = link;
  st.log.info("peer " + addr.to_string() + " up");
  report_watch(self, addr, true);
  auto queue = std::move(p.queue);
  p.queue.clear();
  for (auto& f : queue) {
    auto i = st.peers.find(ep);
    if (i == st.peers.end())
      bounce(self, std::move(f));
    else
      deliver_to(self, ep, i->second, std::move(f), true);
  }
  flush_peers(self);
}

/// `retry`: the failure may be the simultaneous-connect race (the connection closed under
/// the hello), not a dead peer: the frames keep waiting for up to `connect_retries` more
/// attempts. A peer that refuses the connection is dead and its frames bounce at once.
void fail_connect(link_self* self, const endpoint& ep, uint64_t attempt, const std::string& why,
                  bool retry) {
  auto& st = self->state;
  auto i = st.peers.find(ep);
  if (i == st.peers.end() || i->second.attempt != attempt || i->second.phase == peer_phase::up)
    return;
  if (!is_primary(st) && ep == primary_endpoint(st)) {
    // Retried every tick until it works: log the first failure of a streak, then every
    // 100th.
    if (st.primary_failures++ % 100 == 0)
      st.log.warning("cannot reach the primary " + render(ep) + " (attempt "
                     + std::to_string(st.primary_failures) + ", retrying every "
                     + std::to_string(st.cfg.heartbeat_interval_ms) + " ms): " + why);
  } else if (retry && i->second.connect_failures < connect_retries) {
    ++i->second.connect_failures;
    st.log.info("cannot reach " + render(ep) + " (attempt "
                + std::to_string(i->second.connect_failures) + "): " + why + "; trying again in "
                + std::to_string(st.cfg.heartbeat_interval_ms) + " ms");
    self->delayed_send(self, std::chrono::milliseconds(st.cfg.heartbeat_interval_ms),
                       nl_reconnect_atom::value, ep.first, ep.second);
    return;
  } else if (i->second.queue.empty() && i->second.expected.generation != 0) {
    // A probe: repeated every heartbeat interval until the member is declared Dead.
    st.log.info("cannot reach member " + i->second.expected.to_string() + " at " + render(ep) + ": "
                + why + " (suspected)");
  } else {
    st.log.warning("cannot reach " + render(ep) + ": " + why);
  }
  drop_peer(self, ep, why);
}

void got_oracle(link_self* self, const caf::actor& o) {
  auto& st = self->state;
  if (st.oracle || st.oracle_refusal)
    return;
  if (!o) {
    // The process named as primary serves no oracle: it joined through another process
    // (it is not the primary), or it runs an oracle of its own over a shared table
    // (link_oracle::own). Retrying does not change either.
    auto err = to_error(fault{mesh_errc::config_invalid,
                              "the primary " + render(primary_endpoint(st))
                                + " serves no membership oracle: it is not the process "
                                  "that hosts the development oracle (name that process's "
                                  "port in network.primary_port), or its membership is on a "
                                  "shared table (membership.provider; give every process "
                                  "of the cluster the same provider)"});
    st.log.warning(to_fault(err).text);
    for (auto& rp : st.oracle_waiters)
      rp.deliver(err);
    st.oracle_waiters.clear();
    st.oracle_refusal = err;
    return;
  }
  st.oracle = o;
  st.oracle_known = true;
  st.log.info("membership oracle reachable through " + render(primary_endpoint(st)));
  for (auto& rp : st.oracle_waiters)
    rp.deliver(o);
  st.oracle_waiters.clear();
}

void ask_primary_for_oracle(link_self* self) {
  auto& st = self->state;
  if (is_primary(st) || st.oracle || st.oracle_refusal || st.asking_oracle)
    return;
  auto i = st.peers.find(primary_endpoint(st));
  if (i == st.peers.end() || i->second.phase != peer_phase::up)
    return;
  st.asking_oracle = true;
  self
    ->request(i->second.link, std::chrono::milliseconds(st.cfg.failure_detection_ms),
              nl_hello_atom::value, st.self_addr, caf::actor_cast<caf::actor>(self))
    .then(
      [=](const silo_address&, const caf::actor& oracle) {
        self->state.asking_oracle = false;
        got_oracle(self, oracle);
      },
      [=](caf::error&) {
        // The connection went down meanwhile (its drop reconnects) or the primary is slow:
        // the next tick asks again.
        self->state.asking_oracle = false;
      });
}

/// The answer to request `req` whose connection failed authentication: `config_invalid`
/// (another cluster or secret does not go away by retrying).
wire_frame refused_response(const wire_frame& req, const std::string& why) {
  auto resp = response_to(req);
  fault f{mesh_errc::config_invalid, "silo " + req.dst.to_string()
                                       + " cannot be reached: the connection failed "
                                         "authentication: "
                                       + why};
  f.silo = req.dst;
  resp.error = to_error(f);
  return resp;
}

/// The connection to `ep` was refused during its handshake (either end refused; see
/// docs/behaviour/peer-authentication.md). A permanent refusal answers every request waiting
/// for it with `refused_response`, and one by the primary also fails whoever waits for the
/// oracle: this process cannot join. A timeout is an ordinary failed connect.
void refused(link_self* self, const endpoint& ep, uint64_t attempt, const peer_refusal_note& note) {
  auto& st = self->state;
  auto why = "authentication failed: " + note.text;
  if (!note.permanent) {
    fail_connect(self, ep, attempt, why);
    return;
  }
  auto i = st.peers.find(ep);
  if (i == st.peers.end() || i->second.attempt != attempt || i->second.phase == peer_phase::up)
    return;
  bool primary = !is_primary(st) && ep == primary_endpoint(st);
  if (!primary || st.primary_failures++ % 100 == 0)
    st.log.warning("cannot reach " + std::string{primary ? "the primary " : ""} + render(ep) + ": "
                   + why);
  // Requests are answered here; the rest is bounced to the centre by `drop_peer`.
  std::deque<wire_frame> rest;
  for (auto& f : i->second.queue) {
    if (f.correlation_id != 0 && !f.is_response && st.centre)
      tell(self, st.centre, mc_frame_atom::value, refused_response(f, note.text));
    else
      rest.push_back(std::move(f));
  }
  i->second.queue = std::move(rest);
  if (primary && !st.oracle) {
    auto err = to_error(
      fault{mesh_errc::config_invalid, "the primary " + render(ep) + " cannot be joined: " + why});
    for (auto& rp : st.oracle_waiters)
      rp.deliver(err);
    st.oracle_waiters.clear();
    st.oracle_refusal = err;
  }
  drop_peer(self, ep, why);
}

/// Starts an asynchronous connection to `ep` (the entry must exist or is created).
void connect(link_self* self, const endpoint& ep) {
  auto& st = self->state;
  auto& p = st.peers[ep];
  p.phase = peer_phase::connecting;
  p.attempt = st.next_attempt++;
  auto attempt = p.attempt;
  if (!st.mm) {
    fail_connect(self, ep, attempt, "this process does not listen (its start failed)");
    return;
  }
  auto timeout = std::chrono::milliseconds(st.cfg.failure_detection_ms);
  self->request(st.mm, timeout, caf::connect_atom::value, ep.first, ep.second)
    .then(
      [=](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
        auto& st = self->state;
        auto i = st.peers.find(ep);
        if (i == st.peers.end() || i->second.attempt != attempt
            || i->second.phase == peer_phase::up)
          return;
        auto remote = caf::actor_cast<caf::actor>(ptr);
        if (!remote) {
          fail_connect(self, ep, attempt, "no actor published there");
          return;
        }
        i->second.phase = peer_phase::hello;
        i->second.link = remote;
        // Watched from the hello on: a CAF 0.17 request to an actor whose node goes away is
        // never answered, so a hello to a process that is exiting (a primary restarting on
        // the same port: its old incarnation still accepts for a moment) would otherwise
        // hold the reconnect for `failure_detection_ms`. Its down fails the attempt at once
        // (the down handler in net_link.cpp).
        self->monitor(remote);
        self
          ->request(remote, std::chrono::milliseconds(st.cfg.failure_detection_ms),
                    nl_hello_atom::value, st.self_addr, caf::actor_cast<caf::actor>(self))
          .then(
            [=](const silo_address& addr, const caf::actor& oracle) {
              auto& st = self->state;
              if (!is_primary(st) && ep == primary_endpoint(st)) {
                st.primary_failures = 0;
                got_oracle(self, oracle);
              }
              auto i = st.peers.find(ep);
              if (i == st.peers.end() || i->second.attempt != attempt
                  || i->second.phase == peer_phase::up)
                return;
              peer_up(self, ep, addr, remote);
            },
            [=](caf::error& e) {
              fail_connect(self, ep, attempt, "hello failed: " + self->system().render(e),
                           e == caf::sec::request_receiver_down);
            });
      },
      [=](caf::error& e) {
        auto& g = self->state.gate.guard;
        if (auto note = g ? take_refusal(*g, ep.first, ep.second) : std::nullopt)
          refused(self, ep, attempt, *note);
        else
          fail_connect(self, ep, attempt, self->system().render(e));
      });
}

} // namespace cafmesh::net_link_detail
