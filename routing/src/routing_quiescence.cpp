#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/routing/leg_release.hpp"

#include <algorithm>
#include <chrono>
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

struct gauge_state {
  static const char* name;
  log::logger log;
  /// Slots held, hashed by id (`oldest(n)` sorts what it reports).
  std::unordered_map<uint64_t, slot_rec> slots;
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
      if (s.slots.erase(slot) != 0 && s.slots.empty())
        answer_awaiting(self);
    },
    [=](q_delta_atom, std::vector<slot_op>& ops) {
      // The router core's changes of one turn (docs/behaviour/quiescence.md#the-router-cores-own-count).
      auto& s = self->state;
      if (s.torn_down)
        return;
      bool released = false;
      for (auto& op : ops) {
        switch (op.kind) {
          case slot_op_kind::track:
            take(self, op.slot, std::move(op.label), op.state, op.at_ms);
            break;
          case slot_op_kind::mark: {
            auto i = s.slots.find(op.slot);
            if (i != s.slots.end() && i->second.state != slot_state::dispatched) {
              i->second.state = slot_state::dispatched;
              i->second.dispatched_ms = op.at_ms;
            }
            break;
          }
          case slot_op_kind::handover: {
            auto i = s.slots.find(op.slot);
            if (i != s.slots.end())
              i->second.label = std::move(op.label);
            break;
          }
          case slot_op_kind::release: released = s.slots.erase(op.slot) != 0 || released; break;
        }
      }
      if (released && s.slots.empty())
        answer_awaiting(self);
    },
    [=](q_count_atom) -> uint64_t { return self->state.slots.size(); },
    [=](q_oldest_atom, uint64_t n) -> quiescence_sample {
      auto& s = self->state;
      quiescence_sample out;
      out.count = s.slots.size();
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
      std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(),
                        older);
      for (size_t i = 0; i < k; ++i)
        out.entries.push_back(entry_of(all[i]->first, all[i]->second));
      return out;
    },
    [=](q_await_atom) -> caf::typed_response_promise<caf::ok_atom> {
      auto rp = self->make_response_promise<caf::ok_atom>();
      if (self->state.slots.empty() || self->state.torn_down)
        rp.deliver(caf::ok_atom::value);
      else
        self->state.awaiting.push_back(rp);
      return rp;
    },
    [=](q_teardown_atom) -> caf::ok_atom {
      auto& s = self->state;
      if (!s.torn_down) {
        s.torn_down = true;
        s.log.debug("routing quiescence: gauge torn down with " + std::to_string(s.slots.size())
                    + " slot(s) held");
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
