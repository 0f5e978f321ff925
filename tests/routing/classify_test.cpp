// Classification (docs/behaviour/classification.md) and the result arm
// (docs/behaviour/routing.md#legs, docs/behaviour/classification.md#results-that-carry-a-verdict).

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/retry_policy.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;

namespace {

/// `s` as a JSON string literal, as a property value looks after crossing a hop.
std::string nlohmann_quote_for_test(const std::string& s) {
  return nlohmann::json(s).dump();
}

fault F(mesh_errc c, std::vector<fault> causes = {}) {
  return fault{c, to_string(c), std::move(causes)};
}

fault deact(tri_bool recorded, std::vector<fault> causes = {}) {
  auto f = F(mesh_errc::activation_deactivated, std::move(causes));
  f.activation_error_recorded = recorded;
  return f;
}

fault gone(probe_answer probe) {
  auto f = F(mesh_errc::runtime_gone);
  f.probe = probe;
  return f;
}

/// An aggregate: the root plays .NET's AggregateException around `causes`.
fault aggregate(std::vector<fault> causes) {
  return fault{mesh_errc::application, "one or more errors occurred", std::move(causes)};
}

envelope failed_result(std::string error_json, std::string verdict_json = {}) {
  envelope e;
  e.id = "t-1";
  e.sender = address::from("portal/alice/tab1");
  e.target = address::from("node/Org/Acme");
  e.state = delivery_state::failed;
  if (!error_json.empty())
    e.properties["error"] = std::move(error_json);
  if (!verdict_json.empty())
    e.properties["verdict"] = std::move(verdict_json);
  return e;
}

/// Runs a router-policy leg whose every attempt fails with `f`; answers the attempts made
/// and the final decision.
std::pair<int64_t, retry_decision> run_leg(const fault& f, const retry_policy& p) {
  retry_state st{p};
  for (;;) {
    auto d = st.next(f);
    if (!d.retry)
      return {st.attempts(), d};
  }
}

const std::vector<mesh_errc> all_codes = {
  mesh_errc::rejected,          mesh_errc::overloaded,        mesh_errc::response_timeout,
  mesh_errc::stream_post_timeout, mesh_errc::placement_timeout, mesh_errc::no_compatible_silo,
  mesh_errc::directory_unstable, mesh_errc::silo_unavailable,  mesh_errc::lifecycle_cancelled,
  mesh_errc::departed_silo,     mesh_errc::activation_deactivated, mesh_errc::runtime_gone,
  mesh_errc::pod_hub_not_here,  mesh_errc::oversized,         mesh_errc::not_found,
  mesh_errc::resolve_failed,    mesh_errc::pool_refused,      mesh_errc::leg_crashed,
  mesh_errc::extension_missing, mesh_errc::invalid_operation, mesh_errc::application,
  mesh_errc::lifecycle_misuse,  mesh_errc::config_invalid,
};

const tri_bool all_recorded[] = {tri_bool::unknown, tri_bool::no, tri_bool::yes};
const probe_answer all_probes[] = {probe_answer::no_answer, probe_answer::alive,
                                   probe_answer::torn_down};

} // namespace

// -- the docs/behaviour/classification.md#codes table, row by row ---------------------------------

