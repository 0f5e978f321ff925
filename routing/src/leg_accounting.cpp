#include "cafmesh/routing/leg_accounting.hpp"

#include <utility>

namespace cafmesh::routing {

void leg_accounting::track(uint64_t slot, std::string label, slot_state st, int64_t now_ms) {
  ++units_;
  slot_op op;
  op.kind = slot_op_kind::track;
  op.slot = slot;
  op.label = std::move(label);
  op.state = st;
  op.at_ms = now_ms;
  ops_.push_back(std::move(op));
}

void leg_accounting::mark(uint64_t slot, int64_t now_ms) {
  if (!ops_.empty()) {
    auto& last = ops_.back();
    if (last.kind == slot_op_kind::track && last.slot == slot && last.at_ms == now_ms) {
      last.state = slot_state::dispatched;
      return;
    }
  }
  slot_op op;
  op.kind = slot_op_kind::mark;
  op.slot = slot;
  op.at_ms = now_ms;
  ops_.push_back(std::move(op));
}

void leg_accounting::handover(uint64_t slot, std::string label) {
  slot_op op;
  op.kind = slot_op_kind::handover;
  op.slot = slot;
  op.label = std::move(label);
  ops_.push_back(std::move(op));
}

void leg_accounting::release(uint64_t slot) {
  if (units_ > 0)
    --units_;
  slot_op op;
  op.kind = slot_op_kind::release;
  op.slot = slot;
  ops_.push_back(std::move(op));
}

std::vector<slot_op> leg_accounting::take() {
  published_ = units_;
  std::vector<slot_op> out;
  out.swap(ops_);
  return out;
}

} // namespace cafmesh::routing
