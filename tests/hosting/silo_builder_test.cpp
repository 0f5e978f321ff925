// Silos, clients and monoliths built by the hosting layer (silo_builder.hpp,
// client_builder.hpp, monolith_builder.hpp), driven in virtual time through their hosts:
// typed grains, application hubs answering requests across silo and client, the stop, and
// the configuration check.

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/config/load.hpp"
#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace cafmesh::lifecycle;
using routing::address;
using routing::envelope;

namespace {

using add_atom = caf::atom_constant<caf::atom("add")>;

/// A counter grain: `(add_atom, n) -> total`.
using counter = caf::typed_actor<caf::replies_to<add_atom, int64_t>::with<int64_t>>;

counter::behavior_type make_counter(caf::event_based_actor*, const grain_id&) {
  auto total = std::make_shared<int64_t>(0);
  return {[total](add_atom, int64_t n) { return *total += n; }};
}

/// An echo hub: answers every request with `{"echo": <payload>}`.
routing::hub_handler echo() {
  return [](const envelope& d) {
    return std::optional<routing::reply>{routing::reply{"{\"echo\":" + d.payload_json + "}"}};
  };
}

/// Starts `p` through its host and runs until it answered.
template <class Process>
bool start(testing::fixture& fx, Process& p) {
  auto r = testing::ask(fx, p.host(), host_start_atom::value);
  return fx.run_until([&] { return r->done; }, std::chrono::minutes(1)) && r->ok();
}

/// Asks `p`'s correlating entry for a request to `target`; runs until answered.
template <class Process>
std::shared_ptr<testing::reply<std::string>> ask_request(testing::fixture& fx, Process& p,
                                                         const std::string& target) {
  auto r = testing::ask<std::string>(fx, p.entry(), routing::ce_request_atom::value,
                                     address::from(target), std::string{"request"},
                                     std::string{"{\"n\":1}"}, int64_t{30000}, false);
  REQUIRE(fx.run_until([&] { return r->done; }, std::chrono::minutes(1)));
  return r;
}

} // namespace

TEST_CASE("silo_builder: a typed grain answers, a hub answers a request, the stop tears down") {
  std::vector<std::string> lifecycle_events; // outlives the fixture's teardown
  testing::fixture fx;
  grain_options go;
  go.on_activate = [&](caf::event_based_actor*, const grain_id& id) {
    lifecycle_events.push_back("activate " + id.to_string());
  };
  go.on_deactivate = [&](const grain_id& id) {
    lifecycle_events.push_back("deactivate " + id.to_string());
  };
  auto silo = silo_builder{fx.sys}
                .grain<counter>("counter", make_counter, go)
                .hub("node/echo/*", echo())
                .build();
  REQUIRE(silo);
  REQUIRE(start(fx, *silo));
  auto active = testing::ask(fx, silo->host(), host_active_atom::value);
  fx.run();
  CHECK(active->ok());
  // The typed grain, twice: one activation keeps its total.
  auto ref = silo->grain<counter>("counter", "c1");
  auto call = [&](int64_t n) {
    auto out = std::make_shared<int64_t>(-1);
    auto a = fx.sys.spawn([=](caf::event_based_actor* self) {
      ref.request(self, add_atom::value, n).then([=](int64_t total) { *out = total; });
    });
    fx.track(a);
    REQUIRE(fx.run_until([&] { return *out >= 0; }, std::chrono::minutes(1)));
    return *out;
  };
  CHECK(call(2) == 2);
  CHECK(call(5) == 7);
  CHECK(lifecycle_events == std::vector<std::string>{"activate counter/c1"});
  // The hub: its answer comes back through the router core and the entry's pod hub.
  auto r = ask_request(fx, *silo, "node/echo/1");
  REQUIRE(r->done);
  CHECK_FALSE(r->err);
  CHECK(r->value == "{\"echo\":{\"n\":1}}");
  // No hub for the address, in this silo or any other live one: the node hub's activation
  // fails, the sender gets one NACK not_found (S15.06).
  auto none = ask_request(fx, *silo, "node/nobody");
  REQUIRE(none->done);
  auto e = routing::delivery_error_of(none->err);
  CHECK(e.verdict == routing::verdict::not_found);
  CHECK(e.text.find("No live process serves 'node/nobody'") != std::string::npos);
  // The graceful stop is answered once torn down; the activation's hook ran.
  auto waiting = testing::ask(fx, silo->host(), host_await_atom::value);
  auto halt = testing::ask(fx, silo->host(), host_halt_atom::value, true);
  REQUIRE(fx.run_until([&] { return halt->done; }, std::chrono::minutes(2)));
  CHECK(halt->ok());
  CHECK(waiting->ok());
  CHECK(lifecycle_events
        == std::vector<std::string>{"activate counter/c1", "deactivate counter/c1"});
}