TEST_CASE("classify: every row of the codes table, read on a single node") {
  struct row {
    fault f;
    bool transient;
    bool resendable;
    verdict v;          // classify()
    verdict direct;     // node_verdict() (the table's column, used by the direct arms)
    leg_retry in_leg;
  };
  const std::vector<row> rows = {
    {F(mesh_errc::rejected), true, true, verdict::failed, verdict::failed, leg_retry::yes},
    {F(mesh_errc::overloaded), true, true, verdict::failed, verdict::failed, leg_retry::yes},
    {F(mesh_errc::response_timeout), true, false, verdict::failed, verdict::failed, leg_retry::no},
    {F(mesh_errc::stream_post_timeout), true, false, verdict::failed, verdict::failed,
     leg_retry::no},
    {F(mesh_errc::placement_timeout), true, true, verdict::unavailable, verdict::unavailable,
     leg_retry::capped},
    {F(mesh_errc::no_compatible_silo), true, true, verdict::shutting_down,
     verdict::shutting_down, leg_retry::yes},
    {F(mesh_errc::directory_unstable), true, true, verdict::shutting_down,
     verdict::shutting_down, leg_retry::re_resolving},
    {F(mesh_errc::silo_unavailable), true, true, verdict::shutting_down, verdict::shutting_down,
     leg_retry::re_resolving},
    {F(mesh_errc::lifecycle_cancelled), true, true, verdict::shutting_down,
     verdict::shutting_down, leg_retry::re_resolving},
    {F(mesh_errc::departed_silo), true, true, verdict::shutting_down, verdict::shutting_down,
     leg_retry::re_resolving},
    {deact(tri_bool::no), true, true, verdict::shutting_down, verdict::shutting_down,
     leg_retry::re_resolving},
    {deact(tri_bool::yes), true, true, verdict::failed, verdict::failed, leg_retry::yes},
    {deact(tri_bool::unknown), true, true, verdict::failed, verdict::failed, leg_retry::yes},
    {gone(probe_answer::torn_down), true, true, verdict::shutting_down, verdict::shutting_down,
     leg_retry::stop_at_once},
    {gone(probe_answer::alive), false, false, verdict::failed, verdict::failed, leg_retry::no},
    {gone(probe_answer::no_answer), false, false, verdict::failed, verdict::failed,
     leg_retry::no},
    {F(mesh_errc::pod_hub_not_here), true, true, verdict::shutting_down, verdict::shutting_down,
     leg_retry::no},
    {F(mesh_errc::oversized), false, false, verdict::failed, verdict::rejected, leg_retry::no},
    {F(mesh_errc::not_found), false, false, verdict::failed, verdict::not_found, leg_retry::no},
    {F(mesh_errc::resolve_failed), false, false, verdict::failed, verdict::failed, leg_retry::no},
    {F(mesh_errc::pool_refused), false, false, verdict::failed, verdict::failed, leg_retry::no},
    {F(mesh_errc::leg_crashed), false, false, verdict::failed, verdict::failed, leg_retry::no},
    {F(mesh_errc::extension_missing), false, false, verdict::failed, verdict::failed,
     leg_retry::no},
    {F(mesh_errc::invalid_operation), false, false, verdict::failed, verdict::failed,
     leg_retry::no},
    {F(mesh_errc::application), false, false, verdict::failed, verdict::failed, leg_retry::no},
    {F(mesh_errc::lifecycle_misuse), false, false, verdict::failed, verdict::failed,
     leg_retry::no},
    {F(mesh_errc::config_invalid), false, false, verdict::failed, verdict::failed,
     leg_retry::no},
  };
  for (const auto& r : rows) {
    CAPTURE(to_string(r.f.code));
    CAPTURE(to_string(r.f.activation_error_recorded));
    CAPTURE(to_string(r.f.probe));
    CHECK(is_transient(r.f) == r.transient);
    CHECK(is_resendable(r.f) == r.resendable);
    CHECK(has_response_timeout(r.f) == (r.transient && !r.resendable));
    CHECK(to_string(classify(r.f)) == to_string(r.v));
    CHECK(to_string(node_verdict(r.f)) == to_string(r.direct));
    CHECK(to_string(retry_in_leg(r.f)) == to_string(r.in_leg));
    CHECK(to_string(retry_in_leg(r.f.code, r.f.activation_error_recorded, r.f.probe))
          == to_string(r.in_leg));
  }
}

