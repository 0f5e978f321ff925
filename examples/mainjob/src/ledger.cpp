#include "cafmesh/mainjob/ledger.hpp"

#include "cafmesh/mainjob/traffic.hpp"

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

void latency_histogram::add(int64_t value) {
  ++count_;
  auto i = std::lower_bound(counts_.begin(), counts_.end(), value,
                            [](const auto& x, int64_t v) { return x.first < v; });
  if (i != counts_.end() && i->first == value)
    ++i->second;
  else
    counts_.emplace(i, value, 1);
}

std::optional<int64_t> latency_histogram::nearest_rank(int percent) const {
  if (count_ == 0 || percent < 1 || percent > 100)
    return std::nullopt;
  auto rank = std::max<uint64_t>((static_cast<uint64_t>(percent) * count_ + 99) / 100, 1);
  uint64_t seen = 0;
  for (auto& [value, n] : counts_) {
    seen += n;
    if (seen >= rank)
      return value;
  }
  return counts_.back().first;
}

outcome_ledger::outcome_ledger(int64_t retain_ms) : retain_ms_(std::max<int64_t>(retain_ms, 0)) {
  // nop
}

outcome_ledger::record* outcome_ledger::find(const std::string& id) {
  auto i = records_.find(id);
  if (i == records_.end()) {
    ++unknown_outcomes_;
    return nullptr;
  }
  return &i->second;
}

ledger_second& outcome_ledger::second_at(int64_t t_ms) {
  auto s = static_cast<size_t>(std::max<int64_t>(t_ms, 0) / 1000);
  if (seconds_.size() <= s)
    seconds_.resize(s + 1);
  return seconds_[s];
}

void outcome_ledger::retire_until(int64_t now_ms) {
  latest_ms_ = std::max(latest_ms_, now_ms);
  if (retain_ms_ == keep_all)
    return;
  auto keep = [](std::vector<sample>& xs, const sample& x) {
    auto i = std::lower_bound(xs.begin(), xs.end(), x.seq,
                              [](const sample& a, uint64_t seq) { return a.seq < seq; });
    if (static_cast<size_t>(i - xs.begin()) >= ledger_summary::sample_max)
      return;
    xs.insert(i, x);
    if (xs.size() > ledger_summary::sample_max)
      xs.pop_back();
  };
  while (!terminated_.empty()) {
    auto* x = terminated_.front();
    auto& r = x->second;
    if (latest_ms_ - r.first_terminal_ms < retain_ms_)
      break;
    if (r.terminals == 2 && r.landed_with_ambiguous_failure) {
      ++retired_ambiguous_;
      keep(retired_ambiguous_ids_, sample{r.seq, x->first});
    } else if (r.terminals > 1) {
      ++retired_multiple_;
      keep(retired_multiple_ids_, sample{r.seq, x->first});
    }
    terminated_.pop_front();
    records_.erase(records_.find(x->first));
  }
}

