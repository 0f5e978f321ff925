#include "cafmesh/mainjob/report.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace cafmesh::mainjob {

namespace {

using json = nlohmann::ordered_json;

std::string sample_text(uint64_t n, const std::vector<std::string>& ids) {
  auto out = std::to_string(n);
  if (ids.empty())
    return out;
  out += " (";
  for (size_t i = 0; i < ids.size(); ++i)
    out += (i == 0 ? "" : ", ") + ids[i];
  if (n > ids.size())
    out += ", ...";
  return out + ")";
}

uint64_t count_of(const std::map<routing::verdict, uint64_t>& xs, routing::verdict v) {
  auto i = xs.find(v);
  return i == xs.end() ? 0 : i->second;
}

uint64_t total_of(const std::map<routing::verdict, uint64_t>& xs) {
  uint64_t n = 0;
  for (auto& [v, k] : xs)
    n += k;
  return n;
}

json counts_json(const outcome_counts& c) {
  json j = json::object();
  j["accepted"] = c.accepted;
  j["landed"] = c.landed;
  j["nacked"] = c.nacked;
  j["deadlines"] = c.deadlines;
  j["suppressed_failures"] = c.suppressed_failures;
  j["unconfirmed"] = c.unconfirmed;
  j["lost"] = c.lost;
  return j;
}

json verdicts_json(const std::map<routing::verdict, uint64_t>& xs) {
  json j = json::object();
  for (auto& [v, n] : xs)
    j[routing::to_string(v)] = n;
  return j;
}

template <class T>
json optional_json(const std::optional<T>& x) {
  return x ? json(*x) : json(nullptr);
}

template <class T>
std::string optional_text(const std::optional<T>& x) {
  return x ? std::to_string(*x) : std::string{"-"};
}

/// Left-aligned columns separated by two spaces; the last column is not padded.
std::string columns(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> width;
  for (auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      width.resize(std::max(width.size(), row.size()));
      width[i] = std::max(width[i], row[i].size());
    }
  std::string out;
  for (auto& row : rows) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size())
        line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

} // namespace

std::string one_decimal_text(double x) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << x;
  return o.str();
}

request_tally requests_of(const report_input& in) {
  request_tally t;
  auto i = in.ledger.by_kind.find(delivery_kind::request);
  if (i == in.ledger.by_kind.end())
    return t;
  t.answered = i->second.landed;
  t.unanswered = i->second.accepted - i->second.landed;
  return t;
}

rates rates_of(const report_input& in) {
  rates r;
  // One-way deliveries whose success the sender cannot observe (`unconfirmed`) are neither
  // offered nor carried: the run cannot tell whether the mesh carried them.
  auto scheduled = in.traffic.paced + in.traffic.burst;
  r.offered = scheduled > in.ledger.total.unconfirmed ? scheduled - in.ledger.total.unconfirmed
                                                      : 0;
  r.carried = in.ledger.total.landed + in.traffic.withheld_frames_carried;
  if (r.offered > 0)
    r.carried_ratio = static_cast<double>(r.carried) / static_cast<double>(r.offered);
  if (in.duration_s <= 0)
    return r;
  auto d = static_cast<double>(in.duration_s);
  r.offered_per_s = static_cast<double>(r.offered) / d;
  r.carried_per_s = static_cast<double>(r.carried) / d;
  r.sent_per_s = static_cast<double>(in.ledger.total.accepted) / d;
  return r;
}

std::string decimal_text(double x) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(3);
  o << x;
  auto out = o.str();
  while (!out.empty() && out.back() == '0')
    out.pop_back();
  if (!out.empty() && out.back() == '.')
    out.pop_back();
  return out;
}

