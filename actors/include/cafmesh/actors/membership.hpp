#pragma once

/// @file
/// Membership (docs/behaviour/membership.md): silo statuses and their allowed transitions, grain
/// manifests, snapshots with the active set, the cluster's membership oracle and the per-process
/// membership agent.
///
/// ## membership_oracle (one per cluster; `membership_oracle_actor`)
/// Holds one row per silo incarnation; every change produces a snapshot with
/// version = previous + 1 and pushes it to every subscriber as `(mb_snapshot_atom,
/// membership_snapshot)`. Every snapshot names the oracle's table
/// (`membership_oracle_config::table`): a restarted oracle starts a new table.
/// - `(mb_join_atom, membership_row row) -> uint64_t version`: adds `row` with status
///   Joining. A row of the same endpoint (host, port) with an older generation that is not
///   Dead yet is declared Dead in the same snapshot (a restart supersedes its predecessor,
///   docs/behaviour/membership.md#leaving). Refused with `invalid_operation` if the endpoint
///   already has a row of the same or a newer generation.
///   A `row` whose status is not Joining is a **re-registration**
///   (docs/behaviour/membership.md#when-the-development-tables-process-restarts): a silo
///   that found its row missing after the table was reset registers it again with its own
///   status. It is added with that status (older generations of its endpoint superseded as
///   above); if the row is there already, its status moves to `row.status` when that
///   transition is allowed, else nothing changes; refused with `invalid_operation` if the
///   endpoint has a row of a newer generation.
/// - `(mb_status_atom, silo_address s, silo_status to) -> uint64_t version`: one transition
///   (docs/behaviour/membership.md#statuses); a transition not in the table is refused with
///   `invalid_operation` ("membership transition {from} -> {to} of {s} refused"); a silo without
///   a row with
///   `not_found`; to the status it already has: no change, answers the current version.
/// - `(mb_dead_atom, silo_address s) -> uint64_t version`: declares `s` Dead. From Active
///   this takes two snapshots (Active -> Stopping -> Dead, the only allowed path); from
///   Joining, ShuttingDown or Stopping one; already Dead: no change.
/// - `(mb_subscribe_atom, caf::actor sub)`: `sub` receives the current snapshot at once
///   (if any change happened yet) and every later one, in version order. Subscribers are
///   monitored and forgotten when they exit.
/// - `(mb_get_atom) -> membership_snapshot`.
/// - Failure detection (simulation, docs/behaviour/membership.md#leaving): the oracle watches the
///   `sim_network` (`spawn_membership_oracle(sys, cfg, net)`). When a silo falls silent —
///   its centre exited, it was killed, or it was stalled with `detectable = true` — the
///   oracle declares it Dead after `failure_detection_ms` of uninterrupted silence; an unstall
///   before that cancels. A stall with `detectable = false` is never noticed (S12.59). Every
///   snapshot is also noted in the network's trace: `note membership v{n}: {silo}={Status} ...`.
///
/// ## membership_agent (one per silo or pure client; `membership_agent_actor`)
/// - `(mb_snapshot_atom, membership_snapshot)` from the oracle: applied only if its version
///   is newer than the agent's; then fanned out to every local subscriber, in version order.
///   A status this silo set locally that the snapshot does not show yet is patched in
///   (so a later snapshot never shows the leaving silo Active again).
/// - **A reset table** (docs/behaviour/membership.md#when-the-development-tables-process-restarts):
///   a snapshot of a newer table (`membership_snapshot::table`; an older table's is ignored)
///   is applied whatever its version. The view's version keeps growing (the view is numbered
///   `offset + table version`, the offset being the view's version at the reset), so local
///   subscribers keep applying it. The rows of the previous view that are not Dead and whose
///   endpoint the new table has no row for are **carried** in the view until a row of their
///   endpoint appears in the table, or at most `carry_bound` (`spawn_membership_agent`); so
///   no silo drops out of the active set or a pure client's gateway list while the others
///   register again. A silo that joined and finds its row missing from the new table
///   registers it again (`mb_join_atom` with its own status) at once and, while that fails,
///   every second; a status it publishes meanwhile is registered the same way.
/// - `(mb_subscribe_atom, caf::actor sub)`: local subscriber (directory partition, cache,
///   placement, pod-hub claimer, message centre, ...); receives the current view at once
///   (if version > 0) and every later one as `(mb_snapshot_atom, membership_snapshot)`.
///   Subscribers apply **every** snapshot the agent sends: the agent alone orders them, and
///   a locally applied change is re-sent with the same version number.
/// - `(mb_join_atom, std::vector<grain_type_info> manifest, bool gateway) -> uint64_t`:
///   joins the oracle as Joining (docs/behaviour/lifecycle.md#stages stage 4000). **Bounded**
///   by `membership_join_bound::bound` (docs/behaviour/membership.md#a-join-that-cannot-reach-the-table):
///   while the oracle cannot be reached (no answer yet, or a `departed_silo` refusal, which is
///   what the oracle relay and the table oracle answer while their table is out of reach),
///   the join is sent again every `membership_join_bound::retry`; once `bound` has passed
///   since the request arrived it fails with `departed_silo` and
///   `join_bound_text(bound)`. Any other refusal fails it at once.
/// - `(mb_reach_atom) -> uint64_t`: a pure client's join (it has no row): answered with the
///   table's version once the oracle answered a read (`mb_get_atom`), bounded and retried as
///   a join.
/// - `(mb_status_atom, silo_status to) -> uint64_t`: publishes this silo's transition.
///   For ShuttingDown and Stopping the agent first applies the change to its own view and
///   fans it out (docs/behaviour/membership.md#leaving: its own placement never picks it again),
///   then publishes.
/// - `(mb_get_atom) -> membership_snapshot`: the agent's current view.
/// - `(mb_declared_atom, caf::actor watcher)`: `watcher` receives `(mb_declared_atom,
///   uint64_t version)` once, when a view (of that version) shows this silo departed while
///   it never published ShuttingDown, Stopping or Dead itself: the cluster declared it Dead
///   (docs/behaviour/membership.md#dead-peers). A watcher registered after that receives
///   it at once.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/ids.hpp"

