#pragma once

/// @file
/// The state of the catalog: not part of the API. Only its own sources and the testing kit include
/// this header; tests read the state through `testing::fixture::state_of`
/// (docs/testing.md#reading-an-actors-state).

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <utility>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>
#include <caf/response_promise.hpp>

#include "cafmesh/actors/activation_address.hpp"
#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/placement.hpp"

namespace cafmesh::detail {

/// Where the answer of one turn goes: the response promise of a `ct_invoke` request, or the
/// sender of a one-way `ct_call` by its id (`(ct_result_atom, id, caf::message reply)` or
/// `(ct_result_atom, id, caf::error)`, at the priority the call came with).
class turn_reply {
public:
  turn_reply() = default;

  /// Answers through `rp`.
  explicit turn_reply(caf::response_promise rp) : rp_(std::move(rp)) {}

  /// Answers the `ct_call` with id `id` that `from` is handling now.
  turn_reply(caf::local_actor* from, uint64_t id);

  /// Answers call `id` of a `ct_calls` batch from `caller` into `outbox` (sent in batches).
  turn_reply(std::shared_ptr<std::vector<std::pair<caf::strong_actor_ptr, ct_result_item>>> outbox,
             caf::strong_actor_ptr caller, uint64_t id);

  void deliver(caf::message reply);
  void deliver(caf::error failure);

private:
  template <class T>
  void answer(T&& x);

  caf::response_promise rp_;
  std::shared_ptr<std::vector<std::pair<caf::strong_actor_ptr, ct_result_item>>> outbox_;
  caf::local_actor* from_ = nullptr;
  caf::strong_actor_ptr caller_;
  uint64_t id_ = 0;
  bool urgent_ = false;
};

/// A message waiting for a turn of one activation.
struct catalog_turn {
  int32_t forward_count = 0;
  caf::message payload;
  turn_reply rp;
};

/// One activation owned by the catalog.
struct catalog_activation {
  grain_id grain;
  activation_tag tag;
  caf::actor actor;
  bool stateless = false;
  bool deactivating = false;
  uint32_t turns_open = 0;                 ///< turns handed over and not yet answered
  bool exclusive_open = false;             ///< one of them does not interleave
  interleave_predicate may_interleave;     ///< the type's (grain_registry.hpp); may be empty
  bool pinned = false;                     ///< exempt from idle deactivation
  int64_t hook_ms = 0;                     ///< deactivation hook bound (0: none)
  bool hook_skipped = false;               ///< lost its registration: its hook does not run
  bool hook_running = false;               ///< its deactivation hook was asked for
  uint64_t idle_seq = 0;                   ///< invalidates stale idle timers
  std::deque<catalog_turn> queue;          ///< waiting turns (held while deactivating)
  std::vector<caf::response_promise> gone; ///< answered when the activation has left
  caf::response_promise registering;       ///< the `ct_activate` waiting for registration
  caf::actor_clock::time_point register_deadline;

  /// True while any turn is open.
  bool busy() const { return turns_open > 0; }
};

/// The state of the catalog.
struct catalog_state {
  catalog_config cfg;
  grain_registry_ptr registry;
  directory_client dir;
  /// The last rings this catalog saw, oldest first (`reregister_orphans`).
  std::deque<hash_ring> recent_rings;
  caf::actor placement;
  bool active = false;
  std::mt19937_64 rng;
  std::set<uint32_t> used_tags; ///< every tag ever handed out here
  std::map<uint32_t, catalog_activation> activations;
  std::map<grain_id, std::vector<uint32_t>> by_grain;
  std::map<uint32_t, grain_id> departed;       ///< tags that lived here and left
  std::map<grain_id, std::string> failures;    ///< the activation-failure registry
  std::vector<caf::response_promise> all_gone; ///< `ct_deact_all` waiters
  /// Held messages rerouted through placement and not answered yet; `ct_deact_all` waits
  /// for them too, so the placement stop at stage 2001 cannot fail a reroute (S12.09).
  uint64_t reroutes_in_flight = 0;
  /// Answers to `ct_calls` batches not sent yet, by caller in order (`flush_results`).
  std::shared_ptr<std::vector<std::pair<caf::strong_actor_ptr, ct_result_item>>> results
    = std::make_shared<std::vector<std::pair<caf::strong_actor_ptr, ct_result_item>>>();
  /// A `ct_flush_atom` to itself is queued behind the mailbox's backlog.
  bool flush_queued = false;
  int32_t last_forward_count = -1; ///< forward count of the last turn started
  catalog_stats stats;
  log::logger log = log::get("catalog");

  static const char* name;
};

} // namespace cafmesh::detail
