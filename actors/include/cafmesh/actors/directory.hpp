#pragma once

/// @file
/// The grain directory (docs/behaviour/directory-and-placement.md#who-owns-a-grain-id,
/// #lookup-registration-cache, #the-stateless-worker-bypass): the hash ring, the per-silo directory
/// partition actor, the per-silo directory cache, the directory resolver with its in-process null
/// directory for stateless workers, and `directory_client`, the helper an actor uses to look up,
/// register and unregister through the resolver's directory.
///
/// ## directory_partition (one per silo; `directory_partition_actor`, component `directory`)
/// Stores grain id -> activation address for the single-activation grains it owns, per the
/// ring (`hash_ring`) of the latest snapshot its membership agent sent.
/// - `(dir_lookup_atom, grain_id) -> lookup_result` (registered or not);
/// - `(dir_register_atom, activation_address a) -> activation_address`: first wins — the
///   answer is the address registered after the call (`a` or the earlier one);
/// - `(dir_unregister_atom, activation_address a) -> ok_atom`: removes the entry only if it
///   still names `a`;
///   each of the three answers `directory_unstable` ("directory partition on {S} does not
///   own {type/key}; retry later") if this partition does not own the grain id in its ring
///   (an empty ring owns nothing);
/// - `(dir_unreg_silo_atom, silo_address s) -> ok_atom`: drops every entry on silo `s`. The
///   partition also does this itself for every silo a snapshot shows Dead;
/// - `(dir_handoff_atom, uint32_t protocol, silo_address from, uint64_t ring_version,
///   std::vector<activation_address>)` one-way from the partition on silo `from` whose ring
///   (the snapshot of version `ring_version`) gives this partition the entries. A hand-off
///   whose `protocol` is not `directory_protocol_version`, and the version-1 form
///   `(dir_handoff_atom, uint64_t ring_version, std::vector<activation_address>)`, is
///   refused whole: nothing of it is kept or forwarded, and the partition logs the error
///   "rejected: directory hand-off of {n} entries from {from} refused: protocol v{p}, this
///   partition on {S} runs v2; one owner rule per cluster, finish the roll" (`from` reads
///   "a partition" for the version-1 form). Entries on silos this partition's view shows
///   departed are dropped. If this partition's ring is older than or as old as
///   `ring_version`, or gives the grain id to this silo, the entry is kept (even when its
///   current ring gives it to another silo: a hand-off may overtake the receiver's own
///   snapshot, as at a restart);
///   otherwise (this ring is newer and gives it to another silo, or this silo is leaving)
///   it is forwarded once to that owner, one message per owner, carrying this ring's
///   version. Kept entries merge first-wins: an entry already held for the same grain id
///   stays, and the other activation's catalog is told it lost, one-way through the centre:
///   `(dir_lost_atom, activation_address loser, activation_address winner)` to component
///   `catalog` on the loser's silo (catalog.hpp), with a warning "hand-off of {loser} lost
///   to {winner}";
/// - `(dir_entries_atom) -> std::vector<activation_address>`: every entry (diagnostics);
/// - `(mb_snapshot_atom, membership_snapshot)`: rebuilds the ring from the active set; drops
///   entries on departed silos (Dead, or superseded by a newer generation); re-homes
///   entries **only here, at its own ring change**: every entry it does not own that was
///   placed here by an older ring than this one (a registration carries the ring version it
///   was made under, a hand-off its sender's) goes to its owner, **one `dir_handoff`
///   message per new owner** (through the message centre, component `directory`), carrying
///   this ring's version (at least the entries'). An entry placed by this ring or a newer
///   one stays until a newer ring. A partition whose own silo is leaving (ShuttingDown,
///   Stopping, Dead in its view) owns nothing and hands off everything; with an empty ring
///   it keeps its entries. No entry ever moves back by an older ring than the one that
///   moved it, so hand-offs cannot ping-pong.
///
/// ## directory_cache actor (one per silo)
/// A `directory_cache` object behind a protocol: `(dir_get_atom, grain_id) -> lookup_result`,
/// `(dir_put_atom, activation_address)`, `(dir_invalidate_atom, grain_id) -> ok_atom`,
/// `(dir_invalidate_atom, activation_address) -> ok_atom` (only if the entry still names
/// it), `(dir_entries_atom) -> std::vector<activation_address>`, and snapshots from the
/// membership agent.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/activation_address.hpp"
#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/directory_resolver.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh {

