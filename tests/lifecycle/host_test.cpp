#include <chrono>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/actors/runtime_registry.hpp"
#include "cafmesh/lifecycle/silo_lifecycle.hpp"
#include "cafmesh/testing/fixture.hpp"

#include "test_observer.hpp"

using namespace std::chrono_literals;
using namespace cafmesh;
using namespace cafmesh::lifecycle;
using namespace cafmesh::lifecycle::test;

namespace {

constexpr const char* silo = "S10.0.0.1:11111@7";

using fake_done_atom = caf::atom_constant<caf::atom("tfakedone")>;

// -- fake stopping-signal recipient ---------------------------------------------

struct recipient_state {
  static inline const char* name = "test.recipient";
  caf::response_promise rp;
};

/// Records `stopping` on receipt and `acked` when it answers, `ack_delay_ms` later.
caf::behavior fake_recipient(caf::stateful_actor<recipient_state>* self, std::string name,
                             int64_t ack_delay_ms, event_log log, testing::fixture* fx) {
  return {
    [=](host_stopping_atom) -> caf::response_promise {
      log->push_back(event{"stopping", 0, name, false, fx->now_ms()});
      self->state.rp = self->make_response_promise();
      self->delayed_send(self, std::chrono::milliseconds(ack_delay_ms), fake_done_atom::value);
      return self->state.rp;
    },
    [=](fake_done_atom) {
      log->push_back(event{"acked", 0, name, false, fx->now_ms()});
      self->state.rp.deliver(caf::ok_atom::value);
    },
  };
}

// -- fake mesh teardown -----------------------------------------------------------

struct teardown_config {
  int64_t delay_ms = 0;
  std::string residual;        ///< answered after `delay_ms`
  bool never_answers = false;
  caf::optional<fault> failure; ///< answer this fault instead of a residual
  runtime_registry_actor registry;
};

struct teardown_state {
  static inline const char* name = "test.teardown";
  caf::response_promise rp;
  int64_t budget_ms = -1;
  /// Number of "silo lifecycle stopped" log lines when the teardown request arrived.
  size_t lifecycle_stopped_lines = 0;
};

/// Records `teardown` on receipt and `teardown_done` when it answers; probes the registry
/// on receipt and records the answer as event `probe` named after the answer.
caf::behavior fake_teardown(caf::stateful_actor<teardown_state>* self, teardown_config cfg,
                            event_log log, testing::fixture* fx) {
  return {
    [=](host_teardown_atom, int64_t budget_ms) -> caf::response_promise {
      log->push_back(event{"teardown", 0, "teardown", false, fx->now_ms()});
      self->state.budget_ms = budget_ms;
      self->state.lifecycle_stopped_lines = fx->logs.count("silo lifecycle stopped");
      if (cfg.registry)
        self->request(cfg.registry, caf::infinite, probe_runtime_atom::value, std::string{silo})
          .then([=](probe_answer a) {
            log->push_back(event{"probe", 0, to_string(a), false, fx->now_ms()});
          });
      self->state.rp = self->make_response_promise();
      if (!cfg.never_answers)
        self->delayed_send(self, std::chrono::milliseconds(cfg.delay_ms),
                           fake_done_atom::value);
      return self->state.rp;
    },
    [=](fake_done_atom) {
      log->push_back(event{"teardown_done", 0, "teardown", false, fx->now_ms()});
      if (cfg.failure)
        self->state.rp.deliver(to_error(*cfg.failure));
      else
        self->state.rp.deliver(cfg.residual);
    },
  };
}

/// A runtime service that records `service_exit` when it exits; the event's `graceful` field
/// says whether the registry had already logged the torn_down marking at that moment.
caf::behavior fake_service(caf::event_based_actor* self, event_log log, testing::fixture* fx) {
  self->attach_functor([=](const caf::error&) {
    bool marked = fx->logs.count("runtime probe now answers torn_down") > 0;
    log->push_back(event{"service_exit", 0, "svc", marked, fx->now_ms()});
  });
  return {[](fake_done_atom) {}};
}

/// Names of the observers that received stop_stage, in order.
std::vector<std::string> names_of_stops(const event_log& l) {
  std::vector<std::string> out;
  for (auto& e : events(l, "stop"))
    out.push_back(e.name);
  return out;
}

// -- fixture ----------------------------------------------------------------------

/// The answer of one probe or state query, with the virtual time it arrived.
template <class T>
struct answer {
  bool done = false;
  T value{};
  int64_t t_ms = -1;
};

struct host_fixture : testing::fixture {
  event_log log = make_log();
  runtime_registry_actor registry;
  silo_lifecycle_actor subject;

