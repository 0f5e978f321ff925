#pragma once

/// @file
/// The ordered route dispatcher (docs/behaviour/routing.md#the-ordered-dispatcher): per-channel
/// FIFO with one leg in flight per channel. A plain single-threaded class owned by the router core
/// actor, whose turns never overlap; it never calls out, it answers what the owner must do next.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
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
/// Two ways to name a leg: by its id alone (`enqueue(ch, leg)`, `on_terminal(leg)`: the
/// dispatcher remembers each leg's channel, one hashed entry per leg), or by its id and its
/// channel, which the owner derives from the leg itself (`push`, `on_terminal(ch, leg)`,
/// `is_head(ch, leg)`, `for_each_behind(ch, leg, f)`: nothing per leg but its id in its
/// channel's queue, docs/delivery-costs.md#what-a-delivery-holds). An owner uses one way for
/// a leg from its enqueue to its terminal event; the router core uses the second.
///
/// Costs: `enqueue`, `push` and `on_terminal` are O(1) on average (channels are hashed; a
/// channel holds its head and a queue of the ids behind it; a leg that ends while queued
/// behind others is skipped when its turn comes); `snapshot` is O(channels with legs queued
/// behind their head) (diagnostics only). An idle channel holds nothing.
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
/// auto ch = make_channel(host_path, key);
/// if (disp.push(ch, leg))
///   admit(leg);                        // send to the pool; refusals come back as messages
/// // the leg reported started:
/// maybe_log(sat.dispatched(leg, now));
/// // the leg's one terminal event (leg_done, crash, abandoned, pool_refused):
/// maybe_log(sat.terminated(leg, now));
/// if (auto next = disp.on_terminal(ch, leg))
///   admit(*next);
/// ```
class ordered_route_dispatcher {
public:
  ordered_route_dispatcher() = default;

  /// Not copyable: the id way's entries point at their channels (a move keeps them).
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

  /// `enqueue` for an owner that names each leg with its channel: nothing is kept per leg
  /// but its id in the channel's queue. The owner never pushes an id twice.
  bool push(const ordering_channel& ch, leg_id leg);

  /// `on_terminal` for a leg the owner pushed on `ch`: called once per such leg. An unknown
  /// channel answers none and changes nothing.
  std::optional<leg_id> on_terminal(const ordering_channel& ch, leg_id leg);

  /// True if `leg` is the head of `ch`.
  bool is_head(const ordering_channel& ch, leg_id leg) const;

  /// Calls `f(id)` for the legs behind `leg`, the head of `ch`, in channel order, until `f`
  /// answers false or the channel ends (a channel batch takes them,
  /// docs/behaviour/routing.md#channel-batches). Nothing if `leg` is not the head.
  /// O(legs visited).
  template <class F>
  void for_each_behind(const ordering_channel& ch, leg_id leg, F f) const {
    auto i = channels_.find(ch);
    if (i != channels_.end() && i->second.head == leg)
      visit_behind(i->second, f);
  }

  /// docs/behaviour/routing.md#the-ordered-dispatcher diagnostics.
  queue_snapshot snapshot() const;

  /// Number of channels (docs/scenarios.md S12.38 "the channel count is 0").
  size_t channel_count() const { return channels_.size(); }

  /// Number of legs held (heads and queued).
  size_t leg_count() const { return legs_held_; }

  /// True if `leg` is held (as head or queued). Only for legs enqueued by id.
  bool contains(leg_id leg) const { return legs_.count(leg) > 0; }

  /// True if `leg` is its channel's head. Only for legs enqueued by id.
  bool is_head(leg_id leg) const;

  /// The channel holding `leg`, if any. Only for legs enqueued by id.
  std::optional<ordering_channel> channel_of(leg_id leg) const;

  /// The head of `ch`, if the channel exists.
  std::optional<leg_id> head_of(const ordering_channel& ch) const;

  /// Legs waiting behind the head of `ch` (0 if the channel does not exist).
  size_t queued_behind(const ordering_channel& ch) const;

  /// `for_each_behind` for a leg enqueued by id.
  template <class F>
  void for_each_behind(leg_id leg, F f) const {
    auto li = legs_.find(leg);
    if (li != legs_.end() && li->second->second.head == leg)
      visit_behind(li->second->second, f);
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
  /// A channel: its running head and the ids behind it, in order. A leg that ended while
  /// queued stays in `behind` until its turn, listed in `gone`, and is skipped then.
  struct channel_state {
    leg_id head = 0;
    std::unique_ptr<std::deque<leg_id>> behind;       ///< created when a second leg arrives
    std::unique_ptr<std::unordered_set<leg_id>> gone; ///< created when a queued leg ends
    size_t size = 0; ///< legs held (head included), `gone` not counted
  };
  using channel_map = std::unordered_map<ordering_channel, channel_state, channel_hash>;

  template <class F>
  static void visit_behind(const channel_state& st, F& f) {
    if (!st.behind)
      return;
    for (auto id : *st.behind)
      if (!(st.gone && st.gone->count(id) > 0) && !f(id))
        return;
  }

  /// The terminal event of `leg` on the channel `i`.
  std::optional<leg_id> terminal(channel_map::iterator i, leg_id leg);

  class depth_guard;

  channel_map channels_;
  /// The channel of each leg enqueued by id.
  std::unordered_map<leg_id, channel_map::value_type*> legs_;
  size_t legs_held_ = 0;
  std::unordered_map<std::string, size_t> destinations_; ///< destination -> number of its channels
  /// Channels with legs queued behind their head: `snapshot` looks at these only.
  std::unordered_set<channel_map::value_type*> deep_;
  int depth_ = 0;
  int max_depth_ = 0;
};

} // namespace cafmesh::routing
