// The correlating entry (correlating_entry.hpp) in virtual time, against a scripted routing
// service: correlation of responses and NACKs, the entry's refusal, the deadline, re-sends.

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "cafmesh/routing/correlating_entry.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/nack_codec.hpp"
#include "cafmesh/routing/payload_codec.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;

namespace {

/// What the scripted routing service saw and how it answers.
struct script_state {
  std::vector<envelope> requests;
  std::vector<envelope> posts;
  std::vector<address> registered;
  /// The answer to the next entry call: state `forwarded` unless set.
  std::vector<envelope> answers;
  static inline const char* name = "scripted-routing";
};

caf::behavior scripted_routing(caf::stateful_actor<script_state>* self) {
  auto answer = [=](envelope e) {
    auto& st = self->state;
    if (!st.answers.empty()) {
      auto a = st.answers.front();
      st.answers.erase(st.answers.begin());
      a.id = e.id;
      return a;
    }
    e.state = delivery_state::forwarded;
    return e;
  };
  return {
    [=](rs_register_atom, const address& a, const caf::actor&) {
      self->state.registered.push_back(a);
      return caf::ok_atom::value;
    },
    [=](rs_request_atom, envelope& e, int64_t) {
      self->state.requests.push_back(e);
      return answer(e);
    },
    [=](rs_deliver_atom, envelope& e) {
      self->state.posts.push_back(e);
      return answer(e);
    },
  };
}

struct entry_bed {
  testing::fixture fx;
  caf::actor routing = fx.track(fx.sys.spawn(scripted_routing));
  correlating_entry_actor entry;

  entry_bed() {
    correlating_entry_options o;
    o.self_address = address::from("client/app-1");
    o.routing = routing;
    entry = fx.track(spawn_correlating_entry(fx.sys, o));
    fx.run();
  }

  script_state& script() { return testing::fixture::state_of<script_state>(routing); }

  /// Asks the entry for a request to `target` with `timeout_ms`.
  auto request(const std::string& target, int64_t timeout_ms, bool resend = false) {
    return testing::ask<std::string>(fx, entry, ce_request_atom::value, address::from(target),
                                     std::string{"request"}, std::string{"{\"q\":1}"},
                                     timeout_ms, resend);
  }

  /// Hands the entry a response to delivery `id`.
  void respond(const std::string& id, const std::string& payload) {
    envelope r;
    r.id = id + "-response";
    r.sender = address::from("node/hello");
    r.target = address::from("client/app-1");
    r.request_id = id;
    r.payload_json = payload;
    caf::anon_send(entry, hb_in_atom::value, r);
    fx.run();
  }

  /// Hands the entry a NACK of delivery `original` with verdict `v`.
  void nack(const envelope& original, verdict v, const std::string& text) {
    auto f = make_delivery_failure(original, text, v);
    caf::anon_send(entry, hb_in_atom::value,
                   make_nack_envelope(f, original.id + "-nack", address::from("routing/x")));
    fx.run();
  }
};

} // namespace

TEST_CASE("correlating entry: a request gets its response's payload, sender and id filled") {
  entry_bed b;
  REQUIRE(b.script().registered == std::vector<address>{address::from("client/app-1")});
  auto r = b.request("node/hello", 5000);
  b.fx.run();
  REQUIRE(b.script().requests.size() == 1);
  auto sent = b.script().requests[0];
  CHECK(sent.id == "app-1-1");
  CHECK(sent.sender == address::from("client/app-1"));
  CHECK(sent.target == address::from("node/hello"));
  CHECK(sent.payload_json == "{\"q\":1}");
  CHECK_FALSE(r->done);
  b.respond("app-1-1", "{\"a\":2}");
  REQUIRE(r->done);
  CHECK_FALSE(r->err);
  CHECK(r->value == "{\"a\":2}");
  // A repeated response finds nothing to answer and changes nothing.
  b.respond("app-1-1", "{\"a\":3}");
  CHECK(r->value == "{\"a\":2}");
}

