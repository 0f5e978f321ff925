#include "cafmesh/routing/stream_transport.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/routing/entry_atoms.hpp"

namespace cafmesh::routing {

namespace {

using ms = std::chrono::milliseconds;

struct transport_state {
  static const char* name;
  stream_transport_options opts;
  log::logger log;
  bool started = false;
  /// Rendered address -> live subscribers of this process.
  std::map<std::string, std::vector<caf::actor>> subs;
  std::set<silo_address> peers;   ///< named at spawn or by `st_peer_atom`
  std::set<silo_address> members; ///< silos of the latest snapshot, not departed
  stream_transport_stats stats;
};

const char* transport_state::name = "cafmesh.stream_transport";

using pointer = stream_transport_actor::stateful_pointer<transport_state>;

/// Every process this transport asks, in address order.
std::set<silo_address> all_peers(pointer self) {
  auto out = self->state.peers;
  out.insert(self->state.members.begin(), self->state.members.end());
  return out;
}

/// Answers of the peers asked for one probe or publish (shared by their continuations).
struct join_state {
  size_t waiting = 0; ///< peers not answered yet
  bool done = false;  ///< the caller was answered
  bool open = false;  ///< some peer could not answer (not a definite "no")
  std::string open_peer;
};

fault not_started_fault() {
  return fault{mesh_errc::lifecycle_misuse, stream_transport_not_started};
}

/// A peer that answered this fault serves no subscriber: it departed, or it has no stream
/// component (not started) or blocks application messages (stopping,
/// docs/behaviour/lifecycle.md#stages).
bool definitely_nobody(const caf::error& e) {
  auto f = to_fault(e);
  return f.code == mesh_errc::departed_silo || f.code == mesh_errc::silo_unavailable;
}

void count_subscriptions(pointer self) {
  uint64_t n = 0;
  for (auto& kvp : self->state.subs)
    n += kvp.second.size();
  self->state.stats.subscriptions = n;
}

bool has_local(pointer self, const address& a) {
  auto i = self->state.subs.find(a.to_string());
  return i != self->state.subs.end() && !i->second.empty();
}

/// Hands `e` to every local subscriber of `a`; answers how many took it.
size_t deliver_local(pointer self, const address& a, const envelope& e) {
  auto i = self->state.subs.find(a.to_string());
  if (i == self->state.subs.end())
    return 0;
  for (auto& sub : i->second)
    caf::anon_send(sub, hb_in_atom::value, e);
  self->state.stats.local_deliveries += i->second.size();
  return i->second.size();
}

std::string bound_text(pointer self) {
  return routing::render_budget(self->state.opts.transport_timeout_ms);
}

/// A call to `peer`'s stream transport that expires with the caller's wait (`ttl_ms`).
caf::message peer_call(int64_t ttl_ms, const silo_address& peer, caf::message payload) {
  return caf::make_message(mc_call_atom::value, peer, component::stream, std::move(payload),
                           ttl_ms);
}

void on_probe(pointer self, const address& a, caf::typed_response_promise<bool> rp) {
  auto& s = self->state;
  ++s.stats.probes;
  if (!s.started) {
    ++s.stats.not_started;
    rp.deliver(to_error(not_started_fault()));
    return;
  }
  if (has_local(self, a)) {
    rp.deliver(true);
    return;
  }
  auto peers = all_peers(self);
  if (!s.opts.centre || peers.empty()) {
    ++s.stats.probes_none;
    rp.deliver(false);
    return;
  }
  auto j = std::make_shared<join_state>();
  j->waiting = peers.size();
  auto settle = [=]() mutable {
    if (j->done || j->waiting > 0)
      return;
    j->done = true;
    if (j->open) {
      rp.deliver(to_error(fault{mesh_errc::response_timeout,
                                "subscriber probe for '" + a.to_string() + "' got no answer from "
                                  + j->open_peer + " within " + bound_text(self)}));
      return;
    }
    ++self->state.stats.probes_none;
    rp.deliver(false);
  };
  for (auto& peer : peers) {
    auto name = peer.to_string();
    self
      ->request(s.opts.centre, ms(s.opts.transport_timeout_ms),
                peer_call(s.opts.transport_timeout_ms, peer,
                          caf::make_message(st_has_atom::value, a)))
      .then(
        [=](bool yes) mutable {
          if (j->done)
            return;
          --j->waiting;
          if (yes) {
            j->done = true;
            rp.deliver(true);
            return;
          }
          settle();
        },
        [=](caf::error& e) mutable {
          if (j->done)
            return;
          --j->waiting;
          if (!definitely_nobody(e) && !j->open) {
            j->open = true;
            j->open_peer = name;
          }
          settle();
        });
  }
}

void on_publish(pointer self, const address& a, const envelope& e,
                caf::typed_response_promise<caf::ok_atom> rp) {
  auto& s = self->state;
  if (!s.started) {
    ++s.stats.not_started;
    rp.deliver(to_error(not_started_fault()));
    return;
  }
  ++s.stats.publishes;
  auto j = std::make_shared<join_state>();
  if (deliver_local(self, a, e) > 0) {
    j->done = true;
    ++s.stats.published;
    rp.deliver(caf::ok_atom::value);
  }
  auto settle = [=]() mutable {
    if (j->done || j->waiting > 0)
      return;
    j->done = true;
    ++self->state.stats.publish_faults;
    if (j->open) {
      auto text = "stream post to '" + a.to_string() + "' was not confirmed by " + j->open_peer
                  + " within " + bound_text(self);
      self->state.log.warning(text + " (delivery " + e.id + ")");
      rp.deliver(to_error(fault{mesh_errc::response_timeout, text}));
      return;
    }
    auto text = "no live subscriber for '" + a.to_string() + "': nothing was published";
    self->state.log.warning(text + " (delivery " + e.id + ")");
    rp.deliver(to_error(fault{mesh_errc::not_found, text}));
  };
  auto peers = all_peers(self);
  if (!s.opts.centre || peers.empty()) {
    settle();
    return;
  }
  j->waiting = peers.size();
  for (auto& peer : peers) {
    auto name = peer.to_string();
    self
      ->request(s.opts.centre, ms(s.opts.transport_timeout_ms),
                peer_call(s.opts.transport_timeout_ms, peer,
                          caf::make_message(st_deliver_atom::value, a, e)))
      .then(
        [=](bool took) mutable {
          if (j->done)
            return;
          --j->waiting;
          if (took) {
            j->done = true;
            ++self->state.stats.published;
            rp.deliver(caf::ok_atom::value);
            return;
          }
          settle();
        },
        [=](caf::error& err) mutable {
          if (j->done)
            return;
          --j->waiting;
          if (!definitely_nobody(err) && !j->open) {
            j->open = true;
            j->open_peer = name;
          }
          settle();
        });
  }
}

void drop_subscriber(pointer self, const caf::actor_addr& who) {
  auto& subs = self->state.subs;
  for (auto i = subs.begin(); i != subs.end();) {
    auto& v = i->second;
    v.erase(std::remove_if(v.begin(), v.end(),
                           [&](const caf::actor& x) { return x.address() == who; }),
            v.end());
    if (v.empty())
      i = subs.erase(i);
    else
      ++i;
  }
  count_subscriptions(self);
}

stream_transport_actor::behavior_type stream_transport(pointer self,
                                                       stream_transport_options opts) {
  auto& s = self->state;
  s.log = log::get("stream_transport").with_context(opts.self.to_string());
  for (auto& p : opts.peers)
    if (p != opts.self)
      s.peers.insert(p);
  s.opts = std::move(opts);
  self->set_down_handler([=](caf::down_msg& dm) {
    self->state.log.debug("stream subscriber gone; its subscriptions are dropped");
    drop_subscriber(self, dm.source);
  });
  return {
    [=](sp_probe_atom, address& a) -> caf::typed_response_promise<bool> {
      auto rp = self->make_response_promise<bool>();
      on_probe(self, a, rp);
      return rp;
    },
    [=](sp_publish_atom, address& a, envelope& e) -> caf::typed_response_promise<caf::ok_atom> {
      auto rp = self->make_response_promise<caf::ok_atom>();
      on_publish(self, a, e, rp);
      return rp;
    },
    [=](st_start_atom) -> caf::typed_response_promise<caf::ok_atom> {
      auto rp = self->make_response_promise<caf::ok_atom>();
      auto& s = self->state;
      if (s.started) {
        rp.deliver(caf::ok_atom::value);
        return rp;
      }
      s.started = true;
      s.stats.started = true;
      s.log.info("stream transport started");
      if (!s.opts.centre) {
        rp.deliver(caf::ok_atom::value);
        return rp;
      }
      self
        ->request(s.opts.centre, caf::infinite, mc_register_atom::value, component::stream,
                  caf::actor_cast<caf::actor>(self))
        .then([=](caf::ok_atom) mutable { rp.deliver(caf::ok_atom::value); },
              [=](caf::error& e) mutable {
                self->state.log.error("stream transport could not register at its message "
                                      "centre: "
                                      + to_fault(e).render());
                rp.deliver(e);
              });
      return rp;
    },
    [=](st_sub_atom, address& a, caf::actor& sub) -> caf::ok_atom {
      auto& v = self->state.subs[a.to_string()];
      if (sub && std::find(v.begin(), v.end(), sub) == v.end()) {
        v.push_back(sub);
        self->monitor(sub);
        self->state.log.debug("subscribed " + a.to_string());
      }
      if (v.empty())
        self->state.subs.erase(a.to_string());
      count_subscriptions(self);
      return caf::ok_atom::value;
    },
    [=](st_unsub_atom, address& a, caf::actor& sub) -> caf::ok_atom {
      auto i = self->state.subs.find(a.to_string());
      if (i != self->state.subs.end()) {
        auto& v = i->second;
        v.erase(std::remove(v.begin(), v.end(), sub), v.end());
        if (v.empty())
          self->state.subs.erase(i);
      }
      count_subscriptions(self);
      return caf::ok_atom::value;
    },
    [=](st_peer_atom, silo_address& p) {
      if (p != self->state.opts.self)
        self->state.peers.insert(std::move(p));
    },
    [=](st_unpeer_atom, silo_address& p) { self->state.peers.erase(p); },
    [=](mb_snapshot_atom, membership_snapshot& snap) {
      auto& s = self->state;
      s.members.clear();
      for (auto& row : snap.rows)
        if (row.silo != s.opts.self && row.status != silo_status::dead && !snap.departed(row.silo))
          s.members.insert(row.silo);
    },
    [=](st_has_atom, address& a) -> bool { return has_local(self, a); },
    [=](st_deliver_atom, address& a, envelope& e) -> bool { return deliver_local(self, a, e) > 0; },
    [=](st_stats_atom) -> stream_transport_stats { return self->state.stats; },
  };
}

} // namespace

stream_transport_actor spawn_stream_transport(caf::actor_system& sys,
                                              stream_transport_options opts) {
  return sys.spawn(stream_transport, std::move(opts));
}

} // namespace cafmesh::routing
