#include "cafmesh/mainjob/ledger.hpp"

#include <algorithm>
#include <ostream>

#include <nlohmann/json.hpp>

namespace cafmesh::mainjob {

namespace {

using json = nlohmann::ordered_json;

const std::vector<std::string> kind_names{"request", "post", "frame"};
const std::vector<std::string> outcome_names{"landed", "response", "nack", "deadline",
                                             "suppressed_failure", "unconfirmed"};

json head(int64_t t_ms, const char* event) {
  json j = json::object();
  j["t_ms"] = t_ms;
  j["event"] = event;
  return j;
}

} // namespace

std::string to_string(delivery_kind x) {
  return kind_names.at(static_cast<size_t>(x));
}

bool from_string(const std::string& name, delivery_kind& out) {
  auto i = std::find(kind_names.begin(), kind_names.end(), name);
  if (i == kind_names.end())
    return false;
  out = static_cast<delivery_kind>(i - kind_names.begin());
  return true;
}

std::string to_string(outcome_kind x) {
  return outcome_names.at(static_cast<size_t>(x));
}

std::optional<int64_t> nearest_rank(std::vector<int64_t> values, int percent) {
  if (values.empty() || percent < 1 || percent > 100)
    return std::nullopt;
  std::sort(values.begin(), values.end());
  auto n = values.size();
  auto rank = (static_cast<size_t>(percent) * n + 99) / 100; // ceil(percent * n / 100)
  return values[std::max<size_t>(rank, 1) - 1];
}

outcome_ledger::record* outcome_ledger::find(const std::string& id) {
  auto i = index_.find(id);
  if (i == index_.end()) {
    ++unknown_outcomes_;
    return nullptr;
  }
  return &order_[i->second];
}

void outcome_ledger::add_terminal(record& r, outcome_kind k, routing::verdict v, int64_t t_ms) {
  if (r.terminal.empty()) {
    r.first_terminal_ms = t_ms;
    --in_flight_;
    if (k == outcome_kind::landed || k == outcome_kind::response)
      ++landed_;
    else if (k == outcome_kind::nack)
      ++nacked_[v];
  }
  r.terminal.emplace_back(k, v);
}

void outcome_ledger::emit(const std::string& line) {
  if (sink_ != nullptr)
    *sink_ << line << '\n';
}

bool outcome_ledger::accept(const accepted_delivery& d) {
  if (index_.count(d.id) > 0) {
    ++duplicate_accepts_;
    return false;
  }
  if (sink_ != nullptr) {
    auto j = head(d.accepted_ms, "accepted");
    j["id"] = d.id;
    j["kind"] = to_string(d.kind);
    j["sender"] = d.sender;
    j["target"] = d.target;
    j["stream"] = d.stream;
    j["version"] = d.version;
    j["answer_suppressed"] = d.answer_suppressed;
    j["origin"] = d.origin;
    emit(j.dump());
  }
  index_.emplace(d.id, order_.size());
  order_.push_back(record{d, {}, {}, std::nullopt, 0, 0});
  ++in_flight_;
  return true;
}

void outcome_ledger::landed(const std::string& id, int64_t t_ms) {
  if (sink_ != nullptr) {
    auto j = head(t_ms, "landed");
    j["id"] = id;
    emit(j.dump());
  }
  auto* r = find(id);
  if (r == nullptr)
    return;
  ++r->landings;
  if (!r->first_landing_ms)
    r->first_landing_ms = t_ms;
  if (r->d.kind == delivery_kind::frame) {
    auto key = std::make_pair(r->d.target, r->d.stream);
    auto i = max_landed_.find(key);
    if (i == max_landed_.end()) {
      max_landed_.emplace(key, r->d.version);
    } else {
      if (r->d.version < i->second) {
        ++order_violations_;
        if (violation_samples_.size() < ledger_summary::sample_max)
          violation_samples_.push_back(
            {id, r->d.target, r->d.stream, r->d.version, i->second, t_ms});
      }
      i->second = std::max(i->second, r->d.version);
    }
  }
  if (r->d.kind != delivery_kind::request)
    add_terminal(*r, outcome_kind::landed, routing::verdict::ignored, t_ms);
}

void outcome_ledger::response(const std::string& id, int64_t t_ms) {
  if (sink_ != nullptr) {
    auto j = head(t_ms, "response");
    j["id"] = id;
    emit(j.dump());
  }
  if (auto* r = find(id))
    add_terminal(*r, outcome_kind::response, routing::verdict::ignored, t_ms);
}

void outcome_ledger::nack(const std::string& id, routing::verdict v, const std::string& text,
                          int64_t t_ms) {
  if (sink_ != nullptr) {
    auto j = head(t_ms, "nack");
    j["id"] = id;
    j["verdict"] = routing::to_string(v);
    j["text"] = text;
    emit(j.dump());
  }
  if (auto* r = find(id)) {
    if (r->d.answer_suppressed)
      ++nacks_on_suppressed_;
    r->nack_texts.emplace_back(v, text);
    add_terminal(*r, outcome_kind::nack, v, t_ms);
  }
}

void outcome_ledger::deadline(const std::string& id, int64_t t_ms) {
  if (sink_ != nullptr) {
    auto j = head(t_ms, "deadline");
    j["id"] = id;
    emit(j.dump());
  }
  if (auto* r = find(id))
    add_terminal(*r, outcome_kind::deadline, routing::verdict::ignored, t_ms);
}

void outcome_ledger::suppressed_failure(const std::string& id, routing::verdict v,
                                        const std::string& text, int64_t t_ms) {
  if (sink_ != nullptr) {
    auto j = head(t_ms, "suppressed_failure");
    j["id"] = id;
    j["verdict"] = routing::to_string(v);
    j["text"] = text;
    emit(j.dump());
  }
  if (auto* r = find(id)) {
    r->nack_texts.emplace_back(v, text);
    add_terminal(*r, outcome_kind::suppressed_failure, v, t_ms);
  }
}

void outcome_ledger::unconfirmed(const std::string& id, int64_t t_ms) {
  if (sink_ != nullptr) {
    auto j = head(t_ms, "unconfirmed");
    j["id"] = id;
    emit(j.dump());
  }
  if (auto* r = find(id))
    add_terminal(*r, outcome_kind::unconfirmed, routing::verdict::ignored, t_ms);
}

void outcome_ledger::duplicate_dropped(const std::string& id, int64_t t_ms) {
  if (sink_ != nullptr) {
    auto j = head(t_ms, "duplicate_dropped");
    j["id"] = id;
    emit(j.dump());
  }
  ++duplicates_dropped_;
}

void outcome_ledger::stale_dropped(const std::string& target, const std::string& stream,
                                   uint64_t version, int64_t t_ms) {
  if (sink_ != nullptr) {
    auto j = head(t_ms, "stale_dropped");
    j["target"] = target;
    j["stream"] = stream;
    j["version"] = version;
    emit(j.dump());
  }
  ++stale_drops_;
}

bool outcome_ledger::terminated(const std::string& id) const {
  auto i = index_.find(id);
  return i != index_.end() && !order_[i->second].terminal.empty();
}

ledger_summary outcome_ledger::summarize() const {
  ledger_summary s;
  std::vector<int64_t> latencies;
  for (auto& r : order_) {
    auto count = [&](outcome_counts& c) {
      ++c.accepted;
      if (r.terminal.empty()) {
        ++c.lost;
        return;
      }
      switch (r.terminal.front().first) {
        case outcome_kind::landed:
        case outcome_kind::response:
          ++c.landed;
          break;
        case outcome_kind::nack:
          ++c.nacked;
          break;
        case outcome_kind::deadline:
          ++c.deadlines;
          break;
        case outcome_kind::suppressed_failure:
          ++c.suppressed_failures;
          break;
        case outcome_kind::unconfirmed:
          ++c.unconfirmed;
          break;
      }
    };
    count(s.total);
    count(s.by_kind[r.d.kind]);
    count(s.by_origin[r.d.origin]);
    if (r.terminal.empty()) {
      if (s.lost_ids.size() < ledger_summary::sample_max)
        s.lost_ids.push_back(r.d.id);
    } else {
      auto [k, v] = r.terminal.front();
      if (k == outcome_kind::nack)
        ++s.nacked_by_verdict[v];
      else if (k == outcome_kind::suppressed_failure)
        ++s.suppressed_by_verdict[v];
      auto is_landing = [](outcome_kind x) {
        return x == outcome_kind::landed || x == outcome_kind::response;
      };
      auto timed_out = [&] {
        if (r.nack_texts.empty())
          return false;
        auto& text = r.nack_texts.back().second;
        return text.find("timed out") != std::string::npos
               || text.find("expired") != std::string::npos
               || text.find("outcome is unknown") != std::string::npos;
      };
      if (r.terminal.size() == 2 && is_landing(r.terminal[0].first)
          && (r.terminal[1].first == outcome_kind::nack
              || r.terminal[1].first == outcome_kind::suppressed_failure)
          && r.terminal[1].second == routing::verdict::failed && timed_out()) {
        ++s.landed_then_timed_out;
        if (s.landed_then_timed_out_ids.size() < ledger_summary::sample_max)
          s.landed_then_timed_out_ids.push_back(r.d.id);
      } else if (r.terminal.size() > 1) {
        ++s.multiple_terminal;
        if (s.multiple_terminal_ids.size() < ledger_summary::sample_max)
          s.multiple_terminal_ids.push_back(r.d.id);
      }
    }
    for (auto& [v, text] : r.nack_texts) {
      s.nack_texts.insert(text);
      s.nack_texts_by_verdict[v].insert(text);
    }
    if (r.first_landing_ms)
      latencies.push_back(*r.first_landing_ms - r.d.accepted_ms);
  }
  s.duplicates_dropped = duplicates_dropped_;
  s.order_violations = order_violations_;
  s.order_violation_samples = violation_samples_;
  s.stale_drops = stale_drops_;
  s.unknown_outcomes = unknown_outcomes_;
  s.duplicate_accepts = duplicate_accepts_;
  s.nacks_on_suppressed = nacks_on_suppressed_;
  s.latency_samples = latencies.size();
  s.latency_max_ms = nearest_rank(latencies, 100);
  s.latency_p50_ms = nearest_rank(latencies, 50);
  s.latency_p99_ms = nearest_rank(std::move(latencies), 99);
  return s;
}

std::vector<delivery_trace> outcome_ledger::traces() const {
  std::vector<delivery_trace> out;
  out.reserve(order_.size());
  for (auto& r : order_) {
    delivery_trace t;
    t.kind = r.d.kind;
    t.accepted_ms = r.d.accepted_ms;
    t.first_landing_ms = r.first_landing_ms;
    if (!r.terminal.empty()) {
      auto [k, v] = r.terminal.front();
      t.outcome = k;
      t.outcome_ms = r.first_terminal_ms;
      if (k == outcome_kind::nack || k == outcome_kind::suppressed_failure) {
        t.verdict = v;
        // The texts are kept in arrival order and only NACKs and suppressed failures add
        // one, so a first terminal NACK's text is the first text.
        if (!r.nack_texts.empty())
          t.text = r.nack_texts.front().second;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::string read_event_line(const std::string& line, outcome_ledger& ledger) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    return std::string{"expected a JSON object, got a parse error: "} + e.what();
  }
  if (!j.is_object())
    return "expected a JSON object, got " + j.dump();
  auto str = [&](const char* key, std::string& out) -> std::string {
    if (!j.contains(key) || !j[key].is_string())
      return std::string{"expected \""} + key + "\" to be a string";
    out = j[key].get<std::string>();
    return {};
  };
  auto num = [&](const char* key, int64_t& out) -> std::string {
    if (!j.contains(key) || !j[key].is_number_integer())
      return std::string{"expected \""} + key + "\" to be an integer";
    out = j[key].get<int64_t>();
    return {};
  };
  auto verdict_of = [&](routing::verdict& v) -> std::string {
    std::string name;
    if (auto err = str("verdict", name); !err.empty())
      return err;
    if (!routing::from_string(name, v))
      return "expected \"verdict\" to be a verdict, got \"" + name + "\"";
    return {};
  };
  int64_t t_ms = 0;
  std::string event;
  std::string id;
  if (auto err = num("t_ms", t_ms); !err.empty())
    return err;
  if (auto err = str("event", event); !err.empty())
    return err;
  if (event == "stale_dropped") {
    std::string target;
    std::string stream;
    int64_t version = 0;
    for (auto err : {str("target", target), str("stream", stream), num("version", version)})
      if (!err.empty())
        return err;
    ledger.stale_dropped(target, stream, static_cast<uint64_t>(version), t_ms);
    return {};
  }
  if (auto err = str("id", id); !err.empty())
    return err;
  if (event == "accepted") {
    accepted_delivery d;
    d.id = id;
    d.accepted_ms = t_ms;
    std::string kind;
    int64_t version = 0;
    for (auto err : {str("kind", kind), str("sender", d.sender), str("target", d.target),
                     str("stream", d.stream), num("version", version), str("origin", d.origin)})
      if (!err.empty())
        return err;
    if (!from_string(kind, d.kind))
      return "expected \"kind\" to be one of request, post, frame, got \"" + kind + "\"";
    if (!j.contains("answer_suppressed") || !j["answer_suppressed"].is_boolean())
      return "expected \"answer_suppressed\" to be true or false";
    d.answer_suppressed = j["answer_suppressed"].get<bool>();
    d.version = static_cast<uint64_t>(version);
    ledger.accept(d);
  } else if (event == "landed") {
    ledger.landed(id, t_ms);
  } else if (event == "response") {
    ledger.response(id, t_ms);
  } else if (event == "deadline") {
    ledger.deadline(id, t_ms);
  } else if (event == "duplicate_dropped") {
    ledger.duplicate_dropped(id, t_ms);
  } else if (event == "unconfirmed") {
    ledger.unconfirmed(id, t_ms);
  } else if (event == "nack" || event == "suppressed_failure") {
    routing::verdict v;
    std::string text;
    if (auto err = verdict_of(v); !err.empty())
      return err;
    if (auto err = str("text", text); !err.empty())
      return err;
    if (event == "nack")
      ledger.nack(id, v, text, t_ms);
    else
      ledger.suppressed_failure(id, v, text, t_ms);
  } else {
    return "expected \"event\" to be one of accepted, landed, response, nack, deadline, "
           "suppressed_failure, unconfirmed, duplicate_dropped, stale_dropped, got \""
           + event + "\"";
  }
  return {};
}

} // namespace cafmesh::mainjob
