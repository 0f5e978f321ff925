#include "cafmesh/routing/outcome_tracker.hpp"

#include <algorithm>
#include <utility>

namespace cafmesh::routing {

std::string to_string(outcome_action x) {
  switch (x) {
    case outcome_action::deliver: return "deliver";
    case outcome_action::duplicate: return "duplicate";
    case outcome_action::unmatched: return "unmatched";
  }
  return "unknown";
}

outcome_tracker::outcome_tracker(const config::routing_section& cfg)
  : outcome_tracker(cfg, log::get("outcome_tracker")) {
  // nop
}

outcome_tracker::outcome_tracker(const config::routing_section& cfg, log::logger out)
  : window_ms_(cfg.outcome_dedup_window_ms),
    max_ids_(static_cast<size_t>(std::max<int64_t>(cfg.outcome_dedup_max_ids, 1))),
    log_(std::move(out)) {
  // nop
}

bool outcome_tracker::track_request(const std::string& id, int64_t deadline_ms, int64_t now_ms) {
  forget_expired(now_ms);
  if (pending_.count(id) > 0 || remembered_.count(id) > 0)
    return false;
  auto i = deadlines_.emplace(deadline_ms, id); // after equal keys: tracking order
  pending_.emplace(id, i);
  return true;
}

outcome_action outcome_tracker::on_response(const std::string& id, int64_t now_ms) {
  forget_expired(now_ms);
  auto i = pending_.find(id);
  if (i != pending_.end()) {
    deadlines_.erase(i->second);
    pending_.erase(i);
    remember(id, now_ms);
    return outcome_action::deliver;
  }
  if (remembered_.count(id) > 0)
    return drop_duplicate(id);
  ++unmatched_dropped_;
  log_.debug("outcome for unknown delivery " + id + " dropped");
  return outcome_action::unmatched;
}

outcome_action outcome_tracker::on_deadline(const std::string& id, int64_t now_ms) {
  return on_response(id, now_ms);
}

outcome_action outcome_tracker::on_nack(const std::string& id, int64_t now_ms) {
  forget_expired(now_ms);
  auto i = pending_.find(id);
  if (i != pending_.end()) {
    deadlines_.erase(i->second);
    pending_.erase(i);
    remember(id, now_ms);
    return outcome_action::deliver;
  }
  if (remembered_.count(id) > 0)
    return drop_duplicate(id);
  // A one-way post's first NACK.
  remember(id, now_ms);
  return outcome_action::deliver;
}

std::vector<std::string> outcome_tracker::expire(int64_t now_ms) {
  forget_expired(now_ms);
  std::vector<std::string> out;
  while (!deadlines_.empty() && deadlines_.begin()->first <= now_ms) {
    auto id = std::move(deadlines_.begin()->second);
    deadlines_.erase(deadlines_.begin());
    pending_.erase(id);
    remember(id, now_ms);
    out.emplace_back(std::move(id));
  }
  return out;
}

std::optional<int64_t> outcome_tracker::next_deadline_ms() const {
  if (deadlines_.empty())
    return std::nullopt;
  return deadlines_.begin()->first;
}

void outcome_tracker::forget_expired(int64_t now_ms) {
  while (!order_.empty() && now_ms - order_.front().first >= window_ms_) {
    remembered_.erase(order_.front().second);
    order_.pop_front();
  }
}

void outcome_tracker::remember(const std::string& id, int64_t now_ms) {
  order_.emplace_back(now_ms, id);
  remembered_.emplace(id, now_ms);
  while (order_.size() > max_ids_) {
    remembered_.erase(order_.front().second);
    order_.pop_front();
  }
}

outcome_action outcome_tracker::drop_duplicate(const std::string& id) {
  ++duplicates_dropped_;
  log_.debug("duplicate outcome for delivery " + id + " dropped");
  return outcome_action::duplicate;
}

} // namespace cafmesh::routing
