// Asynchronous activation and deactivation hooks of typed grains (typed_grain.hpp,
// docs/scenarios.md#zero-loss A9) on whole silos in virtual time: a grain loads its state before
// its first message and saves it before the grain is let go, each bounded.

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace cafmesh::lifecycle;
using namespace std::chrono_literals;

namespace {

using add_atom = caf::atom_constant<caf::atom("add")>;
using load_atom = caf::atom_constant<caf::atom("hkload")>;
using save_atom = caf::atom_constant<caf::atom("hksave")>;
using due_atom = caf::atom_constant<caf::atom("hkdue")>;

using counter = caf::typed_actor<caf::replies_to<add_atom, int64_t>::with<int64_t>>;

/// A state store that answers after `delay` ms of virtual time: `(load_atom, key) -> total`,
/// `(save_atom, key, total) -> ok`; it records each operation with its time.
struct store_state {
  std::map<std::string, int64_t> totals;
  std::vector<std::string> log;
  int64_t delay_ms = 100;
  bool silent = false; ///< never answers loads
  testing::fixture* fx = nullptr;
  static inline const char* name = "test.hook_store";
};

caf::behavior hook_store(caf::stateful_actor<store_state>* self, testing::fixture* fx) {
  self->state.fx = fx;
  auto later = [=](caf::response_promise rp, caf::message answer, std::string what) {
    auto& st = self->state;
    auto id = std::make_shared<std::pair<caf::response_promise, caf::message>>(rp, answer);
    self->delayed_send(self, std::chrono::milliseconds(st.delay_ms), due_atom::value,
                       what, reinterpret_cast<uintptr_t>(id.get()));
    return id;
  };
  auto pending = std::make_shared<std::map<uintptr_t, std::shared_ptr<std::pair<caf::response_promise, caf::message>>>>();
  return {
    [=](load_atom, const std::string& key) {
      auto rp = self->make_response_promise();
      if (self->state.silent)
        return rp;
      auto id = later(rp, caf::make_message(self->state.totals[key]), "load " + key);
      (*pending)[reinterpret_cast<uintptr_t>(id.get())] = id;
      return rp;
    },
    [=](save_atom, const std::string& key, int64_t total) {
      auto rp = self->make_response_promise();
      auto id = later(rp, caf::make_message(caf::ok_atom::value), "save " + key);
      self->state.totals[key] = total;
      (*pending)[reinterpret_cast<uintptr_t>(id.get())] = id;
      return rp;
    },
    [=](due_atom, const std::string& what, uintptr_t id) {
      auto i = pending->find(id);
      if (i == pending->end())
        return;
      auto& st = self->state;
      st.log.push_back(what + " @" + std::to_string(st.fx->now_ms()));
      i->second->first.deliver(i->second->second);
      pending->erase(i);
    },
  };
}

/// The counter with hooks: loads its total from `store` when it activates and saves it when
/// it deactivates.
grain_options store_hooks(caf::actor store) {
  grain_options go;
  go.on_activate_async = [store](caf::event_based_actor* self, const grain_id& id,
                                 hook_done done) {
    self->request(store, caf::infinite, load_atom::value, id.key)
      .then([done](int64_t) { done(caf::error{}); }, [done](caf::error& e) { done(e); });
  };
  go.on_deactivate_async = [store](caf::event_based_actor* self, const grain_id& id,
                                   hook_done done) {
    self->request(store, caf::infinite, save_atom::value, id.key, int64_t{0})
      .then([done](caf::ok_atom) { done(caf::error{}); }, [done](caf::error& e) { done(e); });
  };
  return go;
}

template <class Process>
bool start(testing::fixture& fx, Process& p) {
  auto r = testing::ask(fx, p.host(), host_start_atom::value);
  return fx.run_until([&] { return r->done; }, std::chrono::minutes(1)) && r->ok();
}

struct call_result {
  bool done = false;
  int64_t value = -1;
  caf::error err;
  int64_t at_ms = -1;
};

std::shared_ptr<call_result> call(testing::fixture& fx, grain_ref<counter> ref, int64_t n) {
  auto out = std::make_shared<call_result>();
  fx.track(fx.sys.spawn([=, &fx](caf::event_based_actor* self) {
    ref.request(self, add_atom::value, n)
      .then(
        [=, &fx](int64_t total) {
          out->done = true;
          out->value = total;
          out->at_ms = fx.now_ms();
        },
        [=, &fx](caf::error& e) {
          out->done = true;
          out->err = e;
          out->at_ms = fx.now_ms();
        });
  }));
  return out;
}

counter::behavior_type make_counter(caf::event_based_actor*, const grain_id&) {
  auto total = std::make_shared<int64_t>(0);
  return {[total](add_atom, int64_t n) { return *total += n; }};
}

} // namespace

TEST_CASE("grain hooks: an asynchronous activation hook holds the first calls until it is done") {
  testing::fixture fx;
  auto store = fx.track(fx.sys.spawn(hook_store, &fx));
  auto silo = silo_builder{fx.sys}.grain<counter>("counter", make_counter, store_hooks(store)).build();
  REQUIRE(silo);
  REQUIRE(start(fx, *silo));
  auto t0 = fx.now_ms();
  auto a = call(fx, silo->grain<counter>("counter", "c1"), 2);
  auto b = call(fx, silo->grain<counter>("counter", "c1"), 3);
  REQUIRE(fx.run_until([&] { return a->done && b->done; }, 1min));
  CHECK_FALSE(a->err);
  CHECK_FALSE(b->err);
  CHECK(a->value + b->value == 2 + 5); // one activation, the calls in turn
  auto& log = testing::fixture::state_of<store_state>(store).log;
  REQUIRE(log.size() == 1);
  CHECK(log[0] == "load c1 @" + std::to_string(t0 + 100));
  CHECK(a->at_ms >= t0 + 100); // nothing was answered before the load ended
  CHECK(b->at_ms >= t0 + 100);
}

