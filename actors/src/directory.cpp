#include "cafmesh/actors/directory.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/message_center.hpp"

namespace cafmesh {

// -- ring -------------------------------------------------------------------------------

namespace {

/// Continues an FNV-1a 64 hash `h` over the bytes of `s`.
constexpr uint64_t fnv1a64_more(uint64_t h, std::string_view s) noexcept {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

} // namespace

hash_ring::hash_ring(std::vector<silo_address> members) {
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  members_ = std::move(members);
  mixed_silo_hashes_.reserve(members_.size());
  for (const auto& s : members_)
    mixed_silo_hashes_.push_back(mix64(silo_hash(s)));
}

hash_ring hash_ring::of(const membership_snapshot& snap) {
  return hash_ring{snap.active_set()};
}

uint64_t hash_ring::grain_hash(const grain_id& g) {
  auto h = fnv1a64_more(fnv1a64(""), g.type);
  h = fnv1a64_more(h, "/");
  return fnv1a64_more(h, g.key);
}

uint64_t hash_ring::silo_hash(const silo_address& s) {
  return fnv1a64(s.to_string());
}

uint64_t hash_ring::mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

const silo_address* hash_ring::owner_of(const grain_id& g) const {
  if (members_.empty())
    return nullptr;
  auto gh = grain_hash(g);
  size_t best = 0;
  auto best_weight = mix64(gh ^ mixed_silo_hashes_[0]);
  // Members are ordered by rendered address and only a strictly higher weight replaces the
  // best, so of equal weights the smaller address wins.
  for (size_t i = 1; i < members_.size(); ++i) {
    auto w = mix64(gh ^ mixed_silo_hashes_[i]);
    if (w > best_weight) {
      best = i;
      best_weight = w;
    }
  }
  return &members_[best];
}

caf::optional<silo_address> hash_ring::owner(const grain_id& g) const {
  if (auto o = owner_of(g))
    return *o;
  return caf::none;
}

// -- cache ------------------------------------------------------------------------------

caf::optional<activation_address> directory_cache::get(const grain_id& g) const {
  auto i = entries_.find(g);
  if (i == entries_.end())
    return caf::none;
  return i->second;
}

void directory_cache::put(const activation_address& a) {
  entries_[a.grain] = a;
}

bool directory_cache::invalidate(const grain_id& g) {
  return entries_.erase(g) > 0;
}

bool directory_cache::invalidate(const activation_address& a) {
  auto i = entries_.find(a.grain);
  if (i == entries_.end() || i->second != a)
    return false;
  entries_.erase(i);
  return true;
}

std::vector<activation_address> directory_cache::on_snapshot(const membership_snapshot& snap) {
  auto next = hash_ring::of(snap);
  std::vector<activation_address> dropped;
  for (auto i = entries_.begin(); i != entries_.end();) {
    const auto& a = i->second;
    auto before = ring_.owner_of(a.grain);
    auto after = next.owner_of(a.grain);
    bool owner_changed = (before == nullptr) != (after == nullptr)
                         || (before != nullptr && *before != *after);
    if (owner_changed || !snap.is_active(a.silo)) {
      dropped.push_back(a);
      i = entries_.erase(i);
    } else {
      ++i;
    }
  }
  ring_ = std::move(next);
  return dropped;
}

std::vector<activation_address> directory_cache::entries() const {
  std::vector<activation_address> out;
  for (const auto& kv : entries_)
    out.push_back(kv.second);
  return out;
}

// -- errors -----------------------------------------------------------------------------

caf::error directory_unstable_error(const silo_address& partition, const grain_id& g) {
  fault f{mesh_errc::directory_unstable, "directory partition on " + partition.to_string()
                                           + " does not own " + g.to_string() + "; retry later"};
  f.silo = partition;
  return to_error(f);
}

namespace {

caf::error empty_ring_error() {
  return to_error(fault{mesh_errc::directory_unstable, "no active silo in the directory ring"});
}

/// Sends `call` to the message centre and passes the reply to `ok` if it has the type `T`,
/// any error (including a reply of another type) to `fail`.
template <class T, class F>
void call_for(caf::event_based_actor* self, const caf::actor& mc, int64_t timeout_ms,
              caf::message call, F ok, directory_client::error_handler fail) {
  self->request(mc, std::chrono::milliseconds(timeout_ms), std::move(call))
    .then([=](T& x) { ok(std::move(x)); }, [=](caf::error& e) { fail(std::move(e)); });
}

} // namespace

// -- client -----------------------------------------------------------------------------

directory_client_config make_directory_client_config(const config::directory_section& dir) {
  return directory_client_config{dir.lookup_attempt_timeout_ms};
}

directory_client::directory_client(silo_address self_addr, caf::actor mc,
                                   directory_resolver resolver, directory_client_config cfg)
  : self_addr_(std::move(self_addr)),
    mc_(std::move(mc)),
    resolver_(std::move(resolver)),
    cfg_(cfg) {
  // nop
}

void directory_client::on_snapshot(const membership_snapshot& snap) {
  ring_ = hash_ring::of(snap);
}

void directory_client::lookup(caf::event_based_actor* self, const grain_id& g,
                              lookup_handler on_result, error_handler on_error) {
  if (kind_of(g) == directory_kind::null) {
    on_result(null_directory::lookup(g));
    return;
  }
  auto owner = owner_of(g);
  if (owner == nullptr) {
    on_error(empty_ring_error());
    return;
  }
  ++lookups_sent_;
  call_for<lookup_result>(self, mc_, cfg_.lookup_attempt_timeout_ms,
                          make_call(*owner, component::directory, dir_lookup_atom::value, g),
                          std::move(on_result), std::move(on_error));
}

void directory_client::register_activation(caf::event_based_actor* self,
                                           const activation_address& a, register_handler on_winner,
                                           error_handler on_error) {
  if (kind_of(a.grain) == directory_kind::null) {
    on_winner(null_directory::register_activation(a));
    return;
  }
  auto owner = owner_of(a.grain);
  if (owner == nullptr) {
    on_error(empty_ring_error());
    return;
  }
  ++registers_sent_;
  call_for<activation_address>(self, mc_, cfg_.lookup_attempt_timeout_ms,
                               make_call(*owner, component::directory, dir_register_atom::value, a),
                               std::move(on_winner), std::move(on_error));
}

void directory_client::unregister(caf::event_based_actor* self, const activation_address& a,
                                  done_handler on_done, error_handler on_error) {
  if (kind_of(a.grain) == directory_kind::null) {
    null_directory::unregister(a);
    on_done();
    return;
  }
  auto owner = owner_of(a.grain);
  if (owner == nullptr) {
    on_error(empty_ring_error());
    return;
  }
  ++unregisters_sent_;
  auto done = std::move(on_done);
  call_for<caf::ok_atom>(
    self, mc_, cfg_.lookup_attempt_timeout_ms,
    make_call(*owner, component::directory, dir_unregister_atom::value, a),
    [done](caf::ok_atom) { done(); }, std::move(on_error));
}

// -- partition actor --------------------------------------------------------------------

namespace {

/// One entry of a partition, with the version of the ring by which it was placed here:
/// the partition's own version for a registration, the sender's for a hand-off.
struct held_entry {
  activation_address address;
  uint64_t ring_version = 0;
  /// For an entry registered here: this partition's view version when it was registered;
  /// 0 for one that came by hand-off.
  uint64_t registered_at = 0;
};

struct partition_state {
  silo_address self_addr;
  caf::actor mc;
  uint64_t version = 0;
  membership_snapshot view; ///< the latest snapshot applied
  bool leaving = false;     ///< own silo terminating in `view`: owns nothing any more
  hash_ring ring;
  std::map<grain_id, held_entry> entries;
  /// The ring before the latest view that showed a member of it gone abruptly, and until when a
  /// lookup of an id that member owned and that nobody registered again yet answers
  /// `directory_unstable` (SPEC §15 C3, `orphan_grace_ms`).
  hash_ring orphaned_ring;
  caf::actor_clock::time_point orphan_grace_until{};
  /// The ring before this partition's silo joined it, the members whose hand-offs it still
  /// waits for, and until when a miss of an id one of them owned answers `directory_unstable`
  /// (SPEC §15 C6, `handoff_wait_ms`).
  hash_ring handoff_ring;
  std::set<silo_address> handoffs_awaited;
  uint64_t handoffs_awaited_after = 0; ///< a hand-off of a newer ring version ends a wait
  caf::actor_clock::time_point handoff_wait_until{};
  /// The newest ring version of a hand-off received from each silo.
  std::map<silo_address, uint64_t> handoffs_seen;
  uint64_t handoffs_sent = 0;
  uint64_t handoffs_refused = 0;
  log::logger log;
  static const char* name;
};

const char* partition_state::name = "cafmesh.directory_partition";

using partition_actor = directory_partition_actor::stateful_base<partition_state>;

bool owns(const partition_state& st, const grain_id& g) {
  return st.ring.owns(st.self_addr, g);
}

void drop_silo(partition_state& st, const silo_address& s) {
  for (auto i = st.entries.begin(); i != st.entries.end();) {
    if (i->second.address.silo == s)
      i = st.entries.erase(i);
    else
      ++i;
  }
}

/// Entries to move, per new owner, with the ring version each hand-off carries.
using moves = std::map<silo_address, std::pair<uint64_t, std::vector<activation_address>>>;

void add_move(moves& out, const silo_address& to, const activation_address& a,
              uint64_t ring_version) {
  auto& slot = out[to];
  slot.first = std::max(slot.first, ring_version);
  slot.second.push_back(a);
}

/// Sends one `dir_handoff` per new owner.
void send_moves(partition_actor* self, moves& out, const char* what) {
  auto& st = self->state;
  for (auto& kv : out) {
    ++st.handoffs_sent;
    st.log.debug(std::string{what} + " " + std::to_string(kv.second.second.size()) + " entries to "
                 + kv.first.to_string() + " (ring v" + std::to_string(kv.second.first) + ")");
    caf::send_as(caf::actor_cast<caf::actor>(self), st.mc, mc_send_atom::value, kv.first,
                 component::directory,
                 caf::make_message(dir_handoff_atom::value, directory_protocol_version,
                                   st.self_addr, kv.second.first, std::move(kv.second.second)));
  }
}

/// How long after a view that shows a ring member gone abruptly a lookup of an id that member
/// owned, with no entry here yet, answers `directory_unstable` instead of `not_registered`
/// (SPEC §15 C3): the entries died with the member, and the silos of their activations
/// register them again when they see the same view; a miss meanwhile would make its caller
/// place a second activation.
constexpr int64_t orphan_grace_ms = 500;

/// How long a partition that joined the ring answers a miss of an id it gained from a member
/// still present with `directory_unstable` while that member's hand-off has not arrived
/// (SPEC §15 C6): a miss would make its caller place a second activation of a grain whose
/// entry is on its way. Every member sends a joining silo its hand-off, empty or not, when it
/// sees the join, so the wait normally ends when the slowest member sees the view; the bound
/// is the orphan grace's, for a member that stalls or died undetected.
constexpr int64_t handoff_wait_ms = 500;

bool in_ring(const hash_ring& r, const silo_address& s) {
  const auto& m = r.members();
  return std::find(m.begin(), m.end(), s) != m.end();
}

/// True if `m`, a member of the previous ring, left it without handing its entries off:
/// `v` shows it Stopping or Dead (a kill, declared Active -> Stopping -> Dead, or superseded
/// by a restart on its address), not ShuttingDown (a graceful stop hands off first).
bool left_abruptly(const membership_snapshot& v, const silo_address& m) {
  auto s = v.status_of(m);
  return s == silo_status::stopping || s == silo_status::dead;
}

/// Why the entry `held` gives way to `newcomer` of the same grain id, or "" if it does not
/// (SPEC §15 C3, docs/behaviour/directory-and-placement.md#restarts-on-the-same-address): its
/// silo is an older generation of the newcomer's address (a restart supersedes it, so it
/// never answers again), or this partition's view shows its silo departed while the
/// newcomer's is not.
std::string gives_way(const partition_state& st, const activation_address& held,
                      const activation_address& newcomer) {
  if (held.silo.same_endpoint(newcomer.silo) && held.silo.generation < newcomer.silo.generation)
    return held.silo.to_string() + " is an older generation of " + newcomer.silo.to_string();
  if (st.view.departed(held.silo) && !st.view.departed(newcomer.silo))
    return held.silo.to_string() + " has departed";
  return {};
}

/// Replaces `held` by `a` if `held` gives way to it (`gives_way`); true if it did.
bool replace_superseded(partition_state& st, held_entry& held, const activation_address& a,
                        uint64_t ring_version) {
  if (held.address == a)
    return false;
  auto why = gives_way(st, held.address, a);
  if (why.empty())
    return false;
  st.log.info("registration of " + a.to_string() + " replaces " + held.address.to_string() + ": "
              + why);
  held.address = a;
  held.ring_version = std::max(held.ring_version, ring_version);
  return true;
}

/// Keeps `a` here (first-wins): an entry already held for the same grain id stays, and the
/// catalog of the other activation's silo is told it lost
/// (docs/behaviour/directory-and-placement.md#lookup-registration-cache first-wins; the loser
/// deactivates and reroutes to the winner). An entry of an older generation of `a`'s address,
/// or of a departed silo, gives way instead (`gives_way`).
void merge(partition_actor* self, const activation_address& a, uint64_t ring_version) {
  auto& st = self->state;
  auto i = st.entries.find(a.grain);
  if (i == st.entries.end()) {
    st.entries.emplace(a.grain, held_entry{a, ring_version});
    return;
  }
  auto& held = i->second;
  if (replace_superseded(st, held, a, ring_version)) {
    held.registered_at = 0;
    return;
  }
  held.ring_version = std::max(held.ring_version, ring_version);
  if (held.address == a)
    return;
  if (held.registered_at != 0 && held.registered_at >= ring_version) {
    // Registered here while this hand-off was on its way (SPEC §15 C3): a lookup that reached
    // this partition before the hand-off missed, and its caller placed the grain again. The
    // hand-off's activation was registered with the previous owner before that: it stays,
    // and the newer one's catalog is told it lost.
    st.log.warning("registration of " + held.address.to_string() + " lost to the hand-off of "
                   + a.to_string() + ": registered with the previous owner first");
    auto loser = held.address;
    held.address = a;
    held.registered_at = 0;
    caf::send_as(caf::actor_cast<caf::actor>(self), st.mc, mc_send_atom::value, loser.silo,
                 component::catalog, caf::make_message(dir_lost_atom::value, loser, a));
    return;
  }
  st.log.warning("hand-off of " + a.to_string() + " lost to " + held.address.to_string()
                 + ": registered here first");
  caf::send_as(caf::actor_cast<caf::actor>(self), st.mc, mc_send_atom::value, a.silo,
               component::catalog, caf::make_message(dir_lost_atom::value, a, held.address));
}

/// After a ring change from `before` (this partition's view version then: `previous`) in
/// which this silo joined the ring, notes the members still present that hand it ids: with
/// rendezvous hashing a member that stays in the ring gives ids only to a joining silo. A
/// partition that saw no ring before takes the ring without itself as the one it joined. A
/// member whose hand-off of a newer ring version than `previous` arrived already (it saw the
/// view first) is not waited for; members that departed stop being waited for (their entries
/// died with them: `orphan_grace_ms`). A graceful leave is not waited for: the leaving
/// partition hands its entries off when its own silo applies the leaving status, before the
/// table's write that the others see.
void await_handoffs(partition_actor* self, const hash_ring& before, uint64_t previous) {
  auto& st = self->state;
  for (auto i = st.handoffs_awaited.begin(); i != st.handoffs_awaited.end();) {
    if (st.view.departed(*i) || left_abruptly(st.view, *i))
      i = st.handoffs_awaited.erase(i);
    else
      ++i;
  }
  for (auto i = st.handoffs_seen.begin(); i != st.handoffs_seen.end();) {
    if (st.view.departed(i->first))
      i = st.handoffs_seen.erase(i); // a restarted address has a new generation: no growth
    else
      ++i;
  }
  if (st.leaving || before == st.ring || !in_ring(st.ring, st.self_addr))
    return;
  hash_ring was = before;
  if (was.empty()) {
    std::vector<silo_address> others;
    for (const auto& m : st.ring.members())
      if (m != st.self_addr)
        others.push_back(m);
    was = hash_ring{std::move(others)};
  }
  if (in_ring(was, st.self_addr))
    return;
  std::set<silo_address> from;
  for (const auto& m : was.members()) {
    auto seen = st.handoffs_seen.find(m);
    if (in_ring(st.ring, m) && (seen == st.handoffs_seen.end() || seen->second <= previous))
      from.insert(m);
  }
  if (from.empty())
    return;
  st.handoff_ring = std::move(was);
  st.handoffs_awaited = std::move(from);
  st.handoffs_awaited_after = previous;
  st.handoff_wait_until = self->clock().now() + std::chrono::milliseconds(handoff_wait_ms);
}

/// The `directory_unstable` refusal of a miss of `g` while the hand-off that may carry its
/// entry has not arrived (`await_handoffs`), or none.
caf::optional<caf::error> awaiting_handoff(partition_actor* self, const grain_id& g) {
  auto& st = self->state;
  if (st.handoffs_awaited.empty() || self->clock().now() >= st.handoff_wait_until)
    return caf::none;
  auto was = st.handoff_ring.owner_of(g);
  if (was == nullptr || st.handoffs_awaited.count(*was) == 0)
    return caf::none;
  fault f{mesh_errc::directory_unstable,
          "the entry of " + g.to_string() + ", if any, is on its way from " + was->to_string()
            + " to the directory partition on " + st.self_addr.to_string() + "; retry later"};
  f.silo = st.self_addr;
  return to_error(f);
}

void apply_snapshot(partition_actor* self, const membership_snapshot& snap) {
  auto& st = self->state;
  if (snap.version < st.version)
    return;
  auto previous = st.version;
  st.version = snap.version;
  st.view = snap;
  auto own = snap.find(st.self_addr);
  st.leaving = own != nullptr && is_terminating(own->status);
  for (auto i = st.entries.begin(); i != st.entries.end();) {
    if (snap.departed(i->second.address.silo))
      i = st.entries.erase(i);
    else
      ++i;
  }
  auto before = std::move(st.ring);
  st.ring = hash_ring::of(snap);
  for (auto& m : before.members())
    if (left_abruptly(snap, m)) {
      st.orphaned_ring = before;
      st.orphan_grace_until = self->clock().now() + std::chrono::milliseconds(orphan_grace_ms);
      break;
    }
  await_handoffs(self, before, previous);
  if (st.ring.empty())
    return; // nobody to hand to: keep everything until a ring exists again
  // Re-home only by this ring change: an entry placed here by an older ring than this one
  // moves to its owner; one placed by this ring or a newer one (a hand-off that overtook
  // this snapshot) stays until a newer ring. A leaving partition owns nothing: it hands
  // everything on. Every move carries a ring version at least the entry's, so an entry
  // never travels back to a partition by an older ring (no ping-pong).
  moves out;
  for (auto i = st.entries.begin(); i != st.entries.end();) {
    const auto& o = *st.ring.owner_of(i->first);
    auto& e = i->second;
    if (o == st.self_addr) {
      e.ring_version = std::max(e.ring_version, st.version);
      ++i;
    } else if (st.leaving || e.ring_version < st.version) {
      add_move(out, o, e.address, std::max(e.ring_version, st.version));
      i = st.entries.erase(i);
    } else {
      ++i;
    }
  }
  // Every silo that joined the ring by this change hears from this partition, with no
  // entries too: it waits for this hand-off before it answers a miss of an id it gained from
  // this partition (`await_handoffs`).
  if (!st.leaving && before != st.ring && in_ring(before, st.self_addr))
    for (const auto& m : st.ring.members())
      if (m != st.self_addr && !in_ring(before, m)) {
        auto& slot = out[m];
        slot.first = std::max(slot.first, st.version);
      }
  send_moves(self, out, "handing");
}

/// A hand-off from another partition whose ring (version `ring_version`) says this one owns
/// the entries. Entries on departed silos are dropped. An entry from an older ring than
/// this partition's that this ring gives to another silo is forwarded once to that owner,
/// with this ring's version (the receiver never sends it back by an older ring); every
/// other entry is kept, first-wins.
void receive_handoff(partition_actor* self, const silo_address& from, uint64_t ring_version,
                     const std::vector<activation_address>& xs) {
  auto& st = self->state;
  auto& seen = st.handoffs_seen[from];
  seen = std::max(seen, ring_version);
  if (ring_version > st.handoffs_awaited_after)
    st.handoffs_awaited.erase(from);
  moves out;
  for (const auto& a : xs) {
    if (st.view.departed(a.silo))
      continue;
    auto o = st.ring.owner_of(a.grain);
    bool forward = o != nullptr && *o != st.self_addr && (st.leaving || ring_version < st.version);
    if (forward)
      add_move(out, *o, a, std::max(ring_version, st.version));
    else
      merge(self, a, ring_version);
  }
  send_moves(self, out, "forwarding");
}

/// Refuses a hand-off made under another owner rule: keeping or forwarding its entries would
/// run two rules at once.
void refuse_handoff(partition_actor* self, uint32_t protocol, const std::string& from,
                    size_t entries) {
  auto& st = self->state;
  ++st.handoffs_refused;
  fault f{mesh_errc::rejected, "directory hand-off of " + std::to_string(entries) + " entries from "
                                 + from + " refused: protocol v" + std::to_string(protocol)
                                 + ", this partition on " + st.self_addr.to_string() + " runs v"
                                 + std::to_string(directory_protocol_version)
                                 + "; one owner rule per cluster, finish the roll"};
  st.log.error(to_string(f.code) + ": " + to_string(f));
}

directory_partition_actor::behavior_type
directory_partition(partition_actor* self, silo_address self_addr, caf::actor mc) {
  auto& st = self->state;
  st.self_addr = self_addr;
  st.mc = std::move(mc);
  st.log = log::get("directory").with_context(self_addr.to_string());
  return {
    [=](dir_lookup_atom, const grain_id& g) -> caf::result<lookup_result> {
      auto& st = self->state;
      if (!owns(st, g))
        return directory_unstable_error(st.self_addr, g);
      auto i = st.entries.find(g);
      if (i != st.entries.end())
        return lookup_result{true, i->second.address};
      if (auto e = awaiting_handoff(self, g))
        return std::move(*e);
      if (self->clock().now() < st.orphan_grace_until) {
        auto was = st.orphaned_ring.owner_of(g);
        if (was != nullptr && left_abruptly(st.view, *was)) {
          fault f{mesh_errc::directory_unstable,
                  "the entry of " + g.to_string() + " died with " + was->to_string()
                    + " and may be registered again on " + st.self_addr.to_string()
                    + " shortly; retry later"};
          f.silo = st.self_addr;
          return to_error(f);
        }
      }
      return lookup_result{};
    },
    [=](dir_register_atom, const activation_address& a) -> caf::result<activation_address> {
      auto& st = self->state;
      if (!owns(st, a.grain))
        return directory_unstable_error(st.self_addr, a.grain);
      auto ins = st.entries.emplace(a.grain, held_entry{a, st.version, st.version});
      if (!ins.second && replace_superseded(st, ins.first->second, a, st.version))
        ins.first->second.registered_at = st.version;
      return ins.first->second.address;
    },
    [=](dir_unregister_atom, const activation_address& a) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (!owns(st, a.grain))
        return directory_unstable_error(st.self_addr, a.grain);
      auto i = st.entries.find(a.grain);
      if (i != st.entries.end() && i->second.address == a)
        st.entries.erase(i);
      return caf::ok_atom::value;
    },
    [=](dir_unreg_silo_atom, const silo_address& s) -> caf::result<caf::ok_atom> {
      drop_silo(self->state, s);
      return caf::ok_atom::value;
    },
    [=](dir_handoff_atom, uint32_t protocol, const silo_address& from, uint64_t ring_version,
        const std::vector<activation_address>& xs) {
      if (protocol != directory_protocol_version)
        refuse_handoff(self, protocol, from.to_string(), xs.size());
      else
        receive_handoff(self, from, ring_version, xs);
    },
    // The hand-off of version 1, which carried no protocol number.
    [=](dir_handoff_atom, uint64_t, const std::vector<activation_address>& xs) {
      refuse_handoff(self, 1, "a partition", xs.size());
    },
    [=](dir_entries_atom) -> caf::result<std::vector<activation_address>> {
      std::vector<activation_address> out;
      for (const auto& kv : self->state.entries)
        out.push_back(kv.second.address);
      return out;
    },
    [=](mb_snapshot_atom, const membership_snapshot& snap) { apply_snapshot(self, snap); },
  };
}

// -- cache actor ------------------------------------------------------------------------

struct cache_state {
  directory_cache cache;
  static const char* name;
};

const char* cache_state::name = "cafmesh.directory_cache";

using cache_actor = directory_cache_actor::stateful_base<cache_state>;

directory_cache_actor::behavior_type directory_cache_behaviour(cache_actor* self) {
  return {
    [=](dir_get_atom, const grain_id& g) -> caf::result<lookup_result> {
      auto a = self->state.cache.get(g);
      return a ? lookup_result{true, *a} : lookup_result{};
    },
    [=](dir_put_atom, const activation_address& a) { self->state.cache.put(a); },
    [=](dir_invalidate_atom, const grain_id& g) -> caf::result<caf::ok_atom> {
      self->state.cache.invalidate(g);
      return caf::ok_atom::value;
    },
    [=](dir_invalidate_atom, const activation_address& a) -> caf::result<caf::ok_atom> {
      self->state.cache.invalidate(a);
      return caf::ok_atom::value;
    },
    [=](dir_entries_atom) -> caf::result<std::vector<activation_address>> {
      return self->state.cache.entries();
    },
    [=](mb_snapshot_atom, const membership_snapshot& snap) { self->state.cache.on_snapshot(snap); },
  };
}

} // namespace

directory_partition_actor
spawn_directory_partition(caf::actor_system& sys, const silo_address& self_addr,
                          const caf::actor& mc, const membership_agent_actor& agent) {
  auto p = sys.spawn(directory_partition, self_addr, mc);
  caf::anon_send(mc, mc_register_atom::value, component::directory, caf::actor_cast<caf::actor>(p));
  if (agent)
    caf::anon_send(agent, mb_subscribe_atom::value, caf::actor_cast<caf::actor>(p));
  return p;
}

directory_cache_actor spawn_directory_cache(caf::actor_system& sys,
                                            const membership_agent_actor& agent) {
  auto c = sys.spawn(directory_cache_behaviour);
  if (agent)
    caf::anon_send(agent, mb_subscribe_atom::value, caf::actor_cast<caf::actor>(c));
  return c;
}

} // namespace cafmesh
