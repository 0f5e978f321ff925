#pragma once

/// @file
/// Test doubles for the lifecycle suites: a configurable recording lifecycle observer and a
/// helper that sends one request and records its answer with the virtual time.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"

namespace cafmesh::lifecycle::test {

/// One recorded event: `start` (start_stage received), `started` (answered), `stop`,
/// `stopped`, `budget` (shutdown_budget_expired received), or any other tag a double uses.
struct event {
  std::string what;
  stage st = 0;
  std::string name;
  bool graceful = false;
  int64_t t_ms = -1;
};

/// Shared, ordered event log (the test coordinator runs every actor on the test thread).
using event_log = std::shared_ptr<std::vector<event>>;

inline event_log make_log() {
  return std::make_shared<std::vector<event>>();
}

/// Events of `log` with tag `what`, in order.
inline std::vector<event> events(const event_log& log, const std::string& what) {
  std::vector<event> out;
  for (auto& e : *log)
    if (e.what == what)
      out.push_back(e);
  return out;
}

/// The single event (`what`, `name`), or an event with `t_ms == -1` if there is none.
inline event find_event(const event_log& log, const std::string& what, const std::string& name) {
  for (auto& e : *log)
    if (e.what == what && e.name == name)
      return e;
  return event{};
}

/// Number of events (`what`, `name`).
inline size_t count_events(const event_log& log, const std::string& what,
                           const std::string& name) {
  size_t n = 0;
  for (auto& e : *log)
    if (e.what == what && e.name == name)
      ++n;
  return n;
}

/// How a test observer behaves.
struct observer_config {
  stage st = 0;
  std::string name;
  int64_t start_delay_ms = 0;      ///< answer start after this long (0 = in the same turn)
  caf::optional<fault> start_fault; ///< answer start with this fault instead of ok
  int64_t stop_delay_ms = 0;       ///< answer stop after this long
  caf::optional<fault> stop_fault;  ///< answer stop with this fault instead of ok
  bool stop_never_answers = false; ///< keep the stop request open forever
  bool answer_on_budget = false;   ///< answer an open stop at once on shutdown_budget_expired
};

/// An observer at `st` named `name` answering start after `start_delay_ms` and stop after
/// `stop_delay_ms`, both with ok.
inline observer_config obs(stage st, std::string name, int64_t start_delay_ms = 0,
                           int64_t stop_delay_ms = 0) {
  observer_config c;
  c.st = st;
  c.name = std::move(name);
  c.start_delay_ms = start_delay_ms;
  c.stop_delay_ms = stop_delay_ms;
  return c;
}

using obs_done_atom = caf::atom_constant<caf::atom("tobsdone")>;

struct observer_state {
  static inline const char* name = "test.observer";
  caf::response_promise start_rp;
  caf::response_promise stop_rp;
};

inline caf::behavior test_observer_impl(caf::stateful_actor<observer_state>* self,
                                        observer_config cfg, event_log log,
                                        testing::fixture* fx) {
  auto record = [=](const char* what, stage s, bool graceful) {
    log->push_back(event{what, s, cfg.name, graceful, fx->now_ms()});
  };
  auto answer_start = [=] {
    record("started", cfg.st, false);
    if (cfg.start_fault)
      self->state.start_rp.deliver(to_error(*cfg.start_fault));
    else
      self->state.start_rp.deliver(caf::ok_atom::value);
  };
  auto answer_stop = [=] {
    if (!self->state.stop_rp.pending())
      return;
    record("stopped", cfg.st, false);
    if (cfg.stop_fault)
      self->state.stop_rp.deliver(to_error(*cfg.stop_fault));
    else
      self->state.stop_rp.deliver(caf::ok_atom::value);
  };
  return {
    [=](start_stage_atom, stage s) -> caf::response_promise {
      record("start", s, false);
      self->state.start_rp = self->make_response_promise();
      if (cfg.start_delay_ms == 0)
        answer_start();
      else
        self->delayed_send(self, std::chrono::milliseconds(cfg.start_delay_ms),
                           obs_done_atom::value, false);
      return self->state.start_rp;
    },
    [=](stop_stage_atom, stage s, bool graceful) -> caf::response_promise {
      record("stop", s, graceful);
      self->state.stop_rp = self->make_response_promise();
      if (cfg.stop_never_answers)
        return self->state.stop_rp;
      if (cfg.stop_delay_ms == 0)
        answer_stop();
      else
        self->delayed_send(self, std::chrono::milliseconds(cfg.stop_delay_ms),
                           obs_done_atom::value, true);
      return self->state.stop_rp;
    },
    [=](budget_expired_atom) {
      record("budget", cfg.st, false);
      if (cfg.answer_on_budget)
        answer_stop();
    },
    [=](obs_done_atom, bool is_stop) {
      if (is_stop)
        answer_stop();
      else
        answer_start();
    },
  };
}

/// Spawns a tracked test observer.
inline lifecycle_observer_actor spawn_observer(testing::fixture& fx, observer_config cfg,
                                               event_log log) {
  auto a = fx.track(fx.sys.spawn(test_observer_impl, std::move(cfg), std::move(log), &fx));
  return caf::actor_cast<lifecycle_observer_actor>(a);
}

/// The recorded answer to one request (see cafmesh/testing/ask.hpp).
using reply = testing::reply<>;
using reply_ptr = std::shared_ptr<reply>;
using testing::ask;

} // namespace cafmesh::lifecycle::test
