#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/routing/leg_release.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "cafmesh/actors/log.hpp"

namespace cafmesh::routing {

std::string to_string(slot_state x) {
  return x == slot_state::dispatched ? "dispatched" : "queued";
}

namespace {

/// `{kind} -> {addr} (delivery {id})` in one allocation: a label is rendered for every leg.
std::string unit_label(std::string_view kind, const std::string& addr,
                       const std::string& delivery_id) {
  static constexpr std::string_view arrow = " -> ";
  static constexpr std::string_view delivery = " (delivery ";
  std::string out;
  out.reserve(kind.size() + arrow.size() + addr.size() + delivery.size() + delivery_id.size() + 1);
  out.append(kind).append(arrow).append(addr).append(delivery).append(delivery_id).push_back(')');
  return out;
}

} // namespace

std::string dispatch_label(const std::string& addr, const std::string& delivery_id) {
  return unit_label("dispatch", addr, delivery_id);
}

std::string stream_routed_label(const std::string& addr, const std::string& delivery_id) {
  return unit_label("stream-routed", addr, delivery_id);
}

std::string nack_label(const std::string& sender, const std::string& delivery_id) {
  return unit_label("NACK", sender, delivery_id);
}

std::string render_delivery_ids(const std::vector<std::string>& ids, uint64_t total) {
  if (ids.empty() && total == 0)
    return "none";
  std::string out;
  size_t listed = 0;
  for (auto& id : ids) {
    if (listed == residual_ids_listed)
      break;
    if (!out.empty())
      out += ", ";
    out += id;
    ++listed;
  }
  if (total < ids.size())
    total = ids.size();
  if (total > listed)
    out += (out.empty() ? "+" : ", +") + std::to_string(total - listed) + " more";
  return out;
}

std::string render_seconds_1(int64_t ms) {
  if (ms < 0)
    ms = 0;
  auto tenths = (ms + 50) / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10);
}

std::string render_budget(int64_t ms) {
  if (ms % 1000 == 0)
    return std::to_string(ms / 1000) + " s";
  return std::to_string(ms) + " ms";
}

std::string render_entry(const quiescence_entry& x, int64_t now_ms) {
  if (x.state == slot_state::dispatched) {
    auto since = x.dispatched_ms >= 0 ? x.dispatched_ms : x.taken_ms;
    return x.label + ", in flight " + render_seconds_1(now_ms - since) + "s";
  }
  return x.label + " (queued, not dispatched), queued " + render_seconds_1(now_ms - x.taken_ms)
         + "s";
}

