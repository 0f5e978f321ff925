#include "cafmesh/routing/retry_policy.hpp"

#include <algorithm>
#include <utility>

#include "cafmesh/routing/classify.hpp"

namespace cafmesh::routing {

std::string to_string(policy_kind x) {
  switch (x) {
    case policy_kind::router: return "router";
    case policy_kind::client: return "client";
    case policy_kind::attach: return "attach";
  }
  return "policy_kind(" + std::to_string(static_cast<int>(x)) + ")";
}

int64_t retry_policy::delay_ms(int64_t n, uint32_t hint_ms) const {
  if (n < 0)
    n = 0;
  int64_t schedule = cap_ms;
  if (base_ms <= 0) {
    schedule = 0;
  } else {
    // base * 2^n without overflow: stop doubling once the cap is reached.
    int64_t d = base_ms;
    for (int64_t i = 0; i < n && d < cap_ms; ++i) {
      if (d > cap_ms / 2) { // doubling would pass the cap (and could overflow int64)
        d = cap_ms;
        break;
      }
      d *= 2;
    }
    schedule = std::min(d, cap_ms);
  }
  return std::min(std::max(schedule, static_cast<int64_t>(hint_ms)), cap_ms);
}

bool retry_policy::admits(const fault& f) const {
  switch (kind) {
    case policy_kind::router: return may_retry_in_leg(f);
    case policy_kind::client: return is_resendable(f);
    case policy_kind::attach: return is_transient(f);
  }
  return false;
}

retry_policy router_policy(const config::routing_section& cfg) {
  return retry_policy{policy_kind::router, cfg.retry_max, cfg.retry_base_ms, cfg.retry_cap_ms,
                      cfg.placement_timeout_attempts};
}

retry_policy client_policy(const config::client_section& cfg, int64_t placement_timeout_attempts) {
  return retry_policy{policy_kind::client, cfg.retry_max, cfg.retry_base_ms, cfg.retry_cap_ms,
                      placement_timeout_attempts};
}

retry_policy attach_policy(const config::attach_section& cfg, int64_t placement_timeout_attempts) {
  return retry_policy{policy_kind::attach, cfg.retry_max, cfg.retry_base_ms, cfg.retry_cap_ms,
                      placement_timeout_attempts};
}

retry_policy make_policy(const config::mesh_config& cfg, policy_kind kind) {
  switch (kind) {
    case policy_kind::client:
      return client_policy(cfg.client, cfg.routing.placement_timeout_attempts);
    case policy_kind::attach:
      return attach_policy(cfg.attach, cfg.routing.placement_timeout_attempts);
    default: return router_policy(cfg.routing);
  }
}

std::string to_string(give_up_reason x) {
  switch (x) {
    case give_up_reason::none: return "none";
    case give_up_reason::not_retryable: return "not_retryable";
    case give_up_reason::budget_exhausted: return "budget_exhausted";
    case give_up_reason::placement_timeout_cap: return "placement_timeout_cap";
    case give_up_reason::runtime_gone: return "runtime_gone";
  }
  return "give_up_reason(" + std::to_string(static_cast<int>(x)) + ")";
}

retry_state::retry_state(retry_policy policy) : policy_(std::move(policy)) {
  // nop
}

retry_decision retry_state::next(const fault& f) {
  retry_decision out;
  auto give_up = [&](give_up_reason why) {
    given_up_ = true;
    out.retry = false;
    out.reason = why;
    out.verdict = classify(f);
    return out;
  };
  if (given_up_)
    return give_up(give_up_reason::budget_exhausted);
  if (contains_code(f, mesh_errc::runtime_gone))
    return give_up(give_up_reason::runtime_gone);
  if (contains_code(f, mesh_errc::placement_timeout)
      && ++placement_timeouts_ >= policy_.placement_timeout_attempts)
    return give_up(give_up_reason::placement_timeout_cap);
  if (!policy_.admits(f))
    return give_up(give_up_reason::not_retryable);
  if (retries_ >= policy_.retry_max)
    return give_up(give_up_reason::budget_exhausted);
  out.retry = true;
  out.delay_ms = policy_.delay_ms(retries_, retry_hint_ms(f));
  out.invalidate_target = true;
  out.re_resolve = re_resolves(f);
  out.departed = departed_silos(f);
  ++retries_;
  return out;
}

} // namespace cafmesh::routing