/// A lookup's answer (docs/behaviour/directory-and-placement.md#lookup-registration-cache): the
/// registered address, or "not registered".
struct lookup_result {
  bool registered = false;
  activation_address address;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lookup_result& x) {
  return f(caf::meta::type_name("cafmesh.lookup_result"), x.registered, x.address);
}

// -- ring -------------------------------------------------------------------------------

/// The version of the directory's owner rule and of its hand-off message. Version 1 owned a
/// grain id by the first of 16 FNV-1a points per silo on a circle; version 2 owns it by
/// rendezvous hashing (`hash_ring::weight`). Partitions of different versions would disagree
/// about owners, so a hand-off carries this version and a partition refuses one of another
/// version; a cluster runs one rule at a time.
constexpr uint32_t directory_protocol_version = 2;

/// The directory ring of an active set: which Active silo owns which grain id.
///
/// The owner of a grain id is chosen by rendezvous (highest-random-weight) hashing: every
/// member gets the weight `weight(grain_hash(g), silo_hash(s))` and the member with the
/// highest weight owns `g`; of members with equal weights the one with the smaller rendered
/// address wins. Consequences: every silo computes the same owner from the same active set
/// (the arithmetic is fixed-width unsigned integers over the UTF-8 bytes of the rendered
/// forms, independent of byte order and platform); the shares are even (each member is
/// the highest of N independent-looking weights equally often); and a change of the set
/// moves only the grain ids of the silo that joined (it now has the highest weight) or
/// left (it had the highest weight), because the weights of the other members never
/// change. A lookup costs one pass over the members and allocates nothing.
class hash_ring {
public:
  hash_ring() = default;

  /// The ring of `members`; they need not be sorted, duplicates count once.
  explicit hash_ring(std::vector<silo_address> members);

  /// The ring of a snapshot's active set.
  static hash_ring of(const membership_snapshot& snap);

  /// FNV-1a 64 of the rendered grain id `{type}/{key}` (computed without building it).
  static uint64_t grain_hash(const grain_id& g);

  /// FNV-1a 64 of the rendered silo address, e.g. of `S127.0.0.1:11111@7`.
  static uint64_t silo_hash(const silo_address& s);

  /// The splitmix64 finaliser: a bijection on 64-bit values whose every output bit depends
  /// on every input bit.
  static uint64_t mix64(uint64_t x);

  /// The weight of a silo for a grain id from their hashes:
  /// `mix64(grain_hash(g) ^ mix64(silo_hash(s)))`.
  static uint64_t weight(uint64_t g_hash, uint64_t s_hash) { return mix64(g_hash ^ mix64(s_hash)); }

  /// The weight of silo `s` for grain id `g`.
  static uint64_t weight(const grain_id& g, const silo_address& s) {
    return weight(grain_hash(g), silo_hash(s));
  }

  /// The owner of `g`: the member of highest weight; none if the ring is empty.
  caf::optional<silo_address> owner(const grain_id& g) const;

  /// The owner of `g` as a pointer into `members()` (no copy); null if the ring is empty.
  const silo_address* owner_of(const grain_id& g) const;

  /// Whether `s` owns `g` in this ring.
  bool owns(const silo_address& s, const grain_id& g) const {
    auto o = owner_of(g);
    return o != nullptr && *o == s;
  }

  /// The members, ordered by rendered address.
  const std::vector<silo_address>& members() const { return members_; }

