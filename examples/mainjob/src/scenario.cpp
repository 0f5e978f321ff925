#include "cafmesh/mainjob/scenario.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "cafmesh/config/text.hpp"
#include "cafmesh/mainjob/default_scenario_text.hpp"
#include "json_check.hpp"

namespace cafmesh::mainjob {

using namespace detail;

namespace {

constexpr int64_t rate_max = 1000000;
/// One day of traffic at most, and at most this many planned deliveries: the plan is held in
/// memory, so its size must stay bounded whatever the command line says.
constexpr int64_t duration_max_s = 86400;
constexpr int64_t planned_max = 20000000;
constexpr int64_t payload_max = 1048575; // below the stream block limit (docs/behaviour/size-guard.md#limits)
constexpr int64_t silos_max = 16;
constexpr int64_t time_scale_max = 100;

const std::vector<std::string> placement_names{"pure_client", "co_hosted", "both"};

std::string one_of_what(const std::vector<std::string>& names) {
  std::string out;
  for (auto& n : names)
    out += (out.empty() ? "\"" : ", \"") + n + "\"";
  return "one of " + out;
}

bool silo_name_ok(const std::string& name) {
  return !name.empty() && name.size() <= 32
         && std::all_of(name.begin(), name.end(), [](char c) {
              return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                     || c == '-' || c == '_';
            });
}

/// Reads everything of one document into `s`, collecting errors.
class reader {
public:
  reader(const std::set<std::string>& dups, error_list& errs) : dups_(dups), errs_(errs) {}

  void document(const json& doc, scenario& s) {
    read_object(doc, "",
                {{"name", true, "a non-empty string",
                  [&](const json& v, const std::string& p) { read_string(v, p, true, s.name, errs_); }},
                 {"description", false, "a string",
                  [&](const json& v, const std::string& p) {
                    read_string(v, p, false, s.description, errs_);
                  }},
                 {"expected_outcome", true, "a non-empty string",
                  [&](const json& v, const std::string& p) {
                    read_string(v, p, true, s.expected_outcome, errs_);
                  }},
                 {"seed", false, "",
                  [&](const json& v, const std::string& p) {
                    if (v.is_number_unsigned())
                      s.seed = v.get<uint64_t>();
                    else if (in_range(v, 0, int64_max))
                      s.seed = static_cast<uint64_t>(v.get<int64_t>());
                    else
                      refuse(errs_, p, "an integer from 0 to 18446744073709551615", shown(v));
                  }},
                 {"duration_s", false, "",
                  [&](const json& v, const std::string& p) {
                    read_integer(v, p, 1, duration_max_s, s.duration_s, errs_);
                  }},
                 {"rate_per_s", false, "",
                  [&](const json& v, const std::string& p) {
                    read_integer(v, p, 1, rate_max, s.rate_per_s, errs_);
                  }},
                 {"topology", false, "", [&](const json& v, const std::string& p) { topology(v, p, s); }},
                 {"traffic", false, "", [&](const json& v, const std::string& p) { traffic(v, p, s.traffic); }},
                 {"roll", false, "", [&](const json& v, const std::string& p) { roll(v, p, s.roll); }},
                 {"faults", false, "", [&](const json& v, const std::string& p) { faults(v, p, s.faults); }},
                 {"config", false, "", [&](const json& v, const std::string& p) { config(v, p, s); }},
                 {"expect", false, "", [&](const json& v, const std::string& p) { expect(v, p, s.expect); }}},
                dups_, errs_);
  }

private:
  std::function<void(const json&, const std::string&)> integer(int64_t& out, int64_t min,
                                                                  int64_t max = int64_max) {
    return [this, &out, min, max](const json& v, const std::string& p) {
      read_integer(v, p, min, max, out, errs_);
    };
  }

