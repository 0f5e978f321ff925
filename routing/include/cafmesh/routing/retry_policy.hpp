#pragma once

/// @file
/// The three retry policies of docs/behaviour/classification.md#retry-policies (router, client,
/// attach) and `retry_state`, the per-call retry bookkeeping a leg (or the client dispatch, or the
/// attach) keeps: after each failed attempt, `next(fault)` says "retry after n ms" or "give up"
/// (docs/behaviour/classification.md#retry-policies). No timers here: the caller arms its own
/// actor-clock timer with the delay it is given.

#include <cstdint>
#include <string>
#include <vector>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::routing {

/// Which docs/behaviour/classification.md#retry-policies row a policy implements; selects its retry
/// predicate.
enum class policy_kind : uint8_t {
  router, ///< grain calls inside legs, the NACK's node-hub transport: `may_retry_in_leg`
  client, ///< a pure client's call to `routing/default`: `is_resendable`
  attach, ///< inbound stream attach, pod-hub claim (idempotent): `is_transient`
};

/// Renders `router`, `client` or `attach`.
std::string to_string(policy_kind x);

/// One retry policy (docs/behaviour/classification.md#retry-policies). Delays in ms; counts are
/// plain numbers.
struct retry_policy {
  policy_kind kind = policy_kind::router;
  int64_t retry_max = 6;                  ///< retries after the first attempt
  int64_t base_ms = 250;                  ///< delay before retry 0
  int64_t cap_ms = 3000;                  ///< no delay exceeds this, hints included
  int64_t placement_timeout_attempts = 2; ///< attempts that may end in placement_timeout

  /// Most calls one operation makes: `retry_max + 1`.
  int64_t max_attempts() const { return retry_max + 1; }

  /// Delay before retry `n` (from 0): `min(base_ms * 2^n, cap_ms)`, raised to `hint_ms` when
  /// larger but never above `cap_ms` (docs/behaviour/classification.md#retry-policies). Negative
  /// `n` counts as 0; never overflows for large `n`.
  int64_t delay_ms(int64_t n, uint32_t hint_ms = 0) const;

  /// The policy's predicate on the fault of a failed attempt
  /// (docs/behaviour/classification.md#retry-policies "Predicate"): router -> `may_retry_in_leg`
  /// (resendable minus in-leg exclusions), client ->
  /// `is_resendable`, attach -> `is_transient`. Budget and caps are not part of it.
  bool admits(const fault& f) const;
};

/// The router policy from section `routing` (retry_max, retry_base_ms, retry_cap_ms,
/// placement_timeout_attempts). Defaults: 6 retries, min(250·2ⁿ, 3,000) ms.
retry_policy router_policy(const config::routing_section& cfg);

/// The client policy from section `client`; the placement-timeout cap comes from
/// `routing.placement_timeout_attempts` (docs/behaviour/classification.md#retry-policies: "under
/// every policy"). Defaults: 5 retries, min(200·2ⁿ, 30,000) ms.
retry_policy client_policy(const config::client_section& cfg,
                           int64_t placement_timeout_attempts = 2);

/// The attach policy from section `attach` (cap as for the client). Defaults: 5 retries,
/// min(250·2ⁿ, 4,000) ms.
retry_policy attach_policy(const config::attach_section& cfg,
                           int64_t placement_timeout_attempts = 2);

/// The policy of `kind` from a whole configuration.
retry_policy make_policy(const config::mesh_config& cfg, policy_kind kind);

/// Why `retry_state::next` gave up.
enum class give_up_reason : uint8_t {
  none,                  ///< not given up (the decision is a retry)
  not_retryable,         ///< the policy's predicate refused the fault
  budget_exhausted,      ///< `retry_max` retries were already made
  placement_timeout_cap, ///< the `placement_timeout_attempts`-th placement timeout
  runtime_gone,          ///< `runtime_gone` somewhere in the tree: no further attempt
};

/// Renders the reason's name.
std::string to_string(give_up_reason x);

/// What to do after a failed attempt.
struct retry_decision {
  bool retry = false;   ///< true: make another attempt after `delay_ms`
  int64_t delay_ms = 0; ///< actor-clock delay before the next attempt (retry only)
  /// Retry only: invalidate the target's cached address before the next attempt. Always true
  /// on a retry: every attempt is fresh through placement
  /// (docs/behaviour/classification.md#retry-policies, S12.21).
  bool invalidate_target = false;
  /// Retry only: one of docs/behaviour/classification.md#retry-policies's transient hub conditions
  /// (`re_resolves`): re-resolve the route (placement, and for a pod hub the owner's claim).
  bool re_resolve = false;
  /// Retry only: silos named by `departed_silo` nodes; drop every cache entry naming one.
  std::vector<silo_address> departed;
  give_up_reason reason = give_up_reason::none; ///< give-up only
  /// Give-up only: the NACK verdict for the fault arm, `classify(fault)`
  /// (docs/behaviour/classification.md#fault-trees-on-the-wire).
  routing::verdict verdict = verdict::failed;
};

/// The retry bookkeeping of one call under one policy
/// (docs/behaviour/classification.md#retry-policies). A leg creates one per grain call it makes and
/// reports each failed attempt to `next`. Not thread-safe; lives inside one actor's state.
class retry_state {
public:
  explicit retry_state(retry_policy policy);

  /// Records that the current attempt failed with `f` and decides, in this order:
  /// 1. `runtime_gone` anywhere in `f` -> give up (`runtime_gone`), whatever the policy;
  /// 2. `placement_timeout` anywhere in `f` counts one placement-timeout attempt; reaching
  ///    `placement_timeout_attempts` -> give up (`placement_timeout_cap`);
  /// 3. the policy's predicate refuses `f` -> give up (`not_retryable`);
  /// 4. `retry_max` retries already made -> give up (`budget_exhausted`);
  /// 5. otherwise retry after `policy.delay_ms(retries_made, retry_hint_ms(f))`.
  /// Calling `next` after a give-up keeps answering give-up (`budget_exhausted` at least).
  retry_decision next(const fault& f);

  /// Attempts made so far, i.e. failures reported plus the attempt now running (starts 1).
  int64_t attempts() const { return retries_ + 1; }

  /// Retries granted so far.
  int64_t retries() const { return retries_; }

  /// Attempts that ended in `placement_timeout`.
  int64_t placement_timeouts() const { return placement_timeouts_; }

  /// True once `next` answered give-up.
  bool given_up() const { return given_up_; }

  const retry_policy& policy() const { return policy_; }

private:
  retry_policy policy_;
  int64_t retries_ = 0;
  int64_t placement_timeouts_ = 0;
  bool given_up_ = false;
};

} // namespace cafmesh::routing
