// Retry policies and the in-leg retry decision (docs/behaviour/classification.md#retry-policies).

#include <cstdint>
#include <limits>
#include <vector>

#include <doctest/doctest.h>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/retry_policy.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;

namespace {

fault F(mesh_errc c, std::vector<fault> causes = {}) {
  return fault{c, to_string(c), std::move(causes)};
}

/// Simulates one call whose attempt k fails with `faults[min(k, size-1)]` until the state
/// gives up or `succeed_at` (attempt index) is reached. Answers the virtual start time of
/// every attempt (ms, attempts back to back, no time spent inside an attempt) and the last
/// decision (a default one when the call succeeded).
struct run_result {
  std::vector<int64_t> starts_ms;
  retry_decision last;
  bool succeeded = false;
};

run_result simulate(const retry_policy& p, const std::vector<fault>& faults,
                    int64_t succeed_at = -1) {
  run_result out;
  retry_state st{p};
  int64_t now_ms = 0;
  for (int64_t attempt = 0;; ++attempt) {
    out.starts_ms.push_back(now_ms);
    REQUIRE(st.attempts() == attempt + 1);
    if (attempt == succeed_at) {
      out.succeeded = true;
      return out;
    }
    const auto& f = faults[std::min<size_t>(static_cast<size_t>(attempt), faults.size() - 1)];
    auto d = st.next(f);
    out.last = d;
    if (!d.retry)
      return out;
    now_ms += d.delay_ms;
  }
}

} // namespace

TEST_CASE("retry: S12.22 with defaults an always-rejected call starts attempts at 0, 250, 750, "
          "1,750, 3,750, 6,750 and 9,750 ms, 7 attempts, then verdict failed") {
  auto p = router_policy(config::routing_section{});
  CHECK(p.retry_max == 6);
  CHECK(p.max_attempts() == 7);
  std::vector<int64_t> delays;
  for (int64_t n = 0; n < 6; ++n)
    delays.push_back(p.delay_ms(n));
  CHECK(delays == std::vector<int64_t>{250, 500, 1000, 2000, 3000, 3000});
  auto r = simulate(p, {fault{mesh_errc::rejected, "turned away by activation #1a2b3c4d"}});
  CHECK(r.starts_ms == std::vector<int64_t>{0, 250, 750, 1750, 3750, 6750, 9750});
  CHECK_FALSE(r.last.retry);
  CHECK(r.last.reason == give_up_reason::budget_exhausted);
  CHECK(r.last.verdict == verdict::failed);
}

TEST_CASE("retry: S12.22 routing.retry_max 4 and an always-rejected call make 5 attempts and "
          "end failed") {
  config::routing_section cfg;
  cfg.retry_max = 4;
  auto r = simulate(router_policy(cfg), {F(mesh_errc::rejected)});
  CHECK(r.starts_ms.size() == 5);
  CHECK(r.starts_ms == std::vector<int64_t>{0, 250, 750, 1750, 3750});
  CHECK(r.last.reason == give_up_reason::budget_exhausted);
  CHECK(r.last.verdict == verdict::failed);
}

TEST_CASE("retry: S12.21 rejected twice then success makes 3 attempts, each retry invalidating "
          "the cached address, invalid_operation makes 1 attempt and ends failed") {
  auto p = router_policy(config::routing_section{});
  retry_state st{p};
  auto d1 = st.next(F(mesh_errc::rejected));
  CHECK(d1.retry);
  CHECK(d1.invalidate_target);
  CHECK_FALSE(d1.re_resolve);
  CHECK(d1.delay_ms == 250);
  auto d2 = st.next(F(mesh_errc::rejected));
  CHECK(d2.retry);
  CHECK(d2.invalidate_target);
  CHECK(d2.delay_ms == 500);
  CHECK(st.attempts() == 3); // the third attempt succeeds: no further next()
  CHECK_FALSE(st.given_up());
  auto r = simulate(p, {F(mesh_errc::invalid_operation)});
  CHECK(r.starts_ms.size() == 1);
  CHECK(r.last.reason == give_up_reason::not_retryable);
  CHECK(r.last.verdict == verdict::failed);
}