namespace cafmesh {

/// A silo's membership status (docs/behaviour/membership.md#statuses). Values cross the wire.
enum class silo_status : uint8_t {
  joining = 1,
  active = 2,
  shutting_down = 3,
  stopping = 4,
  dead = 5,
};

/// Renders `Joining`, `Active`, `ShuttingDown`, `Stopping` or `Dead`.
std::string to_string(silo_status x);

/// True for ShuttingDown, Stopping and Dead (docs/behaviour/membership.md#statuses).
bool is_terminating(silo_status x);

/// True iff docs/behaviour/membership.md#statuses allows `from -> to`: Joining -> Active,
/// Joining -> Dead, Active -> ShuttingDown, Active -> Stopping, ShuttingDown -> Stopping,
/// ShuttingDown -> Dead, Stopping -> Dead.
bool is_allowed_transition(silo_status from, silo_status to);

/// A grain type's placement strategy (docs/behaviour/directory-and-placement.md#placement). Values
/// cross the wire.
enum class placement_strategy : uint8_t {
  stateless_worker = 1,
  prefer_local = 2,
  random = 3,
};

/// Renders `stateless_worker`, `prefer_local` or `random`.
std::string to_string(placement_strategy x);

/// One entry of a grain manifest (docs/behaviour/envelope.md#grain-ids-and-grain-types): a grain
/// type this silo hosts.
struct grain_type_info {
  std::string type;
  placement_strategy strategy = placement_strategy::random;
  uint32_t interface_version = 1;

