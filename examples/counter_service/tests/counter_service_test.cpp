// The counter service's grain and hub (examples/counter_service/counter.hpp) on whole silos
// in virtual time, built as the service builds them.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "counter.hpp"

using namespace cafmesh;
using namespace cafmesh::lifecycle;

namespace {

/// A counter silo on `cluster`, started.
silo counter_silo(testing::fixture& fx, const in_process_cluster_ptr& cluster) {
  silo_builder b{fx.sys};
  auto s = counter_service::with_counter(b.cluster(cluster)).build();
  REQUIRE(s);
  REQUIRE_FALSE(s->register_hub("node/counter/*", counter_service::counter_hub(s->placement())));
  auto started = testing::ask(fx, s->host(), host_start_atom::value);
  REQUIRE(fx.run_until([&] { return started->done; }, std::chrono::minutes(1)));
  REQUIRE(started->ok());
  return std::move(*s);
}

/// Asks counter `key` once through `p`'s entry; the answer's payload or "error: ...".
std::string add_one(testing::fixture& fx, mesh_process& p, const std::string& key) {
  auto r = testing::ask<std::string>(fx, p.entry(), routing::ce_request_atom::value,
                                     routing::address::from("node/counter/" + key),
                                     std::string{"request"}, std::string{"{}"}, int64_t{30000},
                                     true);
  if (!fx.run_until([&] { return r->done; }, std::chrono::minutes(1)))
    return "no answer";
  if (r->err)
    return "error: " + to_string(routing::delivery_error_of(r->err));
  return r->value;
}

} // namespace

TEST_CASE("counter service: each key's grain counts the requests of its hub") {
  testing::fixture fx;
  auto cluster = make_in_process_cluster(fx.sys);
  auto a = counter_silo(fx, cluster);
  CHECK(add_one(fx, a, "7") == "{\"key\":\"7\",\"count\":1}");
  CHECK(add_one(fx, a, "7") == "{\"key\":\"7\",\"count\":2}");
  CHECK(add_one(fx, a, "8") == "{\"key\":\"8\",\"count\":1}");
  CHECK(add_one(fx, a, "7") == "{\"key\":\"7\",\"count\":3}");
}

TEST_CASE("counter service: with one of two silos stopped, every request is still answered") {
  testing::fixture fx;
  auto cluster = make_in_process_cluster(fx.sys);
  auto a = counter_silo(fx, cluster);
  auto b = counter_silo(fx, cluster);
  std::vector<std::string> keys;
  for (int k = 0; k < 10; ++k)
    keys.push_back(std::to_string(k));
  for (auto& k : keys)
    CHECK(add_one(fx, b, k) == "{\"key\":\"" + k + "\",\"count\":1}");
  auto halt = testing::ask(fx, a.host(), host_halt_atom::value, true);
  REQUIRE(fx.run_until([&] { return halt->done; }, std::chrono::minutes(2)));
  REQUIRE(halt->ok());
  // Grains that lived on A start again on B (their totals restart there: the grain keeps
  // no state store); every request is answered.
  for (auto& k : keys) {
    auto answer = add_one(fx, b, k);
    CHECK_MESSAGE(answer.rfind("{\"key\":\"" + k + "\",\"count\":", 0) == 0, answer);
  }
}