TEST_CASE("classify: qualifiers are read on their own node, not on the root") {
  // Root recorded = yes (failed), cause recorded = no (shutting_down): the cause decides.
  auto f = deact(tri_bool::yes, {deact(tri_bool::no)});
  CHECK(classify(f) == verdict::shutting_down);
  // Reversed: root no, cause yes -> still shutting_down (any node).
  CHECK(classify(deact(tri_bool::no, {deact(tri_bool::yes)})) == verdict::shutting_down);
  // Both yes/unknown: failed.
  CHECK(classify(deact(tri_bool::yes, {deact(tri_bool::unknown)})) == verdict::failed);
  // runtime_gone: an alive root does not hide a torn-down cause, and vice versa.
  auto alive_root = gone(probe_answer::alive);
  alive_root.causes.push_back(gone(probe_answer::torn_down));
  CHECK(is_transient(alive_root));
  CHECK(classify(alive_root) == verdict::shutting_down);
  auto torn_root = gone(probe_answer::torn_down);
  torn_root.causes.push_back(gone(probe_answer::alive));
  CHECK(is_transient(torn_root));
  // A response timeout deep down caps any tree at failed.
  auto deep = aggregate({aggregate({aggregate({F(mesh_errc::rejected),
                                               F(mesh_errc::stream_post_timeout)})}),
                         F(mesh_errc::departed_silo)});
  CHECK(is_transient(deep));
  CHECK(has_response_timeout(deep));
  CHECK_FALSE(is_resendable(deep));
  CHECK(classify(deep) == verdict::failed);
}

TEST_CASE("classify: placement_timeout alone is unavailable, beside a shutting_down node it is "
          "shutting_down") {
  CHECK(classify(F(mesh_errc::placement_timeout)) == verdict::unavailable);
  CHECK(classify(aggregate({F(mesh_errc::placement_timeout), F(mesh_errc::rejected)}))
        == verdict::unavailable);
  CHECK(classify(aggregate({F(mesh_errc::placement_timeout), F(mesh_errc::silo_unavailable)}))
        == verdict::shutting_down);
  CHECK(classify(aggregate({F(mesh_errc::rejected), F(mesh_errc::overloaded)}))
        == verdict::failed);
}

// -- scenarios at the classification level ----------------------------------------

TEST_CASE("classify: S12.24 response_timeout alone, at cause index 0 and at index 1 beside "
          "rejected makes 1 attempt with verdict failed, transient yes, resendable no") {
  const std::vector<fault> cases = {
    F(mesh_errc::response_timeout),
    aggregate({F(mesh_errc::response_timeout)}),
    aggregate({F(mesh_errc::response_timeout), F(mesh_errc::rejected)}),
    aggregate({F(mesh_errc::rejected), F(mesh_errc::response_timeout)}),
    F(mesh_errc::rejected, {F(mesh_errc::response_timeout)}),
  };
  auto router = router_policy(config::routing_section{});
  auto client = client_policy(config::client_section{});
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    const auto& f = cases[i];
    CHECK(is_transient(f));
    CHECK(has_response_timeout(f));
    CHECK_FALSE(is_resendable(f));
    CHECK(classify(f) == verdict::failed);
    auto [attempts, last] = run_leg(f, router);
    CHECK(attempts == 1);
    CHECK(last.reason == give_up_reason::not_retryable);
    CHECK(last.verdict == verdict::failed);
    auto [client_attempts, client_last] = run_leg(f, client);
    CHECK(client_attempts == 1);
    CHECK(client_last.verdict == verdict::failed);
  }
}

TEST_CASE("classify: S12.31 departed_silo, silo_unavailable, directory_unstable and "
          "lifecycle_cancelled alone or at cause index 1 beside application re-resolve for 7 "
          "attempts and end shutting_down") {
  const mesh_errc codes[] = {mesh_errc::departed_silo, mesh_errc::silo_unavailable,
                             mesh_errc::directory_unstable, mesh_errc::lifecycle_cancelled};
  auto router = router_policy(config::routing_section{});
  for (auto c : codes) {
    for (const auto& f : {F(c), aggregate({F(mesh_errc::application), F(c)})}) {
      CAPTURE(to_string(c));
      CAPTURE(f.causes.size());
      CHECK(is_resendable(f));
      CHECK(re_resolves(f));
      CHECK(may_retry_in_leg(f));
      CHECK(classify(f) == verdict::shutting_down);
      retry_state st{router};
      int retries = 0;
      for (;;) {
        auto d = st.next(f);
        if (!d.retry) {
          CHECK(d.reason == give_up_reason::budget_exhausted);
          CHECK(d.verdict == verdict::shutting_down);
          break;
        }
        CHECK(d.re_resolve);
        CHECK(d.invalidate_target);
        ++retries;
      }
      CHECK(retries == 6);
      CHECK(st.attempts() == 7);
    }
  }
}

