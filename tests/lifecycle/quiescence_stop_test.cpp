// S12.10 and S12.16: the quiescence hold inside a whole silo stop, with the real lifecycle
// subject, participant and gauge (and for S12.16 the host and its shutdown budget).

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/routing/quiescence_atoms.hpp"
#include "cafmesh/lifecycle/quiescence_participant.hpp"
#include "participant_under_test.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/lifecycle/silo_lifecycle.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "test_observer.hpp"

using namespace cafmesh;
using namespace cafmesh::lifecycle;
using namespace cafmesh::routing;
using namespace cafmesh::lifecycle::test;
using namespace std::chrono_literals;

namespace {

using probe_count_atom = caf::atom_constant<caf::atom("tprobecnt")>;

/// What the probe observer at 19998 saw when its stop arrived.
struct probe_record {
  int64_t stopped_at_ms = -1;
  int64_t gauge_count = -1;
  bool graceful = true;
};

/// An observer at GrainDeactivation (19998) that asks the gauge for its count when its
/// stop_stage arrives and answers only after the gauge answered.
caf::behavior probe_observer(caf::event_based_actor* self, routing_quiescence_actor gauge,
                             std::shared_ptr<probe_record> rec, testing::fixture* fx) {
  return {
    [=](start_stage_atom, stage) { return caf::ok_atom::value; },
    [=](stop_stage_atom, stage, bool graceful) -> caf::response_promise {
      auto rp = self->make_response_promise();
      rec->stopped_at_ms = fx->now_ms();
      rec->graceful = graceful;
      self->request(gauge, caf::infinite, q_count_atom::value)
        .then([=](uint64_t n) mutable {
          rec->gauge_count = static_cast<int64_t>(n);
          rp.deliver(caf::ok_atom::value);
        });
      return rp;
    },
    [=](budget_expired_atom) {},
  };
}

/// A silo with the quiescence participant at Active, a probe observer at 19998 and a
/// recording observer at 19999.
struct quiescence_silo : testing::fixture {
  silo_lifecycle_actor subject;
  routing_quiescence_actor gauge;
  std::shared_ptr<probe_record> probe = std::make_shared<probe_record>();
  event_log log = make_log();

  explicit quiescence_silo(int64_t hold_ms = 30000) {
    subject = track(
      spawn_silo_lifecycle(sys, silo_lifecycle_options{"S1", std::chrono::seconds(1)}));
    gauge = track(spawn_routing_quiescence(sys, routing_quiescence_options{"S1"}));
    quiescence_participant_options popts;
    popts.silo_name = "S1";
    popts.quiescence_hold = std::chrono::milliseconds(hold_ms);
    auto participant = track(spawn_participant_under_test(sys, gauge, popts));
    auto prb = caf::actor_cast<lifecycle_observer_actor>(
      track(sys.spawn(probe_observer, gauge, probe, this)));
    auto become_active = spawn_observer(*this, obs(stages::become_active, "membership"), log);
    subscribe(stages::active, "routing quiescence", participant);
    subscribe(stages::grain_deactivation, "probe", prb);
    subscribe(stages::become_active, "membership", become_active);
    auto started = ask(*this, subject, run_start_atom::value);
    run();
    REQUIRE(started->ok());
  }

  void subscribe(stage s, const std::string& name, lifecycle_observer_actor o) {
    auto r = ask(*this, subject, subscribe_atom::value, s, name, o);
    run();
    REQUIRE(r->ok());
  }

  /// One dispatched leg holding a gauge slot (its grain call has not answered).
  void dispatch_leg(uint64_t slot, const std::string& label) {
    caf::anon_send(gauge, q_track_atom::value, slot, label, slot_state::dispatched);
    run();
  }
};

} // namespace

TEST_CASE_FIXTURE(quiescence_silo, "S12.10 a dispatched leg holds the stop at Active until its call answers, then 19998 finds the gauge at 0") {
  dispatch_leg(1, dispatch_label("node/Org/Acme", "d-1"));
  auto stopped = ask(*this, subject, run_stop_atom::value, true);
  run_for(10s);
  // The stop is incomplete and nothing below Active ran.
  CHECK_FALSE(stopped->done);
  CHECK(probe->stopped_at_ms == -1);
  CHECK(find_event(log, "stop", "membership").t_ms == -1);
  CHECK(logs.count("holding silo stop for 1 route leg(s)", log::level::info) == 1);
  // The grain call answers at t = 12 s: the leg terminates and releases its slot.
  run_to(12000);
  caf::anon_send(gauge, q_release_atom::value, uint64_t{1});
  run();
  CHECK(stopped->ok());
  CHECK(stopped->t_ms == 12000);
  CHECK(probe->stopped_at_ms == 12000);
  CHECK(probe->gauge_count == 0);
  CHECK(find_event(log, "stop", "membership").t_ms == 12000);
  CHECK(logs.count("routing quiescence: work landed after 12000 ms", log::level::info) == 1);
  CHECK(logs.count_level(log::level::error) == 0);
}

TEST_CASE_FIXTURE(testing::fixture, "S12.16 the host budget expiring during a hold releases it with a warning and stage 19999 starts") {
  // Hold budget 60 s and host budget 10 s, so the host budget is what ends the hold.
  auto subject
    = track(spawn_silo_lifecycle(sys, silo_lifecycle_options{"S1", std::chrono::seconds(1)}));
  auto gauge = track(spawn_routing_quiescence(sys, routing_quiescence_options{"S1"}));
  quiescence_participant_options popts;
  popts.silo_name = "S1";
  popts.quiescence_hold = std::chrono::seconds(60);
  auto participant = track(spawn_participant_under_test(sys, gauge, popts));
  auto log = make_log();
  auto membership = spawn_observer(*this, obs(stages::become_active, "membership"), log);
  for (auto [s, name, o] : {std::tuple{stages::active, "routing quiescence", participant},
                            std::tuple{stages::become_active, "membership", membership}}) {
    auto r = ask(*this, subject, subscribe_atom::value, s, std::string{name}, o);
    run();
    REQUIRE(r->ok());
  }
  auto registry = track(spawn_runtime_registry(sys));
  host_options hopts;
  hopts.silo_name = "S1";
  hopts.subject = subject;
  hopts.registry = registry;
  hopts.budgets.shutdown_budget_ms = 10000;
  auto host = track(spawn_host(sys, hopts));
  auto started = ask(*this, host, host_start_atom::value);
  run();
  REQUIRE(started->ok());
  caf::anon_send(gauge, q_track_atom::value, uint64_t{7},
                 dispatch_label("acme/Stuck", "abc123"), slot_state::dispatched);
  run();
  auto halted = ask(*this, host, host_halt_atom::value, true);
  run_for(9999ms);
  CHECK(find_event(log, "stop", "membership").t_ms == -1);
  CHECK(logs.count("shutdown budget expired while holding") == 0);
  run_for(1ms);
  auto warnings = logs.find("routing quiescence: shutdown budget expired while holding; "
                            "releasing with 1 route leg(s) in flight",
                            log::level::warning);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].t_ms == 10000);
  auto membership_stop = find_event(log, "stop", "membership");
  CHECK(membership_stop.t_ms == 10000);
  CHECK(membership_stop.graceful == false);
  CHECK(halted->ok());
  // The hold never reached its own budget: no "did not land" error.
  CHECK(logs.count("did not land") == 0);
}