TEST_CASE("S15.06 a request to node/nothing/here that no hub of any live silo serves is NACKed not_found, not resendable, within one round trip") {
  testing::fixture fx;
  auto cluster = make_in_process_cluster(fx.sys);
  // Two silos that serve different patterns: a miss in one silo's hub table proves nothing
  // by itself, the membership rows say what every live silo serves.
  auto a = silo_builder{fx.sys}.cluster(cluster).hub("node/echo/*", echo()).build();
  auto b = silo_builder{fx.sys}.cluster(cluster).hub("node/other/*", echo()).build();
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(start(fx, *a));
  REQUIRE(start(fx, *b));
  for (auto* s : {&*a, &*b}) {
    auto t0 = fx.now_ms();
    auto r = ask_request(fx, *s, "node/nothing/here");
    REQUIRE(r->done);
    auto e = routing::delivery_error_of(r->err);
    CHECK(e.verdict == routing::verdict::not_found);
    CHECK_FALSE(e.resendable);
    CHECK_FALSE(e.deadline);
    CHECK(e.text
          == "Delivery to 'node/nothing/here' failed: No live process serves "
             "'node/nothing/here': no hub pattern of the 2 live silo(s) matches it; register a "
             "hub whose pattern matches it (silo_builder::hub, mesh_process::register_hub) or "
             "send to an address a hub serves");
    // One round trip: the in-process cluster's links take 0 ms, so the NACK comes in the
    // same virtual millisecond: no retry delay (>= 250 ms), no timeout.
    CHECK(fx.now_ms() - t0 == 0);
  }
  // An address another silo serves is never not_found: a node hub placed on the silo that
  // does not serve it answers a resendable verdict, and the re-send can land.
  for (int k = 0; k < 8; ++k) {
    auto r = ask_request(fx, *b, "node/echo/" + std::to_string(k));
    REQUIRE(r->done);
    if (r->err) {
      auto e = routing::delivery_error_of(r->err);
      CHECK(e.verdict == routing::verdict::unavailable);
      CHECK(e.resendable);
      CHECK(e.text
            == "Hub node/echo/" + std::to_string(k) + " could not be built: no hub handler for "
                 "'node/echo/" + std::to_string(k)
                 + "' in this process; another live silo may serve it");
    } else {
      CHECK(r->value == "{\"echo\":{\"n\":1}}");
    }
  }
}

TEST_CASE("client_builder: a pure client's request is answered by a hub in a silo") {
  testing::fixture fx;
  auto cluster = make_in_process_cluster(fx.sys);
  auto silo = silo_builder{fx.sys}.cluster(cluster).hub("node/echo/*", echo()).build();
  REQUIRE(silo);
  REQUIRE(start(fx, *silo));
  config::mesh_config cc;
  cc.mesh.role = config::process_role::pure_client;
  cc.mesh.name = "front";
  auto client = client_builder{fx.sys}.config(cc).cluster(cluster).build();
  REQUIRE(client);
  REQUIRE(start(fx, *client));
  CHECK(client->role() == "pure_client");
  auto r = ask_request(fx, *client, "node/echo/9");
  REQUIRE(r->done);
  CHECK_FALSE(r->err);
  CHECK(r->value == "{\"echo\":{\"n\":1}}");
}

