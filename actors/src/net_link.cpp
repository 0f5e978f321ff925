#include "cafmesh/actors/net_link.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/peer_auth.hpp"
#include "peer_gate.hpp"

namespace cafmesh {

int64_t suspect_ms(const config::network_section& net) {
  auto x = std::min(2 * net.heartbeat_interval_ms, net.failure_detection_ms / 2);
  return std::max<int64_t>(x, 1);
}

int64_t oracle_detection_ms(const config::network_section& net) {
  return std::max<int64_t>(net.failure_detection_ms - suspect_ms(net), 1);
}

namespace {

using endpoint = std::pair<std::string, uint16_t>;

std::string render(const endpoint& ep) {
  return ep.first + ":" + std::to_string(ep.second);
}

endpoint endpoint_of(const silo_address& s) {
  return {s.host, s.port};
}

enum class peer_phase { connecting, hello, up };

struct peer {
  peer_phase phase = peer_phase::connecting;
  uint64_t attempt = 0;          ///< tells answers of an earlier attempt apart
  silo_address addr;             ///< known once up
  caf::actor link;               ///< the peer's link (a remote proxy), once known
  std::deque<wire_frame> queue;  ///< frames waiting for the connection
  caf::actor_clock::time_point last_heard;
  bool suspected = false;
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
  caf::actor oracle;           ///< local (primary) or a remote proxy (learnt by hello)
  bool oracle_is_local = false;
  /// The local oracle goes out in hello answers (`link_oracle::cluster`).
  bool oracle_shared = true;
  std::vector<caf::response_promise> oracle_waiters;
  /// Set once the primary refused this process's credentials or turned out to serve no
  /// oracle (its membership is on a shared table): the oracle stays unknown.
  caf::error oracle_refusal;
  std::map<endpoint, peer> peers;
  std::set<silo_address> reported_silent; ///< primary only: told the oracle "silent"
  /// With a local oracle: the other silos its latest view lists as not Dead, by endpoint;
  /// each is probed (docs/behaviour/membership.md#probes).
  std::map<endpoint, silo_address> members;
  uint64_t next_attempt = 1;
  uint64_t primary_failures = 0; ///< failed connects to the primary since the last success
  bool ticking = false;
  bool stalled = false;        ///< `nl_stall_atom`: frames held both ways
  bool stall_detected = false; ///< the stall also silences the heartbeats
  std::vector<wire_frame> held_out; ///< from the centre, while stalled
  std::vector<wire_frame> held_in;  ///< from peers, while stalled
  log::logger log;
  static const char* name;
};

const char* net_link_state::name = "cafmesh.net_link";

using link_actor = caf::stateful_actor<net_link_state>;

bool is_primary(const net_link_state& st) {
  return st.cfg.primary_port == 0;
}

endpoint primary_endpoint(const net_link_state& st) {
  return {st.cfg.primary_host, st.cfg.primary_port};
}

void report_watch(link_actor* self, const silo_address& s, bool alive) {
  auto& st = self->state;
  if (!st.oracle_is_local || !st.oracle)
    return;
  if (alive) {
    if (st.reported_silent.erase(s) > 0)
      self->send(st.oracle, sim_watch_atom::value, s, true);
  } else if (st.reported_silent.insert(s).second) {
    self->send(st.oracle, sim_watch_atom::value, s, false);
  }
}

void bounce(link_actor* self, wire_frame f) {
  if (self->state.centre)
    self->send(self->state.centre, mc_bounce_atom::value, std::move(f));
}

void heard(link_actor* self, const silo_address& s) {
  auto& st = self->state;
  auto i = st.peers.find(endpoint_of(s));
  if (i == st.peers.end() || i->second.phase != peer_phase::up || i->second.addr != s)
    return;
  auto& p = i->second;
  p.last_heard = self->clock().now();
  if (p.suspected) {
    p.suspected = false;
    st.log.info("peer " + s.to_string() + " speaks again");
  }
  report_watch(self, s, true);
}

/// Forgets the peer at `ep` (if it is still the one named `addr`) and tells the centre.
void drop_peer(link_actor* self, const endpoint& ep, const std::string& why) {
  auto& st = self->state;
  auto i = st.peers.find(ep);
  if (i == st.peers.end())
    return;
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
    }
    return;
  }
  st.log.info("peer " + p.addr.to_string() + " gone: " + why);
  if (st.centre)
    self->send(st.centre, mc_gone_atom::value, p.addr);
  report_watch(self, p.addr, false);
  if (!is_primary(st) && ep == primary_endpoint(st))
    st.log.warning("lost the connection to the primary " + p.addr.to_string());
}

