#pragma once

/// @file
/// The ordered route dispatcher (docs/behaviour/routing.md#the-ordered-dispatcher): per-channel
/// FIFO with one leg in flight per channel. A plain single-threaded class owned by the router core
/// actor, whose turns never overlap; it never calls out, it answers what the owner must do next.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace cafmesh::routing {

/// A leg's id inside one router core (unique per router core, e.g. from a counter).
using leg_id = uint64_t;

/// An ordering channel (docs/behaviour/routing.md#the-ordered-dispatcher): the pair (destination
/// host path, ordering key). No key is the destination-wide channel (path, none). Compared as a
/// pair, never as one concatenated string: (`cache/a`, `b/c`) and (`cache/a/b`, `c`) are different
/// channels.
struct ordering_channel {
  std::string destination;        ///< the rendered host path, e.g. `cache/mesh1`
  std::optional<std::string> key; ///< the ordering key; none = destination-wide

  /// Renders `{destination} [{key}]`, and `{destination} []` for the destination-wide
  /// channel (docs/behaviour/routing.md#the-ordered-dispatcher "Diagnostics").
  std::string name() const;

  friend bool operator<(const ordering_channel& x, const ordering_channel& y) {
    return std::tie(x.destination, x.key) < std::tie(y.destination, y.key);
  }
  friend bool operator==(const ordering_channel& x, const ordering_channel& y) {
    return x.destination == y.destination && x.key == y.key;
  }
  friend bool operator!=(const ordering_channel& x, const ordering_channel& y) { return !(x == y); }
};

/// The channel for a delivery to `destination` with the packaging stamp `key`
/// (docs/behaviour/envelope.md#the-envelope: an empty ordering key counts as none).
ordering_channel make_channel(std::string destination, const std::string& key);

/// The dispatcher's diagnostics (docs/behaviour/routing.md#the-ordered-dispatcher
/// `queue_snapshot()`).
struct queue_snapshot {
  size_t channels = 0;         ///< channels that exist (each holds at least its head)
  size_t destinations = 0;     ///< distinct destination host paths among them
  size_t deepest = 0;          ///< most legs queued behind one running head
  std::string deepest_channel; ///< that channel's `name()`; empty when `deepest` is 0
};

/// Renders `channels {c}, destinations {d}, deepest {n}`, followed by ` ({name})` when
/// `deepest` > 0. Used in the saturation report
/// (docs/behaviour/routing.md#saturation-report-and-refusal-log).
std::string to_string(const queue_snapshot& x);

/// The ordered route dispatcher (docs/behaviour/routing.md#the-ordered-dispatcher).
///
/// - `enqueue` appends a leg to its channel and answers true when the leg became the
///   channel's head: the owner must admit it through the pool now.
/// - `on_terminal` takes the terminal event of a leg (landed, NACKed, crashed, abandoned or
///   refused by the pool). For a head it pops the leg, removes the channel if it is empty
///   (no idle state) and answers the new head, which the owner must admit now.
/// - Different channels never wait for each other.
///
/// Costs: `enqueue` and `on_terminal` are O(1) on average (channels and legs are hashed, a
/// channel's FIFO is a linked list through its legs' entries); `snapshot` is O(channels
/// with legs queued behind their head) (diagnostics only). An idle channel holds nothing.
///
/// Re-entrancy: the class never calls back into its owner; admission results arrive as
/// messages, so the owner never calls `on_terminal` from inside another dispatcher call.
/// `max_depth()` records the deepest nesting of dispatcher calls seen, for tests
/// (docs/scenarios.md S12.41: never above 1).
///
/// Typical use in the router core (with `saturation_monitor` for the in-flight count):
/// ```
/// // stream-routed branch, on route(envelope):
/// auto leg = next_leg_id++;
/// maybe_log(sat.accept(leg, leg_phase::queued, now));
/// auto key = env.ordering_key ? *env.ordering_key : std::string{};
/// if (disp.enqueue(make_channel(host_path, key), leg))
///   admit(leg);                        // send to the pool; refusals come back as messages
/// // the leg reported started:
/// maybe_log(sat.dispatched(leg, now));
/// // the leg's one terminal event (leg_done, crash, abandoned, pool_refused):
/// maybe_log(sat.terminated(leg, now));
/// if (auto next = disp.on_terminal(leg))
///   admit(*next);
/// ```
class ordered_route_dispatcher {
public:
  ordered_route_dispatcher() = default;

