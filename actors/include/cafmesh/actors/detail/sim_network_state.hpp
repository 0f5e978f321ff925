#pragma once

/// @file
/// The state of the simulated network: not part of the API. Only its own sources and the testing
/// kit include this header; tests read the state through `state_of(net)` below
/// (docs/testing.md#reading-an-actors-state).

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/response_promise.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh::detail {

/// A frame inside the network: its header (for the trace and the rules) and its bytes.
struct sim_frame {
  wire_frame header;       ///< src, dst, id, component, is_response (payload cleared)
  std::string text;        ///< `n{seq} {header.describe()}`, as in the trace
  std::vector<char> bytes; ///< the serialised frame
  int64_t due_ms = 0;      ///< virtual ms at which it may be delivered
  bool held = false;       ///< a `hold` line was written for it
};

/// One direction of one link.
struct sim_link {
  std::deque<sim_frame> queue;
  int64_t last_due_ms = 0;
};

/// The state of the `sim_network` actor.
struct sim_network_state {
  sim_network_config cfg;
  std::mt19937_64 rng;
  caf::actor_clock::time_point origin;
  std::map<silo_address, caf::actor> centres;
  std::set<silo_address> dead;
  std::set<silo_address> killed; ///< `kill`ed: their frames on the wire are discarded
  /// Links (gone, peer) whose frames already on the wire must reach the peer before it is
  /// told that `gone` departed (`mc_gone_atom`), as TCP delivers written data before the
  /// connection's end.
  std::set<std::pair<silo_address, silo_address>> gone_after;
  /// `sim_flush_atom` callers waiting for a link's frames on the wire to be delivered.
  std::map<std::pair<silo_address, silo_address>, std::vector<caf::response_promise>> flush_waiters;
  /// Links (src, dst) that dropped a frame: a flush on them answers `frames_lost`.
  std::set<std::pair<silo_address, silo_address>> lossy;
  std::set<silo_address> stalled;
  std::set<silo_address> detectable_stalls; ///< stalls the failure detector may notice
  std::set<std::pair<silo_address, silo_address>> partitions; ///< (lesser, greater)
  std::map<std::pair<silo_address, silo_address>, std::pair<int64_t, int64_t>> delays;
  std::map<std::pair<silo_address, silo_address>, sim_link> links;
  std::vector<drop_rule> drops;
  std::vector<drop_predicate> drop_predicates;
  std::vector<caf::actor> watchers;
  std::vector<std::string> trace;
  /// Request frames accepted per component (one-way frames count too; responses do not).
  std::map<component, uint64_t> requests_by_component;
  uint64_t next_seq = 0; ///< frames numbered from 1 in order of arrival
  uint64_t frames_sent = 0;
  uint64_t frames_delivered = 0;
  /// Messages the wire carried per link (src, dst): one per frame, or one per batch of frames
  /// a link hands over in one message (SPEC §14 B7). The simulation's count of what BASP
  /// would carry between two processes (docs/delivery-costs.md).
  std::map<std::pair<silo_address, silo_address>, uint64_t> messages_by_link;
  /// Frames the wire carried per link (src, dst).
  std::map<std::pair<silo_address, silo_address>, uint64_t> frames_by_link;

  /// FNV-1a 64 over the canonical trace text (docs/testing.md#the-simulation-harness).
  uint64_t trace_digest() const;

  /// Number of trace lines containing `needle`.
  size_t count(const std::string& needle) const;

  static const char* name;
};

/// Test-only peek at the state of the simulated network `net` (its actor type, with the
/// network's own timer, is private to its source).
sim_network_state& state_of(const sim_network_actor& net);

} // namespace cafmesh::detail