void connect(link_actor* self, const endpoint& ep);

/// Sends `f` to the connected peer `p` at `ep`, or bounces it if its generation is gone.
void deliver_to(link_actor* self, const endpoint& ep, peer& p, wire_frame f, bool fresh) {
  if (f.dst.generation == p.addr.generation) {
    if (!refresh_ttl(f, self->clock().now())) {
      // Its caller stopped waiting while the frame waited here (a stall, a connect).
      if (self->state.centre)
        self->send(self->state.centre, mc_frame_atom::value,
                   expired_response(f, "before it left " + self->state.self_addr.to_string()));
      return;
    }
    self->send(p.link, nl_frame_atom::value, std::move(f));
    return;
  }
  if (f.dst.generation < p.addr.generation || fresh) {
    bounce(self, std::move(f));
    return;
  }
  // Our peer is an older incarnation than the frame's: it is stale, reconnect.
  drop_peer(self, ep, "superseded by generation " + std::to_string(f.dst.generation));
  auto& np = self->state.peers[ep];
  np.queue.push_back(std::move(f));
  connect(self, ep);
}

/// The peer at `ep` introduced itself as `addr` with link `link`: mark it up and flush.
void peer_up(link_actor* self, const endpoint& ep, const silo_address& addr,
             const caf::actor& link) {
  auto& st = self->state;
  auto& p = st.peers[ep];
  p.phase = peer_phase::up;
  p.connect_failures = 0;
  p.addr = addr;
  p.link = link;
  p.last_heard = self->clock().now();
  p.suspected = false;
  ++p.attempt; // answers of a connect still in flight are stale now
  self->monitor(link);
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
}

/// `retry`: the failure may be the simultaneous-connect race (the connection closed under
/// the hello), not a dead peer: the frames keep waiting for up to `connect_retries` more
/// attempts. A peer that refuses the connection is dead and its frames bounce at once.
void fail_connect(link_actor* self, const endpoint& ep, uint64_t attempt,
                  const std::string& why, bool retry = false) {
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
    st.log.info("cannot reach member " + i->second.expected.to_string() + " at " + render(ep)
                + ": " + why + " (suspected)");
  } else {
    st.log.warning("cannot reach " + render(ep) + ": " + why);
  }
  drop_peer(self, ep, why);
}

