#include "cafmesh/routing/sync_guard.hpp"

#include <utility>

#include <nlohmann/json.hpp>

#include "cafmesh/actors/log.hpp"

namespace cafmesh::routing {

sync_op sync_op::set(std::string key, std::string value_json) {
  return sync_op{kind::set, std::move(key), std::move(value_json)};
}

sync_op sync_op::remove(std::string key) {
  return sync_op{kind::remove, std::move(key), {}};
}

sync_op sync_op::test(std::string key, std::string value_json) {
  return sync_op{kind::test, std::move(key), std::move(value_json)};
}

sync_frame sync_frame::full(uint64_t version, sync_state state) {
  sync_frame f;
  f.type = kind::full;
  f.version = version;
  f.state = std::move(state);
  return f;
}

sync_frame sync_frame::patch(uint64_t version, std::vector<sync_op> ops) {
  sync_frame f;
  f.type = kind::patch;
  f.version = version;
  f.ops = std::move(ops);
  return f;
}

std::string to_string(const sync_frame& f) {
  return (f.type == sync_frame::kind::full ? "full(" : "patch(") + std::to_string(f.version) + ")";
}

bool apply_ops(sync_state& state, const std::vector<sync_op>& ops) {
  auto copy = state;
  for (const auto& op : ops) {
    switch (op.op) {
      case sync_op::kind::set: copy[op.key] = op.value_json; break;
      case sync_op::kind::remove:
        if (copy.erase(op.key) == 0)
          return false;
        break;
      case sync_op::kind::test: {
        auto i = copy.find(op.key);
        if (i == copy.end() || i->second != op.value_json)
          return false;
        break;
      }
    }
  }
  state = std::move(copy);
  return true;
}

std::string to_string(frame_outcome x) {
  switch (x) {
    case frame_outcome::applied: return "applied";
    case frame_outcome::stale_dropped: return "stale_dropped";
    case frame_outcome::gap_dropped: return "gap_dropped";
    case frame_outcome::resync_requested: return "resync_requested";
    case frame_outcome::nacked: return "nacked";
  }
  return "frame_outcome(" + std::to_string(static_cast<int>(x)) + ")";
}

delta_mirror::delta_mirror(std::string name) : name_(std::move(name)) {
  // nop
}

namespace {

bool valid_json(const std::string& text) {
  return !nlohmann::json::parse(text, nullptr, false).is_discarded();
}

} // namespace

bool delta_mirror::malformed(const sync_frame& f, std::string& why) const {
  if (f.type == sync_frame::kind::full) {
    for (const auto& [k, v] : f.state) {
      if (k.empty()) {
        why = "empty key in " + to_string(f);
        return true;
      }
      if (!valid_json(v)) {
        why = "value of '" + k + "' in " + to_string(f) + " is not JSON";
        return true;
      }
    }
    return false;
  }
  for (const auto& op : f.ops) {
    if (op.key.empty()) {
      why = "empty key in " + to_string(f);
      return true;
    }
    if (op.op != sync_op::kind::remove && !valid_json(op.value_json)) {
      why = "value of '" + op.key + "' in " + to_string(f) + " is not JSON";
      return true;
    }
  }
  return false;
}

void delta_mirror::request_full(uint64_t frame_version, std::string reason) {
  resync_in_flight_ = true;
  ++counters_.fresh_full_requests;
  outbox_.push_back(sync_request{sync_request::kind::fresh_full, frame_version, std::move(reason)});
}

frame_outcome delta_mirror::on_frame(const sync_frame& f) {
  const bool is_full = f.type == sync_frame::kind::full;
  // The gate.
  if (version_ && f.version < *version_ && !(is_full && latch_)) {
    ++counters_.stale_dropped;
    log::get("sync").debug("delta-sync " + name_ + ": dropping stale " + to_string(f)
                           + " below mirror version " + std::to_string(*version_)
                           + " (not re-requested)");
    return frame_outcome::stale_dropped;
  }
  if (is_full) {
    std::string why;
    if (malformed(f, why)) {
      ++counters_.nacked;
      outbox_.push_back(sync_request{sync_request::kind::nack_sender, f.version, why});
      return frame_outcome::nacked;
    }
    state_ = f.state;
    has_state_ = true;
    version_ = f.version;
    resync_in_flight_ = false;
    latch_ = false;
    ++counters_.applied;
    return frame_outcome::applied;
  }
  // A patch.
  if (resync_in_flight_) {
    ++counters_.gap_dropped;
    return frame_outcome::gap_dropped;
  }
  if (!version_ || !has_state_) {
    request_full(f.version, "delta-sync " + name_ + ": " + to_string(f) + " has no base");
    return frame_outcome::resync_requested;
  }
  std::string why;
  if (malformed(f, why)) {
    ++counters_.nacked;
    outbox_.push_back(sync_request{sync_request::kind::nack_sender, f.version, why});
    return frame_outcome::nacked;
  }
  if (!apply_ops(state_, f.ops)) {
    request_full(f.version, "delta-sync " + name_ + ": " + to_string(f)
                              + " does not apply to mirror version " + std::to_string(*version_));
    return frame_outcome::resync_requested;
  }
  version_ = f.version;
  ++counters_.applied;
  return frame_outcome::applied;
}

bool delta_mirror::on_announce(uint64_t announced_version) {
  if (!version_ || announced_version <= *version_)
    return false;
  resubscribe_behind(announced_version);
  return true;
}

void delta_mirror::resubscribe_behind(uint64_t announced_version) {
  latch_ = true;
  if (!resync_in_flight_)
    request_full(announced_version,
                 "delta-sync " + name_ + ": behind, announced version "
                   + std::to_string(announced_version) + " above mirror version "
                   + (version_ ? std::to_string(*version_) : std::string{"none"}));
}

void delta_mirror::request_failed() {
  resync_in_flight_ = false;
}

std::vector<sync_request> delta_mirror::take_requests() {
  std::vector<sync_request> out;
  out.swap(outbox_);
  return out;
}

} // namespace cafmesh::routing