report make_report(report_input in) {
  report r;
  auto& l = in.ledger;
  auto add = [&](std::string name, bool ok, std::string detail) {
    r.checks.push_back({std::move(name), ok, std::move(detail)});
  };
  add("lost = 0", l.total.lost == 0, sample_text(l.total.lost, l.lost_ids));
  std::vector<std::string> violations;
  for (auto& v : l.order_violation_samples)
    violations.push_back(v.id + " " + v.target + " " + v.stream + " v" + std::to_string(v.version)
                         + " after v" + std::to_string(v.after_version));
  add("order violations = 0", l.order_violations == 0,
      sample_text(l.order_violations, violations));
  add("stale frames dropped = 0", l.stale_drops == 0, std::to_string(l.stale_drops));
  add("late copies after an unknown outcome = 0", l.late_copies == 0,
      sample_text(l.late_copies, l.late_copy_ids));
  add("one terminal outcome per delivery", l.multiple_terminal == 0,
      sample_text(l.multiple_terminal, l.multiple_terminal_ids));
  add("no NACK for an answer-suppressed delivery", l.nacks_on_suppressed == 0,
      std::to_string(l.nacks_on_suppressed));
  for (auto& st : in.silos)
    add("deliveries landed while " + st.name + " was out > 0", st.landed_while_out > 0,
        std::to_string(st.landed_while_out));
  if (in.mirrors_diverged)
    add("every mirror ends equal to its owner", *in.mirrors_diverged == 0,
        std::to_string(*in.mirrors_diverged));
  {
    uint64_t calls = 0;
    size_t co_hosted = 0;
    for (auto& e : in.entries)
      if (e.entry == "co-hosted") {
        ++co_hosted;
        calls += e.routing_default_calls;
      }
    if (co_hosted > 0)
      add("routing/default calls from co-hosted entries = 0", calls == 0,
          std::to_string(calls) + " (" + std::to_string(co_hosted) + " silo entries)");
  }
  if (in.node_exits)
    add("every rolled node process exited 0", in.node_exits_unclean == 0,
        std::to_string(in.node_exits_unclean) + " of " + std::to_string(*in.node_exits)
          + " did not");
  for (auto& [v, n] : in.expect.max_nacked) {
    auto got = count_of(l.nacked_by_verdict, v);
    add("NACKed " + routing::to_string(v) + " <= " + std::to_string(n),
        got <= static_cast<uint64_t>(n), std::to_string(got));
  }
  for (auto& [v, n] : in.expect.min_nacked) {
    auto got = count_of(l.nacked_by_verdict, v);
    add("NACKed " + routing::to_string(v) + " >= " + std::to_string(n),
        got >= static_cast<uint64_t>(n), std::to_string(got));
  }
  if (auto n = in.expect.max_request_resends_exhausted) {
    auto got = in.traffic.request_resends_exhausted;
    add("request chains exhausted <= " + std::to_string(*n), got <= static_cast<uint64_t>(*n),
        std::to_string(got));
  }
  for (auto& text : in.expect.forbidden_nack_texts) {
    std::vector<std::string> hits;
    for (auto& seen : l.nack_texts)
      if (seen.find(text) != std::string::npos)
        hits.push_back(seen);
    auto shown_hits = hits;
    if (shown_hits.size() > ledger_summary::sample_max)
      shown_hits.resize(ledger_summary::sample_max);
    add("no NACK text contains \"" + text + "\"", hits.empty(),
        sample_text(hits.size(), shown_hits));
  }
  for (auto& [v, texts] : in.expect.required_nack_texts) {
    std::vector<std::string> misses;
    if (auto i = l.nack_texts_by_verdict.find(v); i != l.nack_texts_by_verdict.end())
      for (auto& seen : i->second)
        if (std::none_of(texts.begin(), texts.end(), [&](const std::string& want) {
              return seen.find(want) != std::string::npos;
            }))
          misses.push_back(seen);
    auto total = misses.size();
    if (misses.size() > ledger_summary::sample_max)
      misses.resize(ledger_summary::sample_max);
    std::string wanted;
    for (auto& t : texts)
      wanted += (wanted.empty() ? "\"" : " or \"") + t + "\"";
    add("every " + routing::to_string(v) + " NACK text contains " + wanted, total == 0,
        sample_text(total, misses));
  }
  if (auto n = in.expect.max_request_deadlines)
    add("requests ended by their deadline <= " + std::to_string(*n),
        l.total.deadlines <= static_cast<uint64_t>(*n), std::to_string(l.total.deadlines));
  if (auto n = in.expect.max_p99_ms)
    add("latency p99 <= " + std::to_string(*n) + " ms",
        l.latency_p99_ms.has_value() && *l.latency_p99_ms <= *n,
        optional_text(l.latency_p99_ms) + " ms (" + std::to_string(l.latency_samples)
          + " samples)");
  {
    auto want = in.expect.min_carried_ratio.value_or(default_min_carried_ratio);
    auto rt = rates_of(in);
    add("carried rate >= " + decimal_text(want) + " of offered",
        rt.carried_ratio.has_value() && *rt.carried_ratio >= want,
        rt.carried_ratio ? decimal_text(*rt.carried_ratio) + " (" + std::to_string(rt.carried)
                             + " of " + std::to_string(rt.offered) + " deliveries)"
                         : std::string{"nothing offered"});
  }
  if (auto n = in.expect.min_overload_refusals)
    add("overload refusals >= " + std::to_string(*n),
        in.traffic.overload_refusals >= static_cast<uint64_t>(*n),
        std::to_string(in.traffic.overload_refusals));
  if (in.traffic.overload_refusals > 0)
    add("every overload refusal carries retry_after_ms",
        in.traffic.overload_refusals_without_retry_after == 0,
        std::to_string(in.traffic.overload_refusals_without_retry_after) + " of "
          + std::to_string(in.traffic.overload_refusals) + " did not");
  if (in.has_faults_to_inject)
    add("every fault was injected", in.faults_not_injected == 0,
        std::to_string(in.faults_not_injected) + " not injected");
  r.passed = std::all_of(r.checks.begin(), r.checks.end(), [](auto& c) { return c.ok; });
  r.exit_code = r.passed ? exit_codes::ok : exit_codes::failed;
  r.input = std::move(in);
  return r;
}