TEST_CASE("classify: S12.32 verdicts, rejected, application unable to connect, extension_missing, overloaded, "
          "invalid_operation and response_timeout classify failed") {
  const std::vector<fault> cases = {
    F(mesh_errc::rejected),
    fault{mesh_errc::application, "Unable to connect to https://api.example"},
    F(mesh_errc::extension_missing),
    F(mesh_errc::overloaded),
    F(mesh_errc::invalid_operation),
    F(mesh_errc::response_timeout),
  };
  for (const auto& f : cases) {
    CAPTURE(f.text);
    CHECK(to_string(classify(f)) == "failed");
  }
  // rejected and overloaded are resendable (retried in the leg) yet still end failed.
  CHECK(is_resendable(cases[0]));
  CHECK(is_resendable(cases[3]));
  // The application's own "unable to connect" is not a departed silo.
  CHECK_FALSE(is_transient(cases[1]));
}

TEST_CASE("classify: S12.33 verdicts, activation_deactivated recorded no is shutting_down alone and in a two-cause "
          "tree, recorded yes and unknown are failed") {
  CHECK(classify(deact(tri_bool::no)) == verdict::shutting_down);
  CHECK(classify(aggregate({F(mesh_errc::application), deact(tri_bool::no)}))
        == verdict::shutting_down);
  CHECK(classify(aggregate({deact(tri_bool::no), F(mesh_errc::rejected)}))
        == verdict::shutting_down);
  CHECK(classify(deact(tri_bool::yes)) == verdict::failed);
  CHECK(classify(deact(tri_bool::unknown)) == verdict::failed);
  CHECK(classify(aggregate({F(mesh_errc::application), deact(tri_bool::yes)}))
        == verdict::failed);
  CHECK(classify(aggregate({F(mesh_errc::application), deact(tri_bool::unknown)}))
        == verdict::failed);
  // Only recorded = no re-resolves.
  CHECK(re_resolves(deact(tri_bool::no)));
  CHECK_FALSE(re_resolves(deact(tri_bool::yes)));
  CHECK_FALSE(re_resolves(deact(tri_bool::unknown)));
}

TEST_CASE("classify: S12.34 runtime_gone torn_down is shutting_down with no further attempt, "
          "alive or no answer is failed") {
  for (auto kind : {policy_kind::router, policy_kind::client, policy_kind::attach}) {
    CAPTURE(to_string(kind));
    auto p = make_policy(config::mesh_config{}, kind);
    auto [attempts, last] = run_leg(gone(probe_answer::torn_down), p);
    CHECK(attempts == 1);
    CHECK(last.reason == give_up_reason::runtime_gone);
    CHECK(last.verdict == verdict::shutting_down);
    // Even beside a retryable cause, runtime_gone ends the loop at once.
    auto [attempts2, last2] = run_leg(aggregate({F(mesh_errc::rejected),
                                                 gone(probe_answer::torn_down)}),
                                      p);
    CHECK(attempts2 == 1);
    CHECK(last2.reason == give_up_reason::runtime_gone);
  }
  CHECK(classify(gone(probe_answer::torn_down)) == verdict::shutting_down);
  CHECK(classify(gone(probe_answer::alive)) == verdict::failed);
  CHECK(classify(gone(probe_answer::no_answer)) == verdict::failed);
  CHECK_FALSE(is_transient(gone(probe_answer::alive)));
  CHECK_FALSE(is_transient(gone(probe_answer::no_answer)));
  auto [attempts, last] = run_leg(gone(probe_answer::alive), router_policy({}));
  CHECK(attempts == 1);
  CHECK(last.verdict == verdict::failed);
}

