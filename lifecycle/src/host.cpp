#include "cafmesh/lifecycle/host.hpp"

#include <chrono>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"

namespace cafmesh::lifecycle {

std::string to_string(host_phase x) {
  switch (x) {
    case host_phase::running: return "running";
    case host_phase::signalling: return "signalling";
    case host_phase::stopping_silo: return "stopping_silo";
    case host_phase::tearing_down: return "tearing_down";
    case host_phase::torn_down: return "torn_down";
  }
  return "unknown";
}

namespace {

/// The host's full interface: the public one plus its own budget timer.
using host_impl_actor = host_actor::extend<caf::reacts_to<host_budget_atom>>;

struct host_state {
  static inline const char* name = "cafmesh.host";
  host_options opts;
  log::logger lg;
  host_phase phase = host_phase::running;
  bool start_begun = false;
  bool graceful = true;
  bool budget_expired = false;
  size_t pending_acks = 0;
  std::vector<caf::typed_response_promise<caf::ok_atom>> stop_rps;
  /// The start's outcome once it completed (`host_active_atom`).
  bool start_done = false;
  caf::error start_error;
  std::vector<caf::typed_response_promise<caf::ok_atom>> active_rps;
};

using self_ptr = host_impl_actor::stateful_pointer<host_state>;

std::string describe(const caf::error& e) {
  return to_fault(e).render();
}

/// The start completed with `err` (none: Active): every `host_active` waiter is answered.
void start_completed(self_ptr self, caf::error err) {
  auto& st = self->state;
  st.start_done = true;
  st.start_error = err;
  auto rps = std::move(st.active_rps);
  st.active_rps.clear();
  for (auto& rp : rps)
    if (err)
      rp.deliver(err);
    else
      rp.deliver(caf::ok_atom::value);
}

void finish(self_ptr self) {
  auto& st = self->state;
  if (!st.start_done)
    start_completed(self, to_error(fault{mesh_errc::lifecycle_cancelled,
                                         "the host stopped before the silo was started"}));
  st.phase = host_phase::torn_down;
  st.lg.info("host stopped: runtime services torn down");
  auto rps = std::move(st.stop_rps);
  st.stop_rps.clear();
  for (auto& rp : rps)
    rp.deliver(caf::ok_atom::value);
}

/// Step 5: the runtime services exit, then the probe answers torn_down.
void tear_down_runtime(self_ptr self) {
  auto& st = self->state;
  for (auto& svc : st.opts.runtime_services)
    if (svc)
      self->send_exit(svc, caf::exit_reason::user_shutdown);
  if (!st.opts.registry) {
    finish(self);
    return;
  }
  self->request(st.opts.registry, caf::infinite, host_torn_down_atom::value, st.opts.silo_name)
    .then([=](caf::ok_atom) { finish(self); },
          [=](caf::error& e) {
            self->state.lg.warning("runtime registry did not record the teardown: " + describe(e));
            finish(self);
          });
}

/// Step 4: mesh teardown, bounded by the teardown budget; faults are logged and swallowed.
void teardown_step(self_ptr self) {
  auto& st = self->state;
  st.phase = host_phase::tearing_down;
  if (!st.opts.teardown) {
    st.lg.info("no mesh teardown configured: no hubs to dispose");
    tear_down_runtime(self);
    return;
  }
  auto budget_ms = st.opts.budgets.teardown_budget_ms;
  st.lg.info("mesh teardown: disposing hubs (budget " + std::to_string(budget_ms) + " ms)");
  self
    ->request(st.opts.teardown, std::chrono::milliseconds(budget_ms), host_teardown_atom::value,
              budget_ms)
    .then(
      [=](const std::string& residual) {
        if (residual.empty())
          self->state.lg.info("mesh teardown clean");
        else
          self->state.lg.error("mesh teardown DIRTY: " + residual);
        tear_down_runtime(self);
      },
      [=](caf::error& e) {
        if (e == caf::sec::request_timeout)
          self->state.lg.error("mesh teardown DIRTY: no answer within " + std::to_string(budget_ms)
                               + " ms");
        else
          self->state.lg.error("mesh teardown DIRTY: the teardown faulted: " + describe(e));
        tear_down_runtime(self);
      });
}

/// Step 3 (after step 2 armed the budget): the silo stop.
void stop_silo(self_ptr self) {
  auto& st = self->state;
  if (!st.opts.subject) {
    teardown_step(self);
    return;
  }
  st.phase = host_phase::stopping_silo;
  if (st.graceful) {
    auto budget_ms = st.opts.budgets.shutdown_budget_ms;
    self->delayed_send(self, std::chrono::milliseconds(budget_ms), host_budget_atom::value);
  }
  self->request(st.opts.subject, caf::infinite, run_stop_atom::value, st.graceful)
    .then([=](caf::ok_atom) { teardown_step(self); },
          [=](caf::error& e) {
            self->state.lg.error("silo stop failed: " + describe(e)
                                 + "; continuing with the teardown");
            teardown_step(self);
          });
}

void signal_acked(self_ptr self) {
  auto& st = self->state;
  if (--st.pending_acks > 0)
    return;
  st.lg.info("stopping signal acknowledged by all " + std::to_string(st.opts.recipients.size())
             + " recipient(s)");
  stop_silo(self);
}

/// A non-graceful stop requested while a graceful one runs (e.g. a second SIGTERM): the rest
/// of the stop runs non-gracefully, exactly as if the shutdown budget had expired
/// (docs/behaviour/lifecycle.md#the-lifecycle-subject rule 5): observers with an open stop get
/// `shutdown_budget_expired`, later stages get graceful = false. Before the silo stop began, the
/// silo stop simply starts non-graceful.
void escalate(self_ptr self) {
  auto& st = self->state;
  st.graceful = false;
  st.lg.warning("non-graceful stop requested while stopping gracefully: escalating");
  if (st.phase == host_phase::stopping_silo && !st.budget_expired && st.opts.subject) {
    st.budget_expired = true;
    self->send(st.opts.subject, budget_expired_atom::value);
  }
}

/// Step 1: the stopping signal; nothing else happens before every recipient answered.
void begin_stop(self_ptr self, bool graceful) {
  auto& st = self->state;
  st.graceful = graceful;
  st.phase = host_phase::signalling;
  st.lg.info(std::string{"host stopping "} + (graceful ? "gracefully" : "non-gracefully")
             + ": sending the stopping signal to " + std::to_string(st.opts.recipients.size())
             + " recipient(s)");
  if (st.opts.recipients.empty()) {
    stop_silo(self);
    return;
  }
  st.pending_acks = st.opts.recipients.size();
  for (auto& r : st.opts.recipients) {
    if (!r) {
      signal_acked(self);
      continue;
    }
    self->request(r, caf::infinite, host_stopping_atom::value)
      .then([=](caf::ok_atom) { signal_acked(self); },
            [=](caf::error& e) {
              self->state.lg.warning("a stopping-signal recipient failed: " + describe(e)
                                     + "; continuing");
              signal_acked(self);
            });
  }
}

host_impl_actor::behavior_type host_impl(self_ptr self, host_options opts) {
  self->state.lg = log::get("host").with_context(opts.silo_name);
  self->state.opts = std::move(opts);
  auto& st = self->state;
  if (st.opts.registry)
    self->request(st.opts.registry, caf::infinite, host_register_atom::value, st.opts.silo_name)
      .then([](caf::ok_atom) {},
            [=](caf::error& e) {
              self->state.lg.warning("runtime registry did not record this silo: " + describe(e));
            });
  return {
    [=](host_start_atom) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (st.start_begun)
        return to_error(fault{mesh_errc::lifecycle_misuse, "the host can be started only once"});
      st.start_begun = true;
      if (st.phase != host_phase::running)
        return to_error(
          fault{mesh_errc::lifecycle_cancelled, "host start refused: the host is stopping"});
      if (!st.opts.subject) {
        start_completed(self, caf::error{});
        return caf::ok_atom::value;
      }
      auto rp = self->make_response_promise<caf::ok_atom>();
      self->request(st.opts.subject, caf::infinite, run_start_atom::value)
        .then(
          [=](caf::ok_atom) mutable {
            start_completed(self, caf::error{});
            rp.deliver(caf::ok_atom::value);
          },
          [=](caf::error& e) mutable {
            start_completed(self, e);
            auto& st = self->state;
            if (st.phase == host_phase::running) {
              // docs/behaviour/lifecycle.md#the-lifecycle-subject: the host stops the silo
              // after a failed start.
              st.lg.error("silo start failed: " + describe(e) + "; stopping the silo");
              begin_stop(self, true);
            }
            rp.deliver(std::move(e));
          });
      return rp;
    },
    [=](host_halt_atom, bool graceful) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (st.phase == host_phase::torn_down)
        return caf::ok_atom::value;
      auto rp = self->make_response_promise<caf::ok_atom>();
      st.stop_rps.push_back(rp);
      if (st.phase == host_phase::running)
        begin_stop(self, graceful);
      else if (!graceful && st.graceful)
        escalate(self);
      return rp;
    },
    [=](host_state_atom) { return self->state.phase; },
    [=](host_active_atom) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (st.start_done) {
        if (st.start_error)
          return st.start_error;
        return caf::ok_atom::value;
      }
      if (!st.start_begun && st.phase != host_phase::running)
        return to_error(fault{mesh_errc::lifecycle_cancelled,
                              "the host is stopping; the silo was never started"});
      auto rp = self->make_response_promise<caf::ok_atom>();
      st.active_rps.push_back(rp);
      return rp;
    },
    [=](host_await_atom) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (st.phase == host_phase::torn_down)
        return caf::ok_atom::value;
      auto rp = self->make_response_promise<caf::ok_atom>();
      st.stop_rps.push_back(rp);
      return rp;
    },
    [=](host_budget_atom) {
      auto& st = self->state;
      if (st.phase != host_phase::stopping_silo || st.budget_expired)
        return;
      st.budget_expired = true;
      st.lg.warning("host shutdown budget of " + std::to_string(st.opts.budgets.shutdown_budget_ms)
                    + " ms expired while the silo was stopping; telling the lifecycle subject");
      self->send(st.opts.subject, budget_expired_atom::value);
    },
  };
}

} // namespace

host_actor spawn_host(caf::actor_system& sys, host_options opts) {
  return host_actor{sys.spawn(host_impl, std::move(opts))};
}

} // namespace cafmesh::lifecycle
