#pragma once

/// @file
/// The traffic generator model (docs/testing.md#the-simulation-harness "Traffic generators"):
/// a deterministic, paced schedule of deliveries plus the generators' reactions to outcomes.
///
/// Paced schedule. Slot i (from 0) is due at t_ms = floor(i * 1000 / rate_per_s); each
/// delivery takes one slot; an event (one draw below) starts only in a slot with
/// t_ms < duration_s * 1000, and a frame event that starts is completed (its last fan-out
/// deliveries may fall after the end). The first slots carry the initial Fulls: for every
/// stream s (ascending) and every subscriber j (ascending), `full(0, {})` from owner hub
/// s % owner_hubs to portal hub (s * subscribers_per_stream + j) % portal_hubs. Then each event draws its kind
/// with `next() % (frame + heartbeat + request weights)` (frame first, then heartbeat, then
/// request) from one `std::mt19937_64` seeded with `seed ^ fnv1a64("traffic")`:
/// - frame: stream `next() % streams`; the owner steps that stream's clock (`owner_streams`,
///   one step per message, docs/behaviour/sync-guard.md) and sends the patch to every subscriber,
///   one delivery (one slot) each, in subscriber order;
/// - heartbeat: portal hub `next() % portal_hubs` -> node hub `next() % node_hubs`, one-way,
///   answer-suppressed, no ordering key;
/// - request: portal hub `next() % portal_hubs` -> node hub `next() % node_hubs`.
/// The schedule is a function of the scenario alone: reactions draw no random numbers.
///
/// Reactions (`on_outcome`), on top of the paced rate, each due `reaction_delay_ms(n)` after
/// the NACK for the n-th reaction of its chain (250, 500, 1,000, 2,000, 4,000 ms: the attach
/// policy of docs/behaviour/classification.md#retry-policies, so that a chain outlives a silo's
/// restart):
/// - a frame NACKed with a transient verdict (shutting_down, unavailable): the owner sends
///   that subscriber a fresh `full` at the stream's current version and state, instead of
///   re-sending the frame (one per NACK), at most `request_max_resends` Fulls in a row for
///   one NACKed frame (a Full NACKed after that counts in `fresh_fulls_exhausted`);
/// - a request NACKed `shutting_down` or `unavailable`: re-sent as a NEW delivery (new id,
///   same sender, target and payload size), at most `request_max_resends` times per original
///   request; the re-send after that is not made and the chain counts as exhausted;
/// - a delivery the entry refused before accepting it because a bound was reached (verdict
///   `unavailable`, text containing "overloaded": admission control): re-sent as a NEW
///   delivery after the refusal's `retry_after_ms` (100 ms when the refusal carries none;
///   such refusals are counted), at most `traffic.overload_max_resends` times in a row; a
///   frame is re-sent as a fresh Full. This comes before the rules above and does not use
///   up a request's `request_max_resends`;
/// - every other outcome: nothing.
/// Paced ids are `{id_prefix}-{n}` and reaction ids `{id_prefix}-r{n}` (n from 1 each), so
/// the paced schedule, ids included, does not depend on the outcomes.
///
/// Bursts (`traffic.bursts`, scenario.hpp `burst_spec`) come on top of the paced schedule:
/// requests with ids `{id_prefix}-b{n}` (n from 1, in burst order), merged into `take_due`
/// by due time (a paced delivery first when both are due at the same ms); they leave the
/// paced schedule and its random draws unchanged.

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cafmesh/mainjob/ledger.hpp"
#include "cafmesh/mainjob/scenario.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/sync_guard.hpp"

namespace cafmesh::mainjob {

/// Keys a stream's state cycles through (`k0` .. `k7`).
inline constexpr uint64_t stream_keys = 8;

/// One delivery the driver should send.
struct planned_delivery {
  std::string id;
  int64_t t_ms = 0;             ///< due time since the traffic started
  delivery_kind kind = delivery_kind::post;
  std::string sender;           ///< rendered address
  std::string target;           ///< rendered address
  std::string origin;           ///< where the sender lives (`portal_origin`), `grain` for owners
  std::string stream;           ///< frames: ordering key (docs/behaviour/envelope.md#the-envelope)
  bool answer_suppressed = false; ///< heartbeats
  int64_t payload_bytes = 0;    ///< least payload size
  std::string payload_type;     ///< `demo.frame`, `demo.heartbeat`, `demo.request`, `demo.post`
  std::optional<routing::sync_frame> frame; ///< frames: kind, owner version, state or ops
  std::string chain;            ///< requests: id of the original request of a re-send chain
  int64_t attempt = 0;          ///< requests and frames: 0 for the original, n for the n-th re-send or fresh Full
  int64_t overload_attempt = 0; ///< n for the n-th re-send after consecutive overload refusals

