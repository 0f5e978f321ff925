#pragma once

// One component of a silo (not installed): what `spawn_silo` needs to know of it
// (docs/behaviour/lifecycle.md#a-silos-components). A component spawns its
// actors, declares the stages it subscribes with what their start and stop do (Orleans'
// `Participate(lifecycle)`), and names its actors for `silo_components::all()`. The silo's
// wiring is the list of components in silo_components.cpp; each component lives in
// components/<component>.cpp.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>
#include <caf/response_promise.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/actors/request_any.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/lifecycle/silo_components.hpp"
#include "cafmesh/routing/routing_service.hpp"

#include "../silo_seams.hpp"

namespace cafmesh::lifecycle::components {

/// The observer a stage action runs in.
using stage_self = lifecycle_observer_actor::pointer;

/// The promise a stage action answers: `ok_atom` or an error.
using stage_promise = caf::typed_response_promise<caf::ok_atom>;

/// A stage's start or stop action: it runs in its observer `self`, gets the stop's `graceful`
/// flag (true at a start) and answers `rp` exactly once (`ok_atom` or an error).
using stage_fn = std::function<void(stage_self self, bool graceful, stage_promise rp)>;

/// One stage subscription: an observer named `name` at `at`. Either `observer` (an actor the
/// component spawned, e.g. a participant), or an observer running `on_start` / `on_stop`
/// (null: answer ok at once).
struct stage_subscription {
  stage at;
  std::string name;
  stage_fn on_start;
  stage_fn on_stop;
  lifecycle_observer_actor observer;
};

/// What the components of one silo share while `spawn_silo` assembles it.
struct silo_wiring {
  silo_wiring(caf::actor_system& sys, silo_options opts);

  caf::actor_system& sys;
  silo_options opts;
  /// The silo address rendered: every log context and actor name of the silo.
  std::string name;
  /// Logger `silo` with the silo as context: the info lines of `silo_event_text`.
  std::shared_ptr<log::logger> lg;
  /// The silo assembled so far.
  silo_components s;
  /// The routing service with its typed interface (`s.routing` holds it untyped).
  routing::routing_service_actor routing_service;
  /// What the message centre serves as component `gateway` (the gateway part unless a test
  /// bed interposes through `silo_seams::wrap_gateway`).
  caf::actor served_gateway;
  /// Set once a membership step of a stop found the oracle silent: the later steps take the
  /// grace window as bound (docs/behaviour/membership.md#leaving).
  std::shared_ptr<bool> oracle_silent = std::make_shared<bool>(false);
  /// Receivers of the host's stopping signal, in the order the components declared them.
  std::vector<stopping_recipient_actor> stopping_recipients;
  /// Called with the host once it is spawned.
  std::vector<std::function<void(const host_actor&)>> host_watchers;
  /// The subscriptions of every component, in list order.
  std::vector<stage_subscription> subscriptions;

  /// The whole configuration.
  const config::mesh_config& cfg() const { return opts.cfg; }

  /// Declares an observer `name` at `at` whose start and stop run `on_start` / `on_stop`.
  void subscribe(stage at, std::string name, stage_fn on_start, stage_fn on_stop);

  /// Declares `observer` itself, subscribed as `name` at `at`.
  void subscribe(stage at, std::string name, lifecycle_observer_actor observer);

  /// Keeps `observer` among the silo's observers (`all()`) without subscribing it.
  void keep(lifecycle_observer_actor observer);

  /// Observers kept without a subscription, after the subscribed ones in `s.observers`.
  std::vector<lifecycle_observer_actor> kept;

  /// Spawns the declared observers and the lifecycle subject, and subscribes every observer:
  /// in stop order (highest stage first; within a stage, in list order, which is the order
  /// the subject sends that stage's start and stop).
  void subscribe_declared();

  /// Spawns the host over every actor of the silo (docs/behaviour/lifecycle.md#the-host) and
  /// calls `host_watchers`.
  void spawn_host();
};

/// One component of a silo. Every function may be null.
struct silo_component {
  /// Spawns the component's actors into `w.s`, in list order: every component listed before
  /// it is spawned.
  void (*spawn)(silo_wiring& w);
  /// Declares its stage subscriptions through `w.subscribe`; every component is spawned.
  void (*participate)(silo_wiring& w);
  /// Its actors (stage observers excepted: those are `s.observers`), for `all()`.
  std::vector<caf::actor> (*actors)(const silo_components& s);
};

/// `xs...` as untyped handles (for `silo_component::actors`).
template <class... Handles>
std::vector<caf::actor> handles(const Handles&... xs) {
  return {caf::actor_cast<caf::actor>(xs)...};
}

/// Sends `(xs...)` to `to` (any handle) as a request bounded by `timeout_ms` (0: none); then
/// `done(err)` (err empty = ok), in `self`'s turn.
template <class Self, class Handle, class... Ts>
void call(Self* self, const Handle& to, int64_t timeout_ms, std::function<void(caf::error)> done,
          Ts... xs) {
  request_any(
    self, caf::actor_cast<caf::actor>(to), timeout_ms, caf::make_message(std::move(xs)...),
    [=](caf::message) { done(caf::error{}); }, [=](caf::error e) { done(std::move(e)); });
}

/// Sends `(xs...)` to `to` (no bound); answers `rp` with the error, or logs `done` at info and
/// answers ok.
template <class Self, class Handle, class... Ts>
void call_then_answer(Self* self, const Handle& to, std::shared_ptr<log::logger> lg,
                      const char* done, stage_promise rp, Ts... xs) {
  call(
    self, to, 0,
    [=](caf::error e) mutable {
      if (e) {
        rp.deliver(std::move(e));
        return;
      }
      lg->info(done);
      rp.deliver(caf::ok_atom::value);
    },
    std::move(xs)...);
}

/// Logs the outcome of a stop step: at warning "`step` failed: {fault}", else `done` at info.
void log_step(const log::logger& lg, const caf::error& e, const std::string& step,
              const char* done);

/// The error is a request timeout (CAF's or cafmesh's `response_timeout`).
bool timed_out(const caf::error& e);

} // namespace cafmesh::lifecycle::components