  host_fixture() {
    registry = track(spawn_runtime_registry(sys));
    subject
      = track(spawn_silo_lifecycle(sys, silo_lifecycle_options{silo, std::chrono::seconds(1)}));
  }

  void add(observer_config cfg) {
    auto s = cfg.st;
    auto name = cfg.name;
    auto obs = spawn_observer(*this, std::move(cfg), log);
    auto r = ask(*this, subject, subscribe_atom::value, s, name, obs);
    run();
    REQUIRE(r->ok());
  }

  stopping_recipient_actor recipient(std::string name, int64_t ack_delay_ms) {
    auto a = track(sys.spawn(fake_recipient, std::move(name), ack_delay_ms, log, this));
    return caf::actor_cast<stopping_recipient_actor>(a);
  }

  mesh_teardown_actor teardown(teardown_config cfg, caf::actor* raw = nullptr) {
    auto a = track(sys.spawn(fake_teardown, std::move(cfg), log, this));
    if (raw)
      *raw = a;
    return caf::actor_cast<mesh_teardown_actor>(a);
  }

  host_actor host(host_options opts) {
    opts.silo_name = silo;
    opts.registry = registry;
    auto h = track(spawn_host(sys, std::move(opts)));
    run();
    return h;
  }

  std::shared_ptr<answer<probe_answer>> probe(const std::string& name = silo) {
    auto r = std::make_shared<answer<probe_answer>>();
    auto f = this;
    auto reg = registry;
    track(sys.spawn([=](caf::event_based_actor* self) {
      self->request(reg, caf::infinite, probe_runtime_atom::value, name)
        .then([=](probe_answer a) {
          r->done = true;
          r->value = a;
          r->t_ms = f->now_ms();
        });
    }));
    run();
    return r;
  }

  /// Probes the registry now and answers what it said.
  probe_answer probe_now(const std::string& name = silo) {
    auto r = probe(name);
    REQUIRE(r->done);
    return r->value;
  }

  host_phase phase_of(const host_actor& h) {
    auto r = std::make_shared<answer<host_phase>>();
    track(sys.spawn([=](caf::event_based_actor* self) {
      self->request(h, caf::infinite, host_state_atom::value).then([=](host_phase p) {
        r->done = true;
        r->value = p;
      });
    }));
    run();
    REQUIRE(r->done);
    return r->value;
  }

  /// Index of the first event (`what`, `name`) in the log, or -1.
  long index_of(const std::string& what, const std::string& name = {}) const {
    for (size_t i = 0; i < log->size(); ++i)
      if ((*log)[i].what == what && (name.empty() || (*log)[i].name == name))
        return static_cast<long>(i);
    return -1;
  }
};

} // namespace

// -- docs/scenarios.md S12.08 ------------------------------------------------------------

