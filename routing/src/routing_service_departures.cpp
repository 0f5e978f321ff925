#include "cafmesh/routing/routing_service.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "routing_service_parts.hpp"

// Requests held by the routing service whose silo departs before their answer passed:
// docs/behaviour/routing.md#requests-whose-silo-departs.

namespace cafmesh::routing::routing_service_detail {

namespace {

/// Ends held request `r` with one NACK `failed`: `s`, which its answer depended on, is gone.
void nack_lost(rs_actor* self, const held_requests::entry& r, held_loss why,
               const silo_address& s) {
  auto& st = self->state;
  auto& d = r.env;
  auto detail = why == held_loss::gateway ? departed_in_flight(s).render()
                                          : "silo " + s.to_string()
                                              + " departed after its hub took the request, "
                                                "before the answer left; its outcome is unknown";
  if (post_local_nack(self, d, verdict::failed,
                      "Delivery to '" + d.target.to_string() + "' failed: " + detail)) {
    ++(why == held_loss::gateway ? st.stats.departed_nacks : st.stats.landing_nacks);
  } else {
    st.log.error("request " + d.id + " held for departed silo " + s.to_string()
                 + " has no local route for its sender here: " + detail);
  }
}

/// True if this process knows `s` is gone: its centre reported it, or membership shows it
/// Dead or superseded.
bool known_gone(rs_actor* self, const silo_address& s) {
  auto& st = self->state;
  return st.lost.count(s) > 0 || (st.view && st.view->departed(s));
}

} // namespace

/// The centre reports `s` departed (its connection broke, a call to it bounced, or
/// membership shows it Dead). A pure client leaves `s` for good if it was its gateway and
/// never picks it again. Every held request `s` had accepted, or whose hub `s` hosts, ends
/// with one NACK `failed`: the answer can no longer come, and whether `s` processed the
/// request is unknown. docs/behaviour/routing.md#requests-whose-silo-departs
void silo_lost(rs_actor* self, const silo_address& s) {
  auto& st = self->state;
  if (st.opts.role == config::process_role::monolith || s.empty())
    return;
  if (!st.lost.insert(s).second)
    return;
  if (st.opts.role == config::process_role::pure_client) {
    ++st.stats.gateways_lost;
    if (st.gateway == s)
      drop_gateway(self, s, "the connection to it was lost");
  }
  if (st.graceful.count(s) > 0) {
    // A silo that left gracefully finishes the work it accepted and its hubs' answers leave
    // before it goes (their answers reach this process through the next gateway): nothing
    // to NACK.
    st.held.left(s);
    return;
  }
  for (auto& l : st.held.departed(s, now_ms(self)))
    nack_lost(self, l.req, l.why, s);
}

/// The router core whose leg landed request `id` reports that a hub of `at` took it.
void on_landed(rs_actor* self, const std::string& id, const silo_address& at) {
  auto& st = self->state;
  if (!st.held.landed(id, at))
    return; // answered already, expired, or a post
  ++st.stats.landings;
  if (!known_gone(self, at))
    return;
  if (st.graceful.count(at) > 0) {
    st.held.landed(id, silo_address{});
    return;
  }
  // `at` departed before this report arrived: the answer cannot come any more.
  if (auto r = st.held.take(id, now_ms(self)))
    nack_lost(self, *r, held_loss::landing, at);
}

void silo_leaving(rs_actor* self, const silo_address& s, bool graceful) {
  if (graceful && !s.empty())
    self->state.graceful.insert(s);
}

void departures_snapshot(rs_actor* self, const membership_snapshot& v) {
  auto& st = self->state;
  for (auto& r : v.rows)
    if (r.status == silo_status::shutting_down)
      st.graceful.insert(r.silo);
  st.view = v;
  for (auto i = st.lost.begin(); i != st.lost.end();) {
    if (v.departed(*i))
      i = st.lost.erase(i); // membership caught up: Dead or superseded for good
    else
      ++i;
  }
}

} // namespace cafmesh::routing::routing_service_detail