TEST_CASE("classify: re_resolves and departed_silos name the transient hub conditions of 6.6") {
  CHECK_FALSE(re_resolves(F(mesh_errc::rejected)));
  CHECK_FALSE(re_resolves(F(mesh_errc::no_compatible_silo)));
  CHECK_FALSE(re_resolves(F(mesh_errc::placement_timeout)));
  CHECK(re_resolves(aggregate({F(mesh_errc::rejected), F(mesh_errc::lifecycle_cancelled)})));
  silo_address b{"b", 11111, 7};
  silo_address c{"c", 11111, 3};
  auto d1 = F(mesh_errc::departed_silo);
  d1.silo = b;
  auto d2 = F(mesh_errc::departed_silo);
  d2.silo = c;
  auto d3 = F(mesh_errc::departed_silo);
  d3.silo = b; // duplicate
  auto tree = aggregate({d1, F(mesh_errc::rejected, {d2}), d3, F(mesh_errc::departed_silo)});
  auto silos = departed_silos(tree);
  REQUIRE(silos.size() == 2);
  CHECK(silos[0] == b);
  CHECK(silos[1] == c);
  CHECK(find_code(tree, mesh_errc::rejected) != nullptr);
  CHECK(find_code(tree, mesh_errc::oversized) == nullptr);
}

TEST_CASE("classify: pod_hub_not_here is transient and shutting_down but never retried in a leg") {
  auto f = F(mesh_errc::pod_hub_not_here);
  CHECK(is_resendable(f));
  CHECK(classify(f) == verdict::shutting_down);
  CHECK(has_leg_exclusion(f));
  CHECK_FALSE(may_retry_in_leg(f));
  CHECK_FALSE(may_retry_in_leg(aggregate({F(mesh_errc::rejected), f})));
  auto [attempts, last] = run_leg(f, router_policy({}));
  CHECK(attempts == 1);
  CHECK(last.verdict == verdict::shutting_down);
  // The client and attach policies have no in-leg exclusion.
  auto [client_attempts, client_last] = run_leg(f, client_policy({}));
  CHECK(client_attempts == 6);
  CHECK(client_last.reason == give_up_reason::budget_exhausted);
}

// -- S12.36 -----------------------------------------------------------------------

namespace {

fault random_tree(std::mt19937_64& rng, int depth) {
  fault f;
  f.code = all_codes[rng() % all_codes.size()];
  f.text = to_string(f.code);
  f.activation_error_recorded = all_recorded[rng() % 3];
  f.probe = all_probes[rng() % 3];
  if (rng() % 4 == 0)
    f.retry_after_ms = static_cast<uint32_t>(rng() % 5000);
  if (depth < 4) {
    auto n = rng() % 4; // 0..3 causes
    for (uint64_t i = 0; i < n; ++i)
      f.causes.push_back(random_tree(rng, depth + 1));
  }
  return f;
}

int tree_depth(const fault& f) {
  int d = 0;
  for (const auto& c : f.causes)
    d = std::max(d, tree_depth(c));
  return d + 1;
}

void check_invariant(const fault& f) {
  auto v = classify(f);
  if (v == verdict::shutting_down)
    REQUIRE(is_resendable(f));
  if (is_resendable(f))
    REQUIRE(is_transient(f));
  REQUIRE((v == verdict::shutting_down || v == verdict::unavailable || v == verdict::failed));
  // The router predicate is never wider than resendability.
  if (may_retry_in_leg(f))
    REQUIRE(is_resendable(f));
}

} // namespace

