#include "cafmesh/routing/ordered_route_dispatcher.hpp"

#include <functional>
#include <utility>

namespace cafmesh::routing {

std::string ordering_channel::name() const {
  std::string out = destination;
  out += " [";
  if (key)
    out += *key;
  out += ']';
  return out;
}

ordering_channel make_channel(std::string destination, const std::string& key) {
  ordering_channel out;
  out.destination = std::move(destination);
  if (!key.empty())
    out.key = key;
  return out;
}

std::string to_string(const queue_snapshot& x) {
  std::string out = "channels " + std::to_string(x.channels) + ", destinations "
                    + std::to_string(x.destinations) + ", deepest " + std::to_string(x.deepest);
  if (x.deepest > 0) {
    out += " (";
    out += x.deepest_channel;
    out += ')';
  }
  return out;
}

/// Tracks the nesting of dispatcher calls for `max_depth()`.
class ordered_route_dispatcher::depth_guard {
public:
  explicit depth_guard(ordered_route_dispatcher& d) : d_(d) {
    if (++d_.depth_ > d_.max_depth_)
      d_.max_depth_ = d_.depth_;
  }
  ~depth_guard() { --d_.depth_; }
  depth_guard(const depth_guard&) = delete;
  depth_guard& operator=(const depth_guard&) = delete;

private:
  ordered_route_dispatcher& d_;
};

size_t
ordered_route_dispatcher::channel_hash::operator()(const ordering_channel& x) const noexcept {
  auto h = std::hash<std::string>{}(x.destination);
  if (x.key)
    h ^= std::hash<std::string>{}(*x.key) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

bool ordered_route_dispatcher::enqueue(const ordering_channel& ch, leg_id leg) {
  depth_guard guard{*this};
  if (contains(leg))
    return false;
  auto i = channels_.find(ch);
  bool is_new = i == channels_.end();
  if (is_new) {
    i = channels_.emplace(ch, channel_state{}).first;
    ++destinations_[ch.destination];
  }
  auto& st = i->second;
  auto& e = *legs_.emplace(leg, leg_entry{&*i, st.tail, nullptr}).first;
  if (st.tail != nullptr)
    st.tail->second.next = &e;
  else
    st.head = &e;
  st.tail = &e;
  if (++st.size == 2)
    deep_.insert(&*i);
  return is_new;
}

std::optional<leg_id> ordered_route_dispatcher::on_terminal(leg_id leg) {
  depth_guard guard{*this};
  auto li = legs_.find(leg);
  if (li == legs_.end())
    return std::nullopt;
  auto& ckv = *li->second.channel;
  auto& st = ckv.second;
  auto prev = li->second.prev;
  auto next = li->second.next;
  bool was_head = prev == nullptr;
  if (prev != nullptr)
    prev->second.next = next;
  else
    st.head = next;
  if (next != nullptr)
    next->second.prev = prev;
  else
    st.tail = prev;
  if (--st.size == 1)
    deep_.erase(&ckv);
  legs_.erase(li);
  if (st.size == 0) {
    auto di = destinations_.find(ckv.first.destination);
    if (--di->second == 0)
      destinations_.erase(di);
    channels_.erase(channels_.find(ckv.first));
    return std::nullopt;
  }
  if (!was_head)
    return std::nullopt;
  return st.head->first;
}

queue_snapshot ordered_route_dispatcher::snapshot() const {
  queue_snapshot out;
  out.channels = channels_.size();
  out.destinations = destinations_.size();
  // The deepest channel; among equally deep ones the least in channel order, as when the
  // channels were kept sorted.
  const ordering_channel* deepest = nullptr;
  for (const auto* ch : deep_) {
    const auto& kvp = *ch;
    auto behind = kvp.second.size - 1;
    if (behind > out.deepest || (behind == out.deepest && kvp.first < *deepest)) {
      out.deepest = behind;
      deepest = &kvp.first;
    }
  }
  if (deepest != nullptr)
    out.deepest_channel = deepest->name();
  return out;
}

bool ordered_route_dispatcher::is_head(leg_id leg) const {
  auto li = legs_.find(leg);
  if (li == legs_.end())
    return false;
  return li->second.prev == nullptr;
}

std::optional<ordering_channel> ordered_route_dispatcher::channel_of(leg_id leg) const {
  auto li = legs_.find(leg);
  if (li == legs_.end())
    return std::nullopt;
  return li->second.channel->first;
}

std::optional<leg_id> ordered_route_dispatcher::head_of(const ordering_channel& ch) const {
  auto i = channels_.find(ch);
  if (i == channels_.end())
    return std::nullopt;
  return i->second.head->first;
}

size_t ordered_route_dispatcher::queued_behind(const ordering_channel& ch) const {
  auto i = channels_.find(ch);
  if (i == channels_.end())
    return 0;
  return i->second.size - 1;
}

} // namespace cafmesh::routing
