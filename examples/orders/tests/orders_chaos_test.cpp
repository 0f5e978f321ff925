// docs/hosting.md#chaos-for-your-own-grains: the orders service (examples/orders) under seeded
// chaos — graceful stops, kills, stalls and partitions of its silos while a pure client
// places lines — with the runner of cafmesh/testing/service_chaos.hpp, in virtual time.

#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cafmesh/testing/service_chaos.hpp"
#include "orders.hpp"

using namespace cafmesh;
using testing::service_fault_kind;

namespace {

/// Three orders silos and one client placing a line of one unit every 10 ms, on one of 32
/// orders, of one of 7 SKUs; an answer must name the order and the SKU and say reserved
/// (the stock of a million is never used up).
testing::service_chaos_options orders_chaos() {
  testing::service_chaos_options o;
  o.configure = [](lifecycle::silo_builder& b) { orders::with_orders(b); };
  o.next_request = [](uint64_t, std::mt19937_64& rng) {
    auto order = "o" + std::to_string(rng() % 32);
    auto sku = "s" + std::to_string(rng() % 7);
    return testing::service_request{"node/orders/" + order,
                                    nlohmann::json{{"sku", sku}, {"qty", 1}}.dump()};
  };
  o.check = [](const testing::service_request& req, const std::string& answer) {
    auto a = nlohmann::json::parse(answer, nullptr, false);
    auto line = nlohmann::json::parse(req.payload_json);
    auto order = req.target.substr(req.target.rfind('/') + 1);
    if (!a.is_object() || a.value("order", "") != order || a.value("sku", "") != line["sku"]
        || !a.value("reserved", false))
      return std::string{"expected order " + order + ", sku " + line["sku"].get<std::string>()
                         + ", reserved"};
    return std::string{};
  };
  return o;
}

} // namespace

TEST_CASE("service chaos: the orders service keeps every invariant under seeds 1 to 8 "
          "(CAFMESH_CHAOS_SEED replays one)") {
  auto o = orders_chaos();
  std::set<service_fault_kind> drawn;
  for (auto seed : testing::service_chaos_seeds(1, 8)) {
    auto r = testing::run_service_chaos(seed, o);
    INFO(r.render());
    CHECK(r.ok());
    CHECK(r.counts.sent > 0);
    CHECK(r.counts.answered + r.counts.failed + r.counts.deadline + r.counts.unclassified
            + r.counts.pending
          == r.counts.sent);
    for (auto& f : r.schedule.faults)
      drawn.insert(f.kind);
  }
  if (std::getenv("CAFMESH_CHAOS_SEED") == nullptr)
    CHECK(drawn.size() == 4); // together the seeds draw every kind
}

TEST_CASE("service chaos: a seed replays: the same seed gives the same schedule, trace and "
          "digest, another seed another digest") {
  auto o = orders_chaos();
  auto first = testing::run_service_chaos(3, o);
  auto again = testing::run_service_chaos(3, o);
  CHECK(first.schedule.render() == again.schedule.render());
  CHECK(first.trace == again.trace);
  CHECK(first.digest == again.digest);
  CHECK(testing::run_service_chaos(2, o).digest != first.digest);
}

TEST_CASE("service chaos: a kill is applied, its silo comes back, and only requests in "
          "flight during it may fail") {
  auto o = orders_chaos();
  o.kinds = {service_fault_kind::kill};
  o.min_faults = o.max_faults = 1;
  auto r = testing::run_service_chaos(1, o);
  INFO(r.render());
  REQUIRE(r.schedule.faults.size() == 1);
  auto& kill = r.schedule.faults[0];
  CHECK(kill.kind == service_fault_kind::kill);
  // The trace: traffic begins at t0, the kill after `after_ms`, the silo back `for_ms` later
  // at the earliest (its start takes virtual time too).
  REQUIRE(r.trace.size() >= 4);
  auto t0 = std::stoll(r.trace[0]);
  CHECK(r.trace[0] == std::to_string(t0) + " traffic begins");
  auto t_kill = t0 + kill.after_ms;
  CHECK(r.trace[1]
        == std::to_string(t_kill) + " kill " + kill.a + " for " + std::to_string(kill.for_ms)
             + "ms");
  auto back = r.trace[2];
  CHECK(back.substr(back.find(' ')) == " " + kill.a + " is back");
  CHECK(std::stoll(back) >= t_kill + kill.for_ms);
  CHECK(r.ok());
  CHECK(r.counts.excused == r.counts.failed + r.counts.deadline);
  CHECK(r.counts.unclassified == 0);
  CHECK(r.counts.pending == 0);
}