  void topology(const json& v, const std::string& ptr, scenario& s) {
    read_object(v, ptr,
                {{"silos", false, "",
                  [&](const json& x, const std::string& p) {
                    if (!x.is_array() || x.empty() || x.size() > silos_max) {
                      refuse(errs_, p, "an array of 1 to 16 silo names", shown(x));
                      return;
                    }
                    std::vector<std::string> names;
                    for (size_t i = 0; i < x.size(); ++i) {
                      auto at = p + "/" + std::to_string(i);
                      auto& e = x[i];
                      if (!e.is_string() || !silo_name_ok(e.get<std::string>()))
                        refuse(errs_, at, "a silo name of 1 to 32 letters, digits, '-' or '_'",
                               shown(e));
                      else if (std::count(names.begin(), names.end(), e.get<std::string>()) > 0)
                        refuse(errs_, at, "a silo name not listed before", shown(e));
                      else
                        names.push_back(e.get<std::string>());
                    }
                    if (names.size() == x.size())
                      s.silos = names;
                  }},
                 {"pure_clients", false, "", integer(s.pure_clients, 0, 64)}},
                dups_, errs_);
  }

  void traffic(const json& v, const std::string& ptr, traffic_spec& t) {
    read_object(
      v, ptr,
      {{"streams", false, "", integer(t.streams, 0, 1000000)},
       {"subscribers_per_stream", false, "", integer(t.subscribers_per_stream, 1, 1000000)},
       {"owner_hubs", false, "", integer(t.owner_hubs, 1, 1000000)},
       {"node_hubs", false, "", integer(t.node_hubs, 1, 1000000)},
       {"portal_hubs", false, "", integer(t.portal_hubs, 1, 1000000)},
       {"senders", false, "",
        [&](const json& x, const std::string& p) {
          auto i = x.is_string() ? std::find(placement_names.begin(), placement_names.end(),
                                             x.get<std::string>())
                                 : placement_names.end();
          if (i == placement_names.end())
            refuse(errs_, p, one_of_what(placement_names), shown(x));
          else
            t.senders = static_cast<sender_placement>(i - placement_names.begin());
        }},
       {"weights", false, "",
        [&](const json& x, const std::string& p) {
          read_object(x, p,
                      {{"frame", false, "", integer(t.weights.frame, 0, 1000000)},
                       {"heartbeat", false, "", integer(t.weights.heartbeat, 0, 1000000)},
                       {"request", false, "", integer(t.weights.request, 0, 1000000)}},
                      dups_, errs_);
        }},
       {"payload_bytes", false, "",
        [&](const json& x, const std::string& p) {
          read_object(x, p,
                      {{"frame", false, "", integer(t.payload_bytes.frame, 0, payload_max)},
                       {"heartbeat", false, "", integer(t.payload_bytes.heartbeat, 0, payload_max)},
                       {"request", false, "", integer(t.payload_bytes.request, 0, payload_max)}},
                      dups_, errs_);
        }},
       {"request_deadline_ms", false, "", integer(t.request_deadline_ms, 1)},
       {"request_max_resends", false, "", integer(t.request_max_resends, 0, 1000)},
       {"overload_max_resends", false, "", integer(t.overload_max_resends, 0, 1000)},
       {"bursts", false, "",
        [&](const json& x, const std::string& p) {
          if (!x.is_array()) {
            refuse(errs_, p, "an array of bursts", shown(x));
            return;
          }
          for (size_t i = 0; i < x.size(); ++i) {
            burst_spec b;
            read_object(x[i], p + "/" + std::to_string(i),
                        {{"at_ms", true, "an integer >= 0", integer(b.at_ms, 0)},
                         {"count", true, "an integer from 1 to 100000",
                          integer(b.count, 1, 100000)},
                         {"within_ms", false, "", integer(b.within_ms, 0)}},
                        dups_, errs_);
            t.bursts.push_back(b);
          }
        }}},
      dups_, errs_);
  }