TEST_CASE_FIXTURE(host_fixture, "host: (S12.08 with fake recipients) stopping signal acknowledged before any stop_stage, "
                  "teardown after the lifecycle stop, probe torn_down only after teardown") {
  add(obs(20000, "gateway", 0, 1000));
  add(obs(2000, "message-centre", 0, 700));
  caf::actor teardown_raw;
  host_options opts;
  opts.subject = subject;
  opts.recipients = {recipient("routing-service", 1500), recipient("router-core", 2000)};
  opts.teardown = teardown({500, "", false, {}, registry}, &teardown_raw);
  auto h = host(opts);
  auto started = ask(*this, h, host_start_atom::value);
  run();
  REQUIRE(started->ok());
  CHECK(probe_now() == probe_answer::alive);
  CHECK(phase_of(h) == host_phase::running);

  run_to(1000);
  auto halted = ask(*this, h, host_halt_atom::value, true);
  run();
  CHECK(find_event(log, "stopping", "routing-service").t_ms == 1000);
  CHECK(find_event(log, "stopping", "router-core").t_ms == 1000);
  CHECK(phase_of(h) == host_phase::signalling);

  // The host waits for ALL acknowledgements: nothing is stopped before 3,000 ms.
  run_to(2999);
  CHECK(find_event(log, "acked", "routing-service").t_ms == 2500);
  CHECK(events(log, "stop").empty());
  run_to(3000);
  CHECK(find_event(log, "acked", "router-core").t_ms == 3000);
  auto first_stop = find_event(log, "stop", "gateway");
  CHECK(first_stop.t_ms == 3000);
  CHECK(first_stop.graceful);
  CHECK(index_of("acked", "routing-service") < index_of("stop"));
  CHECK(index_of("acked", "router-core") < index_of("stop"));
  CHECK(phase_of(h) == host_phase::stopping_silo);

  // The lifecycle stop answers at 4,700 ms; the teardown starts only then.
  run_to(4699);
  CHECK(find_event(log, "stop", "message-centre").t_ms == 4000);
  CHECK(index_of("teardown") == -1);
  run_to(4700);
  auto stopped_line = logs.find("silo lifecycle stopped", log::level::info);
  REQUIRE(stopped_line.size() == 1);
  CHECK(stopped_line[0].t_ms == 4700);
  CHECK(find_event(log, "teardown", "teardown").t_ms == 4700);
  CHECK(state_of<teardown_state>(teardown_raw).lifecycle_stopped_lines == 1);
  CHECK(state_of<teardown_state>(teardown_raw).budget_ms == 30000);
  CHECK(index_of("stopped", "message-centre") < index_of("teardown"));
  CHECK(phase_of(h) == host_phase::tearing_down);

  // During the teardown step the probe still answers alive.
  auto during = events(log, "probe");
  REQUIRE(during.size() == 1);
  CHECK(during[0].name == "alive");
  CHECK(during[0].t_ms == 4700);
  run_to(5199);
  CHECK(probe_now() == probe_answer::alive);
  CHECK_FALSE(halted->done);

  run_to(5200);
  REQUIRE(halted->done);
  CHECK(halted->ok());
  CHECK(halted->t_ms == 5200);
  CHECK(find_event(log, "teardown_done", "teardown").t_ms == 5200);
  CHECK(probe_now() == probe_answer::torn_down);
  CHECK(phase_of(h) == host_phase::torn_down);
  auto clean = logs.find("mesh teardown clean", log::level::info);
  REQUIRE(clean.size() == 1);
  CHECK(clean[0].t_ms == 5200);
  CHECK(logs.count("DIRTY") == 0);
  auto torn = logs.find("runtime probe now answers torn_down");
  REQUIRE(torn.size() == 1);
  CHECK(torn[0].t_ms == 5200);
  // No budget warning: the stop ended long before 30 s; the timer fires harmlessly later.
  run_for(60s);
  CHECK(logs.count("shutdown budget") == 0);
}