TEST_CASE("service chaos: a wrong answer breaks the check, and the result names the seed, "
          "the schedule and how to replay it") {
  auto o = orders_chaos();
  o.min_faults = o.max_faults = 1;
  o.kinds = {service_fault_kind::stall};
  o.check = [](const testing::service_request& req, const std::string&) {
    return req.target == "node/orders/o7" ? std::string{"o7 is never right"} : std::string{};
  };
  auto r = testing::run_service_chaos(5, o);
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].invariant == "every answer passes the service's check");
  CHECK(r.violations[0].detail.find("node/orders/o7") != std::string::npos);
  CHECK(r.violations[0].detail.find("o7 is never right") != std::string::npos);
  auto text = r.render();
  CHECK(text.rfind("service chaos seed 5: FAILED (every answer passes the service's check)\n"
                   "schedule (1 faults):\n  0 " + r.schedule.faults[0].to_string() + "\n",
                   0)
        == 0);
  CHECK(text.find("replay: CAFMESH_CHAOS_SEED=5 ") != std::string::npos);
  CHECK(text.find("run_service_chaos(5, options)") != std::string::npos);
}

TEST_CASE("service chaos: a request that ends by its deadline without a kill breaks an "
          "invariant") {
  auto o = orders_chaos();
  o.kinds = {service_fault_kind::stall};
  o.min_faults = o.max_faults = 1;
  o.request_timeout = std::chrono::milliseconds(60); // a stall lasts 100 ms or more
  auto r = testing::run_service_chaos(1, o);
  INFO(r.render());
  REQUIRE_FALSE(r.ok());
  CHECK(r.violations[0].invariant
        == "a request fails or ends by its deadline only when a kill explains it");
  CHECK(r.counts.deadline > 0);
  CHECK(r.counts.excused == 0);
}

TEST_CASE("service chaos: the schedule is drawn from the seed within the options' bounds") {
  auto o = orders_chaos();
  o.clients = 2;
  o.min_faults = 3;
  o.max_faults = 6;
  std::set<size_t> sizes;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    auto x = testing::make_service_chaos_schedule(seed, o);
    CHECK(x.seed == seed);
    CHECK(x.render() == testing::make_service_chaos_schedule(seed, o).render());
    sizes.insert(x.faults.size());
    for (auto& f : x.faults) {
      INFO(f.to_string());
      CHECK(f.after_ms >= 200);
      CHECK(f.after_ms <= 800);
      CHECK(f.for_ms >= (f.kind == service_fault_kind::stop || f.kind == service_fault_kind::kill
                           ? 200
                           : 100));
      CHECK(f.for_ms <= (f.kind == service_fault_kind::stop ? 1000 : 2000));
      if (f.kind == service_fault_kind::partition) {
        CHECK(f.a != f.b);
        CHECK_FALSE((f.a.rfind("client", 0) == 0 && f.b.rfind("client", 0) == 0));
      } else {
        CHECK(f.b.empty());
        CHECK(std::set<std::string>{"a", "b", "c"}.count(f.a) == 1);
      }
    }
  }
  CHECK(sizes == std::set<size_t>{3, 4, 5, 6});
  auto one = testing::make_service_chaos_schedule(9, o).faults[0];
  CHECK(one.to_string()
        == "+" + std::to_string(one.after_ms) + "ms " + testing::to_string(one.kind) + " "
             + one.a + (one.b.empty() ? "" : " " + one.b) + " for "
             + std::to_string(one.for_ms) + "ms");
}

TEST_CASE("service chaos: options it cannot run are refused with the reason") {
  auto refused = [](testing::service_chaos_options o) -> std::string {
    try {
      testing::make_service_chaos_schedule(1, o);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  auto o = orders_chaos();
  CHECK(refused(o) == "accepted");
  auto one_silo = o;
  one_silo.silos = {"a"};
  CHECK(refused(one_silo)
        == "service chaos: needs at least two silos (one fault at a time leaves one up), got 1");
  auto no_kind = o;
  no_kind.kinds.clear();
  CHECK(refused(no_kind) == "service chaos: no fault kind to draw");
  auto no_traffic = o;
  no_traffic.next_request = {};
  CHECK(refused(no_traffic) == "service chaos: no next_request function (the traffic)");
  auto clash = o;
  clash.silos = {"a", "client1"};
  CHECK(refused(clash)
        == "service chaos: silo name client1 collides with the clients' names (client1, ...)");
}

TEST_CASE("service chaos: CAFMESH_CHAOS_SEED narrows the seeds to the one it names") {
  auto saved = std::getenv("CAFMESH_CHAOS_SEED");
  std::string was = saved != nullptr ? saved : "";
  ::unsetenv("CAFMESH_CHAOS_SEED");
  CHECK(testing::service_chaos_seeds(4, 3) == std::vector<uint64_t>{4, 5, 6});
  ::setenv("CAFMESH_CHAOS_SEED", "17", 1);
  CHECK(testing::service_chaos_seeds(4, 3) == std::vector<uint64_t>{17});
  ::setenv("CAFMESH_CHAOS_SEED", "17x", 1);
  CHECK_THROWS_AS(testing::service_chaos_seeds(4, 3), std::invalid_argument);
  if (saved != nullptr)
    ::setenv("CAFMESH_CHAOS_SEED", was.c_str(), 1);
  else
    ::unsetenv("CAFMESH_CHAOS_SEED");
}
