#include "cafmesh/lifecycle/silo_lifecycle.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/whole_ms.hpp"

namespace cafmesh::lifecycle {

namespace {

/// One subscription: an observer at one stage.
struct observer_entry {
  stage st = 0;
  std::string name;
  lifecycle_observer_actor hdl;
};

/// An open start_stage or stop_stage request to one observer.
struct open_request {
  uint64_t token = 0; ///< matches the response to this request
  bool is_stop = false;
  caf::actor_clock::time_point began; ///< actor-clock time the request went out
};

/// Where the subject stands.
struct lifecycle_state {
  static inline const char* name = "cafmesh.silo_lifecycle";

  silo_lifecycle_options opts;
  log::logger lg;

  std::vector<observer_entry> observers;
  std::map<stage, std::vector<size_t>> by_stage; ///< observer indices per stage

  // -- start ------------------------------------------------------------------
  bool start_begun = false;
  bool start_running = false;
  caf::typed_response_promise<caf::ok_atom> start_rp;
  std::vector<stage> start_order; ///< ascending
  size_t start_cursor = 0;
  caf::optional<stage> highest_started;

  // -- stop -------------------------------------------------------------------
  bool stop_requested = false;
  bool stop_running = false;
  bool stop_done = false;
  bool stop_graceful = true;
  bool budget_expired = false;
  std::vector<caf::typed_response_promise<caf::ok_atom>> stop_rps;
  std::vector<stage> stop_order; ///< descending
  size_t stop_cursor = 0;