TEST_CASE_FIXTURE(host_fixture, "host: a non-graceful halt during a graceful stop escalates like an expired budget") {
  add(obs(20000, "quiescence", 0, 1000));
  add(obs(19998, "catalog", 0, 40000));
  add(obs(2000, "message-centre", 0, 0));
  host_options opts;
  opts.subject = subject;
  auto h = host(opts);
  auto started = ask(*this, h, host_start_atom::value);
  run();
  REQUIRE(started->ok());
  auto first = ask(*this, h, host_halt_atom::value, true);
  run_to(5000);
  CHECK(events(log, "budget").empty());
  auto second = ask(*this, h, host_halt_atom::value, false);
  run();
  auto budget = events(log, "budget");
  REQUIRE(budget.size() == 1);
  CHECK(budget[0].name == "catalog");
  CHECK(budget[0].t_ms == 5000);
  CHECK(logs.count("escalating", log::level::warning) == 1);
  REQUIRE(run_until([&] { return first->done && second->done; }));
  CHECK(first->ok());
  CHECK(second->ok());
  CHECK(first->t_ms == second->t_ms);
  auto mc = find_event(log, "stop", "message-centre");
  CHECK(mc.t_ms == 41000);
  CHECK_FALSE(mc.graceful);
  // The 30 s budget timer later finds the budget already spent: no second forward.
  run_for(std::chrono::seconds(60));
  CHECK(events(log, "budget").size() == 1);
}

// -- host budget ----------------------------------------------------------------------------------
// docs/behaviour/lifecycle.md#the-host, #the-lifecycle-subject; the host half of S12.05

TEST_CASE_FIXTURE(host_fixture, "S12.05 (host half) the real host's 30 s shutdown budget reaches the 19998 observer at 30 s and lower "
                  "stages stop non-gracefully") {
  add(obs(20000, "quiescence", 0, 1000));
  add(obs(19998, "catalog", 0, 40000));
  add(obs(10000, "app", 0, 0));
  add(obs(2000, "message-centre", 0, 0));
  host_options opts;
  opts.subject = subject;
  opts.recipients = {recipient("routing-service", 0)};
  auto h = host(opts);
  auto started = ask(*this, h, host_start_atom::value);
  run();
  REQUIRE(started->ok());
  auto halted = ask(*this, h, host_halt_atom::value, true);
  run_to(29999);
  CHECK(events(log, "budget").empty());
  run_to(30000);
  auto budget = events(log, "budget");
  REQUIRE(budget.size() == 1);
  CHECK(budget[0].name == "catalog");
  CHECK(budget[0].t_ms == 30000);
  auto warn = logs.find("shutdown budget", log::level::warning);
  REQUIRE(warn.size() == 1);
  CHECK(warn[0].t_ms == 30000);
  CHECK(warn[0].text.find("30000 ms") != std::string::npos);
  REQUIRE(run_until([&] { return halted->done; }));
  CHECK(halted->ok());
  CHECK(halted->t_ms == 41000);
  CHECK(find_event(log, "stop", "quiescence").graceful);
  CHECK(find_event(log, "stop", "catalog").graceful);
  for (auto name : {"app", "message-centre"}) {
    auto e = find_event(log, "stop", name);
    CHECK(e.t_ms == 41000);
    CHECK_FALSE(e.graceful);
  }
  CHECK(probe_now() == probe_answer::torn_down);
}

TEST_CASE_FIXTURE(host_fixture,
                  "host: a non-graceful stop signals, arms no budget and runs every stage "
                  "with graceful false") {
  add(obs(20000, "quiescence", 0, 0));
  add(obs(19998, "catalog", 0, 40000));
  add(obs(2000, "message-centre", 0, 0));
  host_options opts;
  opts.subject = subject;
  opts.recipients = {recipient("routing-service", 100)};
  opts.teardown = teardown({0, "", false, {}, {}});
  auto h = host(opts);
  auto started = ask(*this, h, host_start_atom::value);
  run();
  REQUIRE(started->ok());
  auto halted = ask(*this, h, host_halt_atom::value, false);
  REQUIRE(run_until([&] { return halted->done; }));
  CHECK(halted->ok());
  CHECK(halted->t_ms == 40100);
  CHECK(find_event(log, "stopping", "routing-service").t_ms == 0);
  CHECK(find_event(log, "stop", "quiescence").t_ms == 100);
  CHECK(events(log, "budget").empty());
  CHECK(logs.count("shutdown budget") == 0);
  auto stops = events(log, "stop");
  REQUIRE(stops.size() == 3);
  for (auto& e : stops)
    CHECK_FALSE(e.graceful);
  CHECK(logs.count("mesh teardown clean", log::level::info) == 1);
  CHECK(probe_now() == probe_answer::torn_down);
}

