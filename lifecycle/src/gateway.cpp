#include "cafmesh/lifecycle/gateway.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/actors/request_any.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/dispatch_batch.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_grains.hpp"
#include "cafmesh/routing/hub_protocol.hpp"
#include "cafmesh/routing/router_core.hpp"
#include "cafmesh/routing/routing_service.hpp"

namespace cafmesh::lifecycle {

using namespace cafmesh::routing;

namespace {

struct gateway_state {
  silo_address self;
  caf::actor placement;
  caf::actor centre;
  stream_transport_actor streams; ///< told every client as a stream peer
  router_core_actor core;         ///< answers a client's `gw_drained`
  bool open = false;              ///< stage Active started
  bool accepting = true;          ///< false after the GrainDeactivation stop
  bool stop_sent = false;         ///< stop-send went out: no new inbound attach
  std::set<silo_address> clients;
  std::map<std::string, silo_address> attached; ///< host path -> client that attached it
  /// Admission control: most client dispatches outstanding at once (0: no bound), and the
  /// `retry_after_ms` a refusal carries.
  int64_t max_outstanding = 0;
  int64_t retry_after_ms = 500;
  uint64_t outstanding = 0; ///< client dispatches handed to placement, not yet answered
  uint64_t refused_overloaded = 0;
  uint64_t refused_leaving = 0; ///< routing-grain calls refused after stop-send
  uint64_t attaches = 0;        ///< inbound attaches taken
  uint64_t detaches = 0;
  static inline const char* name = "cafmesh.gateway";
};

/// Attempts at one inbound attach inside the gateway: an activation that was leaving when
/// the call reached it (`activation_deactivated`) is re-resolved at once, so a client
/// re-homing while deliveries churn a not-here activation does not wait for its own
/// 250 ms backoff (docs/behaviour/classification.md#retry-policies "transient hub conditions
/// re-resolve").
constexpr int gateway_attach_attempts = 4;

void gateway_attach(caf::stateful_actor<gateway_state>* self, grain_id g, silo_address client,
                    caf::typed_response_promise<bool> rp, int attempt) {
  auto& st = self->state;
  // Bypass the directory cache: the attach must reach the directory
  // (docs/behaviour/routing.md#hubs).
  self->send(st.placement, pl_inval_atom::value, g);
  self
    ->request(st.placement, caf::infinite, pl_call_atom::value, g, int32_t{0},
              caf::make_message(ph_attach_client_atom::value, client))
    .then([=](bool ok) mutable { rp.deliver(ok); },
          [=](caf::error& e) mutable {
            auto f = to_fault(e);
            if (attempt < gateway_attach_attempts
                && contains_code(f, mesh_errc::activation_deactivated)) {
              gateway_attach(self, g, client, rp, attempt + 1);
              return;
            }
            rp.deliver(std::move(e));
          });
}

/// The dispatches call `m` carries: the items of a routing-grain batch, else 1.
uint64_t dispatch_count(const caf::message& m) {
  if (m.match_elements<caf::atom_value, std::vector<dispatch_item>, silo_address>()
      && m.get_as<caf::atom_value>(0) == hg_routes_atom::value)
    return std::max<uint64_t>(m.get_as<std::vector<dispatch_item>>(1).size(), 1);
  return 1;
}

caf::behavior gateway_part(caf::stateful_actor<gateway_state>* self, gateway_options opts) {
  self->state.self = opts.self;
  self->state.max_outstanding = opts.max_outstanding;
  self->state.retry_after_ms = opts.retry_after_ms;
  self->state.placement = std::move(opts.placement);
  self->state.centre = std::move(opts.centre);
  self->state.streams = std::move(opts.streams);
  self->state.core = std::move(opts.core);
  // A client of this gateway may host stream subscribers (docs/behaviour/routing.md#the-entry
  // inbound stream).
  auto add_client = [=](const silo_address& c) {
    if (self->state.clients.insert(c).second && self->state.streams)
      caf::anon_send(self->state.streams, st_peer_atom::value, c);
  };
  return {
    [=](pl_call_atom a, const grain_id& g, int32_t fwd,
        caf::message& m) -> caf::result<caf::message> {
      auto& st = self->state;
      if (!st.open || !st.accepting)
        return to_error(fault{mesh_errc::silo_unavailable,
                              "gateway " + st.self.to_string()
                                + " is not accepting client messages (it is starting or "
                                  "stopping); send through another Active gateway"});
      // After stop-send a routing-grain call is refused before placement sees it, as an
      // attach is: the routing grain of a leaving silo may be placed on another silo, whose
      // router core would accept the delivery while this gateway stops before the answer
      // comes back; the client, seeing the call fail, would send it again and it would be
      // accepted twice. docs/behaviour/routing.md#stopping-silos
      if (st.stop_sent && g == routing_grain_id()) {
        ++st.refused_leaving;
        fault f{mesh_errc::silo_unavailable,
                "gateway " + st.self.to_string() + " is leaving; route elsewhere"};
        f.silo = st.self;
        return to_error(f);
      }
      // A batch of dispatches counts its items: admitted while the count is under the bound,
      // it may pass the bound by at most its own size (docs/behaviour/admission-control.md).
      uint64_t n = dispatch_count(m);
      if (n > dispatch_batch_max) {
        fault f{mesh_errc::invalid_operation,
                "gateway " + st.self.to_string() + " refused a batch of " + std::to_string(n)
                  + " dispatches: at most " + std::to_string(dispatch_batch_max)};
        f.silo = st.self;
        return to_error(f);
      }
      if (st.max_outstanding <= 0) {
        self->delegate(st.placement, a, g, fwd, std::move(m));
        return caf::delegated<caf::message>{};
      }
      if (st.outstanding >= static_cast<uint64_t>(st.max_outstanding)) {
        // Refused before anything was accepted: the client's retry waits at least this long.
        ++st.refused_overloaded;
        fault f{mesh_errc::overloaded,
                "gateway " + st.self.to_string() + " overloaded: " + std::to_string(st.outstanding)
                  + " client dispatches outstanding (gateway.max_outstanding "
                  + std::to_string(st.max_outstanding) + "); retry after "
                  + std::to_string(st.retry_after_ms) + " ms"};
        f.retry_after_ms = static_cast<uint32_t>(st.retry_after_ms);
        f.silo = st.self;
        return to_error(f);
      }
      st.outstanding += n;
      auto rp = self->make_response_promise();
      request_any(
        self, st.placement, 0, caf::make_message(a, g, fwd, std::move(m)),
        [=](caf::message answer) mutable {
          self->state.outstanding -= n;
          rp.deliver(std::move(answer));
        },
        [=](caf::error e) mutable {
          self->state.outstanding -= n;
          rp.deliver(std::move(e));
        });
      return rp;
    },
    [=](gw_open_atom) {
      self->state.open = true;
      self->state.stop_sent = false;
      return caf::ok_atom::value;
    },
    [=](gw_attach_atom, const silo_address& client, const address& path) -> caf::result<bool> {
      // docs/behaviour/routing.md#the-entry "Pure client inbound attach": the pod hub of the
      // client's path, through this silo's placement (prefer-local puts a new activation here).
      auto& st = self->state;
      if (!st.open || !st.accepting || st.stop_sent)
        return to_error(
          fault{mesh_errc::silo_unavailable,
                "gateway " + st.self.to_string()
                  + (st.stop_sent ? " is leaving; attach elsewhere"
                                  : " is not accepting client messages (it is starting "
                                    "or stopping); send through another Active gateway")});
      add_client(client);
      ++st.attaches;
      auto key = host_address(path).path();
      st.attached[key] = client;
      auto rp = self->make_response_promise<bool>();
      gateway_attach(self, pod_hub_grain(key), client, rp, 1);
      return rp;
    },
    [=](gw_detach_atom, const silo_address& client,
        const address& path) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      ++st.detaches;
      auto key = host_address(path).path();
      auto i = st.attached.find(key);
      if (i != st.attached.end() && i->second == client)
        st.attached.erase(i);
      auto g = pod_hub_grain(key);
      self->delegate(st.placement, pl_call_atom::value, g, int32_t{0},
                     caf::make_message(ph_detach_client_atom::value, client));
      return caf::delegated<caf::ok_atom>{};
    },
    [=](gw_stop_send_atom, bool) {
      auto& st = self->state;
      st.stop_sent = true;
      for (auto& c : st.clients)
        self->send(st.centre, mc_send_atom::value, c, component::client,
                   caf::make_message(gw_stop_send_atom::value, st.self));
      return st.clients.size();
    },
    [=](gw_close_atom) {
      self->state.accepting = false;
      return caf::ok_atom::value;
    },
    [=](gw_connect_atom, const silo_address& client) { add_client(client); },
    [=](gw_drained_atom, std::string& destination, std::string& key) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (!st.core)
        return caf::ok_atom::value;
      self->delegate(st.core, rc_drained_atom::value, std::move(destination), std::move(key));
      return caf::delegated<caf::ok_atom>{};
    },
    [=](gw_lookup_atom, const address& path) {
      auto& m = self->state.attached;
      auto i = m.find(host_address(path).path());
      return i == m.end() ? silo_address{} : i->second;
    },
    [=](gw_clients_atom) {
      auto& c = self->state.clients;
      return std::vector<silo_address>(c.begin(), c.end());
    },
  };
}

} // namespace

gateway_options gateway_options::from(const config::mesh_config& cfg, silo_address self) {
  gateway_options o;
  o.self = std::move(self);
  o.max_outstanding = cfg.gateway.max_outstanding;
  o.retry_after_ms = cfg.routing.overload_retry_after_ms;
  return o;
}

caf::actor spawn_gateway(caf::actor_system& sys, gateway_options opts) {
  return sys.spawn(gateway_part, std::move(opts));
}

} // namespace cafmesh::lifecycle