TEST_CASE("correlating entry: a NACK ends the request with its verdict and message") {
  entry_bed b;
  auto r = b.request("node/hello", 5000);
  b.fx.run();
  REQUIRE(b.script().requests.size() == 1);
  b.nack(b.script().requests[0], verdict::not_found, "Delivery to 'node/hello' failed: gone");
  REQUIRE(r->done);
  auto e = delivery_error_of(r->err);
  CHECK(e.verdict == verdict::not_found);
  CHECK(e.text == "Delivery to 'node/hello' failed: gone");
  CHECK_FALSE(e.resendable);
  CHECK_FALSE(e.deadline);
  CHECK(b.fx.sys.render(r->err)
        == "delivery_error(not_found: Delivery to 'node/hello' failed: gone)");
}

TEST_CASE("correlating entry: the entry's refusal is the answer, with its verdict") {
  entry_bed b;
  envelope refused;
  refused.state = delivery_state::failed;
  refused.properties["error"] = "\"client overloaded; retry after 500 ms\"";
  refused.properties["verdict"] = "\"unavailable\"";
  b.script().answers.push_back(refused);
  auto r = b.request("node/hello", 5000);
  b.fx.run();
  REQUIRE(r->done);
  auto e = delivery_error_of(r->err);
  CHECK(e.verdict == verdict::unavailable);
  CHECK(e.text == "client overloaded; retry after 500 ms");
  CHECK(e.resendable);
}

TEST_CASE("correlating entry: without an answer the request ends at its deadline, exactly") {
  entry_bed b;
  auto r = b.request("node/hello", 1500);
  REQUIRE(b.fx.run_until([&] { return r->done; }));
  CHECK(r->t_ms == 1500);
  auto e = delivery_error_of(r->err);
  CHECK(e.deadline);
  CHECK_FALSE(e.resendable);
  CHECK(e.text
        == "no answer to request app-1-1 for node/hello within 1500 ms; its outcome is unknown");
  // A response after the deadline is dropped.
  b.respond("app-1-1", "{}");
  CHECK(e.deadline);
}

TEST_CASE("correlating entry: with resend a shutting_down NACK is sent again as a new delivery") {
  entry_bed b;
  auto r = b.request("node/hello", 10000, true);
  b.fx.run();
  REQUIRE(b.script().requests.size() == 1);
  b.nack(b.script().requests[0], verdict::shutting_down, "Host is shutting down");
  CHECK_FALSE(r->done);
  // The attach policy's first delay: 250 ms.
  REQUIRE(b.fx.run_until([&] { return b.script().requests.size() == 2; }));
  CHECK(b.fx.now_ms() == 250);
  CHECK(b.script().requests[1].id == "app-1-2");
  b.respond("app-1-1", "{\"stale\":true}"); // the first attempt's answer: not this one's
  CHECK_FALSE(r->done);
  b.respond("app-1-2", "{\"ok\":true}");
  REQUIRE(r->done);
  CHECK(r->value == "{\"ok\":true}");
}

TEST_CASE("correlating entry: without resend a resendable NACK is the answer at once") {
  entry_bed b;
  auto r = b.request("node/hello", 10000);
  b.fx.run();
  REQUIRE(b.script().requests.size() == 1);
  b.nack(b.script().requests[0], verdict::shutting_down, "Host is shutting down");
  REQUIRE(r->done);
  REQUIRE_MESSAGE(r->err, r->value);
  auto e = delivery_error_of(r->err);
  CHECK(e.verdict == verdict::shutting_down);
  CHECK(e.resendable);
  CHECK(b.script().requests.size() == 1);
}

TEST_CASE("correlating entry: a send answers the delivery id once accepted") {
  entry_bed b;
  auto r = testing::ask<std::string>(b.fx, b.entry, ce_send_atom::value,
                                     address::from("node/hello"), std::string{"ping"},
                                     std::string{"{}"});
  b.fx.run();
  REQUIRE(r->done);
  CHECK(r->value == "app-1-1");
  REQUIRE(b.script().posts.size() == 1);
  CHECK(b.script().posts[0].payload_type == "ping");
}

