// Application hubs written as handlers and the hub table (application_hub.hpp), in virtual
// time against a recording routing service.

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/observer.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/routing/application_hub.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;

namespace {

struct recorder_state {
  std::vector<envelope> sent;
  std::vector<address> registered;
  static inline const char* name = "recording-routing";
};

caf::behavior recording_routing(caf::stateful_actor<recorder_state>* self) {
  return {
    [=](rs_register_atom, const address& a, const caf::actor&) {
      self->state.registered.push_back(a);
      return caf::ok_atom::value;
    },
    [=](rs_deliver_atom, envelope& e) {
      self->state.sent.push_back(e);
      e.state = delivery_state::forwarded;
      return e;
    },
  };
}

envelope request_to(const std::string& target, const std::string& id) {
  envelope d;
  d.id = id;
  d.sender = address::from("client/app-1");
  d.target = address::from(target);
  d.payload_json = "{\"n\":2}";
  return d;
}

} // namespace

TEST_CASE("application hub: the handler's reply becomes one response to the sender") {
  testing::fixture fx;
  auto routing = fx.track(fx.sys.spawn(recording_routing));
  int calls = 0;
  auto hub = fx.track(spawn_application_hub(
    fx.sys, address::from("node/counter/7"), routing, as_async([&](const envelope& d) {
      ++calls;
      return std::optional<reply>{reply{"{\"got\":" + d.payload_json + "}", "counted"}};
    })));
  auto r = testing::ask<envelope>(fx, hub, hb_deliver_atom::value, request_to("node/counter/7", "c-1"));
  fx.run();
  REQUIRE(r->ok());
  CHECK(r->value.state == delivery_state::processed);
  auto& sent = testing::fixture::state_of<recorder_state>(routing).sent;
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].id == "c-1-response");
  CHECK(sent[0].sender == address::from("node/counter/7"));
  CHECK(sent[0].target == address::from("client/app-1"));
  CHECK(sent[0].request_id == caf::optional<std::string>{"c-1"});
  CHECK(sent[0].payload_type == "counted");
  CHECK(sent[0].payload_json == "{\"got\":{\"n\":2}}");
  // The same delivery again (a retried hand-over): dropped, never handled twice.
  caf::anon_send(hub, hb_in_atom::value, request_to("node/counter/7", "c-1"));
  fx.run();
  CHECK(calls == 1);
  CHECK(sent.size() == 1);
}

TEST_CASE("application hub: an answer-suppressed delivery or no reply sends nothing") {
  testing::fixture fx;
  auto routing = fx.track(fx.sys.spawn(recording_routing));
  auto hub = fx.track(spawn_application_hub(
    fx.sys, address::from("node/quiet"), routing,
    as_async([](const envelope& d) -> std::optional<reply> {
      if (d.id == "none")
        return std::nullopt;
      return reply{};
    })));
  auto suppressed = request_to("node/quiet", "s-1");
  suppressed.answer_suppressed = true;
  caf::anon_send(hub, hb_in_atom::value, suppressed);
  caf::anon_send(hub, hb_in_atom::value, request_to("node/quiet", "none"));
  fx.run();
  CHECK(testing::fixture::state_of<recorder_state>(routing).sent.empty());
}

TEST_CASE("application hub: a handler that throws fails the delivery with its text") {
  testing::fixture fx;
  auto routing = fx.track(fx.sys.spawn(recording_routing));
  auto hub = fx.track(spawn_application_hub(
    fx.sys, address::from("node/broken"), routing,
    as_async([](const envelope&) -> std::optional<reply> { throw std::runtime_error("disk full"); })));
  auto r = testing::ask<envelope>(fx, hub, hb_deliver_atom::value, request_to("node/broken", "b-1"));
  fx.run();
  REQUIRE(r->ok());
  CHECK(r->value.state == delivery_state::failed);
  CHECK(r->value.properties.at("error") == "\"hub handler failed: disk full\"");
  CHECK(testing::fixture::state_of<recorder_state>(routing).sent.empty());
}

