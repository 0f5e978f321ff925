#include "cafmesh/routing/hub_grains.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/deadline_sweep.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/grain_call.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/gateway_atoms.hpp"
#include "cafmesh/routing/held_requests.hpp"
#include "cafmesh/routing/routing_grain.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "hub_grains_parts.hpp"
#include "landing_report.hpp"

namespace cafmesh::routing::hub_grains_detail {

// -- pod hub --------------------------------------------------------------------------------------
// docs/behaviour/routing.md#hubs

namespace {

/// `(ph_handover_sweep_atom, int64_t due_ms)` to itself: the timer armed for the earliest
/// deadline of the hand-overs to the pure client in progress.
using ph_handover_sweep_atom = caf::atom_constant<caf::atom("phhosweep")>;

/// The hand-overs to the pure client in progress, by id, and their deadlines: no CAF timeout
/// per hand-over, one timer armed for the earliest deadline bounds them all (SPEC §14 B6,
/// deadline_sweep.hpp).
struct handovers {
  struct call {
    caf::typed_response_promise<envelope> rp;
    envelope env; ///< what is handed over (an answer is sent once more after a time-out)
    silo_address client;
    int64_t due_ms = 0;
    bool resent = false;
  };
  uint64_t next_id = 0;
  std::map<uint64_t, call> calls;
  deadline_sweep<uint64_t> deadlines;

  /// Takes call `id` out; none if it already ended (timed out).
  std::optional<call> take(uint64_t id) {
    auto i = calls.find(id);
    if (i == calls.end())
      return std::nullopt;
    auto c = std::move(i->second);
    calls.erase(i);
    deadlines.remove(c.due_ms, id);
    return c;
  }
};

int64_t clock_ms(caf::local_actor* self) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           self->clock().now().time_since_epoch())
    .count();
}

} // namespace