TEST_CASE("S12.36 classify shutting_down implies resendable implies transient for every code, "
          "every qualifier and 10,000 seeded random trees of depth up to 4") {
  // Every code with every qualifier value, alone and as the single cause of each code.
  size_t singles = 0;
  for (auto c : all_codes)
    for (auto r : all_recorded)
      for (auto p : all_probes) {
        fault f{c, to_string(c)};
        f.activation_error_recorded = r;
        f.probe = p;
        check_invariant(f);
        for (auto outer : all_codes) {
          check_invariant(fault{outer, "outer", {f}});
          check_invariant(aggregate({F(outer), f}));
        }
        ++singles;
      }
  CHECK(singles == all_codes.size() * 9);
  // 10,000 random trees from the simulation seed's sub-stream.
  std::mt19937_64 rng{config::simulation_section{}.seed ^ fnv1a64("S12.36")};
  size_t shutting = 0, unavailable = 0, resendable_failed = 0, transient_only = 0;
  int max_depth = 0;
  for (int i = 0; i < 10000; ++i) {
    auto f = random_tree(rng, 1);
    max_depth = std::max(max_depth, tree_depth(f));
    check_invariant(f);
    auto v = classify(f);
    if (v == verdict::shutting_down)
      ++shutting;
    else if (v == verdict::unavailable)
      ++unavailable;
    else if (is_resendable(f))
      ++resendable_failed;
    if (is_transient(f) && !is_resendable(f))
      ++transient_only;
  }
  CHECK(max_depth == 4);
  // Non-vacuity: every layer of the implication chain is populated.
  CHECK(shutting > 100);
  CHECK(unavailable > 10);
  CHECK(resendable_failed > 10);
  CHECK(transient_only > 100);
}

// -- the result arm and the text rule -----------------------------------------------

TEST_CASE("classify: result arm of S12.29, carried verdicts beat the text, each failed result gives one NACK with its "
          "carried verdict and text, a failed-and-NACKed result gives none") {
  auto r1 = judge_result(failed_result("\"Hub is shutting down\"", "\"shutting_down\""));
  CHECK(r1.nack());
  CHECK(r1.action == result_action::nack_carried);
  CHECK(r1.verdict == verdict::shutting_down);
  CHECK(r1.text == "Hub is shutting down");
  auto r2 = judge_result(failed_result("\"Hub disposed before delivery\"", "\"shutting_down\""));
  CHECK(r2.nack());
  CHECK(r2.action == result_action::nack_carried);
  CHECK(r2.verdict == verdict::shutting_down);
  CHECK(r2.text == "Hub disposed before delivery");
  auto r3 = judge_result(failed_result("\"activation faulted\"", "\"unavailable\""));
  CHECK(r3.nack());
  CHECK(r3.verdict == verdict::unavailable);
  CHECK(r3.text == "activation faulted");
  // A carried verdict beats the text rule in both directions.
  auto r4 = judge_result(failed_result("\"Hub portal/x is shutting down\"", "\"failed\""));
  CHECK(r4.verdict == verdict::failed);
  // A bare (unquoted) verdict name is accepted as well.
  CHECK(judge_result(failed_result("\"x\"", "unavailable")).verdict == verdict::unavailable);
  // Failed-and-NACKed: no NACK, even with a verdict property.
  auto nacked = failed_result("\"Hub is shutting down\"", "\"shutting_down\"");
  mark_failed_and_nacked(nacked);
  auto r5 = judge_result(nacked);
  CHECK_FALSE(r5.nack());
  CHECK(r5.action == result_action::already_nacked);
}

