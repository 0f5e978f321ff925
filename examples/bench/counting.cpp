#include "counting.hpp"

#include <cstdio>

#include <caf/all.hpp>
#include <caf/detail/test_actor_clock.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "cafmesh/routing/register_types.hpp"

namespace cafmesh::bench {

namespace {

using clock_base = caf::detail::simple_actor_clock;

std::string name_of(const caf::strong_actor_ptr& p) {
  if (!p)
    return "(none)";
  if (auto a = dynamic_cast<caf::local_actor*>(p->get()))
    return a->name();
  return "(remote)";
}

/// What a schedule entry is, and for whom.
std::string describe(const clock_base::delayed_event* e) {
  if (auto x = dynamic_cast<const clock_base::actor_msg*>(e)) {
    std::string what = "delayed message to " + name_of(x->receiver);
    if (x->content) {
      auto& xs = x->content->content();
      if (xs.size() > 0 && xs.match_element<caf::atom_value>(0))
        what += " (" + caf::to_string(xs.get_as<caf::atom_value>(0)) + ")";
    }
    return what;
  }
  if (auto x = dynamic_cast<const clock_base::request_timeout*>(e))
    return "request timeout of " + name_of(x->self);
  if (auto x = dynamic_cast<const clock_base::ordinary_timeout*>(e))
    return "behaviour timeout of " + name_of(x->self);
  if (auto x = dynamic_cast<const clock_base::multi_timeout*>(e))
    return "multi timeout of " + name_of(x->self);
  return "delayed group message";
}

} // namespace

struct counted_system::impl {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;

  impl() {
    cfg.set("scheduler.policy", caf::atom("testing")); // an atom, not a string
    cfg.set("logger.verbosity", caf::atom("quiet"));
    cafmesh::register_types(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
    // As CAF's own fixture does: start away from the epoch.
    sched->clock().current_time += std::chrono::hours(1);
  }
};

counted_system::counted_system() : impl_(std::make_unique<impl>()) {
  for (auto& kv : impl_->sched->clock().schedule())
    known_.insert(kv.second.get());
}

counted_system::~counted_system() {
  impl_->sched->run();
  // Nothing here is published: the safety net for actors with pending timers cannot hang or
  // crash (docs/caf-notes.md "Shutdown").
  impl_->sys->await_actors_before_shutdown(false);
  impl_->sys.reset();
}

caf::actor_system& counted_system::sys() {
  return *impl_->sys;
}

void counted_system::note_new_entries() {
  // An entry is an owned heap object: a pointer that was not in the schedule before the last
  // step is an entry added by it (an entry replacing another is allocated before the old one
  // is freed, so it never reuses its address within the step).
  std::unordered_set<const void*> now;
  for (auto& kv : impl_->sched->clock().schedule()) {
    auto p = static_cast<const void*>(kv.second.get());
    now.insert(p);
    if (known_.count(p) == 0) {
      ++tally_.timers_added;
      ++tally_.timer_sources[describe(kv.second.get())];
    }
  }
  known_.swap(now);
}

void counted_system::run() {
  auto& sched = *impl_->sched;
  while (sched.try_run_once()) {
    ++tally_.jobs;
    note_new_entries();
  }
}

bool counted_system::run_until(const std::function<bool()>& pred,
                               std::chrono::milliseconds cap) {
  auto& sched = *impl_->sched;
  auto deadline = sched.clock().current_time + cap;
  for (;;) {
    run();
    if (pred())
      return true;
    auto& s = sched.clock().schedule();
    if (s.empty() || s.begin()->first > deadline)
      return false;
    sched.trigger_timeout();
    ++tally_.timers_fired;
    note_new_entries(); // forget the fired entry
  }
}

void counted_system::exit_all(const std::vector<caf::actor>& hs) {
  for (auto& h : hs)
    if (h)
      caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
  impl_->sched->run();
}

double flow_cost::enqueues_per_delivery() const {
  return deliveries == 0 ? 0 : static_cast<double>(t.jobs) / static_cast<double>(deliveries);
}

double flow_cost::timers_per_delivery() const {
  return deliveries == 0 ? 0
                         : static_cast<double>(t.timers_added) / static_cast<double>(deliveries);
}

std::string flow_cost::detail() const {
  if (!ok)
    return "; enqueues/timers not counted: " + why;
  char buf[160];
  std::snprintf(buf, sizeof buf, "; per delivery %.3f mailbox enqueues, %.3f CAF timers",
                enqueues_per_delivery(), timers_per_delivery());
  return buf;
}

void flow_cost::add_to(nlohmann::json& data) const {
  if (!ok) {
    data["enqueues_per_delivery"] = nullptr;
    data["timers_per_delivery"] = nullptr;
    data["counted_flow"] = {{"error", why}};
    return;
  }
  data["enqueues_per_delivery"] = enqueues_per_delivery();
  data["timers_per_delivery"] = timers_per_delivery();
  data["counted_flow"] = {{"deliveries", deliveries},
                          {"jobs", t.jobs},
                          {"timers_added", t.timers_added},
                          {"timers_fired", t.timers_fired},
                          {"timer_sources", t.timer_sources},
                          {"scheduler", "caf::scheduler::test_coordinator (virtual time)"}};
}

void flow_cost::report(const char* row) const {
  if (!ok) {
    std::fprintf(stderr, "  %s counted flow: %s\n", row, why.c_str());
    return;
  }
  std::string sources;
  for (auto& kv : t.timer_sources)
    sources += (sources.empty() ? "" : ", ") + kv.first + " x" + std::to_string(kv.second);
  std::fprintf(stderr,
               "  %s counted flow (test coordinator): %llu deliveries, %llu enqueues, %llu timers "
               "added, %llu fired%s%s\n",
               row, static_cast<unsigned long long>(deliveries),
               static_cast<unsigned long long>(t.jobs),
               static_cast<unsigned long long>(t.timers_added),
               static_cast<unsigned long long>(t.timers_fired), sources.empty() ? "" : ": ",
               sources.c_str());
}

} // namespace cafmesh::bench
