#include "silo_component.hpp"

#include <algorithm>
#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/lifecycle/silo_lifecycle.hpp"
#include "cafmesh/routing/classify.hpp"

namespace cafmesh::lifecycle::components {

namespace {

/// Runs `action` (null: answers ok at once) with a promise for the request at hand.
stage_promise run(stage_self self, const stage_fn& action, bool graceful) {
  auto rp = self->make_response_promise<caf::ok_atom>();
  if (action)
    action(self, graceful, rp);
  else
    rp.deliver(caf::ok_atom::value);
  return rp;
}

/// An observer whose start and stop run `on_start` / `on_stop`; each answers its promise
/// exactly once. `budget_expired` is ignored: every action bounds its own work.
lifecycle_observer_actor::behavior_type stage_observer(stage_self self, stage_fn on_start,
                                                       stage_fn on_stop) {
  return {
    [=](start_stage_atom, stage) -> caf::result<caf::ok_atom> { return run(self, on_start, true); },
    [=](stop_stage_atom, stage, bool graceful) -> caf::result<caf::ok_atom> {
      return run(self, on_stop, graceful);
    },
    [=](budget_expired_atom) {
      // nop
    },
  };
}

} // namespace

silo_wiring::silo_wiring(caf::actor_system& sys, silo_options opts)
  : sys(sys), opts(std::move(opts)) {
  s.addr = this->opts.self;
  name = s.addr.to_string();
  lg = std::make_shared<log::logger>(log::get("silo").with_context(name));
}

void silo_wiring::subscribe(stage at, std::string name, stage_fn on_start, stage_fn on_stop) {
  subscriptions.push_back(
    stage_subscription{at, std::move(name), std::move(on_start), std::move(on_stop), {}});
}

void silo_wiring::subscribe(stage at, std::string name, lifecycle_observer_actor observer) {
  subscriptions.push_back(stage_subscription{at, std::move(name), {}, {}, std::move(observer)});
}

void silo_wiring::keep(lifecycle_observer_actor observer) {
  kept.push_back(std::move(observer));
}

void silo_wiring::subscribe_declared() {
  std::stable_sort(subscriptions.begin(), subscriptions.end(),
                   [](const stage_subscription& x, const stage_subscription& y) {
                     return x.at > y.at;
                   });
  for (auto& sub : subscriptions)
    if (!sub.observer)
      sub.observer = sys.spawn(stage_observer, sub.on_start, sub.on_stop);
  silo_lifecycle_options lo;
  lo.silo_name = name;
  lo.slow_observer_log = std::chrono::milliseconds(cfg().lifecycle.slow_observer_log_ms);
  s.subject = spawn_silo_lifecycle(sys, lo);
  for (auto& sub : subscriptions) {
    caf::anon_send(s.subject, subscribe_atom::value, sub.at, sub.name, sub.observer);
    s.observers.push_back(sub.observer);
  }
  for (auto& obs : kept)
    s.observers.push_back(obs);
}

void silo_wiring::spawn_host() {
  host_options ho;
  ho.silo_name = name;
  ho.subject = s.subject;
  ho.recipients = stopping_recipients;
  for (auto& r : opts.stopping_recipients)
    ho.recipients.push_back(r);
  ho.teardown = opts.teardown;
  ho.registry = opts.registry;
  ho.budgets = cfg().host;
  for (auto& a : s.all())
    if (a && a != caf::actor_cast<caf::actor>(s.subject))
      ho.runtime_services.push_back(a);
  s.host = lifecycle::spawn_host(sys, std::move(ho));
  for (auto& watch : host_watchers)
    watch(s.host);
}

void log_step(const log::logger& lg, const caf::error& e, const std::string& step,
              const char* done) {
  if (e)
    lg.warning(step + " failed: " + to_fault(e).text);
  else
    lg.info(done);
}

bool timed_out(const caf::error& e) {
  return e == caf::sec::request_timeout
         || routing::contains_code(to_fault(e), mesh_errc::response_timeout);
}

} // namespace cafmesh::lifecycle::components
