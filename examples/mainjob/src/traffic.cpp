#include "cafmesh/mainjob/traffic.hpp"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "cafmesh/actors/ids.hpp"

namespace cafmesh::mainjob {

namespace {

using json = nlohmann::ordered_json;

bool is_transient_nack(const observed_outcome& o) {
  return o.kind == outcome_kind::nack && routing::is_transient_verdict(o.verdict);
}

} // namespace

accepted_delivery planned_delivery::accepted(int64_t accepted_ms) const {
  accepted_delivery d;
  d.id = id;
  d.kind = kind;
  d.sender = sender;
  d.target = target;
  d.stream = stream;
  d.version = frame ? frame->version : 0;
  d.answer_suppressed = answer_suppressed;
  d.origin = origin;
  d.accepted_ms = accepted_ms;
  return d;
}

// -- owner_streams ------------------------------------------------------------

routing::sync_frame owner_streams::step(const std::string& owner, const std::string& stream) {
  auto& c = clocks_[{owner, stream}];
  ++c.version;
  auto op = routing::sync_op::set("k" + std::to_string(c.version % stream_keys),
                                  std::to_string(c.version));
  c.state[op.key] = op.value_json;
  return routing::sync_frame::patch(c.version, {op});
}

routing::sync_frame owner_streams::full(const std::string& owner,
                                        const std::string& stream) const {
  return routing::sync_frame::full(version(owner, stream), state(owner, stream));
}

uint64_t owner_streams::version(const std::string& owner, const std::string& stream) const {
  auto i = clocks_.find({owner, stream});
  return i == clocks_.end() ? 0 : i->second.version;
}

routing::sync_state owner_streams::state(const std::string& owner,
                                         const std::string& stream) const {
  auto i = clocks_.find({owner, stream});
  return i == clocks_.end() ? routing::sync_state{} : i->second.state;
}

// -- reactor ------------------------------------------------------------------

reactor::reactor(std::string id_prefix, int64_t request_max_resends)
  : prefix_(std::move(id_prefix)), max_resends_(request_max_resends) {
  // nop
}

int64_t reaction_delay_ms(int64_t attempt) {
  if (attempt <= 1)
    return 250;
  if (attempt >= 6)
    return 4000;
  return std::min<int64_t>(int64_t{250} << (attempt - 1), 4000);
}

observed_outcome overload_refusal(outcome_kind kind, routing::verdict v,
                                  const std::string& text) {
  observed_outcome o;
  o.kind = kind;
  o.verdict = v;
  o.overloaded = v == routing::verdict::unavailable
                 && text.find("overloaded") != std::string::npos;
  // Digits right after `from` (spaces skipped), if any.
  auto number_at = [&](size_t from) -> std::optional<int64_t> {
    while (from < text.size() && text[from] == ' ')
      ++from;
    int64_t n = 0;
    size_t digits = 0;
    for (; from < text.size() && text[from] >= '0' && text[from] <= '9' && digits < 12;
         ++from, ++digits)
      n = n * 10 + (text[from] - '0');
    if (digits == 0)
      return std::nullopt;
    return n;
  };
  static const std::string key = "retry_after_ms";
  for (auto pos = text.find(key); pos != std::string::npos && !o.retry_after_ms;
       pos = text.find(key, pos + 1)) {
    auto i = pos + key.size();
    if (i < text.size() && text[i] == '"')
      ++i;
    if (i < text.size() && (text[i] == '=' || text[i] == ':' || text[i] == ' '))
      o.retry_after_ms = number_at(i + 1);
  }
  static const std::string words = "retry after ";
  for (auto pos = text.find(words); pos != std::string::npos && !o.retry_after_ms;
       pos = text.find(words, pos + 1)) {
    auto n = number_at(pos + words.size());
    auto end = text.find_first_not_of("0123456789 ", pos + words.size());
    if (n && end != std::string::npos && text.compare(end, 2, "ms") == 0)
      o.retry_after_ms = n;
  }
  return o;
}

std::vector<planned_delivery> reactor::on_outcome(const planned_delivery& d,
                                                  const observed_outcome& o, int64_t now_ms) {
  std::vector<planned_delivery> out;
  if (o.overloaded
      && (o.kind == outcome_kind::nack || o.kind == outcome_kind::suppressed_failure)) {
    ++counters_.overload_refusals;
    if (!o.retry_after_ms)
      ++counters_.overload_refusals_without_retry_after;
    if (d.overload_attempt >= overload_max_resends_) {
      ++counters_.overload_resends_exhausted;
      return out;
    }
    auto next = d;
    next.id = prefix_ + "-r" + std::to_string(next_id_++);
    next.overload_attempt = d.overload_attempt + 1;
    if (d.kind == delivery_kind::frame)
      next.frame = streams_.full(d.sender, d.stream);
    else if (d.kind == delivery_kind::request)
      next.chain = d.chain.empty() ? d.id : d.chain;
    next.t_ms = now_ms + o.retry_after_ms.value_or(overload_default_retry_after_ms);
    ++counters_.overload_resends;
    out.push_back(std::move(next));
    return out;
  }
  if (!is_transient_nack(o))
    return out;
  auto next = d;
  next.id = prefix_ + "-r" + std::to_string(next_id_);
  if (d.kind == delivery_kind::frame) {
    if (d.attempt >= max_resends_) {
      ++counters_.fresh_fulls_exhausted;
      return out;
    }
    next.attempt = d.attempt + 1;
    next.frame = streams_.full(d.sender, d.stream);
    ++counters_.fresh_fulls_after_nack;
  } else if (d.kind == delivery_kind::request) {
    if (d.attempt >= max_resends_) {
      ++counters_.request_resends_exhausted;
      return out;
    }
    next.attempt = d.attempt + 1;
    next.chain = d.chain.empty() ? d.id : d.chain;
    ++counters_.requests_resent;
  } else {
    return out; // one-way posts are not re-sent
  }
  next.t_ms = now_ms + reaction_delay_ms(next.attempt);
  ++next_id_;
  out.push_back(std::move(next));
  return out;
}

// -- traffic_generator --------------------------------------------------------

traffic_generator::traffic_generator(const scenario& s, std::string id_prefix)
  : s_(s),
    prefix_(std::move(id_prefix)),
    rng_(s.seed ^ fnv1a64("traffic")),
    end_ms_(s.duration_s * 1000),
    reactor_(prefix_, s.traffic.request_max_resends) {
  reactor_.set_overload_max_resends(s.traffic.overload_max_resends);
  auto& t = s_.traffic;
  uint64_t n = 1;
  for (auto& b : t.bursts) {
    for (int64_t k = 0; k < b.count; ++k) {
      planned_delivery d;
      d.id = prefix_ + "-b" + std::to_string(n++);
      d.t_ms = b.at_ms + k * b.within_ms / b.count;
      d.kind = delivery_kind::request;
      d.sender = portal_hub_address(k % t.portal_hubs);
      d.target = node_hub_address(k % t.node_hubs);
      d.origin = portal_origin(s_, k % t.portal_hubs);
      d.payload_bytes = t.payload_bytes.request;
      d.payload_type = "demo.request";
      bursts_.push_back(std::move(d));
    }
  }
  std::stable_sort(bursts_.begin(), bursts_.end(),
                   [](const planned_delivery& x, const planned_delivery& y) {
                     return x.t_ms < y.t_ms;
                   });
}

int64_t traffic_generator::slot_ms(uint64_t slot) const {
  // floor(slot * 1000 / rate) without overflow for any realistic slot count
  auto rate = static_cast<uint64_t>(s_.rate_per_s);
  return static_cast<int64_t>((slot / rate) * 1000 + (slot % rate) * 1000 / rate);
}

std::vector<int64_t> traffic_generator::subscribers(int64_t s) const {
  std::vector<int64_t> out;
  auto k = s_.traffic.subscribers_per_stream;
  for (int64_t j = 0; j < k; ++j)
    out.push_back((s * k + j) % s_.traffic.portal_hubs);
  return out;
}

planned_delivery traffic_generator::make(int64_t t_ms, delivery_kind kind, std::string sender,
                                         std::string target, std::string origin) {
  planned_delivery d;
  d.id = prefix_ + "-" + std::to_string(next_id_++);
  d.t_ms = t_ms;
  d.kind = kind;
  d.sender = std::move(sender);
  d.target = std::move(target);
  d.origin = std::move(origin);
  return d;
}

void traffic_generator::generate_event() {
  buffer_.clear();
  buffer_pos_ = 0;
  auto& t = s_.traffic;
  auto frame_to = [&](int64_t stream, int64_t subscriber, routing::sync_frame f) {
    auto d = make(slot_ms(slot_++), delivery_kind::frame,
                  owner_hub_address(stream % t.owner_hubs), portal_hub_address(subscriber),
                  "grain");
    d.stream = stream_id(stream);
    d.payload_bytes = t.payload_bytes.frame;
    d.payload_type = "demo.frame";
    d.frame = std::move(f);
    buffer_.push_back(std::move(d));
  };
  if (t.weights.frame > 0 && initial_stream_ < t.streams) {
    // initial Fulls: one per (stream, subscriber), before any event
    auto subs = subscribers(initial_stream_);
    auto owner = owner_hub_address(initial_stream_ % t.owner_hubs);
    frame_to(initial_stream_, subs[static_cast<size_t>(initial_subscriber_)],
             reactor_.streams().full(owner, stream_id(initial_stream_)));
    if (++initial_subscriber_ == static_cast<int64_t>(subs.size())) {
      initial_subscriber_ = 0;
      ++initial_stream_;
    }
    return;
  }
  auto total = static_cast<uint64_t>(t.weights.frame + t.weights.heartbeat + t.weights.request);
  auto draw = rng_() % total;
  if (draw < static_cast<uint64_t>(t.weights.frame)) {
    auto stream = static_cast<int64_t>(rng_() % static_cast<uint64_t>(t.streams));
    auto patch = reactor_.streams().step(owner_hub_address(stream % t.owner_hubs),
                                         stream_id(stream));
    for (auto subscriber : subscribers(stream))
      frame_to(stream, subscriber, patch);
    return;
  }
  auto heartbeat = draw < static_cast<uint64_t>(t.weights.frame + t.weights.heartbeat);
  auto portal = static_cast<int64_t>(rng_() % static_cast<uint64_t>(t.portal_hubs));
  auto node = static_cast<int64_t>(rng_() % static_cast<uint64_t>(t.node_hubs));
  auto d = make(slot_ms(slot_++), heartbeat ? delivery_kind::post : delivery_kind::request,
                portal_hub_address(portal), node_hub_address(node), portal_origin(s_, portal));
  if (heartbeat) {
    d.answer_suppressed = true;
    d.payload_bytes = t.payload_bytes.heartbeat;
    d.payload_type = "demo.heartbeat";
  } else {
    d.payload_bytes = t.payload_bytes.request;
    d.payload_type = "demo.request";
  }
  buffer_.push_back(std::move(d));
}

std::optional<int64_t> traffic_generator::next_due_ms() const {
  std::optional<int64_t> paced;
  if (buffer_pos_ < buffer_.size())
    paced = buffer_[buffer_pos_].t_ms;
  else if (auto t = slot_ms(slot_); t < end_ms_)
    paced = t;
  if (burst_pos_ < bursts_.size()) {
    auto b = bursts_[burst_pos_].t_ms;
    return paced ? std::min(*paced, b) : b;
  }
  return paced;
}

std::vector<planned_delivery> traffic_generator::take_due(int64_t now_ms) {
  std::vector<planned_delivery> out;
  auto take_bursts = [&](int64_t until_ms) {
    while (burst_pos_ < bursts_.size() && bursts_[burst_pos_].t_ms <= until_ms) {
      out.push_back(std::move(bursts_[burst_pos_++]));
      ++reactor_.counters().burst;
    }
  };
  for (;;) {
    if (buffer_pos_ == buffer_.size()) {
      auto t = slot_ms(slot_);
      if (t >= end_ms_ || t > now_ms)
        break;
      generate_event();
    }
    auto& next = buffer_[buffer_pos_];
    if (next.t_ms > now_ms)
      break;
    take_bursts(next.t_ms - 1);
    out.push_back(std::move(next));
    ++buffer_pos_;
    ++reactor_.counters().paced;
  }
  take_bursts(now_ms);
  return out;
}

std::vector<planned_delivery> traffic_generator::take_all() {
  return take_due(std::numeric_limits<int64_t>::max());
}

std::string render_payload(const planned_delivery& d) {
  json j = json::object();
  if (d.frame) {
    j["v"] = d.frame->version;
    if (d.frame->type == routing::sync_frame::kind::full) {
      json state = json::object();
      for (auto& [k, v] : d.frame->state)
        state[k] = json::parse(v);
      j["full"] = state;
    } else {
      json ops = json::array();
      for (auto& op : d.frame->ops) {
        json o = json::object();
        o["op"] = op.op == routing::sync_op::kind::set      ? "set"
                  : op.op == routing::sync_op::kind::remove ? "remove"
                                                            : "test";
        o["key"] = op.key;
        if (op.op != routing::sync_op::kind::remove)
          o["value"] = json::parse(op.value_json);
        ops.push_back(o);
      }
      j["ops"] = ops;
    }
  } else {
    j["type"] = d.payload_type;
    j["id"] = d.id;
  }
  auto text = j.dump();
  auto want = static_cast<size_t>(std::max<int64_t>(d.payload_bytes, 0));
  // `,"pad":""` adds 9 bytes before any padding character; a payload shorter than `want`
  // gets a pad making it exactly `want` bytes, or 9 bytes longer than it was when that is more.
  if (text.size() < want) {
    j["pad"] = std::string(want >= text.size() + 9 ? want - text.size() - 9 : 0, 'x');
    text = j.dump();
  }
  return text;
}

routing::envelope to_envelope(const planned_delivery& d, const routing::address& sender) {
  routing::envelope e;
  e.id = d.id;
  e.sender = sender;
  e.target = routing::address::from(d.target);
  e.payload_type = d.payload_type;
  e.payload_json = render_payload(d);
  if (!d.stream.empty())
    e.ordering_key = d.stream;
  e.answer_suppressed = d.answer_suppressed;
  return e;
}

} // namespace cafmesh::mainjob
