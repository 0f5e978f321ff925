#include "cafmesh/actors/sim_network.hpp"

#include <algorithm>
#include <chrono>

#include <caf/all.hpp>

#include "cafmesh/actors/detail/sim_network_state.hpp"
#include "cafmesh/actors/detail/tell.hpp"
#include "cafmesh/actors/log.hpp"

namespace cafmesh {

using cafmesh::detail::sim_frame;
using cafmesh::detail::sim_network_state;

const char* sim_network_state::name = "cafmesh.sim_network";

bool matches(const drop_rule& r, const wire_frame& f) {
  return (!r.src || *r.src == f.src) && (!r.dst || *r.dst == f.dst)
         && (!r.target || *r.target == f.target)
         && (!r.is_response || *r.is_response == f.is_response);
}

uint64_t trace_digest(const std::vector<std::string>& lines) {
  uint64_t h = 14695981039346656037ull;
  auto feed = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  for (const auto& l : lines) {
    feed(l);
    feed("\n");
  }
  return h;
}

uint64_t sim_network_state::trace_digest() const {
  return cafmesh::trace_digest(trace);
}

size_t sim_network_state::count(const std::string& needle) const {
  size_t n = 0;
  for (const auto& l : trace)
    if (l.find(needle) != std::string::npos)
      ++n;
  return n;
}

namespace {

/// The simulated network with its own timer: a link's next frame falls due.
using sim_network_impl
  = sim_network_actor::extend<caf::reacts_to<sim_pump_atom, silo_address, silo_address>>;
using net_actor = sim_network_impl::stateful_base<sim_network_state>;
using cafmesh::detail::tell;
using link_key = std::pair<silo_address, silo_address>;

int64_t now_ms(net_actor* self) {
  auto d = self->clock().now() - self->state.origin;
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

void note(net_actor* self, const std::string& event, const std::string& what) {
  self->state.trace.push_back(std::to_string(now_ms(self)) + " " + event + " " + what);
}

link_key unordered(const silo_address& a, const silo_address& b) {
  return a < b ? link_key{a, b} : link_key{b, a};
}

bool link_open(const sim_network_state& st, const link_key& k) {
  return st.stalled.count(k.first) == 0 && st.stalled.count(k.second) == 0
         && st.partitions.count(unordered(k.first, k.second)) == 0;
}

/// The type name of the first element of `m` (recursively, through nested messages) that
/// is not announced to the actor system, or an empty string. Without this check CAF 0.17
/// only prints an error and writes a broken message (docs/caf-notes.md "Message types").
std::string first_unannounced(caf::actor_system& sys, const caf::message& m) {
  const auto& types = sys.types();
  for (size_t i = 0; i < m.size(); ++i) {
    auto rtti = m.type(i);
    if (rtti.first == caf::type_nr<caf::message>::value) {
      auto nested = first_unannounced(sys, m.get_as<caf::message>(i));
      if (!nested.empty())
        return nested;
      continue;
    }
    if (rtti.first != 0)
      continue; // a builtin type
    if (&types.portable_name(rtti) == &types.default_type_name()
        || types.portable_name(rtti) == types.default_type_name())
      return rtti.second != nullptr ? rtti.second->name() : "?";
  }
  return {};
}

std::string first_unannounced(caf::actor_system& sys, const wire_frame& f) {
  auto bad = first_unannounced(sys, f.payload);
  if (bad.empty() && f.error)
    bad = first_unannounced(sys, f.error.context());
  return bad;
}

void bounce(net_actor* self, const wire_frame& header, caf::error err) {
  // The frame could not reach its destination: tell its source (requests only wait).
  auto& st = self->state;
  auto src = st.centres.find(header.src);
  if (src == st.centres.end() || st.dead.count(header.src) > 0)
    return;
  if (err) {
    // The frame itself could not cross the wire: answer the request with the error.
    auto resp = response_to(header);
    resp.error = std::move(err);
    tell(self, src->second, mc_frame_atom::value, std::move(resp));
  } else {
    tell(self, src->second, mc_bounce_atom::value, header);
  }
}

/// Takes `sf` off the wire: its frame for the destination's centre (appended to `ready`,
/// handed over by the caller), or its loss or bounce.
void deliver(net_actor* self, sim_frame& sf, std::vector<wire_frame>& ready) {
  auto& st = self->state;
  const auto& h = sf.header;
  bool is_request = !h.is_response && h.correlation_id != 0;
  if (st.killed.count(h.src) > 0) {
    note(self, "lost", sf.text);
    return;
  }
  if (st.dead.count(h.dst) > 0) {
    // As a connection attempt to a dead peer fails: a request bounces to its source.
    note(self, is_request ? "bounce" : "lost", sf.text);
    if (is_request)
      bounce(self, h, caf::error{});
    return;
  }
  auto dst = st.centres.find(h.dst);
  if (dst == st.centres.end()) {
    note(self, is_request ? "bounce" : "lost", sf.text);
    if (is_request)
      bounce(self, h, caf::error{});
    return;
  }
  wire_frame f;
  caf::binary_deserializer source{self->system(), sf.bytes};
  if (auto err = source(f)) {
    note(self, "lost", sf.text + " (cannot deserialize: " + self->system().render(err) + ")");
    if (is_request)
      bounce(self, h, err);
    return;
  }
  f.expires_at = h.expires_at; // one virtual clock: time on the simulated wire counts
  ++st.frames_delivered;
  note(self, "deliver", sf.text);
  ready.push_back(std::move(f));
}

/// Hands the frames `ready` for `dst` to its centre in one message (SPEC §14 B7), as the
/// receiving process's link does with a batch.
void hand_over(net_actor* self, const silo_address& dst, std::vector<wire_frame>& ready) {
  if (ready.empty())
    return;
  auto& st = self->state;
  auto c = st.centres.find(dst);
  if (c != st.centres.end()) {
    if (ready.size() == 1)
      tell(self, c->second, mc_frame_atom::value, std::move(ready.front()));
    else
      tell(self, c->second, mc_frames_atom::value, std::move(ready));
  }
  ready = std::vector<wire_frame>{};
}

/// Answers every `sim_flush_atom` caller waiting on link `k`.
void release_flush_waiters(net_actor* self, const link_key& k) {
  auto i = self->state.flush_waiters.find(k);
  if (i == self->state.flush_waiters.end())
    return;
  auto waiters = std::move(i->second);
  self->state.flush_waiters.erase(i);
  bool lost = self->state.lossy.count(k) > 0;
  for (auto& rp : waiters)
    rp.deliver(caf::ok_atom::value, lost);
}

/// Delivers every frame at the head of link `k` that is due and allowed to pass.
void pump(net_actor* self, const link_key& k) {
  auto& st = self->state;
  auto i = st.links.find(k);
  if (i == st.links.end())
    return;
  auto& q = i->second.queue;
  auto now = now_ms(self);
  std::vector<wire_frame> ready;
  while (!q.empty() && q.front().due_ms <= now) {
    if (!link_open(st, k) && st.killed.count(k.first) == 0 && st.dead.count(k.second) == 0) {
      if (!q.front().held) {
        q.front().held = true;
        note(self, "hold", q.front().text);
      }
      hand_over(self, k.second, ready);
      // Flush waiters keep waiting: a held frame is delivered once the link opens, before
      // the departure of its source (docs/behaviour/membership.md#departures-and-the-wire).
      return;
    }
    auto sf = std::move(q.front());
    q.pop_front();
    deliver(self, sf, ready);
  }
  hand_over(self, k.second, ready);
  if (q.empty())
    release_flush_waiters(self, k);
  if (q.empty() && st.gone_after.erase(k) > 0) {
    // The departed centre's last frame on this link arrived: now the peer sees it go.
    auto peer = st.centres.find(k.second);
    if (peer != st.centres.end() && st.dead.count(k.second) == 0)
      tell(self, peer->second, mc_gone_atom::value, k.first);
  }
}

void pump_all(net_actor* self) {
  std::vector<link_key> keys;
  for (auto& kv : self->state.links)
    keys.push_back(kv.first);
  for (auto& k : keys)
    pump(self, k);
}

void tell_watchers(net_actor* self, const silo_address& s, bool alive) {
  for (auto& w : self->state.watchers)
    tell(self, w, sim_watch_atom::value, s, alive);
}

void stall(net_actor* self, const silo_address& s, bool detectable) {
  auto& st = self->state;
  st.stalled.insert(s);
  note(self, "stall", s.to_string() + (detectable ? "" : " (undetected)"));
  if (detectable && st.detectable_stalls.insert(s).second && st.dead.count(s) == 0)
    tell_watchers(self, s, false);
}

/// The latency and due time of the next message on link `k`, drawn once per message (a
/// batch travels as one).
int64_t next_due(net_actor* self, const link_key& k, int64_t& latency) {
  auto& st = self->state;
  auto range = std::make_pair(st.cfg.link_latency_min_ms, st.cfg.link_latency_max_ms);
  if (auto d = st.delays.find(k); d != st.delays.end())
    range = d->second;
  auto span = static_cast<uint64_t>(range.second - range.first + 1);
  latency = range.first + static_cast<int64_t>(st.rng() % span);
  auto& link = st.links[k];
  auto due = std::max(now_ms(self) + latency, link.last_due_ms);
  link.last_due_ms = due;
  return due;
}

/// Makes sure link `k` is pumped at `due`.
void schedule_pump(net_actor* self, const link_key& k, int64_t due) {
  auto now = now_ms(self);
  if (due <= now)
    self->send(self, sim_pump_atom::value, k.first, k.second);
  else
    self->delayed_send(self, std::chrono::milliseconds(due - now), sim_pump_atom::value, k.first,
                       k.second);
}

/// Puts `f` on the wire as part of one message on its link (`due`, `latency`: that
/// message's); false if it did not get on (dropped, lost, bounced).
bool accept(net_actor* self, wire_frame& f, int64_t due, int64_t latency) {
  auto& st = self->state;
  wire_frame header = f;
  header.payload = caf::message{};
  header.error = caf::error{};
  bool is_request = !f.is_response && f.correlation_id != 0;
  auto seq = ++st.next_seq;
  auto text = "n" + std::to_string(seq) + " " + header.describe();
  if (st.dead.count(f.src) > 0) {
    note(self, "lost", text);
    return false;
  }
  for (auto& r : st.drops) {
    if (r.count > 0 && matches(r, header)) {
      --r.count;
      note(self, "drop", text);
      st.lossy.emplace(f.src, f.dst);
      return false;
    }
  }
  for (auto& r : st.drop_predicates) {
    if (r.count > 0 && r.pred && r.pred(f)) {
      --r.count;
      note(self, "drop", text);
      st.lossy.emplace(f.src, f.dst);
      return false;
    }
  }
  if (auto bad = first_unannounced(self->system(), f); !bad.empty()) {
    auto err = caf::make_error(caf::sec::unknown_type, "type not announced: " + bad);
    note(self, "lost", text + " (cannot serialize: type not announced: " + bad + ")");
    if (is_request) {
      bounce(self, header, err);
      return false;
    }
    if (!f.is_response)
      return false;
    // A reply that cannot cross: the caller receives the error instead.
    f.payload = caf::message{};
    f.error = err;
  }
  sim_frame sf;
  sf.text = text;
  sf.header = header;
  caf::binary_serializer sink{self->system(), sf.bytes};
  if (auto err = sink(f)) {
    note(self, "lost", text + " (cannot serialize: " + self->system().render(err) + ")");
    if (is_request)
      bounce(self, header, err);
    return false;
  }
  if (!f.is_response)
    ++st.requests_by_component[f.target];
  ++st.frames_sent;
  link_key k{f.src, f.dst};
  ++st.frames_by_link[k];
  sf.due_ms = due;
  note(self, "send", text + " +" + std::to_string(latency) + "ms");
  st.links[k].queue.push_back(std::move(sf));
  return true;
}

/// Puts the frames `fs` a centre handed over in one message on the wire: the frames for one
/// destination travel as one message on that link (one latency, one pump), in their order.
void accept_all(net_actor* self, std::vector<wire_frame>& fs) {
  auto& st = self->state;
  struct message {
    link_key k;
    int64_t due = 0;
    int64_t latency = 0;
    size_t frames = 0; ///< frames that got on
  };
  std::vector<message> msgs;
  for (auto& f : fs) {
    link_key k{f.src, f.dst};
    auto m = std::find_if(msgs.begin(), msgs.end(), [&](const message& x) { return x.k == k; });
    if (m == msgs.end()) {
      message x;
      x.k = k;
      x.due = next_due(self, k, x.latency);
      msgs.push_back(x);
      m = msgs.end() - 1;
    }
    if (accept(self, f, m->due, m->latency))
      ++m->frames;
  }
  for (auto& m : msgs) {
    if (m.frames == 0)
      continue;
    ++st.messages_by_link[m.k];
    schedule_pump(self, m.k, m.due);
  }
}

sim_network_impl::behavior_type sim_network(net_actor* self, sim_network_config cfg) {
  auto& st = self->state;
  st.cfg = cfg;
  if (st.cfg.link_latency_max_ms < st.cfg.link_latency_min_ms)
    st.cfg.link_latency_max_ms = st.cfg.link_latency_min_ms;
  st.rng.seed(cfg.seed ^ fnv1a64("sim_network"));
  st.origin = self->clock().now();
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    for (auto& kv : st.centres) {
      if (kv.second.address() != dm.source)
        continue;
      auto gone = kv.first;
      bool was_dead = !st.dead.insert(gone).second;
      bool was_killed = st.killed.count(gone) > 0;
      note(self, "gone", gone.to_string());
      for (auto& other : st.centres) {
        if (other.first == gone || st.dead.count(other.first) > 0)
          continue;
        auto l = st.links.find(link_key{gone, other.first});
        if (!was_killed && l != st.links.end() && !l->second.queue.empty())
          st.gone_after.insert(link_key{gone, other.first}); // after its frames (pump)
        else
          tell(self, other.second, mc_gone_atom::value, gone);
      }
      if (!was_dead)
        tell_watchers(self, gone, false);
      break;
    }
    pump_all(self);
  });
  return {
    [=](sim_attach_atom, const silo_address& s, const caf::actor& mc) {
      self->state.centres[s] = mc;
      self->state.dead.erase(s);
      self->state.killed.erase(s);
      self->monitor(mc);
    },
    [=](sim_frame_atom, wire_frame& f) {
      std::vector<wire_frame> fs;
      fs.push_back(std::move(f));
      accept_all(self, fs);
    },
    [=](sim_frames_atom, std::vector<wire_frame>& fs) { accept_all(self, fs); },
    [=](sim_pump_atom, const silo_address& src, const silo_address& dst) {
      pump(self, link_key{src, dst});
    },
    [=](sim_stall_atom, const silo_address& s) {
      stall(self, s, true);
      return caf::ok_atom::value;
    },
    [=](sim_stall_atom, const silo_address& s, bool detectable) {
      stall(self, s, detectable);
      return caf::ok_atom::value;
    },
    [=](sim_unstall_atom, const silo_address& s) {
      auto& st = self->state;
      st.stalled.erase(s);
      note(self, "unstall", s.to_string());
      if (st.detectable_stalls.erase(s) > 0 && st.dead.count(s) == 0)
        tell_watchers(self, s, true);
      pump_all(self);
      return caf::ok_atom::value;
    },
    [=](sim_partition_atom, const silo_address& a, const silo_address& b) {
      self->state.partitions.insert(unordered(a, b));
      note(self, "partition", a.to_string() + " | " + b.to_string());
      return caf::ok_atom::value;
    },
    [=](sim_heal_atom, const silo_address& a, const silo_address& b) {
      self->state.partitions.erase(unordered(a, b));
      note(self, "heal", a.to_string() + " | " + b.to_string());
      pump_all(self);
      return caf::ok_atom::value;
    },
    [=](sim_drop_atom, const drop_rule& r) {
      self->state.drops.push_back(r);
      return caf::ok_atom::value;
    },
    [=](sim_drop_atom, const drop_predicate& r) {
      self->state.drop_predicates.push_back(r);
      return caf::ok_atom::value;
    },
    [=](sim_delay_atom, const silo_address& src, const silo_address& dst, int64_t min_ms,
        int64_t max_ms) {
      self->state.delays[link_key{src, dst}] = {min_ms, std::max(min_ms, max_ms)};
      note(self, "delay",
           src.to_string() + " -> " + dst.to_string() + " " + std::to_string(min_ms) + ".."
             + std::to_string(max_ms) + "ms");
      return caf::ok_atom::value;
    },
    [=](sim_kill_atom, const silo_address& s) {
      auto& st = self->state;
      st.killed.insert(s);
      if (st.dead.insert(s).second)
        tell_watchers(self, s, false);
      note(self, "kill", s.to_string());
      // As the connections of a killed process break, what was still on its way to it
      // fails on the senders' side now: a request bounces (it never arrived, so the news of
      // the departure that follows cannot overtake it), anything else is lost.
      for (auto& kv : st.links) {
        if (kv.first.second != s)
          continue;
        auto q = std::move(kv.second.queue);
        kv.second.queue.clear();
        for (auto& sf : q) {
          bool is_request = !sf.header.is_response && sf.header.correlation_id != 0;
          note(self, is_request ? "bounce" : "lost", sf.text);
          if (is_request)
            bounce(self, sf.header, caf::error{});
        }
      }
      pump_all(self);
      return caf::ok_atom::value;
    },
    [=](sim_flush_atom, const silo_address& src,
        const silo_address& dst) -> caf::result<caf::ok_atom, bool> {
      auto& st = self->state;
      link_key k{src, dst};
      auto l = st.links.find(k);
      if (l == st.links.end() || l->second.queue.empty() || st.killed.count(src) > 0)
        return {caf::ok_atom::value, st.lossy.count(k) > 0};
      auto rp = self->make_response_promise<caf::ok_atom, bool>();
      st.flush_waiters[k].push_back(rp);
      return rp;
    },
    [=](sim_note_atom, const std::string& text) { note(self, "note", text); },
    [=](sim_watch_atom, const caf::actor& w) { self->state.watchers.push_back(w); },
    [=](sim_trace_atom) { return self->state.trace; },
    [=](sim_digest_atom) { return self->state.trace_digest(); },
  };
}

} // namespace

sim_network_config make_sim_network_config(const config::simulation_section& sim) {
  return sim_network_config{sim.seed, sim.link_latency_min_ms, sim.link_latency_max_ms};
}

sim_network_actor spawn_sim_network(caf::actor_system& sys, sim_network_config cfg) {
  return sys.spawn(sim_network, cfg);
}

sim_network_state& detail::state_of(const sim_network_actor& net) {
  auto ptr = caf::actor_cast<caf::abstract_actor*>(net);
  return dynamic_cast<net_actor&>(*ptr).state;
}

} // namespace cafmesh
