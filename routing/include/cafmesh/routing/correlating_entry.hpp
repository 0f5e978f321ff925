#pragma once

/// @file
/// Typed, correlated deliveries (docs/hosting.md "Sending"): an application sends with
/// `send(self, entry, target, payload)` or asks with `request(self, entry, target, payload,
/// timeout)`, and gets through CAF's `.then(ok, err)` (or `.receive(ok, err)` on a
/// `scoped_actor`) the response payload, or a `delivery_error` (delivery_error.hpp) inside
/// the `caf::error`. The correlating entry fills the delivery id and the sender, keeps the
/// correlation, answers every request exactly once (response, NACK, entry refusal or the
/// deadline) and can send a resendable failure again.
///
/// One correlating entry per process: an application hub at `client/{process}` registered
/// at its process's routing service. Its address type `client` is stream-routed, so the
/// answers of hubs in other processes reach it: in a silo its pod hub is claimed on this
/// silo, in a pure client the routing service attaches it at the gateway
/// (docs/behaviour/routing.md#the-entry, #hubs).
///
/// ## Protocol (`correlating_entry_actor`)
/// | message | answer |
/// |---|---|
/// | `(ce_send_atom, address target, std::string payload_type, std::string payload_json)` | the delivery id once the entry accepted it; a `delivery_error` if it refused it. A later NACK of the post is logged at warning (a post has no answer to carry it) |
/// |
/// `(ce_request_atom, address target, std::string payload_type, std::string payload_json, int64_t timeout_ms, bool resend)` | the response's `payload_json`; or a `delivery_error`: the NACK (verdict, message), the entry's refusal, or `deadline` after `timeout_ms` without an answer. With `resend`, a resendable failure is sent again (a new delivery id) under the attach policy (docs/behaviour/classification.md#retry-policies: up to 5 re-sends, min(250·2ⁿ, 4,000) ms apart) while the deadline allows |
/// | `(hb_in_atom, envelope)`, `(hb_deliver_atom, envelope) -> envelope` | answers and NACKs for this entry (hub protocol, hub_protocol.hpp) |

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/duration.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/delivery_error.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/payload_codec.hpp"

namespace cafmesh::routing {

using ce_send_atom = caf::atom_constant<caf::atom("cesend")>;
using ce_request_atom = caf::atom_constant<caf::atom("cerequest")>;
/// Internal timers: the deadline sweep (its due ms, deadline_sweep.hpp), a re-send's delay.
using ce_deadline_atom = caf::atom_constant<caf::atom("cedeadline")>;
using ce_resend_atom = caf::atom_constant<caf::atom("ceresend")>;

/// The correlating entry (see the file comment).
using correlating_entry_actor = caf::typed_actor<
  caf::replies_to<ce_send_atom, address, std::string, std::string>::with<std::string>,
  caf::replies_to<ce_request_atom, address, std::string, std::string, int64_t,
                  bool>::with<std::string>,
  caf::reacts_to<hb_in_atom, envelope>, caf::replies_to<hb_deliver_atom, envelope>::with<envelope>,
  caf::reacts_to<ce_deadline_atom, int64_t>, caf::reacts_to<ce_resend_atom, std::string>>;

/// What a correlating entry is built from.
struct correlating_entry_options {
  /// Its address, `client/{process}`; delivery ids are `{process}-{n}`.
  address self_address;
  /// The routing service of its process; the entry registers itself there.
  caf::actor routing;
  /// silo_host: the pod-hub claimer (the entry's pod hub is claimed there); null otherwise.
  caf::actor claimer;
  config::routing_section routing_cfg;
  config::attach_section attach; ///< the re-send policy
};

/// Spawns a correlating entry and registers it (and claims its pod hub, in a silo).
correlating_entry_actor spawn_correlating_entry(caf::actor_system& sys,
                                                correlating_entry_options opts);

/// Options of one request.
struct request_options {
  /// Send a resendable failure again (see the protocol table). Off: the first failure is the
  /// answer.
  bool resend = false;
  /// The payload's `$type` (logs and the receiving hub; the router never reads it).
  std::string payload_type = "request";
};

/// Posts `payload_json` to `target` from `self` (an event-based actor pointer or a
/// `scoped_actor`); the answer is the delivery id once accepted.
template <class Self>
auto send(Self& self, const correlating_entry_actor& entry, const address& target,
          std::string payload_json, std::string payload_type = "message") {
  return self->request(entry, caf::infinite, ce_send_atom::value, target, std::move(payload_type),
                       std::move(payload_json));
}

/// Asks `target` with `payload_json` (JSON text) from `self` and answers the response's
/// payload, or a `delivery_error`, within `timeout`. The entry always answers by the
/// deadline, so the CAF request itself needs no timeout of its own.
template <class Self>
auto request(Self& self, const correlating_entry_actor& entry, const address& target,
             std::string payload_json, caf::timespan timeout, request_options opts = {}) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
  return self->request(entry, caf::infinite, ce_request_atom::value, target,
                       std::move(opts.payload_type), std::move(payload_json),
                       static_cast<int64_t>(ms), opts.resend);
}

/// The answer of a typed `request<R>`: `then` (event-based actors) and `receive` (scoped
/// actors) take CAF's pair of handlers, `(R)` and `(caf::error&)`. A response whose payload
/// is no `R` (`decode_response<R>`, payload_codec.hpp) reaches the error handler as a
/// `delivery_error` with verdict `rejected`, not resendable, naming why.
template <class R, class Handle>
class typed_request_handle {
public:
  typed_request_handle(Handle h, caf::actor_system& sys) : h_(std::move(h)), sys_(&sys) {
    // nop
  }

  /// Event-based actors: handlers run when the answer arrives.
  template <class F, class G>
  void then(F on_value, G on_error) {
    h_.then(decoding(std::move(on_value), on_error),
            [on_error](caf::error& e) mutable { on_error(e); });
  }

  /// Blocking (scoped) actors: waits for the answer.
  template <class F, class G>
  void receive(F on_value, G on_error) {
    h_.receive(decoding(std::move(on_value), on_error),
               [on_error](caf::error& e) mutable { on_error(e); });
  }

private:
  template <class F, class G>
  auto decoding(F on_value, G on_error) {
    return [sys = sys_, on_value, on_error](const std::string& text) mutable {
      auto r = decode_response<R>(*sys, text);
      if (r) {
        on_value(std::move(*r));
      } else {
        delivery_error d;
        d.verdict = verdict::rejected;
        d.text = to_fault(r.error()).text;
        auto e = to_error(d);
        on_error(e);
      }
    };
  }

  Handle h_;
  caf::actor_system* sys_;
};

/// Asks like `request` above and answers the response's payload read as an `R` (a type
/// nlohmann reads from JSON, a CAF-serialisable type sent with `encode_payload`, or
/// `std::string` for the JSON text), or the `delivery_error`:
/// `request<int64_t>(self, entry, target, "{}", 5s).then([](int64_t n) {...}, [](caf::error& e) {...})`.
template <class R, class Self>
auto request(Self& self, const correlating_entry_actor& entry, const address& target,
             std::string payload_json, caf::timespan timeout, request_options opts = {}) {
  auto h = request(self, entry, target, std::move(payload_json), timeout, std::move(opts));
  return typed_request_handle<R, decltype(h)>{std::move(h), self->system()};
}

} // namespace cafmesh::routing
