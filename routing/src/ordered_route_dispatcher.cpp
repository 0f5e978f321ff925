#include "cafmesh/routing/ordered_route_dispatcher.hpp"

#include <algorithm>
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
  if (contains(leg))
    return false;
  auto is_head = push(ch, leg);
  legs_.emplace(leg, &*channels_.find(ch));
  return is_head;
}

std::optional<leg_id> ordered_route_dispatcher::on_terminal(leg_id leg) {
  auto li = legs_.find(leg);
  if (li == legs_.end())
    return std::nullopt;
  auto i = channels_.find(li->second->first);
  legs_.erase(li);
  return terminal(i, leg);
}

bool ordered_route_dispatcher::push(const ordering_channel& ch, leg_id leg) {
  depth_guard guard{*this};
  ++legs_held_;
  auto i = channels_.find(ch);
  if (i == channels_.end()) {
    i = channels_.emplace(ch, channel_state{}).first;
    ++destinations_[ch.destination];
    i->second.head = leg;
    i->second.size = 1;
    return true;
  }
  auto& st = i->second;
  if (!st.behind)
    st.behind = std::make_unique<std::deque<leg_id>>();
  st.behind->push_back(leg);
  if (++st.size == 2)
    deep_.insert(&*i);
  return false;
}

std::optional<leg_id> ordered_route_dispatcher::on_terminal(const ordering_channel& ch,
                                                            leg_id leg) {
  return terminal(channels_.find(ch), leg);
}

std::optional<leg_id> ordered_route_dispatcher::terminal(channel_map::iterator i, leg_id leg) {
  depth_guard guard{*this};
  if (i == channels_.end())
    return std::nullopt;
  auto& st = i->second;
  if (st.head != leg) {
    // Queued behind the head, or not a leg of this channel (then nothing changes).
    bool next = st.behind && !st.behind->empty() && st.behind->front() == leg;
    if (!next
        && (!st.behind || (st.gone && st.gone->count(leg) > 0)
            || std::find(st.behind->begin(), st.behind->end(), leg) == st.behind->end()))
      return std::nullopt;
  }
  --legs_held_;
  if (--st.size == 1)
    deep_.erase(&*i);
  if (st.head != leg) {
    // Queued behind the head: gone now, skipped when its turn comes (at once if it is next).
    if (!st.behind->empty() && st.behind->front() == leg) {
      st.behind->pop_front();
    } else {
      if (!st.gone)
        st.gone = std::make_unique<std::unordered_set<leg_id>>();
      st.gone->insert(leg);
    }
    return std::nullopt;
  }
  if (st.size == 0) {
    auto di = destinations_.find(i->first.destination);
    if (--di->second == 0)
      destinations_.erase(di);
    channels_.erase(i);
    return std::nullopt;
  }
  // The next live leg behind the head is the head now.
  for (;;) {
    auto next = st.behind->front();
    st.behind->pop_front();
    if (st.gone && st.gone->erase(next) > 0)
      continue;
    st.head = next;
    return next;
  }
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
  return li != legs_.end() && li->second->second.head == leg;
}

bool ordered_route_dispatcher::is_head(const ordering_channel& ch, leg_id leg) const {
  auto i = channels_.find(ch);
  return i != channels_.end() && i->second.head == leg;
}

std::optional<ordering_channel> ordered_route_dispatcher::channel_of(leg_id leg) const {
  auto li = legs_.find(leg);
  if (li == legs_.end())
    return std::nullopt;
  return li->second->first;
}

std::optional<leg_id> ordered_route_dispatcher::head_of(const ordering_channel& ch) const {
  auto i = channels_.find(ch);
  if (i == channels_.end())
    return std::nullopt;
  return i->second.head;
}

size_t ordered_route_dispatcher::queued_behind(const ordering_channel& ch) const {
  auto i = channels_.find(ch);
  if (i == channels_.end())
    return 0;
  return i->second.size - 1;
}

} // namespace cafmesh::routing
