// docs/hosting.md#testing-a-service-in-virtual-time: the orders service (examples/orders) on
// three silos whose links take 5 to 20 ms, a pure client placing a line every 10 ms, one
// silo stopped gracefully and one killed mid-traffic, in virtual time.

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/test_cluster.hpp"
#include "orders.hpp"

using namespace cafmesh;
using namespace std::chrono_literals;

namespace {

using outcome = std::shared_ptr<testing::reply<std::string>>;

/// For `duration`, the client `front` places a line on `node/orders/o{i % 32}` every 10 ms,
/// of SKU `s{i % 7}`.
void place_lines(testing::fixture& fx, testing::test_cluster& mesh, std::vector<outcome>& out,
                 std::chrono::milliseconds duration) {
  for (auto end = fx.now_ms() + duration.count(); fx.now_ms() < end; fx.run_for(10ms)) {
    auto i = out.size();
    out.push_back(mesh.request("front", "node/orders/o" + std::to_string(i % 32),
                               R"({"sku":"s)" + std::to_string(i % 7) + R"(","qty":1})"));
  }
}

/// How many of `xs` have no outcome yet, were answered, failed with a resendable verdict (the
/// client gave up re-sending), failed otherwise.
struct tally {
  size_t pending = 0, answered = 0, resendable = 0, failed = 0;
};

tally count(const std::vector<outcome>& xs) {
  tally t;
  for (auto& x : xs)
    ++(!x->done                                        ? t.pending
       : x->ok()                                       ? t.answered
       : routing::delivery_error_of(x->err).resendable ? t.resendable
                                                       : t.failed);
  return t;
}

} // namespace

TEST_CASE("recipe: three silos with 5-20 ms links and a pure client: a graceful stop "
          "mid-traffic answers every request, and a kill gives each request one outcome") {
  testing::fixture fx;
  testing::test_cluster mesh{fx, {5, 20, 42}}; // link latency 5..20 ms, seed 42
  for (auto name : {"a", "b", "c"})
    mesh.add_silo(name, orders::with_orders);
  mesh.add_client("front");
  std::vector<outcome> sent;
  place_lines(fx, mesh, sent, 1s);
  // A graceful stop of b while requests are in flight: b hands its grains over, every
  // request is answered.
  auto stop = mesh.stop("b");
  CHECK(count(sent).pending > 0); // some of the 100 sent in the first second are in flight
  place_lines(fx, mesh, sent, 2s);
  REQUIRE(fx.run_until([&] { return stop->done && count(sent).pending == 0; }, 1min));
  CHECK(stop->ok());
  CHECK(sent.size() == 300);
  CHECK(count(sent).answered == sent.size());
  // A kill of c: each request still has exactly one outcome. What a kill costs: the state of
  // c's grains (the example keeps no store), and the requests routed to c until membership
  // declares it Dead (10 s of silence): their re-sends (up to 5, 250 ms to 4 s apart) run out
  // first, and they fail with a resendable verdict ("silo c has departed").
  mesh.kill("c");
  place_lines(fx, mesh, sent, 1s);
  REQUIRE(fx.run_until([&] { return count(sent).pending == 0; }, 2min));
  auto t = count(sent);
  CHECK(t.answered + t.resendable + t.failed == sent.size());
  CHECK(sent.size() == 400);
  // The 300 sent before the kill were answered; of the 100 after it, those routed to c
  // failed resendable (how many depends on the orders' grains and the timing).
  CHECK(t.answered >= 300);
  CHECK(t.resendable > 0);
  CHECK(t.resendable <= 100);
  CHECK(t.failed == 0);
}
