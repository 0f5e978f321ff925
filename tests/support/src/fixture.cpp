#include "cafmesh/testing/fixture.hpp"

#include <cstdlib>

#include <caf/all.hpp>

#include "cafmesh/routing/register_types.hpp"

namespace cafmesh::testing {

test_config::test_config() {
  set("scheduler.policy", caf::atom("testing"));
  cafmesh::register_types(*this);
}

namespace {

caf::scheduler::test_coordinator& coordinator_of(caf::actor_system& sys) {
  return dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
}

bool env_log_enabled() {
  auto v = std::getenv("CAFMESH_TEST_LOG");
  return v != nullptr && *v != '\0' && *v != '0';
}

} // namespace

fixture::fixture()
  : sys(cfg),
    sched(coordinator_of(sys)),
    logs([this] { return now_ms(); }) {
  // As CAF's own fixture does: start away from the epoch so "0" never means "unset".
  sched.clock().current_time += std::chrono::hours(1);
  t0_ = sched.clock().current_time;
  log::set_stderr_enabled(env_log_enabled());
}

fixture::~fixture() {
  shutdown();
}

int64_t fixture::now_ms() const {
  auto d = sched.clock().current_time - t0_;
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

size_t fixture::run() {
  return sched.run();
}

bool fixture::fire_next_timeout() {
  return sched.trigger_timeout();
}

int64_t fixture::next_timeout_ms() const {
  const auto& s = sched.clock().schedule();
  if (s.empty())
    return -1;
  auto d = s.begin()->first - t0_;
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

void fixture::run_up_to(std::chrono::milliseconds cap) {
  static_cast<void>(run_until([] { return false; }, cap));
}

bool fixture::run_until(const std::function<bool()>& pred, std::chrono::milliseconds cap) {
  auto deadline = now_ms() + cap.count();
  for (;;) {
    run();
    if (pred())
      return true;
    auto next = next_timeout_ms();
    if (next < 0 || next > deadline)
      return false;
    sched.trigger_timeout();
  }
}

void fixture::run_to(int64_t t_ms) {
  for (;;) {
    run();
    auto next = next_timeout_ms();
    if (next < 0 || next > t_ms)
      break;
    sched.trigger_timeout();
  }
  if (now_ms() < t_ms)
    sched.clock().current_time = t0_ + std::chrono::milliseconds(t_ms);
  run();
}

void fixture::run_for(std::chrono::milliseconds d) {
  run_to(now_ms() + d.count());
}

void fixture::shutdown() {
  if (shut_down_)
    return;
  shut_down_ = true;
  run();
  for (auto& h : tracked_)
    caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
  tracked_.clear();
  run();
  // Safety net: an untracked actor with a pending timer must not hang ~actor_system
  // (docs/caf-notes.md "Shutdown"). Deterministic tests never publish actors, so this is safe here.
  sys.await_actors_before_shutdown(false);
}

} // namespace cafmesh::testing
