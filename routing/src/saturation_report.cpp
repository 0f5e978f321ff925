#include "cafmesh/routing/saturation_report.hpp"

#include <algorithm>

namespace cafmesh::routing {

namespace {

size_t to_count(int64_t x) {
  return x < 0 ? size_t{0} : static_cast<size_t>(x);
}

} // namespace

std::string render_ages(const in_flight_ages& x) {
  std::string out;
  if (x.oldest_dispatched_age_ms)
    out = "oldest dispatched leg " + std::to_string(*x.oldest_dispatched_age_ms)
          + " ms since dispatch";
  else
    out = "no leg dispatched";
  out += "; ";
  if (x.oldest_queued_age_ms)
    out += "oldest queued leg " + std::to_string(*x.oldest_queued_age_ms)
           + " ms (queued, not dispatched)";
  else
    out += "no leg queued";
  return out;
}

std::string render(const saturation_event& ev, const queue_snapshot& queues) {
  auto count = std::to_string(ev.ages.in_flight) + " leg(s) in flight";
  switch (ev.kind) {
    case saturation_event_kind::report:
      return "routing saturation: " + count + "; " + render_ages(ev.ages)
             + "; queues: " + to_string(queues);
    case saturation_event_kind::escalation:
      return "routing saturation critical: oldest dispatched leg in flight "
             + std::to_string(ev.ages.oldest_dispatched_age_ms.value_or(0)) + " ms (self bound "
             + std::to_string(ev.leg_self_bound_ms) + " ms); " + count + "; " + render_ages(ev.ages)
             + "; queues: " + to_string(queues);
    case saturation_event_kind::cleared:
      return "routing saturation cleared after " + std::to_string(ev.latched_ms) + " ms; " + count;
    case saturation_event_kind::lasting:
      return "routing saturation lasting " + std::to_string(ev.latched_ms) + " ms: " + count + "; "
             + render_ages(ev.ages) + "; queues: " + to_string(queues);
  }
  return {};
}

void log_saturation_event(const saturation_event& ev, const queue_snapshot& queues,
                          const log::logger& out) {
  out.log(ev.lvl, render(ev, queues));
}

void log_saturation_event(const saturation_event& ev, const queue_snapshot& queues) {
  log_saturation_event(ev, queues, log::get("router_core"));
}

saturation_monitor::saturation_monitor(const config::routing_section& cfg)
  : report_count_(to_count(cfg.saturation_report_count)),
    clear_count_(to_count(cfg.saturation_clear_count)),
    leg_self_bound_ms_(cfg.leg_self_bound_ms),
    review_ms_(cfg.saturation_review_ms),
    warn_after_ms_(std::max<int64_t>(0, cfg.saturation_warn_after_ms)) {
  // A report threshold of 0 would latch an empty router: count from 1.
  report_count_ = std::max(report_count_, size_t{1});
}

void saturation_monitor::link(saturation_link& x) {
  auto& l = list_of(x.phase);
  auto after = l.tail;
  while (after != nullptr && after->since_ms > x.since_ms)
    after = after->prev;
  x.prev = after;
  x.next = after != nullptr ? after->next : l.head;
  if (x.next != nullptr)
    x.next->prev = &x;
  else
    l.tail = &x;
  if (after != nullptr)
    after->next = &x;
  else
    l.head = &x;
}

void saturation_monitor::unlink(saturation_link& x) {
  auto& l = list_of(x.phase);
  if (x.prev != nullptr)
    x.prev->next = x.next;
  else
    l.head = x.next;
  if (x.next != nullptr)
    x.next->prev = x.prev;
  else
    l.tail = x.prev;
  x.prev = x.next = nullptr;
}

std::optional<saturation_event> saturation_monitor::accept(leg_id leg, leg_phase phase,
                                                           int64_t now_ms) {
  if (legs_.count(leg) > 0)
    return std::nullopt;
  return accept(legs_[leg], phase, now_ms);
}

namespace {

/// Marks `x` counted in `phase`; false if it was counted already.
template <class Link>
bool take(Link& x, leg_phase phase) {
  if (x.counted)
    return false;
  x.counted = true;
  x.phase = phase;
  return true;
}

} // namespace

std::optional<saturation_event> saturation_monitor::accept(saturation_link& x, leg_phase phase,
                                                           int64_t now_ms) {
  if (!take(x, phase))
    return std::nullopt;
  x.since_ms = now_ms;
  link(x);
  return counted(phase, now_ms);
}

std::optional<saturation_event> saturation_monitor::accept(counted_leg& x, leg_phase phase,
                                                           int64_t now_ms) {
  return take(x, phase) ? counted(phase, now_ms) : std::nullopt;
}

std::optional<saturation_event> saturation_monitor::counted(leg_phase phase, int64_t now_ms) {
  ++count_;
  if (!latched_ && count_ >= report_count_) {
    latched_ = true;
    latched_at_ms_ = now_ms;
    last_review_ms_ = now_ms;
    ++reports_;
    auto ev = make_event(saturation_event_kind::report, log::level::warning, now_ms);
    if (ev.ages.oldest_dispatched_age_ms
        && *ev.ages.oldest_dispatched_age_ms >= leg_self_bound_ms_) {
      ev.lvl = log::level::critical;
      escalated_ = true;
    } else if (warn_after_ms_ > 0) {
      ev.lvl = log::level::info; // a warning only if it lasts (`lasting`)
    }
    warned_ = ev.lvl != log::level::info;
    return ev;
  }
  if (phase == leg_phase::dispatched)
    return on_dispatch(now_ms);
  return std::nullopt;
}

std::optional<saturation_event> saturation_monitor::dispatched(leg_id leg, int64_t now_ms) {
  auto i = legs_.find(leg);
  if (i == legs_.end())
    return on_dispatch(now_ms);
  return dispatched(i->second, now_ms);
}

std::optional<saturation_event> saturation_monitor::dispatched(saturation_link& x, int64_t now_ms) {
  if (x.counted && x.phase == leg_phase::queued) {
    unlink(x);
    x.phase = leg_phase::dispatched;
    x.since_ms = now_ms;
    link(x);
  }
  return on_dispatch(now_ms);
}

std::optional<saturation_event> saturation_monitor::dispatched(counted_leg& x, int64_t now_ms) {
  if (x.counted)
    x.phase = leg_phase::dispatched;
  return on_dispatch(now_ms);
}

std::optional<saturation_event> saturation_monitor::terminated(leg_id leg, int64_t now_ms) {
  auto i = legs_.find(leg);
  if (i == legs_.end())
    return std::nullopt;
  auto ev = terminated(i->second, now_ms);
  legs_.erase(i);
  return ev;
}

std::optional<saturation_event> saturation_monitor::terminated(saturation_link& x, int64_t now_ms) {
  if (!x.counted)
    return std::nullopt;
  unlink(x);
  x.counted = false;
  return uncounted(now_ms);
}

std::optional<saturation_event> saturation_monitor::terminated(counted_leg& x, int64_t now_ms) {
  if (!x.counted)
    return std::nullopt;
  x.counted = false;
  return uncounted(now_ms);
}

std::optional<saturation_event> saturation_monitor::uncounted(int64_t now_ms) {
  --count_;
  if (latched_ && count_ <= clear_count_) {
    auto ev = make_event(saturation_event_kind::cleared,
                         warned_ ? log::level::warning : log::level::info, now_ms);
    ev.latched_ms = now_ms - latched_at_ms_;
    latched_ = false;
    escalated_ = false;
    warned_ = false;
    return ev;
  }
  return std::nullopt;
}

std::optional<saturation_event> saturation_monitor::on_dispatch(int64_t now_ms) {
  if (!latched_ || escalated_ || now_ms - last_review_ms_ < review_ms_)
    return std::nullopt;
  last_review_ms_ = now_ms;
  ++reviews_;
  auto since = oldest().dispatched_since_ms;
  if (!since || now_ms - *since < leg_self_bound_ms_)
    return std::nullopt;
  escalated_ = true;
  warned_ = true;
  return make_event(saturation_event_kind::escalation, log::level::critical, now_ms);
}

std::optional<saturation_event> saturation_monitor::lasting(int64_t now_ms) {
  if (!latched_ || warned_ || warn_after_ms_ == 0 || now_ms - latched_at_ms_ < warn_after_ms_)
    return std::nullopt;
  warned_ = true;
  auto ev = make_event(saturation_event_kind::lasting, log::level::warning, now_ms);
  ev.latched_ms = now_ms - latched_at_ms_;
  return ev;
}

std::optional<int64_t> saturation_monitor::lasting_due(const saturation_event& report) const {
  if (report.kind != saturation_event_kind::report || report.lvl != log::level::info)
    return std::nullopt;
  return report.at_ms + warn_after_ms_;
}

oldest_times saturation_monitor::oldest() const {
  oldest_times out;
  if (oldest_source_)
    out = oldest_source_();
  auto earliest = [](std::optional<int64_t>& x, const saturation_link* head) {
    if (head != nullptr && (!x || head->since_ms < *x))
      x = head->since_ms;
  };
  earliest(out.queued_since_ms, queued_.head);
  earliest(out.dispatched_since_ms, dispatched_.head);
  return out;
}

in_flight_ages saturation_monitor::ages(int64_t now_ms) const {
  in_flight_ages out;
  out.in_flight = count_;
  auto o = oldest();
  if (o.dispatched_since_ms)
    out.oldest_dispatched_age_ms = now_ms - *o.dispatched_since_ms;
  if (o.queued_since_ms)
    out.oldest_queued_age_ms = now_ms - *o.queued_since_ms;
  return out;
}

saturation_event saturation_monitor::make_event(saturation_event_kind kind, log::level lvl,
                                                int64_t now_ms) const {
  saturation_event ev;
  ev.kind = kind;
  ev.lvl = lvl;
  ev.at_ms = now_ms;
  ev.ages = ages(now_ms);
  ev.leg_self_bound_ms = leg_self_bound_ms_;
  return ev;
}

} // namespace cafmesh::routing