void outcome_ledger::add_terminal(const std::string& id, record& r, outcome_kind k,
                                  routing::verdict v, const std::string& text, int64_t t_ms) {
  bool failed = (k == outcome_kind::nack || k == outcome_kind::suppressed_failure)
                && v == routing::verdict::failed;
  // The silo of the call ended (a crash, a non-graceful stop) while it was in flight: the
  // call may still land, at any time after.
  bool unknown_outcome = failed && text.find("outcome is unknown") != std::string::npos;
  // A response timeout: the callee may already hold the delivery; an expired call is not
  // carried out (its time-to-live), so only a landing before the timeout is ambiguous.
  bool timed_out = failed
                   && (text.find("timed out") != std::string::npos
                       || text.find("expired") != std::string::npos);
  auto ambiguous_failure = [&] { return unknown_outcome || timed_out; };
  if (r.terminals == 0) {
    r.first = k;
    r.first_terminal_ms = t_ms;
    --in_flight_;
    auto& sec = second_at(t_ms);
    ++sec.ended;
    auto count = [&](outcome_counts& c) {
      switch (k) {
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
    count(total_);
    count(by_kind_[r.kind]);
    count(by_origin_[r.origin]);
    switch (k) {
      case outcome_kind::landed:
      case outcome_kind::response:
        ++landed_;
        ++sec.landed;
        break;
      case outcome_kind::nack:
      case outcome_kind::suppressed_failure:
        if (k == outcome_kind::nack)
          ++nacked_[v];
        else
          ++suppressed_[v];
        if (overload_refusal(k, v, text).overloaded)
          ++sec.refusals;
        else if (k == outcome_kind::nack)
          ++sec.nacked[v];
        else
          ++sec.suppressed;
        break;
      case outcome_kind::deadline:
        ++sec.deadlines;
        break;
      case outcome_kind::unconfirmed:
        break;
    }
    terminated_.push_back(&*records_.find(id));
    r.first_unknown_outcome = unknown_outcome;
  } else if (r.terminals == 1) {
    bool landing = k == outcome_kind::landed || k == outcome_kind::response;
    bool first_landing = r.first == outcome_kind::landed || r.first == outcome_kind::response;
    r.landed_with_ambiguous_failure = (first_landing && ambiguous_failure())
                                      || (r.first_unknown_outcome && landing);
  }
  if (r.terminals < 3)
    ++r.terminals;
}

void outcome_ledger::emit(const std::string& line) {
  if (sink_ != nullptr)
    *sink_ << line << '\n';
}

bool outcome_ledger::accept(const accepted_delivery& d) {
  retire_until(d.accepted_ms);
  if (records_.count(d.id) > 0) {
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
  record r;
  r.seq = next_seq_++;
  r.accepted_ms = d.accepted_ms;
  r.version = d.version;
  r.kind = d.kind;
  r.answer_suppressed = d.answer_suppressed;
  auto [o, fresh_origin] = origin_index_.try_emplace(d.origin,
                                                     static_cast<uint32_t>(origins_.size()));
  if (fresh_origin) {
    origins_.push_back(d.origin);
    by_origin_.emplace_back();
  }
  r.origin = o->second;
  if (d.kind == delivery_kind::frame) {
    auto [i, fresh] = stream_index_.try_emplace(std::make_pair(d.target, d.stream),
                                                static_cast<uint32_t>(streams_.size()));
    if (fresh)
      streams_.push_back(stream_state{d.target, d.stream, 0, false});
    r.stream = i->second;
  }
  records_.emplace(d.id, r);
  ++total_.accepted;
  ++by_kind_[d.kind].accepted;
  ++by_origin_[r.origin].accepted;
  ++second_at(d.accepted_ms).accepted;
  ++in_flight_;
  return true;
}

void outcome_ledger::landed(const std::string& id, int64_t t_ms) {
  retire_until(t_ms);
  if (sink_ != nullptr) {
    auto j = head(t_ms, "landed");
    j["id"] = id;
    emit(j.dump());
  }
  auto* r = find(id);
  if (r == nullptr)
    return;
  if (!r->landed) {
    r->landed = true;
    latencies_.add(t_ms - r->accepted_ms);
    second_at(r->accepted_ms).latencies.add(t_ms - r->accepted_ms);
  }
  if (r->kind == delivery_kind::frame) {
    auto& st = streams_[r->stream];
    if (!st.any_landed) {
      st.any_landed = true;
      st.max_landed = r->version;
    } else {
      if (r->version < st.max_landed && r->terminals > 0 && r->first_unknown_outcome) {
        // Its sender was told the outcome is unknown and went on with newer versions: this
        // is the copy the ended silo had sent, and the receiver's guard drops it as stale.
        ++late_copies_;
        if (late_copy_ids_.size() < ledger_summary::sample_max)
          late_copy_ids_.push_back(id);
      } else if (r->version < st.max_landed) {
        ++order_violations_;
        if (violation_samples_.size() < ledger_summary::sample_max)
          violation_samples_.push_back(
            {id, st.target, st.stream, r->version, st.max_landed, t_ms});
      }
      st.max_landed = std::max(st.max_landed, r->version);
    }
  }
  if (r->kind != delivery_kind::request)
    add_terminal(id, *r, outcome_kind::landed, routing::verdict::ignored, {}, t_ms);
}

void outcome_ledger::response(const std::string& id, int64_t t_ms) {
  retire_until(t_ms);
  if (sink_ != nullptr) {
    auto j = head(t_ms, "response");
    j["id"] = id;
    emit(j.dump());
  }
  if (auto* r = find(id))
    add_terminal(id, *r, outcome_kind::response, routing::verdict::ignored, {}, t_ms);
}

void outcome_ledger::nack(const std::string& id, routing::verdict v, const std::string& text,
                          int64_t t_ms) {
  retire_until(t_ms);
  if (sink_ != nullptr) {
    auto j = head(t_ms, "nack");
    j["id"] = id;
    j["verdict"] = routing::to_string(v);
    j["text"] = text;
    emit(j.dump());
  }
  if (auto* r = find(id)) {
    if (r->answer_suppressed)
      ++nacks_on_suppressed_;
    nack_texts_.insert(text);
    nack_texts_by_verdict_[v].insert(text);
    add_terminal(id, *r, outcome_kind::nack, v, text, t_ms);
  }
}

void outcome_ledger::deadline(const std::string& id, int64_t t_ms) {
  retire_until(t_ms);
  if (sink_ != nullptr) {
    auto j = head(t_ms, "deadline");
    j["id"] = id;
    emit(j.dump());
  }
  if (auto* r = find(id))
    add_terminal(id, *r, outcome_kind::deadline, routing::verdict::ignored, {}, t_ms);
}

void outcome_ledger::suppressed_failure(const std::string& id, routing::verdict v,
                                        const std::string& text, int64_t t_ms) {
  retire_until(t_ms);
  if (sink_ != nullptr) {
    auto j = head(t_ms, "suppressed_failure");
    j["id"] = id;
    j["verdict"] = routing::to_string(v);
    j["text"] = text;
    emit(j.dump());
  }
  if (auto* r = find(id)) {
    nack_texts_.insert(text);
    nack_texts_by_verdict_[v].insert(text);
    add_terminal(id, *r, outcome_kind::suppressed_failure, v, text, t_ms);
  }
}

void outcome_ledger::unconfirmed(const std::string& id, int64_t t_ms) {
  retire_until(t_ms);
  if (sink_ != nullptr) {
    auto j = head(t_ms, "unconfirmed");
    j["id"] = id;
    emit(j.dump());
  }
  if (auto* r = find(id))
    add_terminal(id, *r, outcome_kind::unconfirmed, routing::verdict::ignored, {}, t_ms);
}

void outcome_ledger::duplicate_dropped(const std::string& id, int64_t t_ms) {
  retire_until(t_ms);
  if (sink_ != nullptr) {
    auto j = head(t_ms, "duplicate_dropped");
    j["id"] = id;
    emit(j.dump());
  }
  ++duplicates_dropped_;
}

void outcome_ledger::stale_dropped(const std::string& target, const std::string& stream,
                                   uint64_t version, int64_t t_ms) {
  retire_until(t_ms);
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
  auto i = records_.find(id);
  return i != records_.end() && i->second.terminals > 0;
}

bool outcome_ledger::answer_suppressed(const std::string& id) const {
  auto i = records_.find(id);
  return i != records_.end() && i->second.answer_suppressed;
}

ledger_summary outcome_ledger::summarize() const {
  ledger_summary s;
  s.total = total_;
  s.by_kind = by_kind_;
  for (size_t i = 0; i < origins_.size(); ++i)
    s.by_origin.emplace(origins_[i], by_origin_[i]);
  s.nacked_by_verdict = nacked_;
  s.suppressed_by_verdict = suppressed_;
  s.multiple_terminal = retired_multiple_;
  s.landed_with_ambiguous_failure = retired_ambiguous_;
  std::vector<sample> lost;
  std::vector<sample> multiple = retired_multiple_ids_;
  std::vector<sample> ambiguous = retired_ambiguous_ids_;
  for (auto& [id, r] : records_) {
    if (r.terminals == 0) {
      ++s.total.lost;
      ++s.by_kind[r.kind].lost;
      ++s.by_origin[origins_[r.origin]].lost;
      lost.push_back(sample{r.seq, id});
    } else if (r.terminals == 2 && r.landed_with_ambiguous_failure) {
      ++s.landed_with_ambiguous_failure;
      ambiguous.push_back(sample{r.seq, id});
    } else if (r.terminals > 1) {
      ++s.multiple_terminal;
      multiple.push_back(sample{r.seq, id});
    }
  }
  // Samples in acceptance order, at most sample_max.
  auto first_ids = [](std::vector<sample>& xs, std::vector<std::string>& out) {
    std::sort(xs.begin(), xs.end(), [](const sample& a, const sample& b) { return a.seq < b.seq; });
    for (size_t i = 0; i < xs.size() && i < ledger_summary::sample_max; ++i)
      out.push_back(xs[i].id);
  };
  first_ids(lost, s.lost_ids);
  first_ids(multiple, s.multiple_terminal_ids);
  first_ids(ambiguous, s.landed_with_ambiguous_failure_ids);
  s.nack_texts = nack_texts_;
  s.nack_texts_by_verdict = nack_texts_by_verdict_;
  s.duplicates_dropped = duplicates_dropped_;
  s.order_violations = order_violations_;
  s.order_violation_samples = violation_samples_;
  s.stale_drops = stale_drops_;
  s.late_copies = late_copies_;
  s.late_copy_ids = late_copy_ids_;
  s.unknown_outcomes = unknown_outcomes_;
  s.duplicate_accepts = duplicate_accepts_;
  s.nacks_on_suppressed = nacks_on_suppressed_;
  s.latency_samples = latencies_.count();
  s.latency_max_ms = latencies_.nearest_rank(100);
  s.latency_p50_ms = latencies_.nearest_rank(50);
  s.latency_p99_ms = latencies_.nearest_rank(99);
  return s;
}

std::string read_event_line(const std::string& line, outcome_ledger& ledger) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    return std::string{"expected a JSON object, got a parse error: "} + e.what();
  } catch (const json::out_of_range& e) {
    // A number no double holds (`1e999`): "[json.exception.out_of_range.406] number ...".
    std::string what = e.what();
    return "expected JSON numbers within the range of a double, got "
           + what.substr(what.find("] ") + 2);
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