TEST_CASE("retry: S12.25 the client policy sends a rejected call 6 times at 0, 200, 600, 1,400, "
          "3,000 and 6,200 ms and a response_timeout once") {
  auto p = client_policy(config::client_section{});
  CHECK(p.retry_max == 5);
  CHECK(p.kind == policy_kind::client);
  auto r = simulate(p, {F(mesh_errc::rejected)});
  CHECK(r.starts_ms == std::vector<int64_t>{0, 200, 600, 1400, 3000, 6200});
  CHECK(r.last.reason == give_up_reason::budget_exhausted);
  auto t = simulate(p, {F(mesh_errc::response_timeout)});
  CHECK(t.starts_ms == std::vector<int64_t>{0});
  CHECK(t.last.reason == give_up_reason::not_retryable);
  CHECK(t.last.verdict == verdict::failed);
  // The client policy's cap is 30,000 ms: retry 8 would be 51,200 -> 30,000.
  CHECK(p.delay_ms(7) == 25600);
  CHECK(p.delay_ms(8) == 30000);
}

TEST_CASE("retry: the attach policy waits 250, 500, 1,000, 2,000, 4,000 ms (7,750 in all) and "
          "retries any transient fault, response timeouts included") {
  auto p = attach_policy(config::attach_section{});
  auto r = simulate(p, {F(mesh_errc::response_timeout)});
  CHECK(r.starts_ms == std::vector<int64_t>{0, 250, 750, 1750, 3750, 7750});
  CHECK(r.last.reason == give_up_reason::budget_exhausted);
  auto n = simulate(p, {F(mesh_errc::not_found)});
  CHECK(n.starts_ms.size() == 1);
  CHECK(n.last.reason == give_up_reason::not_retryable);
}

TEST_CASE("retry: the three predicates differ exactly as the retry policies say") {
  auto router = router_policy({});
  auto client = client_policy({});
  auto attach = attach_policy({});
  // response_timeout: transient, not resendable.
  CHECK_FALSE(router.admits(F(mesh_errc::response_timeout)));
  CHECK_FALSE(client.admits(F(mesh_errc::response_timeout)));
  CHECK(attach.admits(F(mesh_errc::response_timeout)));
  // pod_hub_not_here: resendable, excluded only in the leg.
  CHECK_FALSE(router.admits(F(mesh_errc::pod_hub_not_here)));
  CHECK(client.admits(F(mesh_errc::pod_hub_not_here)));
  CHECK(attach.admits(F(mesh_errc::pod_hub_not_here)));
  // application: nobody retries it.
  CHECK_FALSE(router.admits(F(mesh_errc::application)));
  CHECK_FALSE(client.admits(F(mesh_errc::application)));
  CHECK_FALSE(attach.admits(F(mesh_errc::application)));
}

TEST_CASE("retry: a retry_after_ms hint raises the delay to max(schedule, hint), capped") {
  auto p = router_policy({});
  CHECK(p.delay_ms(0, 400) == 400);
  CHECK(p.delay_ms(0, 100) == 250);
  CHECK(p.delay_ms(2, 100) == 1000);
  CHECK(p.delay_ms(2, 2500) == 2500);
  CHECK(p.delay_ms(0, 10000) == 3000);
  CHECK(p.delay_ms(5, 10000) == 3000);
  auto c = client_policy({});
  CHECK(c.delay_ms(0, 45000) == 30000);
  // No overflow for absurd n; negative n counts as 0.
  CHECK(p.delay_ms(std::numeric_limits<int64_t>::max()) == 3000);
  CHECK(p.delay_ms(-3) == 250);
}

TEST_CASE("retry: S12.28 activation_deactivated recorded no with retry_after_ms 400 waits 400 ms "
          "and re-resolves, departed_silo names the silo whose cache entries go") {
  auto p = router_policy({});
  retry_state st{p};
  auto f = F(mesh_errc::activation_deactivated);
  f.activation_error_recorded = tri_bool::no;
  f.retry_after_ms = 400u;
  auto d = st.next(f);
  CHECK(d.retry);
  CHECK(d.delay_ms == 400);
  CHECK(d.re_resolve);
  CHECK(d.invalidate_target);
  CHECK(d.departed.empty());
  // The hint may sit on an inner cause.
  retry_state st2{p};
  auto wrapped = fault{mesh_errc::application, "call failed", {f}};
  auto d2 = st2.next(wrapped);
  CHECK(d2.retry);
  CHECK(d2.delay_ms == 400);
  // departed_silo.
  retry_state st3{p};
  auto dep = F(mesh_errc::departed_silo);
  dep.silo = silo_address{"b", 11111, 2};
  auto d3 = st3.next(dep);
  CHECK(d3.retry);
  CHECK(d3.delay_ms == 250);
  CHECK(d3.re_resolve);
  REQUIRE(d3.departed.size() == 1);
  CHECK(d3.departed[0] == silo_address{"b", 11111, 2});
}

