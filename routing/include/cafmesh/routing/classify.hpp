#pragma once

/// @file
/// Failure classification (docs/behaviour/classification.md): the three nested predicates over a
/// fault tree, the NACK verdict, the "Retry in leg" column of
/// docs/behaviour/classification.md#codes, the transient hub conditions that re-resolve
/// (docs/behaviour/classification.md#retry-policies), and the result arm with its text rule
/// (docs/behaviour/routing.md#legs, docs/behaviour/classification.md#results-that-carry-a-verdict).
/// Pure functions: no actors, no state, no logging. CAF enters only through `fault.hpp` and
/// `envelope.hpp`.
///
/// Invariant (docs/behaviour/classification.md), true for every fault tree by construction:
/// `classify(f) == shutting_down` => `is_resendable(f)` => `is_transient(f)`.

#include <cstdint>
#include <string>
#include <vector>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::routing {

// -- one node -------------------------------------------------------------------------------------
// docs/behaviour/classification.md#codes table, qualifiers read on the node itself

/// The "Transient" column of docs/behaviour/classification.md#codes for the single node `node`
/// (causes ignored).
/// `runtime_gone` is transient only when its own probe answered `torn_down`; every other
/// qualifier value, and every code outside the table's transient rows, is not transient.
bool is_transient_node(const fault& node);

/// True if `node` itself is `response_timeout` or `stream_post_timeout` (causes ignored).
bool is_response_timeout_node(const fault& node);

/// The "Verdict" column of docs/behaviour/classification.md#codes for the single node `node`
/// (causes ignored):
/// `shutting_down` for no_compatible_silo, directory_unstable, silo_unavailable,
/// lifecycle_cancelled, departed_silo, pod_hub_not_here, activation_deactivated with
/// recorded = no, runtime_gone with probe torn_down; `unavailable` for placement_timeout;
/// `rejected` for oversized; `not_found` for not_found; `failed` for everything else.
/// This is what the direct arms use (oversized, not-found, not-here); the fault arm uses
/// `classify`, which never yields `rejected` or `not_found`
/// (docs/behaviour/classification.md#fault-trees-on-the-wire).
verdict node_verdict(const fault& node);

/// The "Retry in leg" column of docs/behaviour/classification.md#codes, one value per row.
enum class leg_retry : uint8_t {
  no,  ///< never retried inside a leg
  yes, ///< retried while the router budget lasts
  /// retried after invalidating the cached route (docs/behaviour/classification.md#retry-policies,
  /// goes further)
  re_resolving,
  capped,       ///< retried, but at most `routing.placement_timeout_attempts` such attempts
  stop_at_once, ///< `runtime_gone` with probe torn_down: the loop ends at once
};

/// Renders `no`, `yes`, `re_resolving`, `capped` or `stop_at_once`.
std::string to_string(leg_retry x);

/// The "Retry in leg" column for one code and its qualifiers
/// (docs/behaviour/classification.md#codes). `recorded` is read only for `activation_deactivated`,
/// `probe` only for `runtime_gone`.
leg_retry retry_in_leg(mesh_errc code, tri_bool recorded = tri_bool::unknown,
                       probe_answer probe = probe_answer::no_answer);

/// The "Retry in leg" column for the single node `node` (causes ignored).
leg_retry retry_in_leg(const fault& node);

// -- the whole tree -------------------------------------------------------------------------------
// docs/behaviour/classification.md#fault-trees-on-the-wire

/// Any node of `f` (root included, any depth) is transient per `is_transient_node`.
bool is_transient(const fault& f);

/// Any node of `f` is `response_timeout` or `stream_post_timeout`, at any depth and any
/// position among siblings.
bool has_response_timeout(const fault& f);

/// `is_transient(f) && !has_response_timeout(f)`: may this non-idempotent delivery be sent
/// again? (docs/behaviour/classification.md)
bool is_resendable(const fault& f);

/// The NACK verdict of the fault arm (docs/behaviour/classification.md#fault-trees-on-the-wire):
/// `failed` if `f` is not resendable; else
/// `shutting_down` if any node's `node_verdict` is `shutting_down`; else `unavailable` if any
/// node's is `unavailable`; else `failed`. Never answers any other verdict.
verdict classify(const fault& f);

/// The first node (pre-order, root first) whose code is `code`, or null.
const fault* find_code(const fault& f, mesh_errc code);

/// True if any node of `f` has code `code`.
inline bool contains_code(const fault& f, mesh_errc code) {
  return find_code(f, code) != nullptr;
}

/// True if some node of `f` is one of docs/behaviour/classification.md#retry-policies's transient
/// hub conditions, which invalidate the cached route and re-resolve before the next attempt:
/// `activation_deactivated` with recorded = no (on that node), `departed_silo`, `silo_unavailable`,
/// `directory_unstable`,
/// `lifecycle_cancelled`.
bool re_resolves(const fault& f);

