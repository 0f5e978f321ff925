#include "router_core_state.hpp"

namespace cafmesh::routing::router_core_detail {

// docs/behaviour/routing.md#one-turn-per-step

void on_admitted(pointer self, uint64_t id) {
  auto& s = self->state;
  auto* i = s.legs.find(id);
  if (i != nullptr) {
    if (!i->started && !i->finished && i->latch_open)
      leg_start(self, *i);
    return;
  }
  if (s.nacks.count(id) != 0)
    nack_start(self, id);
}

void run_work(pointer self) {
  auto& s = self->state;
  while (!s.work.empty()) {
    auto w = s.work.front();
    s.work.pop_front();
    if (w.kind == turn_work::admitted)
      on_admitted(self, w.id);
    else if (settle_latch(self, w.id))
      leg_terminal(self, w.id, static_cast<leg_outcome>(w.outcome));
  }
}

} // namespace cafmesh::routing::router_core_detail
