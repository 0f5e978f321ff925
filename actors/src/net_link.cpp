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
#include "cafmesh/actors/detail/tell.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/peer_auth.hpp"
#include "net_link_state.hpp"

namespace cafmesh {

int64_t suspect_ms(const config::network_section& net) {
  auto x = std::min(2 * net.heartbeat_interval_ms, net.failure_detection_ms / 2);
  return std::max<int64_t>(x, 1);
}

int64_t oracle_detection_ms(const config::network_section& net) {
  return std::max<int64_t>(net.failure_detection_ms - suspect_ms(net), 1);
}

namespace {

using namespace net_link_detail;
using cafmesh::detail::tell;

void route(link_self* self, wire_frame f) {
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
void probe(link_self* self) {
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

/// How long a flush waits for a departed peer's connection to break: twice the heartbeat
/// interval, after which a live connection would have shown the peer silent.
caf::timespan flush_bound(const config::network_section& cfg) {
  return std::chrono::milliseconds(2 * cfg.heartbeat_interval_ms);
}

/// The local oracle's view changed: the members to probe are its silos that are not Dead.
void members_from(link_self* self, const membership_snapshot& view) {
  auto& st = self->state;
  st.members.clear();
  for (auto& row : view.rows)
    if (row.status != silo_status::dead && row.silo != st.self_addr && row.silo.generation != 0)
      st.members[endpoint_of(row.silo)] = row.silo;
  probe(self);
}

/// The silence check `check` of peer `s` is due: the peer is suspected if it has been silent
/// for `suspect_ms`, or checked again when it will have been, counting from the last frame
/// or heartbeat it sent. Suspecting at that moment, not on the next tick, keeps the Dead
/// declaration within `failure_detection_ms` of the last message
/// (docs/behaviour/membership.md#the-failure-detection-bound).
void check_silence(link_self* self, const silo_address& s, uint64_t check) {
  auto& st = self->state;
  auto i = st.peers.find(endpoint_of(s));
  if (i == st.peers.end() || i->second.phase != peer_phase::up || i->second.addr != s
      || i->second.silence_check != check)
    return;
  auto& p = i->second;
  auto now = self->clock().now();
  if (st.stalled && st.stall_detected)
    p.last_heard = now; // a frozen process does not suspect its peers either
  if (now - p.last_heard < std::chrono::milliseconds(suspect_ms(st.cfg))) {
    watch_silence(self, p);
    return;
  }
  p.silence_check = 0;
  p.suspected = true;
  st.log.warning("peer " + p.addr.to_string() + " silent for " + std::to_string(suspect_ms(st.cfg))
                 + " ms: suspected");
  report_watch(self, p.addr, false);
}

void tick(link_self* self) {
  auto& st = self->state;
  auto now = self->clock().now();
  for (auto& kv : st.peers) {
    auto& p = kv.second;
    if (p.phase != peer_phase::up)
      continue;
    if (st.stalled && st.stall_detected) {
      p.last_heard = now; // a frozen process does not suspect its peers either
      continue;
    }
    tell(self, p.link, nl_beat_atom::value, st.self_addr);
  }
  // A primary that refused this process's credentials would refuse them again.
  if (!is_primary(st) && !st.oracle_refusal && st.peers.count(primary_endpoint(st)) == 0)
    connect(self, primary_endpoint(st));
  ask_primary_for_oracle(self);
  if (!st.stalled)
    probe(self);
  self->delayed_send(self, std::chrono::milliseconds(st.cfg.heartbeat_interval_ms),
                     nl_tick_atom::value);
}

/// Starts listening through a gate holding the configured credentials; a secret or TLS file
/// that cannot be read or used fails the publish (`nl_port_atom` answers it).
void listen(link_self* self) {
  auto& st = self->state;
  auto cannot_listen = [&](const caf::error& err) {
    st.publish_error = err;
    st.log.error("cannot listen on " + st.cfg.host + ":" + std::to_string(st.cfg.port) + ": "
                 + to_fault(err).text);
  };
  // Without the io middleman the link listens nowhere and connects to nobody; links that
  // introduce themselves with their hello are still its peers (tests in virtual time,
  // docs/testing.md#network-links-in-virtual-time).
  if (!self->system().has_middleman())
    return cannot_listen(
      to_error(fault{mesh_errc::config_invalid, "the io middleman is not loaded (load "
                                                "caf::io::middleman before the actor system "
                                                "starts)"}));
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
  st.gate = spawn_peer_gate(self->system(), self->address(), st.cfg.cluster_id, std::move(*secret),
                            st.cfg.authentication_timeout_ms, std::move(*tls));
  st.mm = st.gate.actor;
  // The gate goes with the link, after every request the link sent it.
  self->attach_functor([gate = st.gate.actor](const caf::error&) {
    caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
  });
  std::set<std::string> no_ifs;
  // reuse_addr (SO_REUSEADDR): a silo restarted on its old port must bind while the
  // connections of its killed predecessor sit in TIME_WAIT.
  self
    ->request(st.mm, std::chrono::milliseconds(st.cfg.failure_detection_ms),
              caf::publish_atom::value, st.cfg.port, caf::actor_cast<caf::strong_actor_ptr>(self),
              no_ifs, st.cfg.host, true)
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
        st.log.error("cannot listen on " + st.cfg.host + ":" + std::to_string(st.cfg.port) + ": "
                     + self->system().render(e));
        for (auto& rp : st.port_waiters)
          rp.deliver(e);
        st.port_waiters.clear();
      });
}

net_link_impl::behavior_type net_link(link_self* self, config::network_section cfg,
                                      caf::actor oracle, link_oracle scope) {
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
        auto why = "link down: " + self->system().render(dm.reason);
        if (kv.second.phase == peer_phase::up)
          drop_peer(self, ep, why);
        else
          fail_connect(self, ep, kv.second.attempt, why + " before it answered the hello");
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
      auto rp = self->make_response_promise<uint16_t>();
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
        tell(self, st.oracle, mb_subscribe_atom::value, caf::actor_cast<caf::actor>(self));
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
      flush_peers(self);
    },
    [=](sim_frames_atom, std::vector<wire_frame>& fs) {
      auto& st = self->state;
      if (st.stalled) {
        for (auto& f : fs)
          st.held_out.push_back(std::move(f));
        return;
      }
      for (auto& f : fs)
        route(self, std::move(f));
      flush_peers(self);
    },
    [=](sim_flush_atom, const silo_address& src,
        const silo_address&) -> caf::result<caf::ok_atom, bool> {
      // The centre's "frames from a departed silo have arrived" check (message_center.cpp).
      // Membership travels apart from the peer's connection and can overtake the answers
      // the peer sent before it left; they have all arrived once its connection broke,
      // and none is held by a stall (docs/behaviour/membership.md#departures-and-the-wire).
      auto& st = self->state;
      if (!frames_may_come(st, src))
        return {caf::ok_atom::value, false};
      auto rp = self->make_response_promise<caf::ok_atom, bool>();
      st.flush_waiters[src].push_back(rp);
      self->delayed_send(self, flush_bound(st.cfg), nl_flush_due_atom::value, src);
      return rp;
    },
    [=](nl_flush_due_atom, const silo_address& src) {
      auto& st = self->state;
      if (st.flush_waiters.count(src) == 0)
        return;
      if (held_from(st, src)) // held frames come when the stall ends
        self->delayed_send(self, flush_bound(st.cfg), nl_flush_due_atom::value, src);
      else
        release_flush(self, src);
    },
    [=](nl_stall_atom, bool on, bool detected) {
      auto& st = self->state;
      st.log.info(on ? std::string{"stall begins ("} + (detected ? "detected" : "undetected") + ")"
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
      flush_peers(self);
      if (st.centre && !in.empty())
        tell(self, st.centre, mc_frames_atom::value, std::move(in));
      // The frames reach the centre before the flush answers do.
      std::vector<silo_address> flushed;
      for (auto& kv : st.flush_waiters)
        if (!frames_may_come(st, kv.first))
          flushed.push_back(kv.first);
      for (auto& s : flushed)
        release_flush(self, s);
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
      ask_primary_for_oracle(self);
      return {st.self_addr, st.oracle_is_local && st.oracle_shared ? st.oracle : caf::actor{}};
    },
    [=](nl_frames_atom, std::vector<wire_frame>& fs) {
      auto& st = self->state;
      st.wire.frames_in += fs.size();
      ++st.wire.messages_in;
      if (fs.empty())
        return;
      auto now = self->clock().now();
      for (auto& f : fs)
        arm_expiry(f, now);
      if (st.stalled) {
        for (auto& f : fs) {
          if (!st.stall_detected)
            heard(self, f.src);
          st.held_in.push_back(std::move(f));
        }
        return;
      }
      for (size_t i = 0; i < fs.size(); ++i)
        if (i == 0 || fs[i].src != fs[i - 1].src)
          heard(self, fs[i].src);
      if (st.centre)
        tell(self, st.centre, mc_frames_atom::value, std::move(fs));
    },
    [=](nl_wire_atom) { return self->state.wire; },
    [=](nl_frame_atom, wire_frame& f) {
      auto& st = self->state;
      ++st.wire.frames_in;
      ++st.wire.messages_in;
      arm_expiry(f, self->clock().now());
      if (st.stalled) {
        if (!st.stall_detected)
          heard(self, f.src);
        st.held_in.push_back(std::move(f));
        return;
      }
      heard(self, f.src);
      if (st.centre)
        tell(self, st.centre, mc_frame_atom::value, std::move(f));
    },
    [=](nl_beat_atom, const silo_address& s) {
      if (!(self->state.stalled && self->state.stall_detected))
        heard(self, s);
    },
    [=](nl_tick_atom) { tick(self); },
    [=](nl_silence_atom, const silo_address& s, uint64_t check) { check_silence(self, s, check); },
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
      auto rp = self->make_response_promise<caf::actor>();
      st.oracle_waiters.push_back(rp);
      return rp;
    },
    [=](lifecycle::host_stopping_atom) {
      // A process stopped before it joined (its primary never answered) gives the join up:
      // every wait for the oracle, the start's among them, ends with `lifecycle_cancelled`
      // and the primary is tried no more, so the stop completes
      // (docs/behaviour/lifecycle.md#the-host). A process that had joined keeps reconnecting
      // to a primary it lost: its stop still publishes its leave and follows the views of
      // the primary's next incarnation (membership requests fail at once meanwhile, so the
      // stop stays bounded).
      auto& st = self->state;
      if (!is_primary(st) && !st.oracle && !st.oracle_refusal && !st.oracle_known) {
        auto err = to_error(fault{mesh_errc::lifecycle_cancelled,
                                  std::string{"stopped before it joined the cluster"}
                                    + ": the primary " + render(primary_endpoint(st))
                                    + " did not answer (" + std::to_string(st.primary_failures)
                                    + " failed attempt(s)); start the primary first, or "
                                      "check network.primary_host and network.primary_port"});
        st.log.warning(to_fault(err).text);
        for (auto& rp : st.oracle_waiters)
          rp.deliver(err);
        st.oracle_waiters.clear();
        st.oracle_refusal = err;
      }
      return caf::ok_atom::value;
    },
    [=](nl_gate_atom) { return caf::actor_cast<caf::actor>(self->state.gate.actor); },
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

net_link_actor spawn_net_link(caf::actor_system& sys, const config::network_section& net,
                              const membership_oracle_actor& oracle, link_oracle scope) {
  // The link hands the oracle to its peers (hello answers) as a plain handle: it crosses the
  // wire, where the remote side sees a proxy without a static type.
  return sys.spawn(net_link, net, caf::actor_cast<caf::actor>(oracle), scope);
}

} // namespace cafmesh