  friend bool operator==(const grain_type_info& x, const grain_type_info& y) {
    return x.type == y.type && x.strategy == y.strategy
           && x.interface_version == y.interface_version;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, grain_type_info& x) {
  return f(caf::meta::type_name("cafmesh.grain_type_info"), x.type, x.strategy,
           x.interface_version);
}

/// One silo's row in the membership table (docs/behaviour/membership.md#snapshots).
struct membership_row {
  silo_address silo;
  silo_status status = silo_status::joining;
  std::vector<grain_type_info> manifest;
  bool gateway = false;

  /// The manifest entry for `type`, or nullptr.
  const grain_type_info* find_type(const std::string& type) const;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, membership_row& x) {
  return f(caf::meta::type_name("cafmesh.membership_row"), x.silo, x.status, x.manifest, x.gateway);
}

/// A version of the membership table (docs/behaviour/membership.md#snapshots). Rows are kept
/// ordered by rendered silo address. Version 0 is the empty table before any change.
struct membership_snapshot {
  uint64_t version = 0;
  std::vector<membership_row> rows;
  /// The table the snapshot was read from: the development oracle's
  /// `membership_oracle_config::table` (its process's generation in network mode), 0 for
  /// tables that are never reset. A greater value is a newer table.
  uint64_t table = 0;

  /// The row of `s`, or nullptr.
  const membership_row* find(const silo_address& s) const;
  membership_row* find(const silo_address& s);

  /// The status of `s`, or Dead if `s` has no row but a newer generation of its endpoint
  /// does; `joining` cannot be told from "unknown", so unknown silos answer `dead` only when
  /// superseded and `joining` otherwise — use `find` to tell them apart.
  silo_status status_of(const silo_address& s) const;

  /// True if `s` is Active.
  bool is_active(const silo_address& s) const;

  /// The active set: the Active silos ordered by rendered address
  /// (docs/behaviour/membership.md#snapshots).
  std::vector<silo_address> active_set() const;

  /// Active silos with the gateway flag, ordered by rendered address
  /// (docs/behaviour/membership.md#gateways-for-pure-clients).
  std::vector<silo_address> gateways() const;

  /// True if `s` can never answer again: its row is Dead, or a newer generation of its
  /// endpoint has a row (docs/behaviour/envelope.md#silo-addresses-and-activations
  /// "departed silo").
  bool departed(const silo_address& s) const;

  /// Inserts or replaces the row of `r.silo`, keeping the order.
  void upsert(membership_row r);