TEST_CASE("monolith_builder: hubs answer in one process, while stopping nothing is built") {
  testing::fixture fx;
  auto mono = monolith_builder{fx.sys}.hub("node/echo/*", echo()).build();
  REQUIRE(mono);
  REQUIRE(start(fx, *mono));
  CHECK(mono->role() == "monolith");
  auto r = ask_request(fx, *mono, "node/echo/1");
  REQUIRE(r->done);
  CHECK_FALSE(r->err);
  CHECK(r->value == "{\"echo\":{\"n\":1}}");
  auto none = ask_request(fx, *mono, "node/nobody");
  REQUIRE(none->done);
  CHECK(routing::delivery_error_of(none->err).verdict == routing::verdict::not_found);
}

TEST_CASE("builders validate a configuration built in code exactly like its JSON") {
  testing::fixture fx;
  config::mesh_config bad;
  bad.routing.max_in_flight = -3;
  auto from_json = config::parse(config::to_json_text(bad));
  REQUIRE_FALSE(from_json.ok);
  auto silo = silo_builder{fx.sys}.config(bad).build();
  REQUIRE_FALSE(silo);
  auto f = to_fault(silo.error());
  CHECK(f.code == mesh_errc::config_invalid);
  CHECK(f.text == "silo_builder: invalid configuration: " + from_json.message());
  config::mesh_config client_role;
  client_role.mesh.role = config::process_role::pure_client;
  auto wrong = silo_builder{fx.sys}.config(client_role).build();
  REQUIRE_FALSE(wrong);
  CHECK(to_fault(wrong.error()).text
        == "silo_builder builds a silo_host process; mesh.process_role is pure_client");
  auto bad_hub = silo_builder{fx.sys}.hub("nohub", echo()).build();
  REQUIRE_FALSE(bad_hub);
  CHECK(to_fault(bad_hub.error()).text
        == "hub pattern 'nohub' is no address path (type/id, or type/prefix/*)");
  auto nothing = silo_builder{fx.sys}.hub("node/inv*", echo()).build();
  REQUIRE_FALSE(nothing);
  CHECK(to_fault(nothing.error()).text
        == "hub pattern 'node/inv*' can match nothing: '*' stands only for a whole last "
           "segment (type/prefix/*)");
}

TEST_CASE("silo_builder: a hub that never ends a delivery does not outlive the stop's bounds, and its end frees the delivery's gauge slot") {
  testing::fixture fx;
  auto silo = silo_builder{fx.sys}
                .hub("node/silent/*", [](caf::event_based_actor*, const envelope&,
                                         routing::hub_responder) {})
                .build();
  REQUIRE(silo);
  REQUIRE(start(fx, *silo));
  auto r = testing::ask<std::string>(fx, silo->entry(), routing::ce_request_atom::value,
                                     address::from("node/silent/1"), std::string{"request"},
                                     std::string{"{}"}, int64_t{5000}, false);
  auto t_req = fx.now_ms();
  REQUIRE(fx.run_until([&] { return r->done; }, std::chrono::minutes(1)));
  // The leg's grain call is bounded by the requester's 5 s less the margin: one NACK failed
  // before the deadline (docs/behaviour/routing.md#a-requests-remaining-time).
  auto e = routing::delivery_error_of(r->err);
  CHECK_FALSE(e.deadline);
  CHECK(e.verdict == routing::verdict::failed);
  CHECK(e.text == "Delivery to 'node/silent/1' failed: grain call got no answer within 4500 ms");
  CHECK(fx.now_ms() - t_req < 5000);
  auto gauge = silo->components().gauge;
  auto count = [&] {
    auto c = testing::ask<uint64_t>(fx, gauge, routing::q_count_atom::value);
    fx.run();
    return c->ok() ? c->value : uint64_t{999};
  };
  CHECK(count() >= 1); // the hub's delivery in progress (and the leg waiting for it)
  auto t0 = fx.now_ms();
  auto halt = testing::ask(fx, silo->host(), host_halt_atom::value, true);
  REQUIRE(fx.run_until([&] { return halt->done; }, std::chrono::minutes(3)));
  CHECK(halt->ok());
  // Bounded by the shutdown budget (30 s) and the catalog's deactivation timeout (30 s).
  CHECK(fx.now_ms() - t0 <= 61000);
} // the hub ended with the delivery in progress: its exit must not touch its gone state