TEST_CASE("correlating entry: re-sends follow the attach policy, 250 then 500 ms, each a new delivery") {
  entry_bed b;
  auto r = b.request("node/hello", 10000, true);
  b.fx.run();
  REQUIRE(b.script().requests.size() == 1);
  b.nack(b.script().requests[0], verdict::unavailable, "overloaded");
  REQUIRE(b.fx.run_until([&] { return b.script().requests.size() == 2; }));
  CHECK(b.fx.now_ms() == 250);
  b.nack(b.script().requests[1], verdict::shutting_down, "Host is shutting down");
  REQUIRE(b.fx.run_until([&] { return b.script().requests.size() == 3; }));
  CHECK(b.fx.now_ms() == 750);
  CHECK(b.script().requests[1].id == "app-1-2");
  CHECK(b.script().requests[2].id == "app-1-3");
  CHECK(b.script().requests[2].target == address::from("node/hello"));
  CHECK_FALSE(r->done);
  b.respond("app-1-3", "{\"third\":true}");
  REQUIRE(r->done);
  CHECK(r->value == "{\"third\":true}");
}

namespace {

/// An application's answer type, read from JSON by nlohmann (`from_json`).
struct count_view {
  int64_t count = 0;
};

void from_json(const nlohmann::json& j, count_view& x) {
  j.at("count").get_to(x.count);
}

/// What a typed request answered: the value or the error.
template <class R>
struct typed_outcome {
  bool done = false;
  R value{};
  caf::error err;
};

/// Spawns an actor that asks `target` through `entry` with `request<R>` and records the
/// outcome.
template <class R>
std::shared_ptr<typed_outcome<R>> typed_request(entry_bed& b, const std::string& target) {
  auto out = std::make_shared<typed_outcome<R>>();
  b.fx.track(b.fx.sys.spawn([=, entry = b.entry](caf::event_based_actor* self) {
    request<R>(self, entry, address::from(target), "{\"q\":1}", std::chrono::seconds(5))
      .then(
        [=](R x) {
          out->done = true;
          out->value = std::move(x);
        },
        [=](caf::error& e) {
          out->done = true;
          out->err = e;
        });
  }));
  b.fx.run();
  return out;
}

} // namespace

TEST_CASE("correlating entry: a typed request reads the response's JSON payload as the application's type") {
  entry_bed b;
  auto r = typed_request<count_view>(b, "node/counter/7");
  REQUIRE(b.script().requests.size() == 1);
  CHECK_FALSE(r->done);
  b.respond(b.script().requests[0].id, "{\"count\":3}");
  REQUIRE(r->done);
  CHECK_FALSE(r->err);
  CHECK(r->value.count == 3);
}

TEST_CASE("correlating entry: a typed request whose response is no such type fails rejected, naming why") {
  entry_bed b;
  auto not_json = typed_request<int64_t>(b, "node/counter/7");
  b.respond(b.script().requests[0].id, "seven");
  REQUIRE(not_json->done);
  REQUIRE(not_json->err);
  auto f = delivery_error_of(not_json->err);
  CHECK(f.verdict == verdict::rejected);
  CHECK_FALSE(f.resendable);
  CHECK(f.text == "the response payload is no JSON: seven");
  auto wrong = typed_request<count_view>(b, "node/counter/7");
  b.respond(b.script().requests[1].id, "{\"n\":1}");
  REQUIRE(wrong->done);
  REQUIRE(wrong->err);
  CHECK(delivery_error_of(wrong->err).verdict == verdict::rejected);
  CHECK(delivery_error_of(wrong->err).text.rfind("the response payload does not read as the expected type: ", 0) == 0);
}

TEST_CASE("correlating entry: a typed request reads a CAF-serialised response and keeps a NACK's verdict") {
  entry_bed b;
  auto r = typed_request<address>(b, "node/hello");
  auto a = address::from("portal/alice");
  auto text = encode_payload(b.fx.sys, a);
  REQUIRE(text);
  b.respond(b.script().requests[0].id, *text);
  REQUIRE(r->done);
  CHECK_FALSE(r->err);
  CHECK(r->value == a);
  auto n = typed_request<address>(b, "node/hello");
  b.nack(b.script().requests[1], verdict::shutting_down, "leaving");
  REQUIRE(n->done);
  auto failure = delivery_error_of(n->err);
  CHECK(failure.verdict == verdict::shutting_down);
  CHECK(failure.resendable);
  CHECK(failure.text == "leaving");
}