// -- teardown step --------------------------------------------------------------------------------
// docs/behaviour/lifecycle.md#the-host

TEST_CASE_FIXTURE(host_fixture, "host: the teardown step logs clean, DIRTY with the residual, "
                                "DIRTY on timeout and swallows faults") {
  host_options opts;
  opts.subject = subject;
  opts.budgets.teardown_budget_ms = 30000;
  std::string mode;
  int64_t expect_done_ms = 200;
  SUBCASE("clean") {
    mode = "clean";
    opts.teardown = teardown({200, "", false, {}, {}});
  }
  SUBCASE("dirty residual") {
    mode = "dirty";
    opts.teardown = teardown({200, "hub portal/a: 2 queued deliveries", false, {}, {}});
  }
  SUBCASE("timeout") {
    mode = "timeout";
    opts.teardown = teardown({0, "", true, {}, {}});
    expect_done_ms = 30000;
  }
  SUBCASE("fault") {
    mode = "fault";
    opts.teardown = teardown({200, "", false, fault{mesh_errc::application, "hub dispose threw"},
                              {}});
  }
  add(obs(10000, "app", 0, 0));
  auto h = host(opts);
  auto started = ask(*this, h, host_start_atom::value);
  run();
  REQUIRE(started->ok());
  auto halted = ask(*this, h, host_halt_atom::value, true);
  run();
  CHECK(find_event(log, "teardown", "teardown").t_ms == 0);
  run_to(expect_done_ms - 1);
  CHECK_FALSE(halted->done);
  CHECK(probe_now() == probe_answer::alive);
  REQUIRE(run_until([&] { return halted->done; }));
  CHECK(halted->ok());
  CHECK(halted->t_ms == expect_done_ms);
  CHECK(probe_now() == probe_answer::torn_down);
  CHECK(phase_of(h) == host_phase::torn_down);
  auto clean = logs.find("mesh teardown clean", log::level::info);
  auto dirty = logs.find("mesh teardown DIRTY: ", log::level::error);
  if (mode == "clean") {
    REQUIRE(clean.size() == 1);
    CHECK(clean[0].t_ms == 200);
    CHECK(dirty.empty());
  } else {
    REQUIRE(dirty.size() == 1);
    CHECK(clean.empty());
    CHECK(dirty[0].t_ms == expect_done_ms);
    if (mode == "dirty")
      CHECK(dirty[0].text.find("mesh teardown DIRTY: hub portal/a: 2 queued deliveries")
            != std::string::npos);
    else if (mode == "timeout")
      CHECK(dirty[0].text.find("no answer within 30000 ms") != std::string::npos);
    else
      CHECK(dirty[0].text.find("hub dispose threw") != std::string::npos);
  }
}

TEST_CASE_FIXTURE(host_fixture,
                  "host: runtime services exit after the teardown step and before the probe "
                  "answers torn_down") {
  add(obs(10000, "app", 0, 0));
  auto svc = track(sys.spawn(fake_service, log, this));
  host_options opts;
  opts.subject = subject;
  opts.teardown = teardown({300, "", false, {}, {}});
  opts.runtime_services = {svc};
  auto h = host(opts);
  auto halted = ask(*this, h, host_halt_atom::value, true);
  // Never started: the stop calls no observer but the host still tears down.
  REQUIRE(run_until([&] { return halted->done; }));
  CHECK(halted->ok());
  CHECK(events(log, "stop").empty());
  CHECK(find_event(log, "service_exit", "svc").t_ms == 300);
  CHECK_FALSE(find_event(log, "service_exit", "svc").graceful); // not yet marked torn_down
  CHECK(index_of("teardown_done") < index_of("service_exit"));
  CHECK(probe_now() == probe_answer::torn_down);
}