  /// The ledger record of this delivery once accepted at `accepted_ms`.
  accepted_delivery accepted(int64_t accepted_ms) const;
};

/// Delay (ms) of the n-th reaction of a chain (n from 1): min(250 * 2^(n-1), 4000).
int64_t reaction_delay_ms(int64_t attempt);

/// The terminal outcome the driver observed for a delivery (input to `on_outcome`).
struct observed_outcome {
  observed_outcome(outcome_kind k = outcome_kind::landed,
                   routing::verdict v = routing::verdict::failed)
    : kind(k), verdict(v) {
    // nop
  }

  outcome_kind kind = outcome_kind::landed;
  routing::verdict verdict = routing::verdict::failed; ///< for `nack`
  bool overloaded = false;                 ///< an admission refusal (`overload_refusal`)
  std::optional<int64_t> retry_after_ms;   ///< the refusal's back-off hint, if it carried one
};

/// What a NACK or entry refusal says about admission control: `overloaded` when its verdict
/// is `unavailable` and its text contains "overloaded"; `retry_after_ms` when the text
/// carries the hint as `retry_after_ms` followed by `=`, `:` or a space (JSON quotes
/// allowed) and digits, e.g. `... overloaded (retry_after_ms=250)`, or in words,
/// `retry after 250 ms` (the router core's refusal text). A hub passes a NACK on to its
/// observer as verdict and text only, so the text is where the driver finds the hint.
observed_outcome overload_refusal(outcome_kind kind, routing::verdict v, const std::string& text);

/// Back-off after an overload refusal that carried no `retry_after_ms`.
inline constexpr int64_t overload_default_retry_after_ms = 100;

/// Counters of the generator's reactions.
struct traffic_counters {
  uint64_t paced = 0;                  ///< paced deliveries produced so far
  uint64_t burst = 0;                  ///< burst deliveries produced so far
  uint64_t fresh_fulls_after_nack = 0; ///< Fulls sent instead of re-sending a NACKed frame
  uint64_t requests_resent = 0;        ///< re-sends made
  uint64_t request_resends_exhausted = 0; ///< chains whose last allowed re-send got a transient NACK too
  uint64_t fresh_fulls_exhausted = 0; ///< frame chains whose last allowed fresh Full got a transient NACK too
  uint64_t overload_refusals = 0;      ///< deliveries refused as overloaded before acceptance
  uint64_t overload_refusals_without_retry_after = 0; ///< of those, refusals with no `retry_after_ms`
  uint64_t overload_resends = 0;       ///< re-sends made after an overload refusal
  uint64_t overload_resends_exhausted = 0; ///< chains refused again after their last allowed re-send
  /// Sender back-off (the driver): frames not offered because a fresh Full to the same
  /// (receiver, stream) was already owed; that Full carries them.
  uint64_t withheld_frames = 0;
  /// Heartbeats not offered: their sender was backing off after an overload refusal (a later
  /// heartbeat supersedes them).
  uint64_t withheld_heartbeats = 0;
  /// Requests held back while their sender was backing off, offered when it ended.
  uint64_t withheld_requests = 0;
  /// Of the withheld frames, those folded into a repair Full (owed after a `shutting_down`
  /// or `unavailable` NACK, not after an overload refusal) outside a back-off whose content
  /// reached the receiver: that Full landed, or was not sent because
  /// the receiver's mirror already equalled the stream (then the NACKed frame it stood for
  /// counts too). Frames shed while their sender backed off are not among them. The carried
  /// rate counts them (report.hpp `rates`).
  uint64_t withheld_frames_carried = 0;

  friend bool operator==(const traffic_counters& x, const traffic_counters& y) {
    return x.paced == y.paced && x.burst == y.burst
           && x.fresh_fulls_after_nack == y.fresh_fulls_after_nack
           && x.requests_resent == y.requests_resent
           && x.request_resends_exhausted == y.request_resends_exhausted
           && x.fresh_fulls_exhausted == y.fresh_fulls_exhausted
           && x.overload_refusals == y.overload_refusals
           && x.overload_refusals_without_retry_after == y.overload_refusals_without_retry_after
           && x.overload_resends == y.overload_resends
           && x.overload_resends_exhausted == y.overload_resends_exhausted
           && x.withheld_frames == y.withheld_frames
           && x.withheld_heartbeats == y.withheld_heartbeats
           && x.withheld_requests == y.withheld_requests
           && x.withheld_frames_carried == y.withheld_frames_carried;
  }
};

/// The owners' stream clocks, keyed by (owner address, stream id): one monotonic version
/// per owned stream and the owner's state (docs/behaviour/sync-guard.md). A stream starts at
/// version 0 with an empty state; every `step` is one message: version + 1, then
/// `set("k{v % 8}", "{v}")`.
class owner_streams {
public:
  /// Steps the stream's clock and answers the patch of the new version.
  routing::sync_frame step(const std::string& owner, const std::string& stream);