  // -- the stage in progress ----------------------------------------------------
  stage current = 0;
  std::map<size_t, open_request> open; ///< observer index -> its open request
  uint64_t next_token = 1;
  /// Start errors of the current stage, in answer order: (observer index, error).
  std::vector<std::pair<size_t, caf::error>> stage_errors;
};

using self_ptr = silo_lifecycle_actor::stateful_pointer<lifecycle_state>;

std::string describe(const caf::error& e) {
  return to_fault(e).render();
}

std::string quoted(const observer_entry& o) {
  return "'" + o.name + "'";
}

void begin_stop(self_ptr self);
void start_next_stage(self_ptr self);
void stop_next_stage(self_ptr self);

void finish_stop(self_ptr self) {
  auto& st = self->state;
  st.stop_running = false;
  st.stop_done = true;
  st.lg.info("silo lifecycle stopped");
  auto rps = std::move(st.stop_rps);
  st.stop_rps.clear();
  for (auto& rp : rps)
    rp.deliver(caf::ok_atom::value);
}

/// The start has ended (ok, error or cancelled): begin a stop that waited for it.
void after_start(self_ptr self) {
  auto& st = self->state;
  st.start_running = false;
  if (st.stop_requested && !st.stop_running && !st.stop_done)
    begin_stop(self);
}

void start_stage_done(self_ptr self) {
  auto& st = self->state;
  if (!st.stage_errors.empty()) {
    for (auto& [idx, err] : st.stage_errors)
      st.lg.error("lifecycle start failed at stage " + stage_name(st.current) + ": observer "
                  + quoted(st.observers[idx]) + " answered: " + describe(err)
                  + "; no further stage starts");
    auto first = st.stage_errors.front().second;
    st.stage_errors.clear();
    st.start_rp.deliver(std::move(first));
    after_start(self);
    return;
  }
  start_next_stage(self);
}

void stop_stage_done(self_ptr self) {
  stop_next_stage(self);
}

/// Closes the open request of observer `idx` if `token` still names it, with `err` (or
/// success when `err` is empty), and moves on when it was the stage's last one.
void close_request(self_ptr self, size_t idx, uint64_t token, caf::error err) {
  auto& st = self->state;
  auto i = st.open.find(idx);
  if (i == st.open.end() || i->second.token != token)
    return;
  auto req = i->second;
  st.open.erase(i);
  const auto& o = st.observers[idx];
  if (req.is_stop) {
    auto took = self->clock().now() - req.began;
    auto took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
    if (took_ms > whole_ms(st.opts.slow_observer_log))
      st.lg.info("observer " + quoted(o) + " at stage " + stage_name(o.st) + " took "
                 + std::to_string(took_ms) + " ms to stop");
    if (err)
      st.lg.warning("observer " + quoted(o) + " failed to stop stage " + stage_name(o.st) + ": "
                    + describe(err) + "; continuing to stop");
  } else if (err) {
    st.stage_errors.emplace_back(idx, std::move(err));
  }
  if (!st.open.empty())
    return;
  if (req.is_stop)
    stop_stage_done(self);
  else
    start_stage_done(self);
}

void start_next_stage(self_ptr self) {
  auto& st = self->state;
  // docs/behaviour/lifecycle.md#the-lifecycle-subject: a pending stop cancels the start before the
  // next stage.
  if (st.stop_requested) {
    st.lg.info("lifecycle start cancelled by a stop request"
               + (st.start_cursor < st.start_order.size()
                    ? " before stage " + stage_name(st.start_order[st.start_cursor])
                    : std::string{}));
    st.start_rp.deliver(to_error(
      fault{mesh_errc::lifecycle_cancelled, "silo lifecycle start cancelled by a stop request"}));
    after_start(self);
    return;
  }
  if (st.start_cursor >= st.start_order.size()) {
    st.lg.info("silo lifecycle started");
    st.start_rp.deliver(caf::ok_atom::value);
    after_start(self);
    return;
  }
  auto s = st.start_order[st.start_cursor++];
  st.current = s;
  // docs/behaviour/lifecycle.md#the-lifecycle-subject: recorded before the requests go out.
  st.highest_started = s;
  st.lg.debug("starting stage " + stage_name(s));
  auto now = self->clock().now();
  for (auto idx : st.by_stage[s])
    st.open.emplace(idx, open_request{st.next_token++, false, now});
  // Copy: a synchronous failure path must not invalidate the iteration.
  auto opened = st.open;
  for (auto& [idx, req] : opened) {
    auto token = req.token;
    self->request(st.observers[idx].hdl, caf::infinite, start_stage_atom::value, s)
      .then([=](caf::ok_atom) { close_request(self, idx, token, caf::error{}); },
            [=](caf::error& e) { close_request(self, idx, token, std::move(e)); });
  }
}

void stop_next_stage(self_ptr self) {
  auto& st = self->state;
  if (st.stop_cursor >= st.stop_order.size()) {
    finish_stop(self);
    return;
  }
  auto s = st.stop_order[st.stop_cursor++];
  st.current = s;
  // docs/behaviour/lifecycle.md#the-lifecycle-subject: after the host budget expired, every later
  // stage is non-graceful.
  bool graceful = st.stop_graceful && !st.budget_expired;
  st.lg.debug("stopping stage " + stage_name(s) + (graceful ? "" : " (non-graceful)"));
  auto now = self->clock().now();
  for (auto idx : st.by_stage[s])
    st.open.emplace(idx, open_request{st.next_token++, true, now});
  auto opened = st.open;
  for (auto& [idx, req] : opened) {
    auto token = req.token;
    self->request(st.observers[idx].hdl, caf::infinite, stop_stage_atom::value, s, graceful)
      .then([=](caf::ok_atom) { close_request(self, idx, token, caf::error{}); },
            [=](caf::error& e) { close_request(self, idx, token, std::move(e)); });
  }
}

void begin_stop(self_ptr self) {
  auto& st = self->state;
  st.stop_running = true;
  st.stop_order.clear();
  st.stop_cursor = 0;
  if (st.highest_started) {
    for (auto i = st.by_stage.rbegin(); i != st.by_stage.rend(); ++i)
      if (i->first <= *st.highest_started)
        st.stop_order.push_back(i->first);
  }
  st.lg.info(std::string{"silo lifecycle stopping "}
             + (st.stop_graceful ? "gracefully" : "non-gracefully") + ": "
             + std::to_string(st.stop_order.size()) + " stage(s) to stop"
             + (st.highest_started ? ", highest started " + stage_name(*st.highest_started)
                                   : std::string{}));
  stop_next_stage(self);
}

/// An observer died: its open request (if any) fails with the down reason.
void on_observer_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  std::vector<std::pair<size_t, uint64_t>> hit;
  for (auto& [idx, req] : st.open)
    if (st.observers[idx].hdl.address() == dm.source)
      hit.emplace_back(idx, req.token);
  auto reason = dm.reason ? dm.reason : caf::make_error(caf::sec::request_receiver_down);
  for (auto& [idx, token] : hit) {
    // Re-check: closing one request may have advanced to the next stage.
    auto i = st.open.find(idx);
    if (i != st.open.end() && i->second.token == token)
      close_request(self, idx, token, reason);
  }
}

silo_lifecycle_actor::behavior_type silo_lifecycle_impl(self_ptr self,
                                                        silo_lifecycle_options opts) {
  self->state.lg = log::get("lifecycle").with_context(opts.silo_name);
  self->state.opts = std::move(opts);
  self->set_down_handler([=](caf::down_msg& dm) { on_observer_down(self, dm); });
  return {
    [=](subscribe_atom, stage s, const std::string& name,
        const lifecycle_observer_actor& obs) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (st.start_begun || st.stop_requested || st.stop_done) {
        st.lg.error("subscription of observer '" + name + "' at stage " + stage_name(s)
                    + " refused: the lifecycle has already started or stopped");
        return to_error(fault{mesh_errc::lifecycle_misuse,
                              "subscription of '" + name + "' at stage " + stage_name(s)
                                + " after the silo lifecycle started"});
      }
      if (!obs)
        return to_error(
          fault{mesh_errc::lifecycle_misuse, "subscription of '" + name + "' without an observer"});
      self->monitor(obs);
      st.by_stage[s].push_back(st.observers.size());
      st.observers.push_back(observer_entry{s, name, obs});
      return caf::ok_atom::value;
    },
    [=](run_start_atom) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (st.start_begun) {
        st.lg.error("second lifecycle start refused");
        return to_error(
          fault{mesh_errc::lifecycle_misuse, "the silo lifecycle can be started only once"});
      }
      st.start_begun = true;
      if (st.stop_requested || st.stop_done)
        return to_error(fault{mesh_errc::lifecycle_cancelled,
                              "silo lifecycle start cancelled: the silo was already stopped"});
      st.start_running = true;
      st.start_rp = self->make_response_promise<caf::ok_atom>();
      for (auto& kvp : st.by_stage)
        st.start_order.push_back(kvp.first);
      st.lg.info("silo lifecycle starting: " + std::to_string(st.start_order.size()) + " stage(s), "
                 + std::to_string(st.observers.size()) + " observer(s)");
      auto rp = st.start_rp;
      start_next_stage(self);
      return rp;
    },
    [=](run_stop_atom, bool graceful) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (st.stop_done)
        return caf::ok_atom::value;
      if (st.stop_requested) {
        // docs/behaviour/lifecycle.md#the-lifecycle-subject: a second stop receives the first
        // one's answer.
        auto rp = self->make_response_promise<caf::ok_atom>();
        st.stop_rps.push_back(rp);
        return rp;
      }
      st.stop_requested = true;
      st.stop_graceful = graceful;
      if (!st.start_begun) {
        // docs/behaviour/lifecycle.md#the-lifecycle-subject: nothing started, nothing to stop.
        st.stop_done = true;
        st.lg.info("silo lifecycle stop without start: no observer to stop");
        return caf::ok_atom::value;
      }
      auto rp = self->make_response_promise<caf::ok_atom>();
      st.stop_rps.push_back(rp);
      if (st.start_running)
        st.lg.info("stop requested while starting; the start is cancelled before its next "
                   "stage");
      else
        begin_stop(self);
      return rp;
    },
    [=](budget_expired_atom) {
      auto& st = self->state;
      if (st.budget_expired || st.stop_done)
        return;
      st.budget_expired = true;
      size_t forwarded = 0;
      for (auto& [idx, req] : st.open) {
        if (!req.is_stop)
          continue;
        self->send(st.observers[idx].hdl, budget_expired_atom::value);
        ++forwarded;
      }
      st.lg.info("shutdown budget expired: forwarded to " + std::to_string(forwarded)
                 + " observer(s) still stopping; every later stage stops non-gracefully");
    },
  };
}

} // namespace

silo_lifecycle_actor spawn_silo_lifecycle(caf::actor_system& sys, silo_lifecycle_options opts) {
  return sys.spawn(silo_lifecycle_impl, std::move(opts));
}

} // namespace cafmesh::lifecycle