  void roll(const json& v, const std::string& ptr, roll_spec& r) {
    read_object(v, ptr,
                {{"order", false, "",
                  [&](const json& x, const std::string& p) {
                    if (!x.is_array()) {
                      refuse(errs_, p, "an array of silo names", shown(x));
                      return;
                    }
                    std::vector<std::string> names;
                    for (size_t i = 0; i < x.size(); ++i) {
                      if (!x[i].is_string() || x[i].get<std::string>().empty())
                        refuse(errs_, p + "/" + std::to_string(i), "a silo name", shown(x[i]));
                      else
                        names.push_back(x[i].get<std::string>());
                    }
                    if (names.size() == x.size())
                      r.order = names;
                  }},
                 {"steps", false, "",
                  [&](const json& x, const std::string& p) {
                    if (!x.is_array()) {
                      refuse(errs_, p, "an array of roll steps", shown(x));
                      return;
                    }
                    for (size_t i = 0; i < x.size(); ++i) {
                      roll_step_spec st;
                      st.restart_delay_ms = r.restart_delay_ms;
                      bool delay_given = x[i].is_object() && x[i].contains("restart_delay_ms");
                      read_object(x[i], p + "/" + std::to_string(i),
                                  {{"silo", true, "a silo name",
                                    [&](const json& y, const std::string& q) {
                                      read_string(y, q, true, st.silo, errs_);
                                    }},
                                   {"at_ms", true, "an integer >= 0", integer(st.at_ms, 0)},
                                   {"restart_delay_ms", false, "",
                                    integer(st.restart_delay_ms, 0)}},
                                  dups_, errs_);
                      if (!delay_given)
                        st.restart_delay_ms = -1; // the section's, filled in below
                      r.steps.push_back(st);
                    }
                  }},
                 {"first_stop_at_ms", false, "", integer(r.first_stop_at_ms, 0)},
                 {"restart_delay_ms", false, "", integer(r.restart_delay_ms, 0)},
                 {"interval_ms", false, "", integer(r.interval_ms, 0)}},
                dups_, errs_);
    // A step without its own restart delay takes the section's, wherever that key stands.
    for (auto& st : r.steps)
      if (st.restart_delay_ms < 0)
        st.restart_delay_ms = r.restart_delay_ms;
  }

  void faults(const json& v, const std::string& ptr, std::vector<fault_spec>& out) {
    if (!v.is_array()) {
      refuse(errs_, ptr, "an array of faults", shown(v));
      return;
    }
    static const std::vector<std::string> kinds{"stall", "kill", "second_signal"};
    for (size_t i = 0; i < v.size(); ++i) {
      fault_spec f;
      auto at = ptr + "/" + std::to_string(i);
      // The kind decides which other keys belong to the fault; an unknown or missing kind
      // is refused and its other keys are checked as a stall's.
      auto kind = std::string{"stall"};
      if (v[i].is_object() && v[i].contains("kind") && v[i]["kind"].is_string()
          && std::count(kinds.begin(), kinds.end(), v[i]["kind"].get<std::string>()) > 0)
        kind = v[i]["kind"].get<std::string>();
      std::vector<field> fields{
        {"kind", true, one_of_what(kinds),
         [&](const json& x, const std::string& p) {
           if (!x.is_string()
               || std::count(kinds.begin(), kinds.end(), x.get<std::string>()) == 0)
             refuse(errs_, p, one_of_what(kinds), shown(x));
           else
             f.kind = x.get<std::string>();
         }},
        {"silo", true, "a silo name",
         [&](const json& x, const std::string& p) { read_string(x, p, true, f.silo, errs_); }},
        {"at_ms", true, "an integer >= 0", integer(f.at_ms, 0)}};
      if (kind == "stall") {
        fields.push_back({"for_ms", true, "an integer >= 1", integer(f.for_ms, 1)});
        fields.push_back({"detected", false, "", [&](const json& x, const std::string& p) {
                            if (!x.is_boolean())
                              refuse(errs_, p, "true or false", shown(x));
                            else
                              f.detected = x.get<bool>();
                          }});
      } else if (kind == "kill") {
        fields.push_back({"restart_after_ms", false, "", [&](const json& x, const std::string& p) {
                            int64_t n = 0;
                            if (read_integer(x, p, 0, int64_max, n, errs_))
                              f.restart_after_ms = n;
                          }});
      }
      read_object(v[i], at, fields, dups_, errs_);
      out.push_back(f);
    }
  }