  bool empty() const { return members_.empty(); }

  friend bool operator==(const hash_ring& x, const hash_ring& y) {
    return x.members_ == y.members_;
  }
  friend bool operator!=(const hash_ring& x, const hash_ring& y) { return !(x == y); }

private:
  std::vector<silo_address> members_;
  /// `mix64(silo_hash(m))` of each member, in the order of `members_`.
  std::vector<uint64_t> mixed_silo_hashes_;
};

// -- cache ------------------------------------------------------------------------------

/// A silo's cache of lookup results
/// (docs/behaviour/directory-and-placement.md#lookup-registration-cache "Cache"). Plain object: use
/// it inside one actor (placement) or through `spawn_directory_cache`.
class directory_cache {
public:
  directory_cache() = default;

  /// The cached address of `g`, if any.
  caf::optional<activation_address> get(const grain_id& g) const;

  /// Caches `a` for `a.grain` (replaces an earlier entry).
  void put(const activation_address& a);

  /// Drops the entry of `g`; true if there was one.
  bool invalidate(const grain_id& g);

  /// Drops the entry of `a.grain` only if it still names `a`; true if dropped.
  bool invalidate(const activation_address& a);

  /// Applies a snapshot (docs/behaviour/directory-and-placement.md#lookup-registration-cache):
  /// drops every entry whose ring owner differs between the previous ring and the snapshot's ring,
  /// and every entry on a silo that is not Active in the snapshot; the rest survive. Returns the
  /// dropped entries.
  std::vector<activation_address> on_snapshot(const membership_snapshot& snap);

  size_t size() const { return entries_.size(); }

  /// Every entry, ordered by grain id.
  std::vector<activation_address> entries() const;

  const hash_ring& ring() const { return ring_; }

private:
  hash_ring ring_;
  std::map<grain_id, activation_address> entries_;
};

/// The in-process null directory
/// (docs/behaviour/directory-and-placement.md#the-stateless-worker-bypass): lookup answers not
/// registered, register answers the address given, unregister and unregister_silo do nothing. Never
/// sends a message.
struct null_directory {
  static lookup_result lookup(const grain_id&) { return {}; }
  static activation_address register_activation(const activation_address& a) { return a; }
  static void unregister(const activation_address&) {}
  static void unregister_silo(const silo_address&) {}
};

// -- client -----------------------------------------------------------------------------

/// Configuration of a `directory_client` (examples/config/README.md#keys `directory.*`).
struct directory_client_config {
  /// Bound on one lookup request
  /// (docs/behaviour/directory-and-placement.md#lookup-registration-cache); also bounds register
  /// and unregister.
  int64_t lookup_attempt_timeout_ms = 5000;
};

/// `directory.lookup_attempt_timeout_ms` (examples/config/README.md#keys).
directory_client_config make_directory_client_config(const config::directory_section& dir);

/// The directory operations of one silo, for use inside an event-based actor (placement
/// workers, the catalog). Feed it every snapshot from the membership agent. Each call is
/// **one attempt**: on `directory_unstable` or a timeout the caller retries against the
/// ring as it is by then (docs/behaviour/directory-and-placement.md#lookup-registration-cache, the
/// placement worker's loop).
/// - Null-directory types complete at once, inside the call, without any message.
/// - Ring types ask the owner's partition through the message centre (a local call when the
///   owner is this silo), bounded by `lookup_attempt_timeout_ms`; a timeout fails with
///   CAF's `sec::request_timeout` (translate with `to_fault` if needed). An empty ring fails
///   `directory_unstable` ("no active silo in the directory ring") at once.
class directory_client {
public:
  using lookup_handler = std::function<void(lookup_result)>;
  using register_handler = std::function<void(activation_address)>;
  using done_handler = std::function<void()>;
  using error_handler = std::function<void(caf::error)>;