TEST_CASE("hub table: node hubs by prefix, the longest pattern wins, no match is not_found") {
  testing::fixture fx;
  auto routing = fx.track(fx.sys.spawn(recording_routing));
  auto table = fx.track(spawn_hub_table(fx.sys, hub_key_form::node_prefix, {}));
  std::vector<std::string> seen;
  auto handler = [&](std::string tag) {
    return [&seen, tag](const envelope& d) -> std::optional<reply> {
      seen.push_back(tag + ":" + d.target.to_string());
      return std::nullopt;
    };
  };
  caf::anon_send(table, ht_add_atom::value, std::string{"node/counter/*"}, as_async(handler("any")));
  caf::anon_send(table, ht_add_atom::value, std::string{"node/counter/vip"}, as_async(handler("vip")));
  caf::anon_send(table, ht_routing_atom::value, routing, caf::actor{});
  fx.run();
  auto a = testing::ask<caf::actor>(fx, table, hf_build_atom::value, std::string{"counter/7"});
  auto v = testing::ask<caf::actor>(fx, table, hf_build_atom::value, std::string{"counter/vip"});
  auto again = testing::ask<caf::actor>(fx, table, hf_build_atom::value, std::string{"counter/7"});
  auto none = testing::ask<caf::actor>(fx, table, hf_build_atom::value, std::string{"other/1"});
  fx.run();
  REQUIRE(a->ok());
  REQUIRE(v->ok());
  REQUIRE(again->ok());
  CHECK(again->value == a->value);
  CHECK(a->value != v->value);
  REQUIRE(none->done);
  // Without a membership view the table cannot tell whether another silo serves the path:
  // the miss is this process's only (docs/behaviour/routing.md#unserved-addresses).
  CHECK(none->code() == mesh_errc::no_compatible_silo);
  CHECK(to_fault(none->err).text
        == "no hub handler for 'node/other/1' in this process; another live silo may serve it");
  caf::anon_send(a->value, hb_in_atom::value, request_to("node/counter/7", "x-1"));
  caf::anon_send(v->value, hb_in_atom::value, request_to("node/counter/vip", "x-2"));
  fx.run();
  CHECK(seen == std::vector<std::string>{"any:node/counter/7", "vip:node/counter/vip"});
  // Built hubs are local routes of the process, so answers addressed to them land here.
  CHECK(testing::fixture::state_of<recorder_state>(routing).registered
        == std::vector<address>{address::from("node/counter/7"),
                                address::from("node/counter/vip")});
}

TEST_CASE("hub table: a stream-routed hub is registered at once, a bad pattern is refused") {
  testing::fixture fx;
  auto routing = fx.track(fx.sys.spawn(recording_routing));
  auto table = fx.track(spawn_hub_table(fx.sys, hub_key_form::node_prefix, {}));
  caf::anon_send(table, ht_routing_atom::value, routing, caf::actor{});
  auto ok = testing::ask(fx, table, ht_add_atom::value, std::string{"portal/alice"},
                         as_async([](const envelope&) { return std::optional<reply>{}; }));
  auto bad = testing::ask(fx, table, ht_add_atom::value, std::string{"no-slash"},
                          as_async([](const envelope&) { return std::optional<reply>{}; }));
  fx.run();
  CHECK(ok->ok());
  REQUIRE(bad->done);
  CHECK(bad->code() == mesh_errc::config_invalid);
  CHECK(to_fault(bad->err).text
        == "hub pattern 'no-slash' is no address path (type/id, or type/prefix/*)");
  CHECK(testing::fixture::state_of<recorder_state>(routing).registered
        == std::vector<address>{address::from("portal/alice")});
}

TEST_CASE("application hub: an asynchronous hub ends a delivery later, a fault keeps its verdict") {
  testing::fixture fx;
  auto routing = fx.track(fx.sys.spawn(recording_routing));
  std::vector<hub_responder> parked;
  auto hub = fx.track(spawn_application_hub(
    fx.sys, address::from("node/slow"), routing,
    [&](caf::event_based_actor*, const envelope&, hub_responder r) { parked.push_back(r); }));
  auto first = testing::ask<envelope>(fx, hub, hb_deliver_atom::value, request_to("node/slow", "a-1"));
  auto second = testing::ask<envelope>(fx, hub, hb_deliver_atom::value, request_to("node/slow", "a-2"));
  fx.run();
  REQUIRE(parked.size() == 2);
  CHECK_FALSE(first->done); // the node hub grain waits until the handler ends it
  parked[0].respond(reply{"{\"late\":1}"});
  parked[0].respond(reply{"{\"twice\":1}"}); // a second end of the same delivery: ignored
  fault departed{mesh_errc::departed_silo, "silo S1 has departed"};
  parked[1].fail(to_error(departed));
  fx.run();
  REQUIRE(first->ok());
  CHECK(first->value.state == delivery_state::processed);
  auto& sent = testing::fixture::state_of<recorder_state>(routing).sent;
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].payload_json == "{\"late\":1}");
  REQUIRE(second->ok());
  CHECK(second->value.state == delivery_state::failed);
  auto v = classify(departed);
  CHECK(is_transient_verdict(v)); // the sender may send it again
  CHECK(second->value.properties.at("verdict") == json_quote(to_string(v)));
}