  void config(const json& v, const std::string& ptr, scenario& s) {
    if (!v.is_object()) {
      refuse(errs_, ptr, "an object", shown(v));
      return;
    }
    if (v.contains("mesh")) {
      refuse(errs_, ptr + "/mesh",
             "no mesh section (the demo sets each process's role and name)", shown(v["mesh"]));
      return;
    }
    auto doc = v;
    doc["mesh"] = json{{"process_role", "silo_host"}};
    auto loaded = cafmesh::config::parse(doc.dump());
    for (auto& e : loaded.errors)
      errs_.push_back(ptr + e);
    if (loaded.ok)
      s.config_json = v.dump();
  }

  /// An object keyed by NACK verdicts: calls `each(value, pointer, verdict)` for every key
  /// that names one, refusing other keys and duplicates.
  template <class F>
  void by_verdict(const json& x, const std::string& p, const char* what, F each) {
    if (!x.is_object()) {
      refuse(errs_, p, what, shown(x));
      return;
    }
    for (auto& [name, value] : x.items()) {
      auto at = p + "/" + escape(name);
      if (dups_.count(at) > 0)
        errs_.push_back(at + ": duplicate key");
      routing::verdict vd;
      if (!routing::from_string(name, vd) || vd == routing::verdict::ignored) {
        errs_.push_back(at + ": unknown key, expected a NACK verdict (docs/behaviour/envelope.md#verdicts)");
        continue;
      }
      each(value, at, vd);
    }
  }

  void verdict_counts(const json& x, const std::string& p,
                      std::map<routing::verdict, int64_t>& out) {
    by_verdict(x, p, "an object of verdict -> count",
               [&](const json& count, const std::string& at, routing::verdict vd) {
                 int64_t n = 0;
                 if (read_integer(count, at, 0, int64_max, n, errs_))
                   out[vd] = n;
               });
  }

  void expect(const json& v, const std::string& ptr, expectation& e) {
    read_object(v, ptr,
                {{"max_nacked", false, "",
                  [&](const json& x, const std::string& p) { verdict_counts(x, p, e.max_nacked); }},
                 {"min_nacked", false, "",
                  [&](const json& x, const std::string& p) { verdict_counts(x, p, e.min_nacked); }},
                 {"max_request_resends_exhausted", false, "",
                  [&](const json& x, const std::string& p) {
                    int64_t n = 0;
                    if (read_integer(x, p, 0, int64_max, n, errs_))
                      e.max_request_resends_exhausted = n;
                  }},
                 {"forbidden_nack_texts", false, "",
                  [&](const json& x, const std::string& p) {
                    strings(x, p, e.forbidden_nack_texts);
                  }},
                 {"max_request_deadlines", false, "",
                  [&](const json& x, const std::string& p) {
                    int64_t n = 0;
                    if (read_integer(x, p, 0, int64_max, n, errs_))
                      e.max_request_deadlines = n;
                  }},
                 {"max_p99_ms", false, "",
                  [&](const json& x, const std::string& p) {
                    int64_t n = 0;
                    if (read_integer(x, p, 0, int64_max, n, errs_))
                      e.max_p99_ms = n;
                  }},
                 {"min_overload_refusals", false, "",
                  [&](const json& x, const std::string& p) {
                    int64_t n = 0;
                    if (read_integer(x, p, 0, int64_max, n, errs_))
                      e.min_overload_refusals = n;
                  }},
                 {"min_carried_ratio", false, "",
                  [&](const json& x, const std::string& p) {
                    // A fraction of the offered rate: 0 would expect nothing, more than 1
                    // more than was offered.
                    if (!x.is_number() || x.get<double>() <= 0 || x.get<double>() > 1) {
                      refuse(errs_, p, "a number greater than 0 and at most 1", shown(x));
                      return;
                    }
                    e.min_carried_ratio = x.get<double>();
                  }},
                 {"required_nack_texts", false, "",
                  [&](const json& x, const std::string& p) {
                    by_verdict(x, p, "an object of NACK verdicts",
                               [&](const json& texts, const std::string& at, routing::verdict vd) {
                                 std::vector<std::string> out;
                                 strings(texts, at, out);
                                 if (texts.is_array() && texts.empty())
                                   refuse(errs_, at, "a non-empty array of non-empty strings",
                                          "[]");
                                 else
                                   e.required_nack_texts[vd] = out;
                               });
                  }}},
                dups_, errs_);
  }