std::vector<report_table> report_tables(const report& r) {
  auto& in = r.input;
  auto& l = in.ledger;
  std::vector<report_table> out;
  std::vector<std::vector<std::string>> rows{
    {"accepted", std::to_string(l.total.accepted)},
    {"landed", std::to_string(l.total.landed)},
    {"NACKed", std::to_string(total_of(l.nacked_by_verdict))}};
  for (auto& [v, n] : l.nacked_by_verdict)
    rows.push_back({"  " + routing::to_string(v), std::to_string(n)});
  rows.push_back({"request deadlines", std::to_string(l.total.deadlines)});
  auto req = requests_of(in);
  rows.push_back({"requests answered/unanswered",
                  std::to_string(req.answered) + " / " + std::to_string(req.unanswered)});
  auto rt = rates_of(in);
  rows.push_back({"offered/carried per s",
                  one_decimal_text(rt.offered_per_s) + " / " + one_decimal_text(rt.carried_per_s) + " ("
                    + (rt.carried_ratio ? decimal_text(*rt.carried_ratio) : std::string{"-"})
                    + " carried; sent " + one_decimal_text(rt.sent_per_s) + " per s)"});
  rows.push_back({"suppressed failures", std::to_string(total_of(l.suppressed_by_verdict))});
  for (auto& [v, n] : l.suppressed_by_verdict)
    rows.push_back({"  " + routing::to_string(v), std::to_string(n)});
  if (l.total.unconfirmed > 0)
    rows.push_back({"unconfirmed (one-way, no observable outcome)",
                    std::to_string(l.total.unconfirmed)});
  rows.push_back({"lost", std::to_string(l.total.lost)});
  rows.push_back({"two or more terminal outcomes", std::to_string(l.multiple_terminal)});
  if (l.landed_with_ambiguous_failure > 0)
    rows.push_back({"landed, and a timeout or unknown-outcome failure",
                    std::to_string(l.landed_with_ambiguous_failure)});
  rows.push_back({"duplicate outcomes dropped", std::to_string(l.duplicates_dropped)});
  rows.push_back({"order violations", std::to_string(l.order_violations)});
  rows.push_back({"stale frames dropped", std::to_string(l.stale_drops)});
  if (l.late_copies > 0)
    rows.push_back({"late copies after an unknown outcome", std::to_string(l.late_copies)});
  rows.push_back({"mirrors diverged from owner", optional_text(in.mirrors_diverged)});
  rows.push_back({"latency p50 / p99 / max (ms)",
                  optional_text(l.latency_p50_ms) + " / " + optional_text(l.latency_p99_ms)
                    + " / " + optional_text(l.latency_max_ms) + " ("
                    + std::to_string(l.latency_samples) + " samples)"});
  rows.push_back({"requests re-sent", std::to_string(in.traffic.requests_resent)});
  rows.push_back({"request chains exhausted", std::to_string(in.traffic.request_resends_exhausted)});
  rows.push_back({"fresh Fulls after NACK", std::to_string(in.traffic.fresh_fulls_after_nack)});
  rows.push_back({"fresh Full chains exhausted", std::to_string(in.traffic.fresh_fulls_exhausted)});
  if (in.traffic.overload_refusals > 0) {
    rows.push_back({"overload refusals", std::to_string(in.traffic.overload_refusals)});
    rows.push_back({"  without retry_after_ms",
                    std::to_string(in.traffic.overload_refusals_without_retry_after)});
    rows.push_back({"re-sent after overload", std::to_string(in.traffic.overload_resends)});
    rows.push_back({"overload chains exhausted",
                    std::to_string(in.traffic.overload_resends_exhausted)});
  }
  if (in.traffic.withheld_frames + in.traffic.withheld_heartbeats + in.traffic.withheld_requests
      > 0)
    rows.push_back({"withheld by senders backing off",
                    "frames " + std::to_string(in.traffic.withheld_frames)
                      + " (carried by an owed Full), heartbeats "
                      + std::to_string(in.traffic.withheld_heartbeats) + " (not offered), requests "
                      + std::to_string(in.traffic.withheld_requests) + " (offered later)"});
  out.push_back({false, std::move(rows)});
  if (!in.silos.empty()) {
    std::vector<std::vector<std::string>> silo_rows{
      {"silo", "generation", "stop at ms", "quiescence hold ms", "stop ms", "Active again at ms",
       "landed while out"}};
    for (auto& s : in.silos)
      silo_rows.push_back({s.name,
                           std::to_string(s.generation_before) + " -> "
                             + optional_text(s.generation_after),
                           std::to_string(s.stop_started_ms), optional_text(s.quiescence_hold_ms),
                           optional_text(s.stop_duration_ms), optional_text(s.active_again_ms),
                           std::to_string(s.landed_while_out)});
    out.push_back({true, std::move(silo_rows)});
  }
  if (!l.by_origin.empty()) {
    std::vector<std::vector<std::string>> origin_rows{
      {"origin", "accepted", "landed", "NACKed", "deadlines", "suppressed", "lost"}};
    if (l.total.unconfirmed > 0)
      origin_rows.front().insert(origin_rows.front().end() - 1, "unconfirmed");
    for (auto& [origin, c] : l.by_origin) {
      origin_rows.push_back({origin, std::to_string(c.accepted), std::to_string(c.landed),
                             std::to_string(c.nacked), std::to_string(c.deadlines),
                             std::to_string(c.suppressed_failures), std::to_string(c.lost)});
      if (l.total.unconfirmed > 0)
        origin_rows.back().insert(origin_rows.back().end() - 1, std::to_string(c.unconfirmed));
    }
    out.push_back({true, std::move(origin_rows)});
  }
  if (in.node_exits) {
    std::vector<std::vector<std::string>> exit_rows{
      {"rolled node processes exited", std::to_string(*in.node_exits)},
      {"  not with exit code 0", std::to_string(in.node_exits_unclean)}};
    out.push_back({false, std::move(exit_rows)});
  }
  if (!in.entries.empty()) {
    std::vector<std::vector<std::string>> entry_rows{
      {"entry process", "origins", "entry", "deliveries", "routing/default calls"}};
    for (auto& e : in.entries)
      entry_rows.push_back({e.process, e.origins, e.entry, std::to_string(e.delivered),
                            std::to_string(e.routing_default_calls)});
    out.push_back({true, std::move(entry_rows)});
  }
  return out;
}