  /// One line per row, `{silo} {status}[ gateway]`, preceded by `v{version}`.
  std::string render() const;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, membership_snapshot& x) {
  return f(caf::meta::type_name("cafmesh.membership_snapshot"), x.version, x.rows, x.table);
}

/// Configuration of the membership oracle.
struct membership_oracle_config {
  /// Silence before a silent silo is declared Dead (`simulation.failure_detection_ms`).
  int64_t failure_detection_ms = 10000;
  /// The table's name in every snapshot (`membership_snapshot::table`): in network mode the
  /// generation of the process that hosts the oracle, so that a restarted oracle's table is
  /// newer than its predecessor's.
  uint64_t table = 0;
};

/// The handle of a membership oracle: the protocol of the development oracle above, which
/// the table oracle (membership_table_oracle.hpp) and the oracle relay (net_link.hpp) speak
/// too, so that an agent, a network link and the admin endpoint cannot tell them apart.
/// `(sim_watch_atom, silo_address, bool alive)` is the failure detector's input: the
/// simulated network's or the network link's report that a silo fell silent (false) or was
/// heard again (true). A subscriber stays a `caf::actor`: the subscription crosses the wire
/// when the oracle lives in another process, and every subscriber receives the same
/// `(mb_snapshot_atom, membership_snapshot)` whatever its own type.
using membership_oracle_actor
  = caf::typed_actor<caf::replies_to<mb_join_atom, membership_row>::with<uint64_t>,
                     caf::replies_to<mb_status_atom, silo_address, silo_status>::with<uint64_t>,
                     caf::replies_to<mb_dead_atom, silo_address>::with<uint64_t>,
                     caf::reacts_to<mb_subscribe_atom, caf::actor>,
                     caf::replies_to<mb_get_atom>::with<membership_snapshot>,
                     caf::reacts_to<sim_watch_atom, silo_address, bool>>;

/// The handle of a membership agent: the protocol of the agent above.
using membership_agent_actor = caf::typed_actor<
  caf::reacts_to<mb_snapshot_atom, membership_snapshot>,
  caf::reacts_to<mb_subscribe_atom, caf::actor>, caf::reacts_to<mb_declared_atom, caf::actor>,
  caf::replies_to<mb_join_atom, std::vector<grain_type_info>, bool>::with<uint64_t>,
  caf::replies_to<mb_reach_atom>::with<uint64_t>,
  caf::replies_to<mb_status_atom, silo_status>::with<uint64_t>,
  caf::replies_to<mb_get_atom>::with<membership_snapshot>>;

/// What the development oracle asks of a simulated network (sim_network.hpp): a line in its
/// trace, `(sim_note_atom, std::string)`, for every snapshot, and its silence events,
/// `(sim_watch_atom, caf::actor watcher)` (the watcher is told `(sim_watch_atom,
/// silo_address, bool alive)`).
using network_watch_actor = caf::typed_actor<caf::reacts_to<sim_note_atom, std::string>,
                                             caf::reacts_to<sim_watch_atom, caf::actor>>;

/// Spawns the cluster's membership oracle. If `net` is a `sim_network`, the oracle
/// subscribes to its silence events and runs the failure detector described above. In
/// network mode the primary process spawns it without `net` and hands it to its
/// `net_link`, which reports silences to it the same way (net_link.hpp, net_process.hpp).
membership_oracle_actor spawn_membership_oracle(caf::actor_system& sys,
                                                membership_oracle_config cfg,
                                                const network_watch_actor& net = {});

/// How long a membership agent carries the rows of a reset table's predecessor at most.
constexpr caf::timespan default_carry_bound = std::chrono::seconds(10);

/// How long a membership agent's join (and a pure client's first read) may keep trying to
/// reach its table, and what its failure says
/// (docs/behaviour/membership.md#a-join-that-cannot-reach-the-table).
struct membership_join_bound {
  /// From the join's arrival to its failure (`membership.max_join_time_ms`); zero: no bound,
  /// the join waits until the process stops.
  caf::timespan bound = caf::timespan{0};
  /// Between an attempt refused as unreachable and the next one.
  caf::timespan retry = std::chrono::seconds(1);
  /// Where the table was looked for, e.g. `at 127.0.0.1:4100` or `on etcd at
  /// http://127.0.0.1:2379`.
  std::string table = "in this process";
  /// What the operator can do, e.g. `is the primary silo running? start it first or raise
  /// the bound`.
  std::string remedy = "raise the bound";
};

/// The text of a join that gave up: `could not reach the membership table {table} for
/// {bound, digits grouped} ms (membership.max_join_time_ms); {remedy}`.
std::string join_bound_text(const membership_join_bound& b);

/// Spawns the membership agent of the process `self_addr`, talking to `oracle` (the oracle
/// actor itself in simulation and on the primary process, a `spawn_oracle_relay`
/// (net_link.hpp) on the other processes in network mode). The agent
/// subscribes to the oracle at once. After a table reset it carries the rows of the
/// previous table for at most `carry_bound` (see the agent above). Its join and reach are
/// bounded by `join` (no bound by default).
membership_agent_actor spawn_membership_agent(caf::actor_system& sys, const silo_address& self_addr,
                                              const membership_oracle_actor& oracle,
                                              caf::timespan carry_bound = default_carry_bound,
                                              membership_join_bound join = {});

} // namespace cafmesh