TEST_CASE("application hub: a delivery that failed is handled again when its sender retries it") {
  testing::fixture fx;
  auto routing = fx.track(fx.sys.spawn(recording_routing));
  int calls = 0;
  auto hub = fx.track(spawn_application_hub(
    fx.sys, address::from("node/flaky"), routing,
    [&](caf::event_based_actor*, const envelope&, hub_responder r) {
      if (++calls == 1)
        r.fail(to_error(fault{mesh_errc::departed_silo, "silo S1 has departed"}));
      else
        r.respond(reply{"{\"second\":true}"});
    }));
  auto first = testing::ask<envelope>(fx, hub, hb_deliver_atom::value, request_to("node/flaky", "f-1"));
  fx.run();
  REQUIRE(first->ok());
  CHECK(first->value.state == delivery_state::failed);
  // The leg's retry carries the same delivery id.
  auto retry = testing::ask<envelope>(fx, hub, hb_deliver_atom::value, request_to("node/flaky", "f-1"));
  fx.run();
  REQUIRE(retry->ok());
  CHECK(retry->value.state == delivery_state::processed);
  CHECK(calls == 2);
  auto& sent = testing::fixture::state_of<recorder_state>(routing).sent;
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].payload_json == "{\"second\":true}");
  // Once handled, the same id again is a repetition.
  auto again = testing::ask<envelope>(fx, hub, hb_deliver_atom::value, request_to("node/flaky", "f-1"));
  fx.run();
  CHECK(calls == 2);
  CHECK(sent.size() == 1);
}

TEST_CASE("hub table: the stop of stage Active waits until no hub has a delivery in progress") {
  testing::fixture fx;
  auto routing = fx.track(fx.sys.spawn(recording_routing));
  auto table = fx.track(spawn_hub_table(fx.sys, hub_key_form::node_prefix, {}));
  std::vector<hub_responder> parked;
  caf::anon_send(table, ht_add_atom::value, std::string{"node/slow/*"},
                 async_hub_handler{[&](caf::event_based_actor*, const envelope&,
                                       hub_responder r) { parked.push_back(r); }});
  caf::anon_send(table, ht_routing_atom::value, routing, caf::actor{});
  fx.run();
  auto hub = testing::ask<caf::actor>(fx, table, hf_build_atom::value, std::string{"slow/1"});
  fx.run();
  REQUIRE(hub->ok());
  auto delivery = testing::ask<envelope>(fx, hub->value, hb_deliver_atom::value,
                                         request_to("node/slow/1", "s-1"));
  fx.run();
  REQUIRE(parked.size() == 1);
  auto obs = caf::actor_cast<lifecycle::lifecycle_observer_actor>(table);
  auto stop = testing::ask(fx, obs, lifecycle::stop_stage_atom::value, lifecycle::stages::active,
                           true);
  fx.run();
  CHECK_FALSE(stop->done); // a delivery is in progress
  parked[0].respond(reply{"{\"late\":true}"});
  fx.run();
  CHECK(delivery->ok());
  REQUIRE(stop->done);
  CHECK(stop->ok());
  // With nothing in progress, and for a non-graceful stop, the answer comes at once.
  auto again = testing::ask(fx, obs, lifecycle::stop_stage_atom::value, lifecycle::stages::active,
                            true);
  auto hard = testing::ask(fx, obs, lifecycle::stop_stage_atom::value, lifecycle::stages::active,
                           false);
  fx.run();
  CHECK(again->ok());
  CHECK(hard->ok());
}

namespace {

/// A membership row of silo port `port` (generation 1) with `status` and `manifest`.
membership_row row_of(uint16_t port, silo_status status, std::vector<grain_type_info> manifest) {
  membership_row r;
  r.silo = silo_address{"127.0.0.1", port, 1};
  r.status = status;
  r.manifest = std::move(manifest);
  return r;
}

} // namespace