  /// Not copyable: a channel's FIFO links its legs' entries (a move keeps them).
  ordered_route_dispatcher(const ordered_route_dispatcher&) = delete;
  ordered_route_dispatcher& operator=(const ordered_route_dispatcher&) = delete;
  ordered_route_dispatcher(ordered_route_dispatcher&&) = default;
  ordered_route_dispatcher& operator=(ordered_route_dispatcher&&) = default;

  /// Appends `leg` to `ch`. Answers true when `leg` is now the channel's head (the owner
  /// admits it at once), false when it waits behind a running head. A `leg` id the
  /// dispatcher already holds is refused: nothing changes and the answer is false (ids must
  /// be unique; `contains` tells whether an id is held).
  bool enqueue(const ordering_channel& ch, leg_id leg);

  /// The one terminal event of `leg`. If `leg` is a head: pops it, drops its channel if
  /// empty, and answers the channel's new head (to admit now). If `leg` is queued behind a
  /// head (it never started): removes it and answers none. An unknown id answers none and
  /// changes nothing.
  std::optional<leg_id> on_terminal(leg_id leg);

  /// docs/behaviour/routing.md#the-ordered-dispatcher diagnostics.
  queue_snapshot snapshot() const;

  /// Number of channels (docs/scenarios.md S12.38 "the channel count is 0").
  size_t channel_count() const { return channels_.size(); }

  /// Number of legs held (heads and queued).
  size_t leg_count() const { return legs_.size(); }

  /// True if `leg` is held (as head or queued).
  bool contains(leg_id leg) const { return legs_.count(leg) > 0; }

  /// True if `leg` is its channel's head.
  bool is_head(leg_id leg) const;

  /// The channel holding `leg`, if any.
  std::optional<ordering_channel> channel_of(leg_id leg) const;

  /// The head of `ch`, if the channel exists.
  std::optional<leg_id> head_of(const ordering_channel& ch) const;

  /// Legs waiting behind the head of `ch` (0 if the channel does not exist).
  size_t queued_behind(const ordering_channel& ch) const;

  /// Calls `f(id)` for the legs behind `leg` on its channel, in channel order, until `f`
  /// answers false or the channel ends (a channel batch takes them,
  /// docs/behaviour/routing.md#channel-batches). O(legs visited).
  template <class F>
  void for_each_behind(leg_id leg, F f) const {
    auto li = legs_.find(leg);
    if (li == legs_.end())
      return;
    for (auto x = li->second.next; x != nullptr; x = x->second.next)
      if (!f(x->first))
        return;
  }

  /// Current nesting of dispatcher calls (0 outside any call).
  int depth() const { return depth_; }

  /// Deepest nesting of dispatcher calls ever seen (docs/scenarios.md S12.41: must stay <= 1).
  int max_depth() const { return max_depth_; }

private:
  /// Hashes a channel by its two parts (never by one concatenated string).
  struct channel_hash {
    size_t operator()(const ordering_channel& x) const noexcept;
  };
  struct leg_entry;
  using leg_map = std::unordered_map<leg_id, leg_entry>;
  struct channel_state {
    leg_map::value_type* head = nullptr; ///< the running head; the queue links from it
    leg_map::value_type* tail = nullptr; ///< the latest arrival
    size_t size = 0;                     ///< legs held (head included)
  };
  using channel_map = std::unordered_map<ordering_channel, channel_state, channel_hash>;
  /// A leg's place: its channel and its neighbours in the channel's FIFO (an intrusive
  /// doubly linked list through the entries, so a queued leg leaves in O(1)).
  struct leg_entry {
    channel_map::value_type* channel = nullptr;
    leg_map::value_type* prev = nullptr;
    leg_map::value_type* next = nullptr;
  };

  class depth_guard;

  channel_map channels_;
  leg_map legs_;
  std::unordered_map<std::string, size_t> destinations_; ///< destination -> number of its channels
  /// Channels with legs queued behind their head: `snapshot` looks at these only.
  std::unordered_set<channel_map::value_type*> deep_;
  int depth_ = 0;
  int max_depth_ = 0;
};

} // namespace cafmesh::routing