  directory_client() = default;
  directory_client(silo_address self_addr, caf::actor mc, directory_resolver resolver,
                   directory_client_config cfg = {});

  /// Rebuilds the ring from the snapshot's active set.
  void on_snapshot(const membership_snapshot& snap);

  const hash_ring& ring() const { return ring_; }
  const directory_resolver& resolver() const { return resolver_; }

  /// The directory `g` uses on this silo.
  directory_kind kind_of(const grain_id& g) const { return resolver_.resolve(g.type); }

  void lookup(caf::event_based_actor* self, const grain_id& g, lookup_handler on_result,
              error_handler on_error);
  void register_activation(caf::event_based_actor* self, const activation_address& a,
                           register_handler on_winner, error_handler on_error);
  void unregister(caf::event_based_actor* self, const activation_address& a, done_handler on_done,
                  error_handler on_error);

  /// Requests sent to ring partitions so far (local and remote), per operation.
  uint64_t lookups_sent() const { return lookups_sent_; }
  uint64_t registers_sent() const { return registers_sent_; }
  uint64_t unregisters_sent() const { return unregisters_sent_; }

private:
  /// The owner of `g`, or an error if the ring is empty.
  const silo_address* owner_of(const grain_id& g) const { return ring_.owner_of(g); }

  silo_address self_addr_;
  caf::actor mc_;
  directory_resolver resolver_;
  directory_client_config cfg_;
  hash_ring ring_;
  uint64_t lookups_sent_ = 0;
  uint64_t registers_sent_ = 0;
  uint64_t unregisters_sent_ = 0;
};

// -- actors -----------------------------------------------------------------------------

/// The handle of a directory partition: the protocol in the file comment (the second
/// `dir_handoff_atom` form is the version-1 hand-off, refused) and the membership view.
using directory_partition_actor = caf::typed_actor<
  caf::replies_to<dir_lookup_atom, grain_id>::with<lookup_result>,
  caf::replies_to<dir_register_atom, activation_address>::with<activation_address>,
  caf::replies_to<dir_unregister_atom, activation_address>::with<caf::ok_atom>,
  caf::replies_to<dir_unreg_silo_atom, silo_address>::with<caf::ok_atom>,
  caf::reacts_to<dir_handoff_atom, uint32_t, silo_address, uint64_t,
                 std::vector<activation_address>>,
  caf::reacts_to<dir_handoff_atom, uint64_t, std::vector<activation_address>>,
  caf::replies_to<dir_entries_atom>::with<std::vector<activation_address>>,
  caf::reacts_to<mb_snapshot_atom, membership_snapshot>>;

/// The handle of a directory cache actor: the cache protocol in the file comment and the
/// membership view.
using directory_cache_actor
  = caf::typed_actor<caf::replies_to<dir_get_atom, grain_id>::with<lookup_result>,
                     caf::reacts_to<dir_put_atom, activation_address>,
                     caf::replies_to<dir_invalidate_atom, grain_id>::with<caf::ok_atom>,
                     caf::replies_to<dir_invalidate_atom, activation_address>::with<caf::ok_atom>,
                     caf::replies_to<dir_entries_atom>::with<std::vector<activation_address>>,
                     caf::reacts_to<mb_snapshot_atom, membership_snapshot>>;

/// Spawns the directory partition of silo `self_addr`: registers it with `mc` as component
/// `directory` and subscribes it to `agent` (both asynchronously, before any other message
/// can reach it through them).
directory_partition_actor
spawn_directory_partition(caf::actor_system& sys, const silo_address& self_addr,
                          const caf::actor& mc, const membership_agent_actor& agent);

/// Spawns a directory cache actor subscribed to `agent` (if given).
directory_cache_actor spawn_directory_cache(caf::actor_system& sys,
                                            const membership_agent_actor& agent);

/// The `directory_unstable` error a partition answers for a grain id it does not own.
caf::error directory_unstable_error(const silo_address& partition, const grain_id& g);

} // namespace cafmesh