TEST_CASE("retry: S12.26 at most 2 attempts may end in placement_timeout, the second is final "
          "with verdict unavailable under every policy") {
  for (auto kind : {policy_kind::router, policy_kind::client, policy_kind::attach}) {
    CAPTURE(to_string(kind));
    auto p = make_policy(config::mesh_config{}, kind);
    CHECK(p.placement_timeout_attempts == 2);
    retry_state st{p};
    auto d1 = st.next(F(mesh_errc::placement_timeout));
    CHECK(d1.retry);
    CHECK(d1.delay_ms == p.base_ms);
    CHECK(st.placement_timeouts() == 1);
    auto d2 = st.next(F(mesh_errc::placement_timeout));
    CHECK_FALSE(d2.retry);
    CHECK(d2.reason == give_up_reason::placement_timeout_cap);
    CHECK(d2.verdict == verdict::unavailable);
    CHECK(st.attempts() == 2);
    // A give-up is final.
    CHECK_FALSE(st.next(F(mesh_errc::rejected)).retry);
  }
  // Interleaved with other faults the cap still counts placement timeouts only.
  auto r = simulate(router_policy({}), {F(mesh_errc::placement_timeout), F(mesh_errc::rejected),
                                        F(mesh_errc::placement_timeout)});
  CHECK(r.starts_ms == std::vector<int64_t>{0, 250, 750});
  CHECK(r.last.reason == give_up_reason::placement_timeout_cap);
  // A configured cap of 3 allows a third.
  config::mesh_config cfg;
  cfg.routing.placement_timeout_attempts = 3;
  auto r3 = simulate(make_policy(cfg, policy_kind::client), {F(mesh_errc::placement_timeout)});
  CHECK(r3.starts_ms.size() == 3);
  // The second attempt landing (owner unstalled in time) ends with no give-up.
  auto ok = simulate(router_policy({}), {F(mesh_errc::placement_timeout)}, 1);
  CHECK(ok.succeeded);
  CHECK(ok.starts_ms == std::vector<int64_t>{0, 250});
}

TEST_CASE("retry: S12.23 activation_deactivated recorded yes is retried to exhaustion and ends "
          "failed") {
  auto f = F(mesh_errc::activation_deactivated);
  f.activation_error_recorded = tri_bool::yes;
  auto r = simulate(router_policy({}), {f});
  CHECK(r.starts_ms.size() == 7);
  CHECK(r.last.reason == give_up_reason::budget_exhausted);
  CHECK(r.last.verdict == verdict::failed);
}

TEST_CASE("retry: policies are built from their configuration sections") {
  config::mesh_config cfg;
  cfg.routing.retry_max = 2;
  cfg.routing.retry_base_ms = 10;
  cfg.routing.retry_cap_ms = 15;
  cfg.client.retry_max = 1;
  cfg.client.retry_base_ms = 7;
  cfg.attach.retry_max = 3;
  cfg.attach.retry_base_ms = 1;
  cfg.attach.retry_cap_ms = 2;
  auto r = simulate(make_policy(cfg, policy_kind::router), {F(mesh_errc::overloaded)});
  CHECK(r.starts_ms == std::vector<int64_t>{0, 10, 25});
  auto c = simulate(make_policy(cfg, policy_kind::client), {F(mesh_errc::overloaded)});
  CHECK(c.starts_ms == std::vector<int64_t>{0, 7});
  auto a = simulate(make_policy(cfg, policy_kind::attach), {F(mesh_errc::overloaded)});
  CHECK(a.starts_ms == std::vector<int64_t>{0, 1, 3, 5});
  CHECK(make_policy(cfg, policy_kind::router).kind == policy_kind::router);
  CHECK(make_policy(cfg, policy_kind::attach).kind == policy_kind::attach);
}