TEST_CASE("classify: result arm of S12.30, the text rule matches is shutting down also inside a JSON string literal, "
          "No node found stays failed") {
  const std::string owner =
    "Hub portal/x is shutting down (activation #00c0ffee)… Rejecting now.";
  CHECK(text_rule(owner) == verdict::shutting_down);
  auto quoted = nlohmann_quote_for_test(owner);
  CHECK(quoted.front() == '"');
  CHECK(text_rule(quoted) == verdict::shutting_down);
  auto r = judge_result(failed_result(quoted));
  CHECK(r.action == result_action::nack_text_rule);
  CHECK(r.verdict == verdict::shutting_down);
  CHECK(r.text == owner);
  auto nf = judge_result(failed_result("\"No node found at 'Doc/Missing'.\""));
  CHECK(nf.action == result_action::nack_text_rule);
  CHECK(nf.verdict == verdict::failed);
  CHECK(nf.text == "No node found at 'Doc/Missing'.");
  CHECK(text_rule("No node found at 'Doc/Missing'.") == verdict::failed);
  CHECK(text_rule("No route to portal/x") == verdict::failed);
  CHECK(text_rule("HUB portal/x IS SHUTTING DOWN") == verdict::shutting_down);
  // Escapes inside the literal are undone before matching.
  CHECK(text_rule("\"is\\u0020shutting down\"") == verdict::shutting_down);
  // Not a literal: matched as is.
  CHECK(text_rule("is shutting") == verdict::failed);
  // No error property at all: failed.
  CHECK(judge_result(failed_result("")).verdict == verdict::failed);
}

TEST_CASE("classify: owner refusal versus router text per 7.4") {
  auto x = address::from("portal/x");
  const std::string owner =
    "Hub portal/x is shutting down (activation #00c0ffee); the address may reactivate after a "
    "recycle or restart. Rejecting now.";
  CHECK(is_owner_refusal(owner, x));
  CHECK(is_owner_refusal(nlohmann_quote_for_test(owner), x));
  CHECK(is_owner_refusal(owner, address::from("portal/x~mesh/m1")));
  CHECK(is_owner_refusal("Hub portal/x~cache/m1 is shutting down (activation #1a2b3c4d)", x));
  CHECK_FALSE(is_owner_refusal(owner, address::from("portal/y")));
  CHECK_FALSE(is_owner_refusal(owner, address::from("portal/x/sub")));
  CHECK_FALSE(is_owner_refusal("Host is shutting down, cannot route to portal/x", x));
  CHECK_FALSE(is_owner_refusal("Mesh is shutting down, cannot route to portal/x", x));
  CHECK_FALSE(is_owner_refusal("No node found at 'portal/x'", x));
  CHECK_FALSE(is_owner_refusal("Hub is shutting down", x));
  // A router text that quotes an owner banner for another hub does not make x the subject.
  CHECK_FALSE(is_owner_refusal("Hub portal/y is shutting down; cannot route to portal/x", x));
  // All of them are shutting_down by the text rule, owner or not.
  CHECK(text_rule("Host is shutting down, cannot route to portal/x") == verdict::shutting_down);
}

TEST_CASE("classify: results that land produce no NACK, not_found and rejected states do") {
  for (auto s : {delivery_state::processed, delivery_state::submitted, delivery_state::forwarded,
                 delivery_state::ignored}) {
    envelope e;
    e.state = s;
    e.properties["error"] = "\"Hub portal/x is shutting down\"";
    auto r = judge_result(e);
    CAPTURE(to_string(s));
    CHECK(r.action == result_action::landed);
    CHECK_FALSE(r.nack());
  }
  envelope nf;
  nf.state = delivery_state::not_found;
  nf.properties["error"] = "\"No node found at 'Doc/Missing'.\"";
  auto r = judge_result(nf);
  CHECK(r.action == result_action::nack_state);
  CHECK(r.verdict == verdict::not_found);
  CHECK(r.text == "No node found at 'Doc/Missing'.");
  envelope rej;
  rej.state = delivery_state::rejected;
  CHECK(judge_result(rej).verdict == verdict::rejected);
  // A carried `ignored` is never NACKed; an unknown verdict name falls back to the text rule.
  CHECK(judge_result(failed_result("\"x\"", "\"ignored\"")).action == result_action::landed);
  auto unk = judge_result(failed_result("\"Hub is shutting down\"", "\"bogus\""));
  CHECK(unk.action == result_action::nack_text_rule);
  CHECK(unk.verdict == verdict::shutting_down);
}
