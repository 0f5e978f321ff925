#include "cafmesh/routing/refusal_log.hpp"

#include <algorithm>

namespace cafmesh::routing {

std::string with_repeats(const std::string& line, const refusal_log_decision& d) {
  if (d.repeats == 0)
    return line;
  return line + " (repeated " + std::to_string(d.repeats) + " time(s) since the last line)";
}

refusal_log::refusal_log(const config::routing_section& cfg)
  : window_ms_(cfg.refusal_log_window_ms),
    sweep_entries_(static_cast<size_t>(std::max<int64_t>(cfg.refusal_log_sweep_entries, 0))),
    idle_ms_(cfg.refusal_log_window_ms * cfg.refusal_log_idle_windows),
    next_sweep_above_(sweep_entries_) {
  // nop
}

refusal_log_decision refusal_log::record(const std::string& target, const std::string& sender,
                                         int64_t now_ms) {
  refusal_log_decision out;
  auto key = std::make_pair(target, sender);
  auto i = entries_.find(key);
  if (i == entries_.end()) {
    entries_.emplace(std::move(key), entry{now_ms, now_ms, 0});
    out.log = true;
    if (entries_.size() > next_sweep_above_)
      sweep(now_ms);
    return out;
  }
  auto& e = i->second;
  e.last_seen_ms = now_ms;
  if (now_ms - e.last_logged_ms >= window_ms_) {
    out.log = true;
    out.repeats = e.suppressed;
    e.suppressed = 0;
    e.last_logged_ms = now_ms;
  } else {
    ++e.suppressed;
  }
  return out;
}

void refusal_log::sweep(int64_t now_ms) {
  ++sweeps_;
  for (auto i = entries_.begin(); i != entries_.end();) {
    if (now_ms - i->second.last_seen_ms >= idle_ms_) {
      i = entries_.erase(i);
      ++evicted_;
    } else {
      ++i;
    }
  }
  next_sweep_above_ = std::max(sweep_entries_, 2 * entries_.size());
}

} // namespace cafmesh::routing