TEST_CASE("grain hooks: an activation hook that fails or never ends fails the waiting call, naming the grain, and the next call activates anew") {
  testing::fixture fx;
  auto store = fx.track(fx.sys.spawn(hook_store, &fx));
  auto& st = testing::fixture::state_of<store_state>(store);
  st.silent = true;
  auto go = store_hooks(store);
  go.activate_timeout = 2s;
  auto silo = silo_builder{fx.sys}.grain<counter>("counter", make_counter, go).build();
  REQUIRE(silo);
  REQUIRE(start(fx, *silo));
  auto t0 = fx.now_ms();
  auto a = call(fx, silo->grain<counter>("counter", "c2"), 1);
  REQUIRE(fx.run_until([&] { return a->done; }, 1min));
  REQUIRE(a->err);
  CHECK(a->at_ms - t0 >= 2000);
  CHECK(to_fault(a->err).render().find("the activation hook of counter/c2 did not end within 2000 ms")
        != std::string::npos);
  st.silent = false;
  auto b = call(fx, silo->grain<counter>("counter", "c2"), 1);
  REQUIRE(fx.run_until([&] { return b->done; }, 1min));
  CHECK_FALSE(b->err);
  CHECK(b->value == 1);
}

TEST_CASE("grain hooks: at a graceful stop the deactivation hook ends before the grain is let go, so its next activation starts after the save") {
  testing::fixture fx;
  auto store = fx.track(fx.sys.spawn(hook_store, &fx));
  auto cluster = make_in_process_cluster(fx.sys);
  auto a = silo_builder{fx.sys}.cluster(cluster).grain<counter>("counter", make_counter, store_hooks(store)).build();
  REQUIRE(a);
  REQUIRE(start(fx, *a));
  auto first = call(fx, a->grain<counter>("counter", "c3"), 1);
  REQUIRE(fx.run_until([&] { return first->done; }, 1min));
  REQUIRE_FALSE(first->err);
  auto b = silo_builder{fx.sys}.cluster(cluster).grain<counter>("counter", make_counter, store_hooks(store)).build();
  REQUIRE(b);
  REQUIRE(start(fx, *b));
  auto halt = testing::ask(fx, a->host(), host_halt_atom::value, true);
  REQUIRE(fx.run_until([&] { return halt->done; }, 2min));
  CHECK(halt->ok());
  auto halt_at = fx.now_ms();
  auto again = call(fx, b->grain<counter>("counter", "c3"), 1);
  REQUIRE(fx.run_until([&] { return again->done; }, 1min));
  CHECK_FALSE(again->err);
  auto& log = testing::fixture::state_of<store_state>(store).log;
  REQUIRE(log.size() == 3);
  CHECK(log[0].rfind("load c3 @", 0) == 0);
  CHECK(log[1].rfind("save c3 @", 0) == 0); // A's activation saved at its stop ...
  CHECK(log[2].rfind("load c3 @", 0) == 0); // ... before B's activation loaded
  auto at = [](const std::string& line) { return std::stoll(line.substr(line.find('@') + 1)); };
  CHECK(at(log[2]) - at(log[1]) >= 100); // B's load began after A's save had ended
  // The halt was answered only after the save: the stop waited for the hook.
  CHECK(halt_at >= at(log[1]));
}

namespace {

using reader = caf::typed_actor<caf::replies_to<load_atom, std::string>::with<int64_t>>;

/// Reads a total from the store: each call's turn stays open until the store answered.
std::function<reader::behavior_type(caf::event_based_actor*, const grain_id&)>
make_reader(caf::actor store) {
  return [store](caf::event_based_actor* self, const grain_id&) -> reader::behavior_type {
    return {[=](load_atom, const std::string& key) -> caf::delegated<int64_t> {
      self->delegate(store, load_atom::value, key);
      return {};
    }};
  };
}

/// Two reads of one grain at t0: the instants they were answered.
std::vector<int64_t> two_reads(bool interleave) {
  testing::fixture fx;
  auto store = fx.track(fx.sys.spawn(hook_store, &fx));
  grain_options go;
  if (interleave)
    go.may_interleave = [](const caf::message& m) {
      return m.match_element<caf::atom_value>(0)
             && m.get_as<caf::atom_value>(0) == load_atom::value;
    };
  auto silo = silo_builder{fx.sys}.grain<reader>("reader", make_reader(store), go).build();
  REQUIRE(silo);
  REQUIRE(start(fx, *silo));
  auto t0 = fx.now_ms();
  std::vector<int64_t> at(2, -1);
  for (size_t i = 0; i < 2; ++i) {
    auto ref = silo->grain<reader>("reader", "r1");
    fx.track(fx.sys.spawn([ref, i, &at, &fx](caf::event_based_actor* self) {
      ref.request(self, load_atom::value, std::string{"r1"})
        .then([i, &at, &fx](int64_t) { at[i] = fx.now_ms(); }, [](caf::error&) {});
    }));
  }
  CHECK(fx.run_until([&] { return at[0] >= 0 && at[1] >= 0; }, 1min));
  for (auto& x : at)
    x -= t0;
  return at;
}

} // namespace

TEST_CASE("grain options: calls a may_interleave predicate accepts overlap their turns, without one the second call waits for the first") {
  // docs/behaviour/directory-and-placement.md#turns-and-interleaving; the store answers after 100 ms.
  CHECK(two_reads(true) == std::vector<int64_t>{100, 100});
  CHECK(two_reads(false) == std::vector<int64_t>{100, 200});
}
