#include "cafmesh/routing/hub_grains.hpp"

#include <chrono>
#include <deque>
#include <utility>

#include <caf/all.hpp>

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

namespace cafmesh::routing {

std::string owner_refusal_text(const std::string& addr, const activation_tag& tag) {
  return "Hub " + addr + " is shutting down (" + tag.to_string()
         + "); the address may reactivate after a recycle or restart. Rejecting now.";
}

namespace hub_grains_detail {

// -- activation helpers ------------------------------------------------------------------

/// Learns the catalog from the current turn and asks for the tag once.
void learn(caf::event_based_actor* self, const std::shared_ptr<activation_self>& me) {
  if (me->catalog)
    return;
  me->catalog = caf::actor_cast<caf::actor>(self->current_sender());
  if (!me->catalog)
    return;
  self->request(me->catalog, caf::infinite, ct_self_atom::value)
    .then([=](activation_tag t) { me->tag = t; }, [](caf::error&) {});
}

void pin(caf::event_based_actor* self, const std::shared_ptr<activation_self>& me, bool on) {
  if (me->catalog && me->pinned != on) {
    me->pinned = on;
    self->send(me->catalog, ct_pin_atom::value, on);
  }
}

void leave(caf::event_based_actor* self, const std::shared_ptr<activation_self>& me) {
  if (me->catalog)
    self->send(me->catalog, ct_leave_atom::value);
}

/// The refusal of new work by a hub grain of a stopping silo.
fault leaving_fault(const silo_routing_slots& slots) {
  fault f{mesh_errc::silo_unavailable,
          "silo " + slots.silo.to_string() + " is leaving; route elsewhere"};
  f.silo = slots.silo;
  return f;
}

bool silo_stopping(const silo_routing_slots& slots) {
  return slots.stopping.load(std::memory_order_acquire);
}

} // namespace hub_grains_detail

namespace {

using namespace hub_grains_detail;

// -- node hub -------------------------------------------------------------------------------------
// docs/behaviour/routing.md#hubs

/// `leaving`: activated after the silo's stopping signal; it builds no hub.
enum class hub_phase : uint8_t { building, ready, failed, disposed, leaving };

struct node_hub_data {
  std::shared_ptr<activation_self> me = std::make_shared<activation_self>();
  hub_phase phase = hub_phase::building;
  caf::actor hub;
  std::deque<envelope> parked;
  fault build_fault;
  uint64_t nack_seq = 0;
  bool leave_when_ready = false; ///< refused new work while building: leave once handed over
  bool left = false;             ///< asked the catalog to deactivate it
  /// Told the silo's router core that it may call this activation directly (`rc_local_atom`),
  /// and the core has not called it through placement since.
  bool routed = false;
  /// Ever offered the route: the activation takes it back when it goes.
  bool offered = false;
  log::logger log;
};

std::string hub_address(const silo_routing_slots& slots, const envelope& d) {
  return host_address(d.target, slots.mesh_type).path();
}

/// The verdict of a delivery whose hub could not be built: `not_found` when the factory
/// answered that no live process serves the address (final, not resendable:
/// docs/behaviour/routing.md#unserved-addresses), else `unavailable` (resendable: the
/// activation faulted, or another silo may serve it).
verdict build_verdict(const fault& f) {
  return f.code == mesh_errc::not_found ? verdict::not_found : verdict::unavailable;
}

std::string build_failure_text(const silo_routing_slots& slots, const envelope& d, const fault& f) {
  if (f.code == mesh_errc::not_found)
    return "Delivery to '" + hub_address(slots, d) + "' failed: " + f.render();
  return "Hub " + hub_address(slots, d) + " could not be built: " + f.render();
}

/// Once the hub is ready and the activation knows its catalog and tag, tells the silo's
/// router core that it may call this activation through the catalog directly (SPEC B3,
/// docs/delivery-costs.md); it takes that back when the activation goes.
void offer_route(caf::event_based_actor* self, const silo_routing_slots_ptr& slots,
                 const std::shared_ptr<node_hub_data>& data, const grain_id& id) {
  auto& me = *data->me;
  if (data->routed || data->phase != hub_phase::ready || !me.catalog || !me.tag || !slots->core
      || silo_stopping(*slots))
    return;
  data->routed = true;
  data->offered = true;
  self->send(slots->core, rc_local_atom::value, id, *me.tag, me.catalog);
}

/// Posts a node-hub NACK through the silo's routing service (answer-suppressed envelope).
void node_hub_nack(caf::event_based_actor* self, const silo_routing_slots_ptr& slots,
                   const std::shared_ptr<node_hub_data>& data, const grain_id& id,
                   const envelope& d, verdict v, const std::string& text) {
  if (!may_answer(d)) {
    data->log.info("answer-suppressed delivery " + d.id + " failed at " + id.to_string() + ": "
                   + text);
    return;
  }
  if (!slots->routing) {
    data->log.error("cannot NACK delivery " + d.id + ": no routing service on this silo");
    return;
  }
  auto failure = make_delivery_failure(d, text, v, false, slots->silo);
  auto nack = make_nack_envelope(failure,
                                 id.to_string() + "-nack-" + std::to_string(++data->nack_seq),
                                 address{"messagehub", id.key, {}});
  auto lg = data->log;
  auto nid = nack.id;
  self->request(slots->routing, caf::infinite, rs_deliver_atom::value, std::move(nack))
    .then(
      [=](envelope& answer) {
        if (answer.state == delivery_state::failed)
          lg.warning("NACK " + nid + " was not routed: " + answer.properties["error"]);
      },
      [=](caf::error& e) {
        lg.warning("NACK " + nid + " was not routed: " + to_fault(e).render());
      });
}

void hand_parked(caf::event_based_actor* self, const silo_routing_slots_ptr& slots,
                 const std::shared_ptr<node_hub_data>& data, const grain_id& id) {
  while (!data->parked.empty()) {
    auto d = std::move(data->parked.front());
    data->parked.pop_front();
    self->request(data->hub, caf::infinite, hb_deliver_atom::value, d)
      .then(
        [=](envelope& result) {
          auto dec = judge_result(result);
          if (dec.nack())
            node_hub_nack(self, slots, data, id, d, dec.verdict,
                          "Delivery to '" + d.target.to_string() + "' failed: " + dec.text);
        },
        [=](caf::error& e) {
          auto f = to_fault(e);
          node_hub_nack(self, slots, data, id, d, verdict::shutting_down,
                        "Delivery to '" + d.target.to_string()
                          + "' failed: hub disposed before delivery (" + f.render() + ")");
        });
  }
}

caf::behavior node_hub_behavior(caf::event_based_actor* self, const grain_id& id,
                                silo_routing_slots_ptr slots) {
  auto data = std::make_shared<node_hub_data>();
  data->log = log::get("node_hub").with_context(slots->silo.to_string());
  // Deactivation (the catalog's exit): NACK what is still parked, then leave.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (data->offered && data->me->tag)
      self->send(slots->core, rc_local_atom::value, id, *data->me->tag);
    for (auto& d : data->parked)
      node_hub_nack(self, slots, data, id, d, verdict::shutting_down,
                    "Delivery to '" + d.target.to_string()
                      + "' failed: hub disposed before delivery");
    data->parked.clear();
    self->quit(msg.reason);
  });
  self->set_down_handler([=](caf::down_msg& dm) {
    if (data->hub && dm.source == data->hub.address()) {
      data->phase = hub_phase::disposed;
      data->log.info("hub of " + id.to_string() + " disposed");
    }
  });
  auto fail_build = [=](fault f) {
    data->phase = hub_phase::failed;
    data->build_fault = f;
    if (f.code == mesh_errc::not_found)
      data->log.info("no hub for " + id.to_string() + ": " + f.render());
    else
      data->log.warning("building the hub of " + id.to_string() + " failed: " + f.render());
    for (auto& d : data->parked)
      node_hub_nack(self, slots, data, id, d, build_verdict(f), build_failure_text(*slots, d, f));
    data->parked.clear();
    pin(self, data->me, false);
    leave(self, data->me);
  };
  if (silo_stopping(*slots)) {
    data->phase = hub_phase::leaving;
  } else if (!slots->hubs) {
    data->phase = hub_phase::failed;
    data->build_fault = fault{mesh_errc::extension_missing, "no hub factory on this silo"};
  } else {
    self->request(slots->hubs, ms(slots->hub_build_timeout_ms), hf_build_atom::value, id.key)
      .then(
        [=](caf::actor hub) {
          if (data->phase != hub_phase::building)
            return;
          if (!hub) {
            fail_build(
              fault{mesh_errc::extension_missing, "the hub factory built no hub for " + id.key});
            return;
          }
          data->hub = hub;
          data->phase = hub_phase::ready;
          self->monitor(hub);
          offer_route(self, slots, data, id);
          pin(self, data->me, false);
          hand_parked(self, slots, data, id);
          if (data->leave_when_ready && !data->left) {
            data->left = true;
            leave(self, data->me);
          }
        },
        [=](caf::error& e) {
          if (data->phase == hub_phase::building)
            fail_build(to_fault(e));
        });
  }
  // `local_caller`: the call came from this silo's own router core, which takes the landing
  // as its own (landing_report.cpp), so the hub answers it directly. `via_placement`: it
  // came through a grain port and placement, not over a router core's route: an answer to
  // another silo names this activation too, so that its core calls it directly from then on
  // (docs/delivery-costs.md#the-remote-frame-path).
  auto deliver = [=](envelope& d, bool local_caller, bool via_placement) -> caf::result<envelope> {
    learn(self, data->me);
    offer_route(self, slots, data, id);
    // A stopping silo takes no new work: refused before the hub sees it, and the
    // activation leaves so that the sender's retry places the hub elsewhere.
    bool hub_side = data->phase == hub_phase::ready || data->phase == hub_phase::building;
    if (data->phase == hub_phase::leaving
        || (hub_side && silo_stopping(*slots) && !is_continuation(d))) {
      data->log.info("delivery " + d.id + " to '" + d.target.to_string()
                     + "' refused before its hub saw it: silo " + slots->silo.to_string()
                     + " is leaving; route elsewhere");
      if (data->phase == hub_phase::building) {
        data->leave_when_ready = true;
      } else if (!data->left) {
        data->left = true;
        pin(self, data->me, false);
        leave(self, data->me);
      }
      return to_error(leaving_fault(*slots));
    }
    switch (data->phase) {
      case hub_phase::ready: {
        if (is_continuation(d) || local_caller) {
          self->delegate(data->hub, hb_deliver_atom::value, std::move(d));
          return caf::delegated<envelope>{};
        }
        // Its answer names this silo, whose hub took it: if this silo dies before the
        // answer leaves, the sender's entry ends the request at once
        // (docs/behaviour/routing.md#requests-whose-silo-departs), and the calling router
        // core counts its later attempts against this silo
        // (docs/behaviour/admission-control.md#a-slow-destination).
        auto rp = self->make_response_promise<envelope>();
        auto silo = slots->silo;
        auto tag = via_placement ? data->me->tag : caf::optional<activation_tag>{};
        self->request(data->hub, caf::infinite, hb_deliver_atom::value, std::move(d))
          .then(
            [=](envelope& r) mutable {
              stamp_landing(r, silo);
              if (tag)
                stamp_landed_activation(r, *tag);
              rp.deliver(std::move(r));
            },
            [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      }
      case hub_phase::building: {
        pin(self, data->me, true); // exempt from idle collection while building
        auto ack = d;
        ack.state = delivery_state::submitted;
        if (!is_continuation(d))
          stamp_landing(ack, slots->silo);
        data->parked.push_back(std::move(d));
        return ack;
      }
      case hub_phase::failed: {
        auto out = d;
        out.state = delivery_state::failed;
        out.properties["error"] = json_quote(build_failure_text(*slots, d, data->build_fault));
        out.properties["verdict"] = json_quote(to_string(build_verdict(data->build_fault)));
        leave(self, data->me);
        return out;
      }
      case hub_phase::disposed:
      default: {
        auto out = d;
        out.state = delivery_state::failed;
        auto tag = data->me->tag ? *data->me->tag : activation_tag{};
        out.properties["error"] = json_quote(owner_refusal_text(hub_address(*slots, d), tag));
        leave(self, data->me);
        return out;
      }
    }
  };
  return {
    [=](hg_deliver_atom, envelope& d) -> caf::result<envelope> { return deliver(d, false, true); },
    // Through the grain port: from this silo's router core when it has no direct route to
    // this activation (it gets one offered), or from another silo's.
    [=](hg_deliver_atom, envelope& d, const silo_address& caller) -> caf::result<envelope> {
      bool local = caller == slots->silo;
      if (local)
        data->routed = false;
      return deliver(d, local, true);
    },
    // Over the direct route (SPEC B3), or rerouted from a catalog that held it.
    [=](hg_deliver_atom, envelope& d, const silo_address& caller, bool) -> caf::result<envelope> {
      return deliver(d, caller == slots->silo, false);
    },
  };
}

} // namespace

bool register_routing_grains(grain_registry& reg, silo_routing_slots_ptr slots) {
  bool ok = reg.add_stateless("routing", 1, [slots](caf::event_based_actor* self, const grain_id&) {
    return routing_grain_behavior(self, slots);
  });
  ok = reg.add_single("messagehub", placement_strategy::random,
                      [slots](caf::event_based_actor* self, const grain_id& id) {
                        return node_hub_behavior(self, id, slots);
                      })
       && ok;
  ok = reg.add_single("podhub", placement_strategy::prefer_local,
                      [slots](caf::event_based_actor* self, const grain_id& id) {
                        return pod_hub_behavior(self, id, slots);
                      })
       && ok;
  // A pod hub's deliveries interleave (docs/behaviour/routing.md#hubs): a hand-over to a pure
  // client waits for the network, and per-channel order is the router core's.
  ok = reg.set_may_interleave("podhub", [](const caf::message& m) {
    return m.size() > 0 && m.match_element<caf::atom_value>(0)
           && m.get_as<caf::atom_value>(0) == hg_deliver_atom::value;
  }) && ok;
  return ok;
}
} // namespace cafmesh::routing