  void strings(const json& x, const std::string& p, std::vector<std::string>& out) {
    if (!x.is_array()) {
      refuse(errs_, p, "an array of non-empty strings", shown(x));
      return;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      std::string text;
      if (read_string(x[i], p + "/" + std::to_string(i), true, text, errs_))
        out.push_back(text);
    }
  }

  const std::set<std::string>& dups_;
  error_list& errs_;
};

bool names_silo(const scenario& s, const std::string& name) {
  return std::count(s.silos.begin(), s.silos.end(), name) > 0;
}

std::string silo_list(const scenario& s) {
  std::string out;
  for (auto& n : s.silos)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

/// Relations between keys, checked once every key is valid on its own.
void check_relations(const scenario& s, error_list& errs) {
  auto& t = s.traffic;
  if (t.subscribers_per_stream > t.portal_hubs)
    refuse(errs, "/traffic/subscribers_per_stream",
           "an integer <= portal_hubs (" + std::to_string(t.portal_hubs) + ")",
           std::to_string(t.subscribers_per_stream));
  if (t.weights.frame + t.weights.heartbeat + t.weights.request == 0)
    refuse(errs, "/traffic/weights", "at least one weight > 0",
           R"({"frame":0,"heartbeat":0,"request":0})");
  if (t.weights.frame > 0 && t.streams == 0)
    refuse(errs, "/traffic/streams", "an integer >= 1 (frame weight is > 0)", "0");
  if (t.senders != sender_placement::co_hosted && s.pure_clients == 0)
    refuse(errs, "/topology/pure_clients",
           "an integer >= 1 (traffic.senders is \"" + to_string(t.senders) + "\")", "0");
  for (size_t i = 0; i < s.roll.order.size(); ++i)
    if (!names_silo(s, s.roll.order[i]))
      refuse(errs, "/roll/order/" + std::to_string(i), "one of the silos (" + silo_list(s) + ")",
             json(s.roll.order[i]).dump());
  if (s.duration_s * s.rate_per_s > planned_max)
    refuse(errs, "/rate_per_s",
           "at most " + std::to_string(planned_max) + " planned deliveries (duration_s * rate_per_s)",
           std::to_string(s.rate_per_s));
  if (!s.roll.order.empty() && s.roll.first_stop_at_ms >= s.duration_s * 1000)
    refuse(errs, "/roll/first_stop_at_ms",
           "an integer < duration_s * 1000 (" + std::to_string(s.duration_s * 1000) + ")",
           std::to_string(s.roll.first_stop_at_ms));
  for (size_t i = 0; i < t.bursts.size(); ++i)
    if (t.bursts[i].at_ms >= s.duration_s * 1000)
      refuse(errs, "/traffic/bursts/" + std::to_string(i) + "/at_ms",
             "an integer < duration_s * 1000 (" + std::to_string(s.duration_s * 1000) + ")",
             std::to_string(t.bursts[i].at_ms));
  for (size_t i = 0; i < s.faults.size(); ++i)
    if (!names_silo(s, s.faults[i].silo))
      refuse(errs, "/faults/" + std::to_string(i) + "/silo",
             "one of the silos (" + silo_list(s) + ")", json(s.faults[i].silo).dump());
  if (!s.roll.order.empty() && !s.roll.steps.empty())
    refuse(errs, "/roll/steps", "an empty array when roll.order names silos (one or the other)",
           json::array({s.roll.steps.front().silo}).dump() + "...");
  std::set<std::string> stepped;
  for (size_t i = 0; i < s.roll.steps.size(); ++i) {
    auto& st = s.roll.steps[i];
    auto at = "/roll/steps/" + std::to_string(i);
    if (!names_silo(s, st.silo))
      refuse(errs, at + "/silo", "one of the silos (" + silo_list(s) + ")", json(st.silo).dump());
    else if (!stepped.insert(st.silo).second)
      refuse(errs, at + "/silo", "a silo no earlier step names", json(st.silo).dump());
    if (st.at_ms >= s.duration_s * 1000)
      refuse(errs, at + "/at_ms",
             "an integer < duration_s * 1000 (" + std::to_string(s.duration_s * 1000) + ")",
             std::to_string(st.at_ms));
  }
}

/// `--time-scale`: every time of the traffic and the roll times `f`, the rate divided by `f`
/// (at least 1/s). The scenario has no faults and no bursts (apply_overrides checks).
void stretch(scenario& s, int64_t f) {
  s.duration_s *= f;
  s.rate_per_s = std::max<int64_t>(1, s.rate_per_s / f);
  s.traffic.request_deadline_ms *= f;
  s.roll.first_stop_at_ms *= f;
  s.roll.restart_delay_ms *= f;
  s.roll.interval_ms *= f;
  for (auto& st : s.roll.steps) {
    st.at_ms *= f;
    st.restart_delay_ms *= f;
  }
  if (s.expect.max_p99_ms)
    *s.expect.max_p99_ms *= f;
}

json verdict_counts_json(const std::map<routing::verdict, int64_t>& xs) {
  json out = json::object();
  for (auto& [v, n] : xs)
    out[routing::to_string(v)] = n;
  return out;
}

} // namespace

std::string to_string(sender_placement x) {
  return placement_names.at(static_cast<size_t>(x));
}

std::string scenario_result::message() const {
  std::string out;
  for (auto& e : errors)
    out += (out.empty() ? "" : "\n") + e;
  return out;
}

scenario_result parse_scenario(const std::string& json_text) {
  scenario_result result;
  std::set<std::string> dups;
  json doc;
  if (!parse_json(json_text, "", doc, dups, result.errors))
    return result;
  scenario candidate;
  reader{dups, result.errors}.document(doc, candidate);
  if (result.errors.empty())
    check_relations(candidate, result.errors);
  if (result.errors.empty()) {
    result.ok = true;
    result.value = std::move(candidate);
  }
  return result;
}

scenario_result load_scenario_file(const std::string& path) {
  std::string text;
  int read_errno = cafmesh::config::read_text_file(path, text);
  if (read_errno == 0)
    return parse_scenario(text);
  scenario_result result;
  result.errors.push_back("cannot read scenario file \"" + path
                          + "\": " + std::strerror(read_errno));
  return result;
}

const std::string& default_scenario_text() {
  static const std::string text = detail::embedded_default_scenario;
  return text;
}

scenario default_scenario() {
  return parse_scenario(default_scenario_text()).value;
}

std::vector<std::string> apply_overrides(scenario& s, const scenario_overrides& o,
                                         bool with_roll) {
  error_list errs;
  auto candidate = s;
  if (o.seed)
    candidate.seed = *o.seed;
  if (o.duration_s) {
    if (*o.duration_s < 1 || *o.duration_s > duration_max_s)
      refuse(errs, "--duration-s", integer_what(1, duration_max_s),
             std::to_string(*o.duration_s));
    else
      candidate.duration_s = *o.duration_s;
  }
  if (o.rate_per_s) {
    if (*o.rate_per_s < 1 || *o.rate_per_s > rate_max)
      refuse(errs, "--rate", integer_what(1, rate_max), std::to_string(*o.rate_per_s));
    else
      candidate.rate_per_s = *o.rate_per_s;
  }
  if (o.request_deadline_ms) {
    if (*o.request_deadline_ms < 1)
      refuse(errs, "--request-deadline-ms", "an integer >= 1",
             std::to_string(*o.request_deadline_ms));
    else
      candidate.traffic.request_deadline_ms = *o.request_deadline_ms;
  }
  if (o.time_scale) {
    if (*o.time_scale < 1 || *o.time_scale > time_scale_max)
      refuse(errs, "--time-scale", integer_what(1, time_scale_max),
             std::to_string(*o.time_scale));
    else if (*o.time_scale > 1 && (!candidate.faults.empty() || !candidate.traffic.bursts.empty()))
      refuse(errs, "--time-scale",
             "a scenario without faults and bursts when above 1 (how long a stall, an outage or a "
             "burst lasts is measured against the silos' own timers, which are not scaled)",
             std::to_string(candidate.faults.size()) + " fault(s) and "
               + std::to_string(candidate.traffic.bursts.size()) + " burst(s)");
    else if (candidate.duration_s * *o.time_scale > duration_max_s)
      refuse(errs, "--time-scale",
             "at most " + std::to_string(duration_max_s) + " s of traffic once stretched",
             std::to_string(*o.time_scale) + " x " + std::to_string(candidate.duration_s) + " s");
    else if (errs.empty())
      stretch(candidate, *o.time_scale);
  }
  if (errs.empty() && candidate.duration_s * candidate.rate_per_s > planned_max)
    refuse(errs, "--duration-s",
           "at most " + std::to_string(planned_max) + " planned deliveries (duration_s * rate_per_s)",
           std::to_string(candidate.duration_s) + " s at " + std::to_string(candidate.rate_per_s)
             + "/s");
  if (errs.empty() && with_roll && o.duration_s && !candidate.roll.order.empty()
      && candidate.roll.first_stop_at_ms >= candidate.duration_s * 1000)
    refuse(errs, "--duration-s",
           "more than roll.first_stop_at_ms (" + std::to_string(candidate.roll.first_stop_at_ms)
             + " ms) of traffic",
           std::to_string(candidate.duration_s) + " s");
  if (errs.empty())
    s = std::move(candidate);
  return errs;
}

std::string to_json_text(const scenario& s) {
  json doc = json::object();
  doc["name"] = s.name;
  doc["description"] = s.description;
  doc["expected_outcome"] = s.expected_outcome;
  doc["seed"] = s.seed;
  doc["duration_s"] = s.duration_s;
  doc["rate_per_s"] = s.rate_per_s;
  doc["topology"] = json{{"silos", s.silos}, {"pure_clients", s.pure_clients}};
  auto& t = s.traffic;
  doc["traffic"] = json{
    {"streams", t.streams},
    {"subscribers_per_stream", t.subscribers_per_stream},
    {"owner_hubs", t.owner_hubs},
    {"node_hubs", t.node_hubs},
    {"portal_hubs", t.portal_hubs},
    {"senders", to_string(t.senders)},
    {"weights",
     {{"frame", t.weights.frame}, {"heartbeat", t.weights.heartbeat}, {"request", t.weights.request}}},
    {"payload_bytes",
     {{"frame", t.payload_bytes.frame},
      {"heartbeat", t.payload_bytes.heartbeat},
      {"request", t.payload_bytes.request}}},
    {"request_deadline_ms", t.request_deadline_ms},
    {"request_max_resends", t.request_max_resends},
    {"overload_max_resends", t.overload_max_resends}};
  doc["traffic"]["bursts"] = json::array();
  for (auto& b : t.bursts)
    doc["traffic"]["bursts"].push_back(
      json{{"at_ms", b.at_ms}, {"count", b.count}, {"within_ms", b.within_ms}});
  doc["roll"] = json{{"order", s.roll.order},
                     {"first_stop_at_ms", s.roll.first_stop_at_ms},
                     {"restart_delay_ms", s.roll.restart_delay_ms},
                     {"interval_ms", s.roll.interval_ms}};
  doc["roll"]["steps"] = json::array();
  for (auto& st : s.roll.steps)
    doc["roll"]["steps"].push_back(
      json{{"silo", st.silo}, {"at_ms", st.at_ms}, {"restart_delay_ms", st.restart_delay_ms}});
  doc["faults"] = json::array();
  for (auto& f : s.faults) {
    json one{{"kind", f.kind}, {"silo", f.silo}, {"at_ms", f.at_ms}};
    if (f.kind == "stall") {
      one["for_ms"] = f.for_ms;
      one["detected"] = f.detected;
    } else if (f.kind == "kill" && f.restart_after_ms) {
      one["restart_after_ms"] = *f.restart_after_ms;
    }
    doc["faults"].push_back(one);
  }
  doc["config"] = json::parse(s.config_json);
  json expect = json::object();
  expect["max_nacked"] = verdict_counts_json(s.expect.max_nacked);
  expect["min_nacked"] = verdict_counts_json(s.expect.min_nacked);
  if (s.expect.max_request_resends_exhausted)
    expect["max_request_resends_exhausted"] = *s.expect.max_request_resends_exhausted;
  expect["forbidden_nack_texts"] = s.expect.forbidden_nack_texts;
  if (s.expect.max_request_deadlines)
    expect["max_request_deadlines"] = *s.expect.max_request_deadlines;
  if (s.expect.max_p99_ms)
    expect["max_p99_ms"] = *s.expect.max_p99_ms;
  if (s.expect.min_overload_refusals)
    expect["min_overload_refusals"] = *s.expect.min_overload_refusals;
  if (s.expect.min_carried_ratio)
    expect["min_carried_ratio"] = *s.expect.min_carried_ratio;
  expect["required_nack_texts"] = json::object();
  for (auto& [v, texts] : s.expect.required_nack_texts)
    expect["required_nack_texts"][routing::to_string(v)] = texts;
  doc["expect"] = expect;
  return doc.dump(2) + "\n";
}

config::load_result process_config(const scenario& s, config::process_role role,
                                   const std::string& name) {
  auto doc = json::parse(s.config_json);
  doc["mesh"] = json{{"process_role", config::to_string(role)}, {"name", name}};
  return config::parse(doc.dump());
}

std::string node_hub_address(int64_t i) {
  return "node/Org/N" + std::to_string(i);
}

std::string owner_hub_address(int64_t i) {
  return "node/Owner/O" + std::to_string(i);
}

std::string portal_hub_address(int64_t i) {
  return "portal/user" + std::to_string(i) + "/tab1";
}

std::string stream_id(int64_t s) {
  return "stream-" + std::to_string(s);
}

std::string portal_origin(const scenario& s, int64_t i) {
  auto silo = [&](int64_t k) {
    return "silo:" + s.silos[static_cast<size_t>(k % static_cast<int64_t>(s.silos.size()))];
  };
  auto client = [&](int64_t k) {
    return "client:" + std::to_string(k % std::max<int64_t>(s.pure_clients, 1) + 1);
  };
  switch (s.traffic.senders) {
    case sender_placement::co_hosted:
      return silo(i);
    case sender_placement::pure_client:
      return client(i);
    case sender_placement::both:
      return i % 2 == 0 ? silo(i / 2) : client(i / 2);
  }
  return client(i);
}

} // namespace cafmesh::mainjob
