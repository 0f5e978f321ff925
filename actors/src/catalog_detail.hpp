#pragma once

// The catalog's activation bookkeeping (not installed): what the catalog's behaviour
// (catalog.cpp) and its activation lifecycle (catalog_activations.cpp) share
// (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion).

#include <cstdint>
#include <string>

#include <caf/all.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/request_any.hpp"
#include "cafmesh/actors/detail/catalog_state.hpp"

namespace cafmesh::catalog_detail {

using cafmesh::detail::catalog_activation;
using cafmesh::detail::catalog_state;
using cafmesh::detail::catalog_turn;

using ct_actor = caf::stateful_actor<catalog_state>;

/// `request_any` with one completion: `done(reply, error)`, exactly one of them set.
template <class F>
void ask_any(ct_actor* self, const caf::actor& h, int64_t timeout_ms, caf::message msg, F done) {
  request_any(
    self, h, timeout_ms, std::move(msg),
    [done](caf::message m) mutable { done(std::move(m), caf::error{}); },
    [done](caf::error e) mutable { done(caf::message{}, std::move(e)); });
}

inline std::string tag_of(const catalog_activation& a) {
  return a.tag.to_string() + " of " + a.grain.to_string();
}

inline caf::error not_active_error(const catalog_state& st, const grain_id& g) {
  fault f{mesh_errc::silo_unavailable, "silo " + st.cfg.self.to_string()
                                         + " is not active, refusing to activate " + g.to_string()};
  f.silo = st.cfg.self;
  return to_error(f);
}

inline caf::error failed_activation_error(const catalog_state& st, const grain_id& g,
                                          const std::string& text) {
  fault f{mesh_errc::activation_deactivated, "activation of " + g.to_string() + " failed on silo "
                                               + st.cfg.self.to_string() + ": " + text};
  f.activation_error_recorded = tri_bool::yes;
  f.silo = st.cfg.self;
  return to_error(f);
}

/// docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion: a message for an
/// activation that is not (or no longer) here.
inline caf::error missing_error(const catalog_state& st, const grain_id& g, activation_tag t) {
  auto fl = st.failures.find(g);
  if (fl != st.failures.end())
    return failed_activation_error(st, g, fl->second);
  fault f{mesh_errc::activation_deactivated, t.to_string() + " of " + g.to_string()
                                               + " is not active on silo "
                                               + st.cfg.self.to_string()};
  auto d = st.departed.find(t.value);
  f.activation_error_recorded = (d != st.departed.end() && d->second == g) ? tri_bool::no
                                                                           : tri_bool::unknown;
  f.silo = st.cfg.self;
  return to_error(f);
}

inline activation_tag next_tag(catalog_state& st) {
  for (;;) {
    auto v = static_cast<uint32_t>(st.rng() & 0xFFFFFFFFu);
    if (v != 0 && st.used_tags.insert(v).second)
      return activation_tag{v};
  }
}

/// Spawns one activation. The activation is linked to the catalog so it never outlives
/// it; the catalog traps exits of its activations.
catalog_activation& create(ct_actor* self, const grain_id& g, const grain_type& t);

void check_all_gone(ct_actor* self);

void reroute(ct_actor* self, const grain_id& g, catalog_turn turn);

/// The activation has left (its turn ended, it was abandoned or it lost registration):
/// unregister, tell placement, reroute every held message.
void finish(ct_actor* self, uint32_t tag, bool kill);

/// The activation's last turn has ended: with a deactivation hook, it runs first (bounded;
/// the grain stays registered and its messages keep waiting, so no other activation of it
/// starts before the hook saved what it must), then `finish`.
void release(ct_actor* self, uint32_t tag);

void deactivate(ct_actor* self, uint32_t tag, deactivation_reason why);

/// A call named activation `t` of `g`, which is not on this silo: the directory entry its
/// caller resolved is stale. Unregisters it if it still names `t` here and drops it from
/// placement's cache (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion).
void forget_stale_entry(ct_actor* self, const grain_id& g, activation_tag t);

/// `(ct_rereg_atom, tag, attempt)` to itself: the next attempt of `reregister`. Private to
/// the catalog (sent only by it, to itself).
using ct_rereg_atom = caf::atom_constant<caf::atom("ctrereg")>;

/// The view `v` replaced the directory ring `before`: registers again every live
/// single-activation activation of this silo whose grain id's owner in `before` is Stopping or
/// Dead in `v` (killed or superseded: its partition's entries died with it and nothing hands
/// them off; a graceful stop goes through ShuttingDown and hands off), with the new owner
/// (SPEC §15 C3, docs/behaviour/directory-and-placement.md#restarts-on-the-same-address).
void reregister_orphans(ct_actor* self, const hash_ring& before, const membership_snapshot& v);

/// One attempt (from 0) at registering activation `tag` again with its grain id's current
/// owner (first-wins). Another winner makes it deactivate (`lost_registration`): its held
/// messages go to the registered activation. `directory_unstable` and timeouts are retried
/// every 100 ms for `catalog.activation_timeout_ms`; then, and on any other error, the
/// activation stays as it is (the next placement that asks for it registers it again).
void reregister(ct_actor* self, uint32_t tag, int64_t attempt);

void arm_idle(ct_actor* self, catalog_activation& a);

void pump(ct_actor* self, uint32_t tag);

void enqueue(ct_actor* self, catalog_activation& a, catalog_turn turn);

/// `(ct_flush_atom)` to itself: send the answers of `ct_calls` batches after the backlog.
using ct_flush_atom = caf::atom_constant<caf::atom("ctflush")>;

/// Sends the answers waiting for `ct_calls` callers, one `ct_results` per caller.
void flush_results(ct_actor* self);

/// Sends the waiting answers now if the mailbox is empty or 64 wait, else once the backlog
/// ahead of a `ct_flush_atom` to itself is through (SPEC B1: never on a timer).
void settle_results(ct_actor* self);

/// Picks (or creates) the stateless-worker activation for one message; nullptr if none may
/// serve it (`err` set).
catalog_activation* pick_worker(ct_actor* self, const grain_id& g, const grain_type& t,
                                caf::error& err);

/// Registers activation `tag` (first-wins) and answers its `ct_activate` waiter with the
/// winner; retries `directory_unstable` and timeouts every 100 ms until its deadline.
void register_activation(ct_actor* self, uint32_t tag);

/// Asked to activate a grain that is already active here: placement found no directory
/// entry for it, which a ring change can lose (a hand-off that never arrived,
/// docs/behaviour/routing.md#hubs). Registers the activation again (first wins) before answering,
/// so the claim that asked repairs the directory instead of answering an address nobody else can
/// find. If another activation won meanwhile, this one deactivates (`lost_registration`) and the
/// winner is the answer, as for a first registration. A directory that cannot be reached leaves the
/// answer as before: this activation.
void reassert_registration(ct_actor* self, uint32_t tag, caf::response_promise rp);

/// `ct_find` (catalog_find.hpp): the live single-activation activation of `g` here, tag 0 if
/// none.
activation_tag find_live(ct_actor* self, const grain_id& g);

/// The activation that sent the current message, or nullptr.
catalog_activation* sender_activation(ct_actor* self);

} // namespace cafmesh::catalog_detail
