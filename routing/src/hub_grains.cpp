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

namespace cafmesh::routing {

const char* grain_delivery_state::name = "cafmesh.grain_delivery";
const char* pod_hub_claimer_state::name = "cafmesh.pod_hub_claimer";

std::string owner_refusal_text(const std::string& addr, const activation_tag& tag) {
  return "Hub " + addr + " is shutting down (" + tag.to_string()
         + "); the address may reactivate after a recycle or restart. Rejecting now.";
}

namespace {

using ms = std::chrono::milliseconds;

// -- activation helpers ------------------------------------------------------------------

/// What an activation knows about itself: its catalog (the sender of its turns) and tag.
struct activation_self {
  caf::actor catalog;
  caf::optional<activation_tag> tag;
  bool pinned = false;
};

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
  log::logger log;
};

std::string hub_address(const silo_routing_slots& slots, const envelope& d) {
  return host_address(d.target, slots.mesh_type).path();
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
    .then([=](envelope& answer) {
            if (answer.state == delivery_state::failed)
              lg.warning("NACK " + nid + " was not routed: " + answer.properties["error"]);
          },
          [=](caf::error& e) { lg.warning("NACK " + nid + " was not routed: " + to_fault(e).render()); });
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
    data->log.warning("building the hub of " + id.to_string() + " failed: " + f.render());
    for (auto& d : data->parked)
      node_hub_nack(self, slots, data, id, d, verdict::unavailable,
                    "Hub " + hub_address(*slots, d) + " could not be built: " + f.render());
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
            fail_build(fault{mesh_errc::not_found, "the hub factory built no hub for "
                                                     + id.key});
            return;
          }
          data->hub = hub;
          data->phase = hub_phase::ready;
          self->monitor(hub);
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
  return {
    [=](hg_deliver_atom, envelope& d) -> caf::result<envelope> {
      learn(self, data->me);
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
          if (!may_answer(d) || is_continuation(d)) {
            self->delegate(data->hub, hb_deliver_atom::value, std::move(d));
            return caf::delegated<envelope>{};
          }
          // Its answer names this silo, whose hub took it: if this silo dies before the
          // answer leaves, the sender's entry ends the request at once.
          // docs/behaviour/routing.md#requests-whose-silo-departs
          auto rp = self->make_response_promise<envelope>();
          auto silo = slots->silo;
          self->request(data->hub, caf::infinite, hb_deliver_atom::value, std::move(d))
            .then(
              [=](envelope& r) mutable {
                stamp_landing(r, silo);
                rp.deliver(std::move(r));
              },
              [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
          return rp;
        }
        case hub_phase::building: {
          pin(self, data->me, true); // exempt from idle collection while building
          auto ack = d;
          ack.state = delivery_state::submitted;
          if (may_answer(d) && !is_continuation(d))
            stamp_landing(ack, slots->silo);
          data->parked.push_back(std::move(d));
          return ack;
        }
        case hub_phase::failed: {
          auto out = d;
          out.state = delivery_state::failed;
          out.properties["error"] = json_quote("Hub " + hub_address(*slots, d)
                                               + " could not be built: "
                                               + data->build_fault.render());
          out.properties["verdict"] = json_quote(to_string(verdict::unavailable));
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
    },
  };
}

// -- pod hub --------------------------------------------------------------------------------------
// docs/behaviour/routing.md#hubs

caf::behavior pod_hub_behavior(caf::event_based_actor* self, const grain_id& id,
                            silo_routing_slots_ptr slots) {
  auto me = std::make_shared<activation_self>();
  auto client = std::make_shared<caf::optional<silo_address>>();
  auto path = address{};
  if (!address::parse(id.key, path))
    path = address{"podhub", id.key, {}};
  auto lg = log::get("pod_hub").with_context(slots->silo.to_string());
  auto not_here = [=]() {
    fault f{mesh_errc::pod_hub_not_here,
            "pod hub " + id.key + " is not in its owner's process (silo "
              + slots->silo.to_string() + ")"};
    f.silo = slots->silo;
    return f;
  };
  // Hands `d` to client `c` through the centres, awaited inside the turn
  // (docs/behaviour/routing.md#the-entry): the next delivery is taken only after this one was
  // handed over.
  auto to_client = [=](silo_address c, envelope d, caf::typed_response_promise<envelope> rp) {
    auto ack = d;
    self
      ->request(slots->centre, ms(slots->client_handover_timeout_ms),
                make_bounded_call(slots->client_handover_timeout_ms, c, component::client,
                                  lr_deliver_atom::value, std::move(d)))
      .await(
        [=](bool took) mutable {
          if (took) {
            ack.state = delivery_state::forwarded;
            rp.deliver(ack);
            return;
          }
          lg.info("pure client " + c.to_string() + " has no hub " + id.key
                  + " any more; deactivating");
          *client = caf::none;
          leave(self, me);
          rp.deliver(to_error(not_here()));
        },
        [=](caf::error& e) mutable {
          auto f = to_fault(e);
          if (contains_code(f, mesh_errc::departed_silo)
              || contains_code(f, mesh_errc::silo_unavailable)) {
            lg.info("pure client " + c.to_string() + " of pod hub " + id.key
                    + " is unreachable (" + f.render() + "); deactivating");
            *client = caf::none;
            leave(self, me);
            auto nh = not_here();
            nh.causes.push_back(std::move(f));
            rp.deliver(to_error(nh));
            return;
          }
          if (e == caf::sec::request_timeout)
            f = fault{mesh_errc::response_timeout,
                      "hand-over of delivery " + ack.id + " to pure client " + c.to_string()
                        + " timed out after "
                        + std::to_string(slots->client_handover_timeout_ms) + " ms"};
          rp.deliver(to_error(f));
        });
  };
  // Deactivation (the catalog's exit) while serving a client: tell it to attach again.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (*client && slots->centre)
      self->send(slots->centre, mc_send_atom::value, **client, component::client,
                 caf::make_message(rs_reattach_atom::value, path));
    self->quit(msg.reason);
  });
  return {
    [=](ph_attach_atom) -> caf::result<bool> {
      learn(self, me);
      if (!slots->routing)
        return false;
      auto rp = self->make_response_promise<bool>();
      self->request(slots->routing, caf::infinite, rs_has_route_atom::value, path)
        .then(
          [=](bool has) mutable {
            if (has)
              pin(self, me, true);
            else if (!*client)
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
      *client = caf::none;
      pin(self, me, false);
      leave(self, me);
      return caf::ok_atom::value;
    },
    [=](hg_deliver_atom, envelope& d) -> caf::result<envelope> {
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
      auto ack = d;
      self->request(slots->routing, caf::infinite, lr_deliver_atom::value, d)
        .await(
          [=](bool took) mutable {
            if (took) {
              ack.state = delivery_state::forwarded;
              if (may_answer(ack) && !is_continuation(ack))
                stamp_landing(ack, slots->silo); // a hub of this silo's process took it
              rp.deliver(ack);
              return;
            }
            if (!slots->gateway || !slots->centre) {
              lg.info("pod hub " + id.key + " is not here; deactivating");
              leave(self, me);
              rp.deliver(to_error(not_here()));
              return;
            }
            self->request(slots->gateway, caf::infinite, gw_lookup_atom::value, path)
              .await(
                [=](const silo_address& c) mutable {
                  if (c.empty()) {
                    lg.info("pod hub " + id.key + " is not here; deactivating");
                    leave(self, me);
                    rp.deliver(to_error(not_here()));
                    return;
                  }
                  lg.info("pod hub " + id.key + " adopts pure client " + c.to_string()
                          + " attached through this gateway");
                  *client = c;
                  pin(self, me, true);
                  to_client(c, ack, rp);
                },
                [=](caf::error&) mutable {
                  leave(self, me);
                  rp.deliver(to_error(not_here()));
                });
          },
          [=](caf::error& e) mutable { rp.deliver(to_error(to_fault(e))); });
      return rp;
    },
  };
}

// -- grain-delivery adapter --------------------------------------------------------------

using gd_actor = caf::stateful_actor<grain_delivery_state>;

caf::behavior grain_delivery(gd_actor* self, caf::actor placement) {
  self->state.placement = std::move(placement);
  return {
    [=](gp_deliver_atom, const grain_id& g, envelope& d) -> caf::result<envelope> {
      auto& st = self->state;
      ++st.attempts;
      auto rp = self->make_response_promise<envelope>();
      grain_call(self, st.placement, g, caf::make_message(hg_deliver_atom::value, std::move(d)))
        .then([=](envelope& r) mutable { rp.deliver(std::move(r)); },
              [=](caf::error& e) mutable {
                auto f = to_fault(e);
                if (auto n = find_code(f, mesh_errc::activation_deactivated))
                  if (n->activation_error_recorded == tri_bool::yes)
                    self->state.act_errors[g] = n->text;
                if (auto n = find_code(f, mesh_errc::silo_unavailable))
                  if (n->silo) {
                    ++self->state.leaving_reports;
                    self->send(self->state.placement, pl_leaving_atom::value, *n->silo);
                  }
                rp.deliver(to_error(f));
              });
      return rp;
    },
    [=](gp_invalidate_atom, const grain_id& g) {
      ++self->state.invalidations;
      self->send(self->state.placement, pl_inval_atom::value, g);
    },
    [=](gp_inval_silo_atom, const silo_address& s) {
      ++self->state.invalidations;
      self->send(self->state.placement, pl_inval_atom::value, s);
    },
    [=](gp_act_error_atom, const grain_id& g) {
      auto& m = self->state.act_errors;
      auto i = m.find(g);
      return i == m.end() ? std::string{} : i->second;
    },
  };
}

// -- pod-hub claimer ---------------------------------------------------------------------

using pc_actor = caf::stateful_actor<pod_hub_claimer_state>;

void retry_claim(pc_actor* self, const std::string& key, uint64_t tok, const fault& f);

/// True if a claim attempt failed because the directory named an activation of the pod hub
/// on another silo that had already left (not because activating it failed there).
bool displaced_by_foreign_activation(pc_actor* self, const fault& f) {
  auto& st = self->state;
  if (!st.self_silo)
    return false;
  auto n = find_code(f, mesh_errc::activation_deactivated);
  return n != nullptr && n->activation_error_recorded != tri_bool::yes && n->silo
         && *n->silo != *st.self_silo;
}

void claim_attempt(pc_actor* self, const std::string& key) {
  auto& st = self->state;
  auto i = st.claims.find(key);
  if (i == st.claims.end() || st.stopping)
    return;
  auto tok = ++i->second.token;
  ++st.attaches;
  // Bypass the directory cache: every attempt must reach the directory, whose entry a ring
  // change may have lost (docs/behaviour/routing.md#hubs).
  self->send(st.placement, pl_inval_atom::value, pod_hub_grain(key));
  grain_call(self, st.placement, pod_hub_grain(key), caf::make_message(ph_attach_atom::value))
    .then(
      [=](bool ok) {
        auto& st = self->state;
        auto j = st.claims.find(key);
        if (j == st.claims.end() || j->second.token != tok)
          return;
        j->second.attached = ok;
        if (ok) {
          ++st.attached_ok;
          return;
        }
        // The activation answering lives in a process without the local route (or the route
        // is not registered yet): it deactivated itself, so a retry places the hub anew.
        // Waiting for the next membership snapshot instead could leave the hub unserved
        // for as long as the membership stays quiet.
        // A first refusal is expected while a process starts: its entry's route may be
        // registered a moment after the claim left. Only a refusal on retry is a warning.
        auto line = "pod hub claim of " + key + " refused: no local route in this process";
        if (j->second.retry.retries() == 0)
          st.log.info(line + " (yet; retrying)");
        else
          st.log.warning(line);
        if (st.stopping)
          return;
        fault f{mesh_errc::pod_hub_not_here,
                "pod hub " + key + " refused the claim: no local route in its process"};
        retry_claim(self, key, tok, f);
      },
      [=](caf::error& e) {
        auto& st = self->state;
        auto j = st.claims.find(key);
        if (j == st.claims.end() || j->second.token != tok || st.stopping)
          return;
        auto f = to_fault(e);
        if (displaced_by_foreign_activation(self, f)
            && j->second.prompt_replacements < pod_claim_max_prompt_replacements) {
          // The activation in the way is gone: the next placement can put the hub here,
          // so place it now (one message later, not recursively) instead of after the
          // backoff. The attach policy's budget is kept for failures that need time.
          ++j->second.prompt_replacements;
          ++st.prompt_replacements;
          st.log.info("pod hub claim of " + key + " reached an activation that had left ("
                      + f.render() + "); placing it again at once");
          self->send(self, pc_retry_atom::value, key, tok);
          return;
        }
        retry_claim(self, key, tok, f);
      });
}

/// Decides on a failed or refused claim attempt under the attach policy
/// (docs/behaviour/classification.md#retry-policies).
void retry_claim(pc_actor* self, const std::string& key, uint64_t tok, const fault& f) {
  auto& st = self->state;
  auto j = st.claims.find(key);
  if (j == st.claims.end())
    return;
  auto d = j->second.retry.next(f);
  if (!d.retry) {
    st.log.error("pod hub claim of " + key + " gave up: " + f.render());
    return;
  }
  self->delayed_send(self, ms(d.delay_ms), pc_retry_atom::value, key, tok);
}

/// Starts a fresh assertion of one claim (a new retry budget).
void assert_claim(pc_actor* self, const std::string& key) {
  auto& st = self->state;
  auto i = st.claims.find(key);
  if (i == st.claims.end() || st.stopping)
    return;
  i->second.retry = retry_state{st.policy};
  i->second.prompt_replacements = 0;
  claim_attempt(self, key);
}

caf::behavior pod_hub_claimer(pc_actor* self, caf::actor placement, caf::actor routing,
                              config::attach_section attach, std::string context,
                              silo_routing_slots_ptr slots) {
  auto& st = self->state;
  st.placement = std::move(placement);
  st.routing = std::move(routing);
  st.policy = attach_policy(attach);
  st.log = log::get("pod_hub_claimer").with_context(context);
  if (slots)
    st.self_silo = slots->silo;
  return {
    [=](pc_claim_atom, const address& a) {
      auto& st = self->state;
      if (st.stopping) {
        st.log.info("claim of " + a.to_string() + " ignored: host is stopping");
        return;
      }
      auto key = host_address(a).path();
      auto& c = st.claims[key];
      c.addr = a;
      assert_claim(self, key);
    },
    [=](pc_release_atom, const address& a) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      auto key = host_address(a).path();
      auto rp = self->make_response_promise<caf::ok_atom>();
      if (st.stopping) {
        rp.deliver(caf::ok_atom::value);
        return rp;
      }
      st.claims.erase(key);
      ++st.detaches;
      grain_call(self, st.placement, pod_hub_grain(key), caf::make_message(ph_detach_atom::value))
        .then(
          [=](caf::ok_atom) mutable {
            self->request(self->state.routing, caf::infinite, rs_unregister_atom::value, a)
              .then([=](caf::ok_atom) mutable { rp.deliver(caf::ok_atom::value); },
                    [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
          },
          [=](caf::error& e) mutable {
            self->state.log.warning("detach of " + key + " failed: " + to_fault(e).render());
            self->request(self->state.routing, caf::infinite, rs_unregister_atom::value, a)
              .then([=](caf::ok_atom) mutable { rp.deliver(caf::ok_atom::value); },
                    [=](caf::error& e2) mutable { rp.deliver(std::move(e2)); });
          });
      return rp;
    },
    [=](pc_retry_atom, const std::string& key, uint64_t tok) {
      auto& st = self->state;
      auto i = st.claims.find(key);
      if (i != st.claims.end() && i->second.token == tok)
        claim_attempt(self, key);
    },
    [=](mb_snapshot_atom, const membership_snapshot&) {
      auto& st = self->state;
      if (st.stopping)
        return;
      std::vector<std::string> keys;
      for (auto& kv : st.claims)
        keys.push_back(kv.first);
      for (auto& k : keys)
        assert_claim(self, k);
    },
    [=](lifecycle::host_stopping_atom) {
      auto& st = self->state;
      if (!st.stopping) {
        st.stopping = true;
        if (slots)
          slots->stopping.store(true, std::memory_order_release);
        st.log.info("pod-hub claimer: stopping signal received; no further attach or detach");
      }
      return caf::ok_atom::value;
    },
  };
}

} // namespace

bool register_routing_grains(grain_registry& reg, silo_routing_slots_ptr slots) {
  bool ok = reg.add_stateless("routing", 1,
                              [slots](caf::event_based_actor* self, const grain_id&) {
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
  return ok;
}

grain_port_actor spawn_grain_delivery(caf::actor_system& sys, caf::actor placement) {
  return caf::actor_cast<grain_port_actor>(sys.spawn(grain_delivery, std::move(placement)));
}

caf::actor spawn_pod_hub_claimer(caf::actor_system& sys, caf::actor placement,
                                 caf::actor routing, const config::attach_section& attach,
                                 const std::string& context, silo_routing_slots_ptr slots) {
  return sys.spawn(pod_hub_claimer, std::move(placement), std::move(routing), attach, context,
                   std::move(slots));
}

} // namespace cafmesh::routing