  /// A Full at the stream's current version and state (no step).
  routing::sync_frame full(const std::string& owner, const std::string& stream) const;

  /// Current version (0 for a stream never stepped).
  uint64_t version(const std::string& owner, const std::string& stream) const;

  /// Current state (empty for a stream never stepped).
  routing::sync_state state(const std::string& owner, const std::string& stream) const;

private:
  struct clock {
    uint64_t version = 0;
    routing::sync_state state;
  };
  std::map<std::pair<std::string, std::string>, clock> clocks_;
};

/// The generators' reactions to terminal outcomes (see the file comment), shared by the
/// traffic generator and the trace replay. Reaction ids are `{id_prefix}-r{n}`, n from 1.
class reactor {
public:
  reactor(std::string id_prefix, int64_t request_max_resends);

  /// Bound of consecutive re-sends after overload refusals (default 20).
  void set_overload_max_resends(int64_t n) { overload_max_resends_ = n; }

  /// The reaction to the terminal outcome `o` of delivery `d`, due at `now_ms`.
  std::vector<planned_delivery> on_outcome(const planned_delivery& d, const observed_outcome& o,
                                           int64_t now_ms);

  owner_streams& streams() { return streams_; }
  const owner_streams& streams() const { return streams_; }
  const traffic_counters& counters() const { return counters_; }
  traffic_counters& counters() { return counters_; }

private:
  std::string prefix_;
  int64_t max_resends_;
  int64_t overload_max_resends_ = 20;
  uint64_t next_id_ = 1;
  owner_streams streams_;
  traffic_counters counters_;
};

/// The paced generator (see the file comment). Single-threaded. Paced ids are
/// `{id_prefix}-{n}`, n from 1, in schedule order.
class traffic_generator {
public:
  explicit traffic_generator(const scenario& s, std::string id_prefix = "demo");

  /// Due time of the next paced or burst delivery, none once both are exhausted.
  std::optional<int64_t> next_due_ms() const;

  /// Takes every paced and burst delivery due at or before `now_ms`, by due time (paced
  /// ones in schedule order).
  std::vector<planned_delivery> take_due(int64_t now_ms);

  /// Takes the whole remaining schedule (for plans and tests).
  std::vector<planned_delivery> take_all();

  /// The reaction to the terminal outcome of delivery `d` (see the file comment).
  std::vector<planned_delivery> on_outcome(const planned_delivery& d, const observed_outcome& o,
                                           int64_t now_ms) {
    return reactor_.on_outcome(d, o, now_ms);
  }

  /// Subscribers (portal hub indexes) of stream s, in order.
  std::vector<int64_t> subscribers(int64_t s) const;

  /// The owners' clocks (what every mirror should end equal to).
  const owner_streams& streams() const { return reactor_.streams(); }

  /// Paced count and reaction counters.
  const traffic_counters& counters() const { return reactor_.counters(); }

private:
  void generate_event();
  planned_delivery make(int64_t t_ms, delivery_kind kind, std::string sender,
                        std::string target, std::string origin);
  int64_t slot_ms(uint64_t slot) const;

  scenario s_;
  std::string prefix_;
  std::mt19937_64 rng_;
  uint64_t next_id_ = 1;
  uint64_t slot_ = 0;
  int64_t end_ms_;
  int64_t initial_stream_ = 0;
  int64_t initial_subscriber_ = 0;
  std::vector<planned_delivery> buffer_; ///< deliveries of the current event, not yet taken
  size_t buffer_pos_ = 0;
  std::vector<planned_delivery> bursts_; ///< every burst delivery, by due time
  size_t burst_pos_ = 0;
  reactor reactor_;
};

/// Renders a frame's payload JSON (`{"v":…,"full":{…}}` or `{"v":…,"ops":[…]}`) padded
/// with a `"pad"` member to at least `payload_bytes` bytes; other kinds render
/// `{"type":…,"id":…}` padded the same way. The result is valid JSON.
std::string render_payload(const planned_delivery& d);

/// The envelope hub `sender` sends for `d` (every mesh, live or simulated, packages a
/// planned delivery the same way): id, target, payload type, `render_payload(d)`, the stream
/// as ordering key (none for a stream-less delivery) and `d`'s answer suppression.
routing::envelope to_envelope(const planned_delivery& d, const routing::address& sender);

} // namespace cafmesh::mainjob