caf::behavior pod_hub_behavior(caf::event_based_actor* self, const grain_id& id,
                               silo_routing_slots_ptr slots) {
  auto me = std::make_shared<activation_self>();
  auto client = std::make_shared<caf::optional<silo_address>>();
  auto path = address{};
  if (!address::parse(id.key, path))
    path = address{"podhub", id.key, {}};
  auto lg = log::get("pod_hub").with_context(slots->silo.to_string());
  // "not here; deactivating" once per activation (SPEC §15 C3 counts activations): the
  // deliveries that interleave with the first one and find it leaving log at debug.
  auto said_not_here = std::make_shared<bool>(false);
  auto log_not_here = [=]() {
    if (*said_not_here) {
      lg.debug("pod hub " + id.key + " is not here; already deactivating");
      return;
    }
    *said_not_here = true;
    lg.info("pod hub " + id.key + " is not here; deactivating");
  };
  auto not_here = [=]() {
    fault f{mesh_errc::pod_hub_not_here, "pod hub " + id.key
                                           + " is not in its owner's process (silo "
                                           + slots->silo.to_string() + ")"};
    f.silo = slots->silo;
    return f;
  };
  // Hands `d` to client `c` through the centres. Hand-overs overlap (deliveries interleave,
  // docs/behaviour/routing.md#hubs): each channel still arrives in order, because the router
  // core has one leg per channel in flight and the centres keep the order of what is sent.
  auto calls = std::make_shared<handovers>();
  // Sends hand-over `call_id` (in `calls`) to its client; its answer ends the call.
  std::shared_ptr<std::function<void(uint64_t)>> send_handover
    = std::make_shared<std::function<void(uint64_t)>>();
  *send_handover = [=](uint64_t call_id) {
    auto& h = calls->calls.at(call_id);
    auto c = h.client;
    self
      ->request(slots->centre, caf::infinite,
                make_bounded_call(slots->client_handover_timeout_ms, c, component::client,
                                  lr_deliver_atom::value, h.env))
      .then(
        [=](bool took) mutable {
          auto h = calls->take(call_id);
          if (!h)
            return; // timed out already
          if (took) {
            h->env.state = delivery_state::forwarded;
            h->rp.deliver(std::move(h->env));
            return;
          }
          lg.info("pure client " + c.to_string() + " has no hub " + id.key
                  + " any more; deactivating");
          *client = caf::none;
          leave(self, me);
          h->rp.deliver(to_error(not_here()));
        },
        [=](caf::error& e) mutable {
          auto h = calls->take(call_id);
          if (!h)
            return; // timed out already
          auto f = to_fault(e);
          if (contains_code(f, mesh_errc::departed_silo)
              || contains_code(f, mesh_errc::silo_unavailable)) {
            lg.info("pure client " + c.to_string() + " of pod hub " + id.key + " is unreachable ("
                    + f.render() + "); deactivating");
            *client = caf::none;
            leave(self, me);
            auto nh = not_here();
            nh.causes.push_back(std::move(f));
            h->rp.deliver(to_error(nh));
            return;
          }
          h->rp.deliver(to_error(f));
        });
  };
  // Hands `d` to client `c` through the centres. Hand-overs overlap (deliveries interleave,
  // docs/behaviour/routing.md#hubs): each channel still arrives in order, because the router
  // core has one leg per channel in flight and the centres keep the order of what is sent.
  auto to_client = [=](silo_address c, envelope d, caf::typed_response_promise<envelope> rp) {
    auto call_id = ++calls->next_id;
    auto due = clock_ms(self) + slots->client_handover_timeout_ms;
    calls->calls.emplace(call_id, handovers::call{rp, std::move(d), c, due});
    calls->deadlines.add(due, call_id);
    calls->deadlines.arm(self, ph_handover_sweep_atom::value, clock_ms(self));
    (*send_handover)(call_id);
  };
  // The hand-over timer armed for `fired` ms: every hand-over whose deadline has passed
  // fails `response_timeout`, then the timer is armed for the next deadline.
  auto sweep = [=](int64_t fired) {
    auto now = clock_ms(self);
    calls->deadlines.fire(
      self, ph_handover_sweep_atom::value, fired, now, [&](int64_t, uint64_t id) {
        auto c = calls->take(id);
        if (!c)
          return;
        // An answer (a response or a NACK) is sent once more: its sender may be gone by now
        // (killed while its leg waited for this hand-over), and then only this activation
        // holds it. The client's tracker drops a second copy by id. Frames and posts are not:
        // a late copy would arrive behind the deliveries that followed it on its channel.
        if (!c->resent && c->env.request_id && *client && **client == c->client) {
          lg.info("hand-over of answer " + c->env.id + " to pure client " + c->client.to_string()
                  + " got no reply within " + std::to_string(slots->client_handover_timeout_ms)
                  + " ms; sent once more");
          auto again = ++calls->next_id;
          c->resent = true;
          c->due_ms = now + slots->client_handover_timeout_ms;
          calls->deadlines.add(c->due_ms, again);
          calls->calls.emplace(again, std::move(*c));
          (*send_handover)(again);
          return;
        }
        c->rp.deliver(to_error(fault{
          mesh_errc::response_timeout,
          "hand-over of delivery " + c->env.id + " to pure client " + c->client.to_string()
            + " timed out after " + std::to_string(slots->client_handover_timeout_ms) + " ms"}));
      });
  };
  // The direct route offered to this silo's router core (SPEC B3, as node hubs do,
  // docs/delivery-costs.md): `routed` while the core holds it, `offered` once ever (the
  // activation takes it back when it goes).
  auto routed = std::make_shared<bool>(false);
  auto offered = std::make_shared<bool>(false);
  // A claim of this silo's pod-hub claimer attached this activation (`ph_attach` answered
  // true): if it goes while the silo is not stopping, the claimer is told (`pc_lost_atom`).
  auto claimed = std::make_shared<bool>(false);
  auto offer_route = [=] {
    if (*routed || *said_not_here || !me->catalog || !me->tag || !slots->core
        || silo_stopping(*slots))
      return;
    *routed = true;
    *offered = true;
    self->send(slots->core, rc_local_atom::value, id, *me->tag, me->catalog);
  };
  // Deactivation (the catalog's exit): a client served tells it to attach again, a claim that
  // attached this activation is asserted again.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (*offered && me->tag && slots->core)
      self->send(slots->core, rc_local_atom::value, id, *me->tag);
    if (*client && slots->centre)
      self->send(slots->centre, mc_send_atom::value, **client, component::client,
                 caf::make_message(rs_reattach_atom::value, path));
    if (*claimed && slots->claimer && !silo_stopping(*slots))
      self->send(slots->claimer, pc_lost_atom::value, id.key);
    self->quit(msg.reason);
  });
  // `via_placement`: the call came through a grain port and placement (not over a router
  // core's remote route): the answer names this activation too, so that the calling core
  // can call it directly from then on (docs/delivery-costs.md#the-remote-frame-path).
  auto deliver = [=](envelope& d, bool via_placement) -> caf::result<envelope> {
    learn(self, me);
    // A hub of this stopping process takes no new work. The activation stays: that hub
    // cannot move, and continuations still have to reach it here. A pure client's hub
    // lives in a process that is not stopping: it keeps getting its deliveries until the
    // client, told stop-send, attaches elsewhere.
    if (!*client && silo_stopping(*slots) && !is_continuation(d)) {
      lg.info("delivery " + d.id + " to '" + d.target.to_string()
              + "' refused before its hub saw it: silo " + slots->silo.to_string()
              + " is leaving; route elsewhere");
      return to_error(leaving_fault(*slots));
    }
    auto rp = self->make_response_promise<envelope>();
    if (*client && slots->centre) {
      to_client(**client, std::move(d), rp);
      return rp;
    }
    if (!slots->routing) {
      leave(self, me);
      rp.deliver(to_error(not_here()));
      return rp;
    }
    // Delegated: the routing service hands it to the local route and answers the caller
    // itself (no answer passes this activation, docs/delivery-costs.md#the-remote-frame-path);
    // the deliveries of a batch (docs/behaviour/routing.md#channel-batches) reach it back to back
    // and in order. With no local route it comes back here (`ph_no_route_atom`).
    // The tag is known once the catalog answered `learn`'s question: a fresh activation's
    // first deliveries are answered without it, and their caller learns the route later.
    auto landing = silo_address{};
    auto tag = activation_tag{};
    if (!is_continuation(d)) {
      landing = slots->silo; // a hub of this silo's process takes it
      if (via_placement && me->tag)
        tag = *me->tag;
    }
    return rp.delegate(slots->routing, lr_land_atom::value, std::move(d), landing, tag,
                       caf::actor_cast<caf::actor>(self));
  };
  // No local route in this process: the hub is a pure client's attached through this silo's
  // gateway, or it is not here.
  auto no_route = [=](envelope& d) -> caf::result<envelope> {
    learn(self, me);
    if (!slots->gateway || !slots->centre) {
      log_not_here();
      leave(self, me);
      return to_error(not_here());
    }
    auto rp = self->make_response_promise<envelope>();
    self->request(slots->gateway, caf::infinite, gw_lookup_atom::value, path)
      .await(
        [=](const silo_address& c) mutable {
          if (c.empty()) {
            log_not_here();
            leave(self, me);
            rp.deliver(to_error(not_here()));
            return;
          }
          lg.info("pod hub " + id.key + " adopts pure client " + c.to_string()
                  + " attached through this gateway");
          *client = c;
          pin(self, me, true);
          to_client(c, std::move(d), rp);
        },
        [=](caf::error&) mutable {
          leave(self, me);
          rp.deliver(to_error(not_here()));
        });
    return rp;
  };
  return {
    [=](ph_handover_sweep_atom, int64_t fired) { sweep(fired); },
    [=](ph_no_route_atom, envelope& d) -> caf::result<envelope> { return no_route(d); },
    [=](ph_attach_atom) -> caf::result<bool> {
      learn(self, me);
      if (!slots->routing)
        return false;
      auto rp = self->make_response_promise<bool>();
      self->request(slots->routing, caf::infinite, rs_has_route_atom::value, path)
        .then(
          [=](bool has) mutable {
            if (has) {
              *claimed = true;
              pin(self, me, true);
            } else if (!*client)
              leave(self, me); // not the owner's process: the retried claim places it anew
            rp.deliver(has);
          },
          [=](caf::error&) mutable { rp.deliver(false); });
      return rp;
    },
    [=](ph_attach_client_atom, const silo_address& c) {
      learn(self, me);
      if (!*client || **client != c)
        lg.info("pod hub " + id.key + " serves pure client " + c.to_string());
      *client = c;
      pin(self, me, true);
      return true;
    },
    [=](ph_detach_client_atom, const silo_address& c) {
      learn(self, me);
      if (*client && **client == c) {
        *client = caf::none;
        pin(self, me, false);
        leave(self, me);
      }
      return caf::ok_atom::value;
    },
    [=](ph_detach_atom) {
      learn(self, me);
      *claimed = false; // released: the claimer forgot the claim
      *client = caf::none;
      pin(self, me, false);
      leave(self, me);
      return caf::ok_atom::value;
    },
    [=](hg_deliver_atom, envelope& d) -> caf::result<envelope> { return deliver(d, true); },
    // Through the grain port of a silo (`caller`): this silo's router core has no direct
    // route to this activation, so it gets one offered.
    [=](hg_deliver_atom, envelope& d, const silo_address& caller) -> caf::result<envelope> {
      if (caller == slots->silo) {
        learn(self, me);
        *routed = false;
        offer_route();
      }
      return deliver(d, true);
    },
    // Over a router core's remote route (SPEC B3 extended), or rerouted from a catalog that
    // held it.
    [=](hg_deliver_atom, envelope& d, const silo_address&, bool) -> caf::result<envelope> {
      return deliver(d, false);
    },
  };
}

} // namespace cafmesh::routing::hub_grains_detail