/// The silos named by `departed_silo` nodes of `f` (pre-order, without duplicates): every
/// directory-cache entry naming one of them is invalidated
/// (docs/behaviour/classification.md#retry-policies).
std::vector<silo_address> departed_silos(const fault& f);

/// True if some node of `f` is an in-leg exclusion: a code whose row may be resendable but
/// whose "Retry in leg" entry is "no"/"stop at once" for reasons other than resendability,
/// i.e. `pod_hub_not_here` (docs/behaviour/routing.md#hubs) and `runtime_gone` with any probe
/// answer (docs/behaviour/classification.md#retry-policies: this process cannot make another
/// attempt). Non-transient codes such as `application` are not exclusions: beside a transient cause
/// they do not stop the retry (S12.31).
bool has_leg_exclusion(const fault& f);

/// The router retry predicate (docs/behaviour/classification.md#retry-policies row "router"):
/// `is_resendable(f)` and no in-leg exclusion (`has_leg_exclusion`). The attempt budget and the
/// placement-timeout cap are applied by `retry_state` (retry_policy.hpp), not here.
bool may_retry_in_leg(const fault& f);

/// The largest `retry_after_ms` hint anywhere in `f`, or 0 when no node carries one.
uint32_t retry_hint_ms(const fault& f);

// -- the result arm and the text rule -------------------------------------------------------------
// docs/behaviour/routing.md#legs, docs/behaviour/classification.md#results-that-carry-a-verdict

/// If `text` is a JSON string literal (it crossed a hop, e.g. `"Hub x is shutting down"`
/// with the quotes), its unquoted, unescaped value; otherwise `text` unchanged. Parsing uses
/// nlohmann::json and never throws.
std::string unquote_json_string(const std::string& text);

/// The text rule (docs/behaviour/classification.md#results-that-carry-a-verdict): `shutting_down`
/// if the (unquoted) text contains "is shutting down" in any letter case, otherwise `failed`.
verdict text_rule(const std::string& error_text);

/// True if `text` (unquoted first) is an owner's refusal for `target`
/// (docs/behaviour/classification.md#results-that-carry-a-verdict, docs/behaviour/routing.md#hubs):
/// it contains "Hub {address} is shutting down" whose subject, with any `~host` suffix removed, is
/// the target's own path `type/id` (the target's `~host` chain is ignored as well). Router texts
/// ("Host is shutting down, cannot route to X", "Mesh is shutting down, …") never make the target
/// the subject and answer false.
bool is_owner_refusal(const std::string& text, const address& target);

/// What the result arm does with a target's answer (docs/behaviour/routing.md#legs).
enum class result_action : uint8_t {
  landed,         ///< processed, submitted, forwarded, ignored: no NACK
  already_nacked, ///< failed-and-NACKed: the target answered the sender itself, no NACK
  nack_carried,   ///< failed with a carried `properties["verdict"]`: NACK with it
  nack_text_rule, ///< failed without a (known) verdict: NACK with `text_rule`
  nack_state,     ///< state `not_found` / `rejected`: NACK with the matching verdict
};

/// Renders the action's name.
std::string to_string(result_action x);

/// The result arm's decision for one answered envelope.
struct result_decision {
  result_action action = result_action::landed;
  /// The NACK verdict; meaningful only when `nack()`.
  routing::verdict verdict = verdict::failed;
  /// The carried text: `properties["error"]` unquoted (empty when absent).
  std::string text;

  /// True for the three NACK actions.
  bool nack() const {
    return action == result_action::nack_carried || action == result_action::nack_text_rule
           || action == result_action::nack_state;
  }
};

/// Judges a target's answer (docs/behaviour/routing.md#legs result arm,
/// docs/behaviour/classification.md#results-that-carry-a-verdict):
/// - `failed` with `sender_was_nacked` -> `already_nacked` (checked first);
/// - `failed` with `properties["verdict"]` naming a verdict (bare or as a JSON string
///   literal) -> `nack_carried` with that verdict, whatever the text says; a carried
///   `ignored` produces no NACK (`landed`, docs/behaviour/envelope.md#verdicts); an unknown name
///   counts as absent;
/// - `failed` otherwise -> `nack_text_rule` with `text_rule(properties["error"])`;
/// - `not_found` / `rejected` (docs/behaviour/routing.md#legs is silent; cafmesh NACKs them with
///   the same-named verdict) -> `nack_state`;
/// - `processed`, `submitted`, `forwarded`, `ignored` -> `landed`.
result_decision judge_result(const envelope& result);

} // namespace cafmesh::routing
