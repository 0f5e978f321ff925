#pragma once

/// @file
/// The co-hosted router-core rig of cafmesh-bench: a `silo_host` routing service whose
/// router core runs real legs through the real quiescence gauge and I/O pool against a fake
/// path resolver (`node/{prefix}`) and a fake grain port (the node-hub and pod-hub calls),
/// fed by a driver actor that posts one-way `(rs_post_atom, envelope)` deliveries (P1) or
/// keeps a window of `rs_deliver` requests outstanding (P1q, P4, P5, P6)
/// (examples/bench/README.md "What each row measures").

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <caf/all.hpp>

#include "bench.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/routing/router_ports.hpp"
#include "cafmesh/routing/routing_quiescence_actor.hpp"
#include "cafmesh/routing/io_pool_actor.hpp"
#include "cafmesh/routing/routing_service.hpp"

namespace cafmesh::bench {

using bn_raw_atom = caf::atom_constant<caf::atom("bnraw")>;
using bn_req_atom = caf::atom_constant<caf::atom("bnreq")>;
using bn_release_atom = caf::atom_constant<caf::atom("bnrelease")>;
using bn_post_atom = caf::atom_constant<caf::atom("bnpost")>;

/// What the fake grain port does with one `gp_call`.
enum class grain_answer {
  at_once,   ///< answers `processed` in the same turn
  never,     ///< never answers and keeps nothing (`caf::delegated`): the leg stays in flight
  on_release ///< keeps the response promise until `(bn_release_atom, n)` answers the oldest n
};

/// How the rig is built.
struct rig_options {
  /// Decides per grain (`messagehub/{prefix}` or `podhub/{path}`); default: `at_once`.
  std::function<grain_answer(const grain_id&)> answer;
  /// `routing.max_in_flight` (0: no admission bound; the floods measure the hot path).
  int64_t max_in_flight = 0;
  /// The fake path resolver marks its answers `cacheable` (resolve_result::cacheable,
  /// docs/behaviour/routing.md#cacheable-resolutions), as the silo's default resolver does.
  bool cacheable = true;
};

/// The small envelope every co-hosted case moves (7-byte JSON payload).
routing::envelope make_proto(routing::address target);

/// A list of envelopes the driver cycles through.
using proto_list = std::shared_ptr<const std::vector<routing::envelope>>;
proto_list protos_of(std::vector<routing::envelope> xs);

/// Most `rs_deliver` requests the driver keeps outstanding. CAF 0.17 keeps a requester's
/// pending response handlers in a flat map searched linearly; a bounded window measures a
/// pipelined request stream, not that lookup. The routing service answers at once, so the
/// window does not bound the legs in the router core.
inline constexpr uint64_t request_window = 128;

/// See the file comment. Every actor is told to exit when the rig is destroyed.
class core_rig {
public:
  core_rig(caf::actor_system& sys, rig_options opts = {});
  ~core_rig();
  core_rig(const core_rig&) = delete;
  core_rig& operator=(const core_rig&) = delete;

  /// Sends `n` deliveries (cycling through `protos` from index `offset`) through the
  /// routing service and waits for the n answers (`forwarded`); false on a timeout.
  bool deliver(uint64_t n, const proto_list& protos, uint64_t offset = 0,
               double timeout_s = 300);
  /// The same without waiting: the driver starts the `rs_deliver` requests.
  void start_deliver(uint64_t n, const proto_list& protos, uint64_t offset = 0);
  /// The driver posts `n` one-way `(rs_post_atom, envelope)` to the routing service from
  /// one handler (the co-hosted hot path, docs/behaviour/routing.md#the-co-hosted-hot-path);
  /// returns at once (nothing answers a post: wait with `wait_landed`).
  void post(uint64_t n, const proto_list& protos, uint64_t offset = 0);
  /// Waits until the fake grain port has answered `answered_goal` calls in all (counted by
  /// the port as it answers: no router-core turn), then asks the router core whether it
  /// counts `goal` landed legs: once at high priority (behind every urgent answer), then once
  /// at normal priority (behind every normal one), then, only if still not, every 50 us
  /// (each ask counted in `stats_checks`). False on a timeout or a leg that ended without
  /// landing.
  bool wait_landed(uint64_t goal, uint64_t answered_goal, double timeout_s = 300);
  /// Waits until the fake grain port has answered `answered_goal` calls, then until the
  /// router core has taken every message queued before two barriers (`rc_sync`): one at
  /// normal priority, then one at high priority, so every answer of either queue is behind
  /// one of them. Asks no statistics: the router core copies nothing (P5 times this and
  /// checks `wait_landed` after its clock stopped). False on a timeout.
  bool wait_drained(uint64_t answered_goal, double timeout_s = 300);
  /// The router core's statistics (asked at high priority when `urgent`).
  routing::router_core_stats stats(bool urgent = false);
  /// Answers the oldest `n` held promises (`grain_answer::on_release`).
  void release(uint64_t n);

  progress grain_calls; ///< every `gp_call` the fake grain port received
  progress answered;    ///< every `gp_call` the fake grain port answered (bumped after it)
  std::atomic<uint64_t> stats_checks{0}; ///< `rc_stats` asked by `wait_landed`
  progress answers;     ///< every answer the driver received (`bad`: not `forwarded`)
  progress released;    ///< held promises answered
  /// Steady-clock ns at which the fake port answered its latest released promise.
  std::atomic<int64_t> last_release_ns{0};

  const routing::router_core_actor& core() const { return rc_; }
  const routing::routing_quiescence_actor& gauge() const { return gauge_; }
  const routing::routing_service_actor& service() const { return rs_; }
  const caf::actor& driver() const { return drv_; }
  /// Every actor of the rig (the counting flows exit them before their system ends).
  std::vector<caf::actor> actors() const;

private:
  caf::actor_system& sys_;
  routing::routing_quiescence_actor gauge_;
  routing::io_pool_actor pool_;
  routing::grain_port_actor grains_;
  routing::path_resolver_actor resolver_;
  routing::router_core_actor rc_;
  routing::routing_service_actor rs_;
  caf::actor drv_;
  std::unique_ptr<caf::scoped_actor> self_;
};

/// The driver's state (see `bench_driver`).
struct driver_state {
  routing::routing_service_actor rs;
  caf::actor post_to; ///< the routing service of `bn_post_atom`
  proto_list protos;
  uint64_t next = 0;
  uint64_t remaining = 0;
  static inline const char* name = "bench.driver";
};

/// The driver: `(bn_raw_atom, sink, n, envelope)` sends n one-way `(hb_in_atom, envelope)`
/// from one handler; `(bn_post_atom, routing service, n, protos, offset)` sends n one-way
/// `(rs_post_atom, envelope)` from one handler; `(bn_req_atom, routing service, n, protos,
/// offset)` sends n `rs_deliver` requests through a window of `request_window`, bumping
/// `answers` per answer.
caf::behavior bench_driver(caf::stateful_actor<driver_state>* self, progress* answers);

/// The raw CAF sink: counts `(hb_in_atom, envelope)` messages (the shape a local route gets).
caf::behavior bench_sink(caf::event_based_actor* self, progress* p);

/// One batch of raw CAF one-way sends: `n` `(hb_in_atom, envelope)` from `drv` to `snk`;
/// answers (wall seconds, process CPU seconds).
std::pair<double, double> raw_one_way_batch(caf::actor& drv, caf::actor& snk, progress& sunk,
                                            uint64_t n, const routing::envelope& proto);

} // namespace cafmesh::bench

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmesh::bench::proto_list)