// -- pure client, failed start, joins ----------------------------------------------

TEST_CASE_FIXTURE(host_fixture,
                  "host: a pure_client host without a subject runs the signal, the teardown and "
                  "the probe step") {
  host_options opts;
  opts.recipients = {recipient("routing-entry", 250)};
  opts.teardown = teardown({100, "", false, {}, registry});
  auto h = host(opts);
  auto started = ask(*this, h, host_start_atom::value);
  run();
  CHECK(started->ok());
  CHECK(started->t_ms == 0);
  auto halted = ask(*this, h, host_halt_atom::value, true);
  REQUIRE(run_until([&] { return halted->done; }));
  CHECK(halted->ok());
  CHECK(find_event(log, "acked", "routing-entry").t_ms == 250);
  CHECK(find_event(log, "teardown", "teardown").t_ms == 250);
  CHECK(halted->t_ms == 350);
  CHECK(find_event(log, "probe", "alive").t_ms == 250);
  CHECK(probe_now() == probe_answer::torn_down);
  CHECK(logs.count("shutdown budget") == 0);
  run_for(60s);
  CHECK(logs.count("shutdown budget") == 0);
}

TEST_CASE_FIXTURE(host_fixture,
                  "host: a failed silo start answers the error and the host stops the silo") {
  add(obs(2000, "message-centre", 0, 0));
  auto failing = obs(10000, "app", 0, 0);
  failing.start_fault = fault{mesh_errc::application, "app wiring broken"};
  add(failing);
  add(obs(19999, "membership", 0, 0));
  host_options opts;
  opts.subject = subject;
  opts.recipients = {recipient("router-core", 0)};
  auto h = host(opts);
  auto started = ask(*this, h, host_start_atom::value);
  REQUIRE(run_until([&] { return started->done; }));
  CHECK(started->code() == mesh_errc::application);
  CHECK(logs.count("silo start failed: app wiring broken", log::level::error) == 1);
  REQUIRE(run_until([&] { return phase_of(h) == host_phase::torn_down; }));
  CHECK(count_events(log, "stopping", "router-core") == 1);
  CHECK(names_of_stops(log) == std::vector<std::string>{"app", "message-centre"});
  CHECK(probe_now() == probe_answer::torn_down);
  // A halt afterwards answers at once; a second start is refused.
  auto halted = ask(*this, h, host_halt_atom::value, true);
  auto again = ask(*this, h, host_start_atom::value);
  run();
  CHECK(halted->ok());
  CHECK(again->code() == mesh_errc::lifecycle_misuse);
}

TEST_CASE_FIXTURE(host_fixture,
                  "host: a second halt joins the first and a start after a halt is cancelled") {
  add(obs(10000, "app", 0, 2000));
  host_options opts;
  opts.subject = subject;
  auto h = host(opts);
  auto first = ask(*this, h, host_halt_atom::value, true);
  run();
  auto started = ask(*this, h, host_start_atom::value);
  run();
  CHECK(started->code() == mesh_errc::lifecycle_cancelled);
  auto second = ask(*this, h, host_halt_atom::value, false);
  REQUIRE(run_until([&] { return first->done && second->done; }));
  CHECK(first->ok());
  CHECK(second->ok());
  CHECK(first->t_ms == second->t_ms);
  CHECK(logs.count("host stopping gracefully") == 1);
  CHECK(logs.count("host stopping non-gracefully") == 0);
}

TEST_CASE_FIXTURE(host_fixture,
                  "runtime registry: alive after registration, no_answer for an unknown silo") {
  host_options opts;
  auto h = host(opts);
  CHECK(probe_now() == probe_answer::alive);
  CHECK(probe_now("S10.0.0.9:1@1") == probe_answer::no_answer);
  CHECK(phase_of(h) == host_phase::running);
}