namespace {

/// One slot held: a `quiescence_entry` without its slot id, which is its key.
struct slot_rec {
  std::string label;
  int64_t taken_ms = 0;
  int64_t dispatched_ms = -1;
  slot_state state = slot_state::queued;
};

/// The entry `oldest(n)` reports for slot `slot`.
quiescence_entry entry_of(uint64_t slot, const slot_rec& x) {
  return quiescence_entry{slot, x.label, x.state, x.taken_ms, x.dispatched_ms};
}

/// A source of units (the router core) and the count it last published.
struct source_rec {
  quiescence_source_actor handle;
  uint64_t units = 0;
};

struct gauge_state {
  static const char* name;
  log::logger log;
  /// Slots held, hashed by id (`oldest(n)` sorts what it reports).
  std::unordered_map<uint64_t, slot_rec> slots;
  /// The sources holding units now, by address; a source at 0 units is forgotten, so the
  /// gauge holds no handle of an idle source.
  std::vector<source_rec> sources;
  uint64_t source_units = 0; ///< their units, summed
  std::vector<caf::typed_response_promise<caf::ok_atom>> awaiting;
  uint64_t next_allocated = 0;
  bool torn_down = false;
};

const char* gauge_state::name = "cafmesh.routing_quiescence";

using gauge_pointer = routing_quiescence_actor::stateful_pointer<gauge_state>;

int64_t clock_ms(gauge_pointer self) {
  auto d = self->clock().now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

void take(gauge_pointer self, uint64_t slot, std::string label, slot_state st, int64_t at_ms = -1) {
  auto& s = self->state;
  if (s.torn_down)
    return;
  if (s.slots.count(slot) != 0) {
    s.log.warning("routing quiescence: slot " + std::to_string(slot)
                  + " is already held; ignoring a second track (" + label + ")");
    return;
  }
  slot_rec e;
  e.label = std::move(label);
  e.state = st;
  e.taken_ms = at_ms >= 0 ? at_ms : clock_ms(self);
  e.dispatched_ms = st == slot_state::dispatched ? e.taken_ms : -1;
  s.slots.emplace(slot, std::move(e));
}

/// How long `oldest(n)` waits for a source to name its units: a source that does not
/// answer in time (gone, or stalled behind its backlog) adds its count and no names, so a
/// stop's naming of its residual never waits on the router core for longer.
constexpr auto source_answer_bound = std::chrono::seconds(1);

/// Slots held plus the sources' units.
uint64_t count_of(const gauge_state& s) {
  return s.slots.size() + s.source_units;
}

/// The gauge's own slots: the count, its clock and the `n` oldest slots (`oldest(n)`).
quiescence_sample own_oldest(gauge_pointer self, uint64_t n) {
  auto& s = self->state;
  quiescence_sample out;
  out.count = count_of(s);
  out.now_ms = clock_ms(self);
  using held = std::unordered_map<uint64_t, slot_rec>::value_type;
  std::vector<const held*> all;
  all.reserve(s.slots.size());
  for (auto& kvp : s.slots)
    all.push_back(&kvp);
  auto older = [](const held* x, const held* y) {
    return std::make_pair(x->second.taken_ms, x->first)
           < std::make_pair(y->second.taken_ms, y->first);
  };
  auto k = std::min<size_t>(n, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(), older);
  for (size_t i = 0; i < k; ++i)
    out.entries.push_back(entry_of(all[i]->first, all[i]->second));
  return out;
}

/// Keeps the `n` oldest of `x.entries`, in (taken, slot) order.
void keep_oldest(quiescence_sample& x, uint64_t n) {
  auto older = [](const quiescence_entry& a, const quiescence_entry& b) {
    return std::make_pair(a.taken_ms, a.slot) < std::make_pair(b.taken_ms, b.slot);
  };
  auto k = std::min<size_t>(n, x.entries.size());
  std::partial_sort(x.entries.begin(), x.entries.begin() + static_cast<std::ptrdiff_t>(k),
                    x.entries.end(), older);
  x.entries.resize(k);
}

void answer_awaiting(gauge_pointer self) {
  auto waiting = std::move(self->state.awaiting);
  self->state.awaiting.clear();
  for (auto& rp : waiting)
    rp.deliver(caf::ok_atom::value);
}

routing_quiescence_actor::behavior_type gauge_actor(gauge_pointer self,
                                                    routing_quiescence_options opts) {
  self->state.log = opts.silo_name.empty() ? log::get("quiescence")
                                           : log::get("quiescence").with_context(opts.silo_name);
  return {
    [=](q_track_atom, uint64_t slot, std::string& label, slot_state st) {
      take(self, slot, std::move(label), st);
    },
    [=](q_track_atom, std::string& label, slot_state st) -> uint64_t {
      auto slot = gauge_allocated_slot_bit | self->state.next_allocated++;
      take(self, slot, std::move(label), st);
      return slot;
    },
    [=](q_mark_atom, uint64_t slot) {
      auto& s = self->state;
      if (s.torn_down)
        return;
      auto i = s.slots.find(slot);
      if (i == s.slots.end() || i->second.state == slot_state::dispatched)
        return;
      i->second.state = slot_state::dispatched;
      i->second.dispatched_ms = clock_ms(self);
    },
    [=](q_handover_atom, uint64_t slot, std::string& new_label) {
      auto& s = self->state;
      if (s.torn_down)
        return;
      auto i = s.slots.find(slot);
      if (i != s.slots.end())
        i->second.label = std::move(new_label);
    },
    [=](q_release_atom, uint64_t slot) {
      auto& s = self->state;
      if (s.torn_down)
        return;
      if (s.slots.erase(slot) != 0 && count_of(s) == 0)
        answer_awaiting(self);
    },
    [=](q_units_atom, quiescence_source_actor& src, uint64_t units) {
      // The router core's count (docs/behaviour/quiescence.md#the-router-cores-own-count).
      auto& s = self->state;
      if (s.torn_down || !src)
        return;
      auto i = std::find_if(s.sources.begin(), s.sources.end(),
                            [&](const source_rec& x) { return x.handle == src; });
      if (i == s.sources.end()) {
        if (units == 0)
          return;
        s.sources.push_back(source_rec{std::move(src), 0});
        i = s.sources.end() - 1;
      }
      s.source_units = s.source_units - i->units + units;
      if (units != 0) {
        i->units = units;
        return;
      }
      s.sources.erase(i);
      if (count_of(s) == 0)
        answer_awaiting(self);
    },
    [=](q_count_atom) -> uint64_t { return count_of(self->state); },
    [=](q_oldest_atom, uint64_t n) -> caf::typed_response_promise<quiescence_sample> {
      // The gauge's own slots, merged with the units each source holding some names; a
      // source that cannot answer within `source_answer_bound` adds none.
      // The gauge's own slots and its count are read when the answer leaves, so they agree.
      auto rp = self->make_response_promise<quiescence_sample>();
      auto& s = self->state;
      if (s.sources.empty()) {
        rp.deliver(own_oldest(self, n));
        return rp;
      }
      auto named = std::make_shared<std::vector<quiescence_entry>>();
      auto waiting = std::make_shared<size_t>(s.sources.size());
      auto one_in = [=]() mutable {
        if (--*waiting != 0)
          return;
        auto out = own_oldest(self, n);
        for (auto& e : *named)
          out.entries.push_back(std::move(e));
        keep_oldest(out, n);
        rp.deliver(std::move(out));
      };
      for (auto& src : s.sources)
        self->request(src.handle, source_answer_bound, q_oldest_atom::value, n)
          .then(
            [=](quiescence_sample& x) mutable {
              for (auto& e : x.entries)
                named->push_back(std::move(e));
              one_in();
            },
            [=](caf::error&) mutable { one_in(); });
      return rp;
    },
    [=](q_await_atom) -> caf::typed_response_promise<caf::ok_atom> {
      auto rp = self->make_response_promise<caf::ok_atom>();
      if (count_of(self->state) == 0 || self->state.torn_down)
        rp.deliver(caf::ok_atom::value);
      else
        self->state.awaiting.push_back(rp);
      return rp;
    },
    [=](q_teardown_atom) -> caf::ok_atom {
      auto& s = self->state;
      if (!s.torn_down) {
        s.torn_down = true;
        // Frozen: the sources' count stays, their handles go (no names are asked for from
        // now on, and the gauge keeps no router core alive).
        s.sources.clear();
        s.log.debug("routing quiescence: gauge torn down with " + std::to_string(count_of(s))
                    + " unit(s) held");
        answer_awaiting(self);
      }
      return caf::ok_atom::value;
    },
  };
}

} // namespace

routing_quiescence_actor spawn_routing_quiescence(caf::actor_system& sys,
                                                  routing_quiescence_options opts) {
  return sys.spawn(gauge_actor, std::move(opts));
}

} // namespace cafmesh::routing
