// Admission control in a pure client (docs/behaviour/admission-control.md): beyond
// `gateway.max_outstanding` dispatches in progress the client refuses a delivery at once,
// before it is accepted, with one NACK `unavailable` "overloaded" carrying `retry_after_ms`,
// so a load above what the cluster carries never queues in the gateway's mailbox.

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "cafmesh/routing/size_guard.hpp"
#include "cafmesh/testing/entry_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;

namespace {

/// Registers a recorder for `addr` in `routing`; every envelope handed to it is kept.
std::shared_ptr<std::vector<envelope>> record_route(testing::fixture& fx,
                                                    const caf::actor& routing,
                                                    const std::string& addr) {
  auto got = std::make_shared<std::vector<envelope>>();
  auto rec = fx.track(fx.sys.spawn([got](caf::event_based_actor*) -> caf::behavior {
    return {[got](hb_in_atom, envelope& e) { got->push_back(std::move(e)); }};
  }));
  caf::anon_send(routing, rs_register_atom::value, address::from(addr), rec);
  fx.run();
  return got;
}

envelope deliver(testing::fixture& fx, const caf::actor& routing, envelope d) {
  caf::scoped_actor self{fx.sys};
  self->send(routing, rs_deliver_atom::value, std::move(d));
  fx.run();
  envelope out;
  self->receive([&](envelope& e) { out = std::move(e); },
                caf::after(std::chrono::seconds(0)) >> [&] { FAIL("no answer"); });
  return out;
}

} // namespace

TEST_CASE_FIXTURE(testing::fixture, "client admission: beyond gateway.max_outstanding dispatches a pure client refuses at once with one NACK unavailable carrying retry_after_ms, sends nothing to its gateway, and accepts again once a dispatch ended") {
  entry_world w(*this);
  entry_silo_options opt;
  opt.gateway_proxy = true;
  auto& a = w.add_silo("a", opt);
  auto& gw = state_of<gateway_proxy_state>(a.gateway);
  gw.silent = true;
  auto c = w.add_client("client", 104857600, [](routing_service_options& ro) {
    ro.max_outstanding = 2;
    ro.overload_retry_after_ms = 700;
  });
  auto got = record_route(*this, c.routing, "client/c1");
  auto from_c1 = [](std::string id) {
    auto d = make_delivery(id, "node/Org/Acme");
    d.sender = address::from("client/c1");
    return d;
  };
  CHECK(deliver(*this, c.routing, from_c1("d-1")).state == delivery_state::forwarded);
  CHECK(deliver(*this, c.routing, from_c1("d-2")).state == delivery_state::forwarded);
  auto third = deliver(*this, c.routing, from_c1("d-3"));
  CHECK(is_failed_and_nacked(third));
  CHECK(gw.calls_ms.size() == 2);
  CHECK(service_of(c.routing).stats.refused_overloaded == 1);
  CHECK(service_of(c.routing).stats.client_dispatches == 2);
  REQUIRE(got->size() == 1);
  delivery_failure failure;
  REQUIRE(from_json_text(got->at(0).payload_json, failure));
  CHECK(failure.request_id == "d-3");
  CHECK(failure.verdict == verdict::unavailable);
  CHECK(failure.message
        == "client " + c.addr.to_string()
             + " overloaded: 2 dispatches outstanding (gateway.max_outstanding 2); retry after "
               "700 ms");
  REQUIRE(got->at(0).properties.count("retry_after_ms") == 1);
  CHECK(got->at(0).properties.at("retry_after_ms") == "700");
  // The two held calls end by their bound (placement + grain-call timeout, 60 s): both
  // dispatches end in their own NACK and the bound frees up.
  run_for(61s);
  CHECK(got->size() == 3);
  CHECK(service_of(c.routing).dispatches.empty());
  CHECK(deliver(*this, c.routing, from_c1("d-4")).state == delivery_state::forwarded);
  CHECK(service_of(c.routing).stats.refused_overloaded == 1);
}
