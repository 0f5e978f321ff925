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
#include "cafmesh/routing/detail/hub_grains_state.hpp"

namespace cafmesh::routing {

using cafmesh::routing::detail::pod_hub_claimer_state;

const char* pod_hub_claimer_state::name = "cafmesh.pod_hub_claimer";

namespace {

using ms = std::chrono::milliseconds;

// -- pod-hub claimer ---------------------------------------------------------------------

using pc_actor = pod_hub_claimer_actor::stateful_base<pod_hub_claimer_state>;

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
  caf::send_as(caf::actor_cast<caf::actor>(self), st.placement, pl_inval_atom::value,
               pod_hub_grain(key));
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
          j->second.retry = retry_state{st.policy}; // a later loss starts a fresh budget
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

pod_hub_claimer_actor::behavior_type
pod_hub_claimer(pc_actor* self, caf::actor placement, caf::actor routing,
                config::attach_section attach, std::string context, silo_routing_slots_ptr slots) {
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
    // docs/behaviour/routing.md#hubs "lost claims": the activation a claim attached went
    // while this silo is not stopping (it lost its directory registration to an activation a
    // retrying sender had placed on another silo, or was collected). Without this, the hub
    // would stay unserved until the next membership snapshot. An attempt in flight is
    // superseded: its answer may be the very activation that went.
    [=](pc_lost_atom, const std::string& key) {
      auto& st = self->state;
      auto i = st.claims.find(key);
      if (i == st.claims.end() || st.stopping)
        return;
      auto& c = i->second;
      c.attached = false;
      ++st.lost;
      if (c.prompt_replacements < pod_claim_max_prompt_replacements) {
        ++c.prompt_replacements;
        ++st.prompt_replacements;
        st.log.info("pod hub " + key + " claimed here lost its activation; claiming it again");
        claim_attempt(self, key);
        return;
      }
      auto tok = ++c.token;
      retry_claim(self, key, tok,
                  fault{mesh_errc::pod_hub_not_here,
                        "pod hub " + key + " claimed here lost its activation again"});
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
    [=](lifecycle::host_stopping_atom) -> caf::result<caf::ok_atom> {
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

pod_hub_claimer_actor
spawn_pod_hub_claimer(caf::actor_system& sys, caf::actor placement, caf::actor routing,
                      const config::attach_section& attach, const std::string& context,
                      silo_routing_slots_ptr slots) {
  auto claimer = sys.spawn(pod_hub_claimer, std::move(placement), std::move(routing), attach,
                           context, slots);
  if (slots)
    slots->claimer = claimer; // before any activation of the silo can read it
  return claimer;
}

} // namespace cafmesh::routing
