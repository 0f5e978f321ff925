// Two real actor systems in one process whose actors message each other through direct
// handles, as the in-process demo mesh does (examples/mainjob/src/in_process_mesh.cpp): their
// teardown must return (cafmesh/actors/system_teardown.hpp). Real schedulers, so it lives
// in the integration suite; the only wall-clock bound is the cap on a hung destructor.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/system_teardown.hpp"

namespace {

/// `(td_where_atom)` -> `uint64_t`: the hash of the thread the receiver runs on.
using td_where_atom = caf::atom_constant<caf::atom("tdwhere")>;
/// `(td_ask_atom, caf::actor other)` -> `(uint64_t mine, uint64_t other's)`.
using td_ask_atom = caf::atom_constant<caf::atom("tdask")>;

uint64_t this_thread_hash() {
  return static_cast<uint64_t>(std::hash<std::thread::id>{}(std::this_thread::get_id()));
}

/// Lives in system Y: when asked, spawns an actor in its own system (which points the
/// running thread's logger reference at Y) and answers where it ran.
caf::behavior spawner(caf::event_based_actor* self) {
  return {
    [=](td_where_atom) {
      self->spawn([] {}); // no behaviour: ends at once
      return this_thread_hash();
    },
  };
}

/// Lives in system X: asks the spawner from its own handler, i.e. from X's worker.
caf::behavior asker(caf::event_based_actor* self) {
  return {
    [=](td_ask_atom, const caf::actor& other) {
      auto mine = this_thread_hash();
      auto rp = self->make_response_promise<uint64_t, uint64_t>();
      self->request(other, caf::infinite, td_where_atom::value)
        .then([=](uint64_t theirs) mutable { rp.deliver(mine, theirs); },
              [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    },
  };
}

/// A teardown that does not return within this bound counts as hung: the test reports it
/// and ends the process (a hung `~actor_system` cannot be abandoned otherwise).
constexpr auto teardown_bound = std::chrono::seconds(30);

} // namespace

TEST_CASE("teardown: two systems whose actors message each other directly come down together") {
  caf::actor_system_config cfg_x;
  cfg_x.set("scheduler.max-threads", size_t{1}); // one worker: the sender's thread is known
  caf::actor_system_config cfg_y;
  cfg_y.set("scheduler.max-threads", size_t{1});
  std::vector<std::unique_ptr<caf::actor_system>> systems;
  systems.push_back(std::make_unique<caf::actor_system>(cfg_y));
  systems.push_back(std::make_unique<caf::actor_system>(cfg_x));
  auto& y = *systems[0];
  auto& x = *systems[1];
  // Lazy: the spawner's mailbox stays blocked until its first message, so that message
  // schedules it on the sending actor's execution unit (X's worker), not on Y's.
  auto s = y.spawn<caf::lazy_init>(spawner);
  auto a = x.spawn(asker);
  uint64_t asker_thread = 0;
  uint64_t spawner_thread = 1;
  {
    caf::scoped_actor self{x};
    self->request(a, std::chrono::seconds(10), td_ask_atom::value, s)
      .receive(
        [&](uint64_t mine, uint64_t theirs) {
          asker_thread = mine;
          spawner_thread = theirs;
        },
        [&](caf::error& e) { FAIL("no answer: " << x.render(e)); });
  }
  // The hazard's precondition: Y's actor ran (and spawned in Y) on X's only worker, so that
  // thread now holds a reference to Y's logger until X's workers end.
  CHECK(spawner_thread == asker_thread);
  caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  s = nullptr;
  a = nullptr;
  // Destroyed from this thread, which still refers to X's logger (the scoped_actor above):
  // the helper drops that reference itself. A watchdog ends a hung teardown.
  std::promise<void> finished;
  std::thread watchdog{[f = finished.get_future()] {
    if (f.wait_for(teardown_bound) != std::future_status::ready) {
      std::cerr << "teardown of the two systems did not return within 30 s: hung\n";
      std::_Exit(EXIT_FAILURE);
    }
  }};
  cafmesh::destroy_systems_together(systems);
  finished.set_value();
  watchdog.join();
  CHECK(systems.empty());
}