TEST_CASE("S15.06 rule: a node path is proved unserved only when every live silo publishes its hub patterns and none matches") {
  auto echo = hub_pattern_manifest({"node/echo/*"});
  auto other = hub_pattern_manifest({"node/other/x", "portal/alice"});
  membership_snapshot view;
  view.version = 3;
  view.upsert(row_of(1, silo_status::active, echo));
  view.upsert(row_of(2, silo_status::joining, other));
  view.upsert(row_of(3, silo_status::dead, {})); // a dead silo publishes nothing: ignored
  CHECK(unserved_by(view, "node/nothing/here") == std::optional<size_t>{2});
  CHECK_FALSE(unserved_by(view, "node/echo/1"));
  CHECK_FALSE(unserved_by(view, "node/other/x"));
  CHECK(unserved_by(view, "node/other/x/y") == std::optional<size_t>{2});
  // A live silo that publishes no hub patterns (another hub factory, an older version):
  // nothing is proved.
  view.upsert(row_of(4, silo_status::shutting_down, {grain_type_info{"messagehub"}}));
  CHECK_FALSE(unserved_by(view, "node/nothing/here"));
  // No live silo at all proves nothing either.
  CHECK_FALSE(unserved_by(membership_snapshot{}, "node/nothing/here"));
  // The published entries never name a grain type placement could look for.
  for (auto& e : echo)
    CHECK(e.type.front() == '@');
  CHECK(hub_pattern_matches("node/echo/*", "node/echo/1/2"));
  CHECK_FALSE(hub_pattern_matches("node/echo/*", "node/echo"));
  CHECK(hub_pattern_matches("node/echo", "node/echo"));
}

TEST_CASE("S15.06 hub table: a miss is not_found once every live silo's published patterns miss too, and no node pattern is taken after the table published its patterns") {
  testing::fixture fx;
  auto routing = fx.track(fx.sys.spawn(recording_routing));
  auto table = fx.track(spawn_hub_table(fx.sys, hub_key_form::node_prefix, {}));
  auto none = [](const envelope&) { return std::optional<reply>{}; };
  caf::anon_send(table, ht_add_atom::value, std::string{"node/echo/*"}, as_async(none));
  caf::anon_send(table, ht_routing_atom::value, routing, caf::actor{});
  auto published = testing::ask<std::vector<std::string>>(fx, table, ht_patterns_atom::value);
  fx.run();
  REQUIRE(published->ok());
  CHECK(published->value == std::vector<std::string>{"node/echo/*"});
  membership_snapshot view;
  view.version = 1;
  view.upsert(row_of(1, silo_status::active, hub_pattern_manifest(published->value)));
  caf::anon_send(table, mb_snapshot_atom::value, view);
  auto miss = testing::ask<caf::actor>(fx, table, hf_build_atom::value, std::string{"nothing/here"});
  fx.run();
  REQUIRE(miss->done);
  CHECK(miss->code() == mesh_errc::not_found);
  CHECK(to_fault(miss->err).text
        == "No live process serves 'node/nothing/here': no hub pattern of the 1 live silo(s) "
           "matches it; register a hub whose pattern matches it (silo_builder::hub, "
           "mesh_process::register_hub) or send to an address a hub serves");
  // A second silo that serves the path: the miss is this process's only.
  view.version = 2;
  view.upsert(row_of(2, silo_status::active, hub_pattern_manifest({"node/nothing/*"})));
  caf::anon_send(table, mb_snapshot_atom::value, view);
  auto elsewhere = testing::ask<caf::actor>(fx, table, hf_build_atom::value,
                                            std::string{"nothing/here"});
  // Published: a node pattern added now would be missing from the row others judge by.
  auto late = testing::ask(fx, table, ht_add_atom::value, std::string{"node/late/*"},
                           as_async(none));
  auto late_portal = testing::ask(fx, table, ht_add_atom::value, std::string{"portal/bob"},
                                  as_async(none));
  fx.run();
  REQUIRE(elsewhere->done);
  CHECK(elsewhere->code() == mesh_errc::no_compatible_silo);
  REQUIRE(late->done);
  CHECK(late->code() == mesh_errc::config_invalid);
  CHECK(to_fault(late->err).text
        == "hub pattern 'node/late/*' comes after this silo published its hub patterns with its "
           "membership row; register node hubs before the silo starts");
  CHECK(late_portal->ok());
}

TEST_CASE("S15.06 a hub pattern that can match nothing is refused at registration") {
  CHECK(hub_pattern_error("node/inv*")
        == "hub pattern 'node/inv*' can match nothing: '*' stands only for a whole last "
           "segment (type/prefix/*)");
  CHECK_FALSE(hub_pattern_error("node/*/x").empty());
  CHECK_FALSE(hub_pattern_error("*").empty());
  CHECK_FALSE(hub_pattern_error("node/a*/*").empty());
  CHECK(hub_pattern_error("node/*").empty());
  CHECK(hub_pattern_error("node/echo/*").empty());
  CHECK(hub_pattern_error("portal/alice").empty());
  testing::fixture fx;
  auto table = fx.track(spawn_hub_table(fx.sys, hub_key_form::node_prefix, {}));
  auto bad = testing::ask(fx, table, ht_add_atom::value, std::string{"node/inv*"},
                          as_async([](const envelope&) { return std::optional<reply>{}; }));
  fx.run();
  REQUIRE(bad->done);
  CHECK(bad->code() == mesh_errc::config_invalid);
}
