// Grains that call grains (grain_context.hpp, docs/hosting.md#grains-that-call-grains) on whole
// silos in virtual time: a grain factory taking a `grain_context` calls another grain from
// inside its turn, the turn lasting until the nested call answered (`.then` or `.await`); a
// call cycle without reentrancy ends with the response timeout, one that may interleave
// answers. The orders example's hub taking a `grain_factory` is tested with the example
// (examples/orders/tests/orders_test.cpp).

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace cafmesh::lifecycle;
using namespace std::chrono_literals;

namespace {

using reserve_atom = caf::atom_constant<caf::atom("gcreserve")>;
using place_atom = caf::atom_constant<caf::atom("gcplace")>;
using hop_atom = caf::atom_constant<caf::atom("gchop")>;
using wait_atom = caf::atom_constant<caf::atom("gcwait")>;
using fire_atom = caf::atom_constant<caf::atom("gcfire")>;

/// `inventory/{sku}`: `(reserve, qty) -> (reserved, left)`.
using inventory = caf::typed_actor<caf::replies_to<reserve_atom, int64_t>::with<bool, int64_t>>;
/// `order/{id}`: `(place, sku, qty) -> "id: qty sku reserved|refused, n left"`.
using order
  = caf::typed_actor<caf::replies_to<place_atom, std::string, int64_t>::with<std::string>>;
/// `relay/{key}`: `(hop, "k1,k2,...") -> hops` calls `relay/k1` with the rest of the path.
using relay = caf::typed_actor<caf::replies_to<hop_atom, std::string>::with<int64_t>>;

using event_log = std::shared_ptr<std::vector<std::string>>;

/// `(wait_atom, ms) -> ok` after `ms` of virtual time.
caf::behavior delayer(caf::event_based_actor* self) {
  auto pending = std::make_shared<std::map<uint64_t, caf::response_promise>>();
  auto next = std::make_shared<uint64_t>(0);
  return {
    [=](wait_atom, int64_t ms) {
      auto rp = self->make_response_promise();
      auto id = ++*next;
      (*pending)[id] = rp;
      self->delayed_send(self, std::chrono::milliseconds(ms), fire_atom::value, id);
      return rp;
    },
    [=](fire_atom, uint64_t id) {
      auto i = pending->find(id);
      if (i == pending->end())
        return;
      i->second.deliver(caf::ok_atom::value);
      pending->erase(i);
    },
  };
}

/// The inventory on silo `silo`: 10 of every SKU; each reservation answers 100 ms after it
/// started (it waits for `delay` inside its turn).
auto inventory_factory(event_log log, caf::actor delay, std::string silo) {
  return [log, delay, silo](caf::event_based_actor* self,
                            const grain_context& ctx) -> inventory::behavior_type {
    auto stock = std::make_shared<int64_t>(10);
    return {[=](reserve_atom, int64_t qty) {
      log->push_back("inventory " + ctx.id().key + " on " + silo + " reserves "
                     + std::to_string(qty));
      auto rp = self->make_response_promise<bool, int64_t>();
      self->request(delay, caf::infinite, wait_atom::value, int64_t{100})
        .then([=](caf::ok_atom) mutable {
          bool ok = qty <= *stock;
          if (ok)
            *stock -= qty;
          rp.deliver(ok, *stock);
        });
      return rp;
    }};
  };
}

/// The order on silo `silo`: places each line on `inventory/{sku}` from inside its turn,
/// awaiting the answer with `.await` when `await`, else with `.then`.
auto order_factory(event_log log, bool await, std::string silo) {
  return [log, await, silo](caf::event_based_actor* self,
                            const grain_context& ctx) -> order::behavior_type {
    return {[=](place_atom, const std::string& sku, int64_t qty) {
      auto me = ctx.id().key;
      log->push_back("order " + me + " on " + silo + " takes " + std::to_string(qty) + " "
                     + sku);
      auto rp = self->make_response_promise<std::string>();
      auto handle = ctx.grain<inventory>("inventory", sku).request(self, reserve_atom::value, qty);
      auto answered = [=](bool reserved, int64_t left) mutable {
        auto text = me + ": " + std::to_string(qty) + " " + sku
                    + (reserved ? " reserved, " : " refused, ") + std::to_string(left) + " left";
        log->push_back("order " + me + " answers " + text);
        rp.deliver(text);
      };
      auto failed = [=](caf::error& err) mutable { rp.deliver(std::move(err)); };
      if (await)
        handle.await(answered, failed);
      else
        handle.then(answered, failed);
      return rp;
    }};
  };
}

/// The relay: an empty path answers 0; else it calls the path's first grain with the rest
/// and answers its hops plus one.
relay::behavior_type relay_grain(caf::event_based_actor* self, const grain_context& ctx) {
  return {[=](hop_atom, const std::string& path) {
    auto rp = self->make_response_promise<int64_t>();
    if (path.empty()) {
      rp.deliver(int64_t{0});
      return rp;
    }
    auto comma = path.find(',');
    auto next = path.substr(0, comma);
    auto rest = comma == std::string::npos ? std::string{} : path.substr(comma + 1);
    ctx.grain<relay>("relay", next)
      .request(self, hop_atom::value, rest)
      .then([rp](int64_t hops) mutable { rp.deliver(hops + 1); },
            [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
    return rp;
  }};
}

/// Starts `s` through its host and runs until it answered.
void start(testing::fixture& fx, silo& s) {
  auto r = testing::ask(fx, s.host(), host_start_atom::value);
  REQUIRE(fx.run_until([&] { return r->done; }, std::chrono::minutes(1)));
  REQUIRE(r->ok());
}

/// A silo on `cluster` with what `add` registers, started.
template <class Add>
silo make_silo(testing::fixture& fx, const in_process_cluster_ptr& cluster, Add add,
               config::mesh_config cfg = {}) {
  silo_builder b{fx.sys};
  add(b.config(std::move(cfg)).cluster(cluster));
  auto s = b.build();
  REQUIRE(s);
  start(fx, *s);
  return std::move(*s);
}

/// Runs until `viewer`'s membership view shows `other` Active (placement only places on silos
/// it sees Active).
void await_sees_active(testing::fixture& fx, silo& viewer, const silo& other) {
  for (int i = 0; i < 600; ++i) {
    auto view = testing::ask<membership_snapshot>(fx, viewer.components().agent,
                                                  mb_get_atom::value);
    REQUIRE(fx.run_until([&] { return view->done; }, std::chrono::minutes(1)));
    if (view->ok() && view->value.status_of(other.address()) == silo_status::active)
      return;
    fx.run_for(100ms);
  }
  FAIL("silo " << other.address().to_string() << " never seen Active");
}

/// One recorded answer of a grain call.
template <class T>
struct answer {
  bool done = false;
  T value{};
  caf::error err;
  int64_t at_ms = -1;
};

/// Sends every `(place, sku, qty)` of `lines` to `ref` from one actor, in this order.
std::vector<std::shared_ptr<answer<std::string>>>
place_all(testing::fixture& fx, grain_ref<order> ref,
          const std::vector<std::pair<std::string, int64_t>>& lines) {
  std::vector<std::shared_ptr<answer<std::string>>> out;
  for (size_t i = 0; i < lines.size(); ++i)
    out.push_back(std::make_shared<answer<std::string>>());
  auto fxp = &fx;
  fx.track(fx.sys.spawn([=](caf::event_based_actor* self) {
    for (size_t i = 0; i < lines.size(); ++i) {
      auto a = out[i];
      ref.request(self, place_atom::value, lines[i].first, lines[i].second)
        .then(
          [=](const std::string& text) {
            a->done = true;
            a->value = text;
            a->at_ms = fxp->now_ms();
          },
          [=](caf::error& err) {
            a->done = true;
            a->err = std::move(err);
            a->at_ms = fxp->now_ms();
          });
    }
  }));
  return out;
}

/// Calls `ref` with `(hop, path)` from a fresh actor.
std::shared_ptr<answer<int64_t>> hop(testing::fixture& fx, grain_ref<relay> ref,
                                     std::string path) {
  auto out = std::make_shared<answer<int64_t>>();
  auto fxp = &fx;
  fx.track(fx.sys.spawn([=](caf::event_based_actor* self) {
    ref.request(self, hop_atom::value, path)
      .then(
        [=](int64_t hops) {
          out->done = true;
          out->value = hops;
          out->at_ms = fxp->now_ms();
        },
        [=](caf::error& err) {
          out->done = true;
          out->err = std::move(err);
          out->at_ms = fxp->now_ms();
        });
  }));
  return out;
}

/// Both silos register both types, placed `prefer_local` (a silo's placement places only the
/// types it registers). The inventory grain activates on silo B (called from B first), then
/// the order grain on silo A places three lines on it: every nested call crosses silos.
void check_orders_reserve_in_their_turn(bool await) {
  auto log = std::make_shared<std::vector<std::string>>(); // outlives the fixture
  testing::fixture fx;
  auto delay = fx.track(fx.sys.spawn(delayer));
  auto cluster = make_in_process_cluster(fx.sys);
  grain_options local;
  local.placement = placement_strategy::prefer_local;
  auto both = [&](std::string name) {
    return [&, name](silo_builder& b) {
      b.grain<order>("order", order_factory(log, await, name), local)
        .grain<inventory>("inventory", inventory_factory(log, delay, name), local);
    };
  };
  auto a = make_silo(fx, cluster, both("A"));
  auto b = make_silo(fx, cluster, both("B"));
  await_sees_active(fx, a, b);
  await_sees_active(fx, b, a);
  // inventory/apple activates on B.
  auto warm = std::make_shared<bool>(false);
  auto apple = b.grains().grain<inventory>("inventory", "apple");
  fx.track(fx.sys.spawn([=](caf::event_based_actor* self) {
    apple.request(self, reserve_atom::value, int64_t{0}).then([=](bool, int64_t) {
      *warm = true;
    });
  }));
  REQUIRE(fx.run_until([&] { return *warm; }, std::chrono::minutes(1)));
  REQUIRE(*log == std::vector<std::string>{"inventory apple on B reserves 0"});
  log->clear();
  auto t0 = fx.now_ms();
  auto answers = place_all(fx, a.grains().grain<order>("order", "o1"),
                           {{"apple", 3}, {"apple", 4}, {"apple", 5}});
  REQUIRE(fx.run_until([&] { return answers.back()->done; }, std::chrono::minutes(1)));
  for (auto& x : answers)
    REQUIRE_MESSAGE(!x->err, to_fault(x->err).render());
  CHECK(answers[0]->value == "o1: 3 apple reserved, 7 left");
  CHECK(answers[1]->value == "o1: 4 apple reserved, 3 left");
  CHECK(answers[2]->value == "o1: 5 apple refused, 3 left");
  // One turn at a time: the order grain takes its next line only once the inventory answered
  // the previous one (100 ms each).
  CHECK(*log == std::vector<std::string>{
                  "order o1 on A takes 3 apple", "inventory apple on B reserves 3",
                  "order o1 answers o1: 3 apple reserved, 7 left", //
                  "order o1 on A takes 4 apple", "inventory apple on B reserves 4",
                  "order o1 answers o1: 4 apple reserved, 3 left", //
                  "order o1 on A takes 5 apple", "inventory apple on B reserves 5",
                  "order o1 answers o1: 5 apple refused, 3 left"});
  CHECK(answers[0]->at_ms - t0 >= 100);
  CHECK(answers[1]->at_ms - answers[0]->at_ms >= 100);
  CHECK(answers[2]->at_ms - answers[1]->at_ms >= 100);
  CHECK(answers[2]->at_ms - t0 < 1000);
}

} // namespace

TEST_CASE("hosting: a grain calls another grain through its context inside its turn: the order "
          "grain on one silo reserves stock on the inventory grain on another and answers after "
          "it, taking no second message before (.then)") {
  check_orders_reserve_in_their_turn(false);
}

TEST_CASE("hosting: a grain awaiting its nested grain call with .await keeps the same turns: "
          "every line reserved in order, one turn at a time") {
  check_orders_reserve_in_their_turn(true);
}

TEST_CASE("hosting: a call cycle without reentrancy (relay a calls b, b calls a) ends with the "
          "response timeout fault instead of hanging, and the grains answer again after it") {
  testing::fixture fx;
  auto cluster = make_in_process_cluster(fx.sys);
  config::mesh_config cfg;
  cfg.grain_call.response_timeout_ms = 2000;
  auto s = make_silo(
    fx, cluster, [](silo_builder& b) { b.grain<relay>("relay", relay_grain); }, cfg);
  // No cycle: a calls b, b answers.
  auto plain = hop(fx, s.grains().grain<relay>("relay", "a"), "b");
  REQUIRE(fx.run_until([&] { return plain->done; }, std::chrono::minutes(1)));
  REQUIRE_MESSAGE(!plain->err, to_fault(plain->err).render());
  CHECK(plain->value == 1);
  // a calls b, b calls a: a's turn is open, so b's call waits behind it until a timeout.
  auto t0 = fx.now_ms();
  auto cycle = hop(fx, s.grains().grain<relay>("relay", "a"), "b,a");
  REQUIRE(fx.run_until([&] { return cycle->done; }, std::chrono::minutes(1)));
  REQUIRE(cycle->err);
  CHECK(to_fault(cycle->err).code == mesh_errc::response_timeout);
  CHECK(cycle->at_ms - t0 >= 2000);
  CHECK(cycle->at_ms - t0 < 2500);
  // The open turns end with their own timeouts; then both grains answer again.
  fx.run_for(5s);
  auto after = hop(fx, s.grains().grain<relay>("relay", "a"), "b");
  REQUIRE(fx.run_until([&] { return after->done; }, std::chrono::minutes(1)));
  REQUIRE_MESSAGE(!after->err, to_fault(after->err).render());
  CHECK(after->value == 1);
}

TEST_CASE("hosting: a call cycle whose messages may interleave (grain_options::may_interleave) "
          "answers at once: relay a calls b, b calls a, a answers inside its open turn") {
  testing::fixture fx;
  auto cluster = make_in_process_cluster(fx.sys);
  config::mesh_config cfg;
  cfg.grain_call.response_timeout_ms = 2000;
  grain_options go;
  go.may_interleave = [](const caf::message&) { return true; };
  auto s = make_silo(
    fx, cluster, [&](silo_builder& b) { b.grain<relay>("relay", relay_grain, go); }, cfg);
  auto t0 = fx.now_ms();
  auto cycle = hop(fx, s.grains().grain<relay>("relay", "a"), "b,a");
  REQUIRE(fx.run_until([&] { return cycle->done; }, std::chrono::minutes(1)));
  REQUIRE_MESSAGE(!cycle->err, to_fault(cycle->err).render());
  CHECK(cycle->value == 2);
  CHECK(cycle->at_ms - t0 < 2000);
}