void got_oracle(link_actor* self, const caf::actor& o) {
  auto& st = self->state;
  if (st.oracle || st.oracle_refusal)
    return;
  if (!o) {
    // The primary runs an oracle of its own over a shared table (link_oracle::own): no
    // process serves one to join through, and retrying does not change that.
    auto err = to_error(fault{mesh_errc::config_invalid,
                              "the primary " + render(primary_endpoint(st))
                                + " serves no membership oracle: its membership is on a "
                                  "shared table (membership.provider); give every process "
                                  "of the cluster the same provider"});
    st.log.warning(to_fault(err).text);
    for (auto& rp : st.oracle_waiters)
      rp.deliver(err);
    st.oracle_waiters.clear();
    st.oracle_refusal = err;
    return;
  }
  st.oracle = o;
  st.log.info("membership oracle reachable through " + render(primary_endpoint(st)));
  for (auto& rp : st.oracle_waiters)
    rp.deliver(o);
  st.oracle_waiters.clear();
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
void refused(link_actor* self, const endpoint& ep, uint64_t attempt,
             const peer_refusal_note& note) {
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
    st.log.warning("cannot reach " + std::string{primary ? "the primary " : ""} + render(ep)
                   + ": " + why);
  // Requests are answered here; the rest is bounced to the centre by `drop_peer`.
  std::deque<wire_frame> rest;
  for (auto& f : i->second.queue) {
    if (f.correlation_id != 0 && !f.is_response && st.centre)
      self->send(st.centre, mc_frame_atom::value, refused_response(f, note.text));
    else
      rest.push_back(std::move(f));
  }
  i->second.queue = std::move(rest);
  if (primary && !st.oracle) {
    auto err = to_error(fault{mesh_errc::config_invalid, "the primary " + render(ep)
                                                           + " cannot be joined: " + why});
    for (auto& rp : st.oracle_waiters)
      rp.deliver(err);
    st.oracle_waiters.clear();
    st.oracle_refusal = err;
  }
  drop_peer(self, ep, why);
}

/// Starts an asynchronous connection to `ep` (the entry must exist or is created).
void connect(link_actor* self, const endpoint& ep) {
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

void route(link_actor* self, wire_frame f) {
  auto& st = self->state;
  auto ep = endpoint_of(f.dst);
  auto i = st.peers.find(ep);
  if (i == st.peers.end()) {
    st.peers[ep].queue.push_back(std::move(f));
    connect(self, ep);
    return;
  }
  if (i->second.phase != peer_phase::up) {
    i->second.queue.push_back(std::move(f));
    return;
  }
  deliver_to(self, ep, i->second, std::move(f), false);
}

/// Connects to every member of the latest view that this process has no connection to, and
/// suspects a member whose endpoint answers with a newer generation
/// (docs/behaviour/membership.md#probes).
void probe(link_actor* self) {
  auto& st = self->state;
  for (auto& [ep, s] : st.members) {
    auto i = st.peers.find(ep);
    if (i == st.peers.end()) {
      st.peers[ep].expected = s;
      connect(self, ep);
    } else if (i->second.phase == peer_phase::up && i->second.addr.generation > s.generation) {
      report_watch(self, s, false);
    } else if (i->second.phase != peer_phase::up) {
      i->second.expected = s;
    }
  }
}

/// The local oracle's view changed: the members to probe are its silos that are not Dead.
void members_from(link_actor* self, const membership_snapshot& view) {
  auto& st = self->state;
  st.members.clear();
  for (auto& row : view.rows)
    if (row.status != silo_status::dead && row.silo != st.self_addr
        && row.silo.generation != 0)
      st.members[endpoint_of(row.silo)] = row.silo;
  probe(self);
}

void tick(link_actor* self) {
  auto& st = self->state;
  auto now = self->clock().now();
  auto limit = std::chrono::milliseconds(suspect_ms(st.cfg));
  for (auto& kv : st.peers) {
    auto& p = kv.second;
    if (p.phase != peer_phase::up)
      continue;
    if (st.stalled && st.stall_detected) {
      p.last_heard = now; // a frozen process does not suspect its peers either
      continue;
    }
    self->send(p.link, nl_beat_atom::value, st.self_addr);
    if (!p.suspected && now - p.last_heard > limit) {
      p.suspected = true;
      st.log.warning("peer " + p.addr.to_string() + " silent for more than "
                     + std::to_string(suspect_ms(st.cfg)) + " ms: suspected");
      report_watch(self, p.addr, false);
    }
  }
  // A primary that refused this process's credentials would refuse them again.
  if (!is_primary(st) && !st.oracle_refusal && st.peers.count(primary_endpoint(st)) == 0)
    connect(self, primary_endpoint(st));
  if (!st.stalled)
    probe(self);
  self->delayed_send(self, std::chrono::milliseconds(st.cfg.heartbeat_interval_ms),
                     nl_tick_atom::value);
}

/// Starts listening through a gate holding the configured credentials; a secret or TLS file
/// that cannot be read or used fails the publish (`nl_port_atom` answers it).
void listen(link_actor* self) {
  auto& st = self->state;
  auto cannot_listen = [&](const caf::error& err) {
    st.publish_error = err;
    st.log.error("cannot listen on " + st.cfg.host + ":" + std::to_string(st.cfg.port) + ": "
                 + to_fault(err).text);
  };
  auto secret = cluster_secret(st.cfg);
  if (!secret)
    return cannot_listen(secret.error());
  auto tls = make_tls_context(st.cfg);
  if (!tls)
    return cannot_listen(tls.error());
  if (secret->empty())
    st.log.info("no cluster secret configured: peers are admitted by cluster id (\""
                + st.cfg.cluster_id + "\") alone");
  if (*tls)
    st.log.info("TLS: every connection is mutual TLS 1.3 with certificate \""
                + st.cfg.tls_certificate_file + "\", peers' certificates issued by \""
                + st.cfg.tls_ca_file + "\"");
  st.gate = spawn_peer_gate(self->system(), self->address(), st.cfg.cluster_id,
                            std::move(*secret), st.cfg.authentication_timeout_ms,
                            std::move(*tls));
  st.mm = caf::actor_cast<caf::io::middleman_actor>(st.gate.actor);
  // The gate goes with the link, after every request the link sent it.
  self->attach_functor([gate = st.gate.actor](const caf::error&) {
    caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
  });
  std::set<std::string> no_ifs;
  // reuse_addr (SO_REUSEADDR): a silo restarted on its old port must bind while the
  // connections of its killed predecessor sit in TIME_WAIT.
  self
    ->request(st.mm, std::chrono::milliseconds(st.cfg.failure_detection_ms),
              caf::publish_atom::value, st.cfg.port,
              caf::actor_cast<caf::strong_actor_ptr>(self), no_ifs, st.cfg.host, true)
    .then(
      [=](uint16_t port) {
        auto& st = self->state;
        st.port = port;
        st.published = true;
        st.log.info("listening on " + st.cfg.host + ":" + std::to_string(port));
        for (auto& rp : st.port_waiters)
          rp.deliver(port);
        st.port_waiters.clear();
      },
      [=](caf::error& e) {
        auto& st = self->state;
        st.publish_error = e;
        st.log.error("cannot listen on " + st.cfg.host + ":" + std::to_string(st.cfg.port)
                     + ": " + self->system().render(e));
        for (auto& rp : st.port_waiters)
          rp.deliver(e);
        st.port_waiters.clear();
      });
}

caf::behavior net_link(link_actor* self, config::network_section cfg, caf::actor oracle,
                       link_oracle scope) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.log = log::get("net_link");
  if (oracle) {
    st.oracle = std::move(oracle);
    st.oracle_is_local = true;
    st.oracle_shared = scope == link_oracle::cluster;
  }
  listen(self);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.centre && dm.source == st.centre.address()) {
      st.log.info("centre exited: the link closes");
      self->quit(dm.reason);
      return;
    }
    for (auto& kv : st.peers) {
      if (kv.second.link && kv.second.link.address() == dm.source) {
        auto ep = kv.first;
        drop_peer(self, ep, "link down: " + self->system().render(dm.reason));
        return;
      }
    }
  });
  return {
    [=](nl_port_atom) -> caf::result<uint16_t> {
      auto& st = self->state;
      if (st.published)
        return st.port;
      if (st.publish_error)
        return st.publish_error;
      auto rp = self->make_response_promise();
      st.port_waiters.push_back(rp);
      return rp;
    },
    [=](sim_attach_atom, const silo_address& addr, const caf::actor& centre) {
      auto& st = self->state;
      st.self_addr = addr;
      st.centre = centre;
      st.log = log::get("net_link").with_context(addr.to_string());
      self->monitor(centre);
      if (st.oracle_is_local && st.oracle)
        self->send(st.oracle, mb_subscribe_atom::value, caf::actor_cast<caf::actor>(self));
      if (!st.ticking) {
        st.ticking = true;
        tick(self);
      }
    },
    [=](mb_snapshot_atom, const membership_snapshot& view) { members_from(self, view); },
    [=](sim_frame_atom, wire_frame& f) {
      auto& st = self->state;
      if (st.stalled) {
        st.held_out.push_back(std::move(f));
        return;
      }
      route(self, std::move(f));
    },
    [=](sim_flush_atom, const silo_address&, const silo_address&) {
      // The centre's "frames from a departed silo have arrived" check (message_center.cpp):
      // over TCP a peer's frames arrive in order on its connection and the departure is
      // reported after the connection broke, so there is nothing to wait for.
      return caf::ok_atom::value;
    },
    [=](nl_stall_atom, bool on, bool detected) {
      auto& st = self->state;
      st.log.info(on ? std::string{"stall begins ("} + (detected ? "detected" : "undetected")
                         + ")"
                     : "stall ends: " + std::to_string(st.held_out.size()) + " frame(s) out, "
                         + std::to_string(st.held_in.size()) + " in");
      st.stalled = on;
      st.stall_detected = on && detected;
      if (on)
        return caf::ok_atom::value;
      auto out = std::move(st.held_out);
      auto in = std::move(st.held_in);
      st.held_out.clear();
      st.held_in.clear();
      for (auto& f : out)
        route(self, std::move(f));
      for (auto& f : in)
        if (st.centre)
          self->send(st.centre, mc_frame_atom::value, std::move(f));
      return caf::ok_atom::value;
    },
    [=](nl_hello_atom, const silo_address& addr,
        const caf::actor& link) -> caf::result<silo_address, caf::actor> {
      auto& st = self->state;
      auto ep = endpoint_of(addr);
      auto i = st.peers.find(ep);
      if (i == st.peers.end() || i->second.phase != peer_phase::up) {
        peer_up(self, ep, addr, link);
      } else if (i->second.addr.generation < addr.generation) {
        drop_peer(self, ep, "superseded by " + addr.to_string());
        peer_up(self, ep, addr, link);
      } else if (i->second.addr == addr) {
        heard(self, addr);
      }
      return {st.self_addr,
              st.oracle_is_local && st.oracle_shared ? st.oracle : caf::actor{}};
    },
    [=](nl_frame_atom, wire_frame& f) {
      auto& st = self->state;
      arm_expiry(f, self->clock().now());
      if (st.stalled) {
        if (!st.stall_detected)
          heard(self, f.src);
        st.held_in.push_back(std::move(f));
        return;
      }
      heard(self, f.src);
      if (st.centre)
        self->send(st.centre, mc_frame_atom::value, std::move(f));
    },
    [=](nl_beat_atom, const silo_address& s) {
      if (!(self->state.stalled && self->state.stall_detected))
        heard(self, s);
    },
    [=](nl_tick_atom) { tick(self); },
    [=](nl_reconnect_atom, const std::string& host, uint16_t port) {
      auto& st = self->state;
      auto i = st.peers.find(endpoint{host, port});
      if (i != st.peers.end() && i->second.phase != peer_phase::up)
        connect(self, endpoint{host, port});
    },
    [=](nl_oracle_atom) -> caf::result<caf::actor> {
      auto& st = self->state;
      if (st.oracle)
        return st.oracle;
      if (st.oracle_refusal)
        return st.oracle_refusal;
      auto rp = self->make_response_promise();
      st.oracle_waiters.push_back(rp);
      return rp;
    },
    [=](nl_gate_atom) { return self->state.gate.actor; },
    [=](pg_expire_atom, uint64_t id) {
      if (self->state.gate.guard)
        expire_handshake(self->system(), self->state.gate.guard, id);
    },
    [=](nl_auth_atom) {
      auto& g = self->state.gate.guard;
      return g ? stats_of(*g) : peer_auth_stats{};
    },
    [=](nl_peers_atom) {
      std::vector<silo_address> out;
      for (auto& kv : self->state.peers)
        if (kv.second.phase == peer_phase::up)
          out.push_back(kv.second.addr);
      std::sort(out.begin(), out.end());
      return out;
    },
  };
}

} // namespace

caf::actor spawn_net_link(caf::actor_system& sys, const config::network_section& net,
                          const caf::actor& oracle, link_oracle scope) {
  return sys.spawn(net_link, net, oracle, scope);
}

} // namespace cafmesh