std::string render_table(const report& r) {
  auto& in = r.input;
  std::ostringstream out;
  out << "report: " << in.scenario_name << " (seed " << in.seed << ", " << in.duration_s
      << " s at " << in.rate_per_s << " deliveries/s, " << in.mode << ")\n\n";
  auto tables = report_tables(r);
  for (size_t i = 0; i < tables.size(); ++i)
    out << (i == 0 ? "" : "\n") << columns(tables[i].rows, "  ");
  out << "\n";
  std::vector<std::vector<std::string>> check_rows;
  for (auto& c : r.checks)
    check_rows.push_back({c.ok ? "PASS" : "FAIL", c.name, c.detail});
  out << columns(check_rows, "  ");
  out << "result: " << (r.passed ? "PASS" : "FAIL") << " (exit " << r.exit_code << ")\n";
  return out.str();
}

std::string render_json(const report& r) {
  auto& in = r.input;
  auto& l = in.ledger;
  json j = json::object();
  j["schema"] = "cafmesh.demo.report/1";
  j["scenario"] = in.scenario_name;
  j["seed"] = in.seed;
  j["duration_s"] = in.duration_s;
  j["rate_per_s"] = in.rate_per_s;
  j["mode"] = in.mode;
  j["accepted"] = l.total.accepted;
  j["landed"] = l.total.landed;
  j["nacked"] = verdicts_json(l.nacked_by_verdict);
  j["nacked_total"] = total_of(l.nacked_by_verdict);
  j["deadlines"] = l.total.deadlines;
  auto req = requests_of(in);
  j["requests"] = json{{"answered", req.answered}, {"unanswered", req.unanswered}};
  auto rt = rates_of(in);
  j["rate"] = json{{"offered", rt.offered},
                   {"carried", rt.carried},
                   {"offered_per_s", rt.offered_per_s},
                   {"carried_per_s", rt.carried_per_s},
                   {"carried_ratio", optional_json(rt.carried_ratio)},
                   {"sent_per_s", rt.sent_per_s}};
  j["suppressed_failures"] = verdicts_json(l.suppressed_by_verdict);
  j["suppressed_failures_total"] = total_of(l.suppressed_by_verdict);
  j["unconfirmed"] = l.total.unconfirmed;
  j["lost"] = l.total.lost;
  j["lost_sample"] = l.lost_ids;
  j["multiple_terminal_outcomes"] = l.multiple_terminal;
  j["multiple_terminal_sample"] = l.multiple_terminal_ids;
  j["landed_with_ambiguous_failure"] = l.landed_with_ambiguous_failure;
  j["landed_with_ambiguous_failure_sample"] = l.landed_with_ambiguous_failure_ids;
  j["duplicate_outcomes_dropped"] = l.duplicates_dropped;
  j["order_violations"] = l.order_violations;
  json samples = json::array();
  for (auto& v : l.order_violation_samples)
    samples.push_back(json{{"id", v.id},
                           {"target", v.target},
                           {"stream", v.stream},
                           {"version", v.version},
                           {"after_version", v.after_version},
                           {"t_ms", v.t_ms}});
  j["order_violation_sample"] = samples;
  j["stale_drops"] = l.stale_drops;
  j["late_copies"] = l.late_copies;
  j["nacks_on_answer_suppressed"] = l.nacks_on_suppressed;
  j["mirrors_diverged"] = optional_json(in.mirrors_diverged);
  j["unknown_outcomes"] = l.unknown_outcomes;
  j["duplicate_accepts"] = l.duplicate_accepts;
  j["latency_ms"] = json{{"samples", l.latency_samples},
                         {"p50", optional_json(l.latency_p50_ms)},
                         {"p99", optional_json(l.latency_p99_ms)},
                         {"max", optional_json(l.latency_max_ms)}};
  j["traffic"] = json{{"paced", in.traffic.paced},
                      {"requests_resent", in.traffic.requests_resent},
                      {"request_resends_exhausted", in.traffic.request_resends_exhausted},
                      {"fresh_fulls_after_nack", in.traffic.fresh_fulls_after_nack},
                      {"fresh_fulls_exhausted", in.traffic.fresh_fulls_exhausted},
                      {"overload_refusals", in.traffic.overload_refusals},
                      {"overload_refusals_without_retry_after",
                       in.traffic.overload_refusals_without_retry_after},
                      {"overload_resends", in.traffic.overload_resends},
                      {"overload_resends_exhausted", in.traffic.overload_resends_exhausted},
                      {"withheld_frames", in.traffic.withheld_frames},
                      {"withheld_heartbeats", in.traffic.withheld_heartbeats},
                      {"withheld_requests", in.traffic.withheld_requests},
                      {"withheld_frames_carried", in.traffic.withheld_frames_carried}};
  json kinds = json::object();
  for (auto& [k, c] : l.by_kind)
    kinds[to_string(k)] = counts_json(c);
  j["by_kind"] = kinds;
  json origins = json::object();
  for (auto& [o, c] : l.by_origin)
    origins[o] = counts_json(c);
  j["by_origin"] = origins;
  json silos = json::array();
  for (auto& s : in.silos)
    silos.push_back(json{{"name", s.name},
                         {"generation_before", s.generation_before},
                         {"generation_after", optional_json(s.generation_after)},
                         {"stop_started_ms", s.stop_started_ms},
                         {"quiescence_hold_ms", optional_json(s.quiescence_hold_ms)},
                         {"stop_duration_ms", optional_json(s.stop_duration_ms)},
                         {"active_again_ms", optional_json(s.active_again_ms)},
                         {"landed_while_out", s.landed_while_out}});
  j["silos"] = silos;
  json entries = json::array();
  for (auto& e : in.entries)
    entries.push_back(json{{"process", e.process},
                           {"origins", e.origins},
                           {"entry", e.entry},
                           {"delivered", e.delivered},
                           {"routing_default_calls", e.routing_default_calls}});
  j["entries"] = entries;
  json faults = json::array();
  for (auto& f : in.faults)
    faults.push_back(json{{"kind", f.kind},
                          {"silo", f.silo},
                          {"at_ms", f.at_ms},
                          {"injected", f.injected}});
  j["faults"] = faults;
  j["node_exits"] = in.node_exits ? json{{"stopped", *in.node_exits},
                                         {"unclean", in.node_exits_unclean}}
                                  : json(nullptr);
  json checks = json::array();
  for (auto& c : r.checks)
    checks.push_back(json{{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
  j["checks"] = checks;
  j["passed"] = r.passed;
  j["exit_code"] = r.exit_code;
  return j.dump(2) + "\n";
}

bool write_report_file(const std::string& path, const report& r, const std::string& program,
                       std::ostream& err) {
  std::ofstream out{path};
  out << render_json(r);
  out.flush();
  if (out)
    return true;
  err << program << ": cannot write report file \"" << path << "\"\n";
  return false;
}

} // namespace cafmesh::mainjob
