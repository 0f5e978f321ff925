#include "cafmesh/mainjob/trace_replay.hpp"
#include "cafmesh/config/text.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "cafmesh/routing/address.hpp"
#include "json_check.hpp"

namespace cafmesh::mainjob {

using namespace detail;

namespace {

constexpr int64_t payload_max = 1048575;

const std::vector<std::string> trace_kinds{"request", "post", "heartbeat", "frame"};

bool blank(const std::string& line) {
  return line.find_first_not_of(" \t\r") == std::string::npos;
}

/// `line {n}: {e}`, without the empty pointer of the line's document itself (`: expected an
/// object`) and without the parser's own "line 1" (one file line is one JSON document).
std::string line_error(int64_t n, std::string e) {
  if (e.rfind(": ", 0) == 0)
    e.erase(0, 2);
  const std::string parser_line = "parse error at line 1, column ";
  if (auto i = e.find(parser_line); i != std::string::npos)
    e.replace(i, parser_line.size(), "parse error at column ");
  return "line " + std::to_string(n) + ": " + e;
}

/// Validates one line; answers the entry when valid.
std::optional<trace_entry> read_line(const std::string& line, int64_t n, int64_t previous_t_ms,
                                     error_list& errs) {
  error_list own;
  std::set<std::string> dups;
  json doc;
  if (!parse_json(line, "", doc, dups, own)) {
    for (auto& x : own)
      errs.push_back(line_error(n, x));
    return std::nullopt;
  }
  trace_entry e;
  e.line = n;
  auto address = [&](std::string& out) {
    return [&](const json& v, const std::string& p) {
      routing::address a;
      if (!v.is_string() || !routing::address::parse(v.get<std::string>(), a))
        refuse(own, p, "an address type/id", shown(v));
      else
        out = v.get<std::string>();
    };
  };
  bool kind_ok = false;
  bool stream_ok = false;
  read_object(doc, "",
              {{"t_ms", true, "an integer >= 0",
                [&](const json& v, const std::string& p) {
                  read_integer(v, p, 0, int64_max, e.t_ms, own);
                }},
               {"sender", true, "an address type/id", address(e.sender)},
               {"target", true, "an address type/id", address(e.target)},
               {"stream", true, "a string",
                [&](const json& v, const std::string& p) {
                  stream_ok = read_string(v, p, false, e.stream, own);
                }},
               {"payload_bytes", true, "an integer from 0 to 1048575",
                [&](const json& v, const std::string& p) {
                  read_integer(v, p, 0, payload_max, e.payload_bytes, own);
                }},
               {"kind", true, "one of \"request\", \"post\", \"heartbeat\", \"frame\"",
                [&](const json& v, const std::string& p) {
                  if (v.is_string()
                      && std::count(trace_kinds.begin(), trace_kinds.end(), v.get<std::string>())
                           > 0) {
                    e.kind = v.get<std::string>();
                    kind_ok = true;
                  } else {
                    refuse(own, p, "one of \"request\", \"post\", \"heartbeat\", \"frame\"",
                           shown(v));
                  }
                }}},
              dups, own);
  if (own.empty() && e.t_ms < previous_t_ms)
    refuse(own, "/t_ms",
           "an integer >= " + std::to_string(previous_t_ms) + " (the t_ms of the line before)",
           std::to_string(e.t_ms));
  if (own.empty() && kind_ok && stream_ok) {
    if (e.kind == "frame" && e.stream.empty())
      refuse(own, "/stream", "a non-empty stream id for kind \"frame\"", "\"\"");
    else if (e.kind != "frame" && !e.stream.empty())
      refuse(own, "/stream", "\"\" for kind \"" + e.kind + "\" (only frames have a stream)",
             json(e.stream).dump());
  }
  for (auto& x : own)
    errs.push_back(line_error(n, x));
  if (!own.empty())
    return std::nullopt;
  return e;
}

} // namespace

std::string trace_result::message() const {
  std::string out;
  for (auto& e : errors)
    out += (out.empty() ? "" : "\n") + e;
  return out;
}

trace_result parse_trace(const std::string& text) {
  trace_result result;
  std::istringstream in{text};
  std::string line;
  int64_t n = 0;
  int64_t previous_t_ms = 0;
  while (std::getline(in, line)) {
    ++n;
    if (blank(line))
      continue;
    if (auto e = read_line(line, n, previous_t_ms, result.errors)) {
      previous_t_ms = e->t_ms;
      result.entries.push_back(std::move(*e));
    }
  }
  if (result.errors.empty())
    result.ok = true;
  else
    result.entries.clear();
  return result;
}

trace_result load_trace_file(const std::string& path) {
  std::string text;
  int read_errno = cafmesh::config::read_text_file(path, text);
  if (read_errno == 0)
    return parse_trace(text);
  trace_result result;
  result.errors.push_back("cannot read trace file \"" + path + "\": " + std::strerror(read_errno));
  return result;
}

std::string to_trace_line(const planned_delivery& d) {
  json j = json::object();
  j["t_ms"] = d.t_ms;
  j["sender"] = d.sender;
  j["target"] = d.target;
  j["stream"] = d.stream;
  j["payload_bytes"] = d.payload_bytes;
  j["kind"] = d.kind == delivery_kind::post && d.answer_suppressed ? "heartbeat"
                                                                   : to_string(d.kind);
  return j.dump();
}

trace_replay::trace_replay(std::vector<trace_entry> entries, std::string id_prefix,
                           std::string origin, int64_t request_max_resends)
  : entries_(std::move(entries)),
    prefix_(std::move(id_prefix)),
    origin_(std::move(origin)),
    reactor_(prefix_, request_max_resends) {
  // nop
}

std::optional<int64_t> trace_replay::next_due_ms() const {
  if (pos_ < entries_.size())
    return entries_[pos_].t_ms;
  return std::nullopt;
}

std::vector<planned_delivery> trace_replay::take_due(int64_t now_ms) {
  std::vector<planned_delivery> out;
  while (pos_ < entries_.size() && entries_[pos_].t_ms <= now_ms) {
    auto& e = entries_[pos_++];
    planned_delivery d;
    d.id = prefix_ + "-" + std::to_string(next_id_++);
    d.t_ms = e.t_ms;
    d.sender = e.sender;
    d.target = e.target;
    d.origin = origin_;
    d.stream = e.stream;
    d.payload_bytes = e.payload_bytes;
    if (e.kind == "request") {
      d.kind = delivery_kind::request;
      d.payload_type = "demo.request";
    } else if (e.kind == "post" || e.kind == "heartbeat") {
      d.kind = delivery_kind::post;
      d.answer_suppressed = e.kind == "heartbeat";
      d.payload_type = e.kind == "heartbeat" ? "demo.heartbeat" : "demo.post";
    } else {
      d.kind = delivery_kind::frame;
      d.payload_type = "demo.frame";
      auto patch = reactor_.streams().step(e.sender, e.stream);
      if (subscribed_.emplace(e.sender, e.stream, e.target).second)
        d.frame = reactor_.streams().full(e.sender, e.stream);
      else
        d.frame = std::move(patch);
    }
    ++reactor_.counters().paced;
    out.push_back(std::move(d));
  }
  return out;
}

} // namespace cafmesh::mainjob
