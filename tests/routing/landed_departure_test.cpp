// A request that landed at a hub of a silo that then dies before the hub's answer left ends
// at once with one NACK `failed` (its outcome unknown), whether its sender is a pure
// client's hub (its gateway is another silo) or a hub co-hosted in another silo; a response
// that still arrives after that NACK is dropped as a duplicate.
// docs/behaviour/routing.md#requests-whose-silo-departs

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cafmesh/routing/held_requests.hpp"
#include "s12_stall_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using testing::fixture;

namespace {

/// A key `Org/L{i}` whose node hub gets built on `on` (warmed up by posts from `hub`).
std::string key_built_on(fixture& fx, silo_world& w, const routing::hub_endpoint_actor& hub,
                         const silo_address& on) {
  for (int i = 0; i < 400; ++i) {
    auto key = "Org/L" + std::to_string(i);
    caf::anon_send(hub, ep_post_atom::value, make_delivery("warm-" + key, "node/" + key));
    settle_now(fx);
    if (hub_built_for(w, key).silo == on)
      return key;
  }
  return {};
}

/// Runs until `id` was received by the hub of `key`; false if it never is.
bool landed(fixture& fx, silo_world& w, const std::string& key, const std::string& id) {
  for (int i = 0; i < 100; ++i) {
    settle_now(fx);
    auto h = hub_built_for(w, key);
    if (h.hub && received_count(h.hub, id) == 1)
      return true;
    fx.run_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// What the sender's hub saw of request `r1` to `node/{key}` once it landed at a hub of `a`
/// and `a` was killed: its outcomes right after the kill and 40 s later (past its 30 s
/// deadline), and the kill's instant in the hub's clock.
struct kill_after_landing {
  std::vector<routing::hub_outcome> at_kill;
  std::vector<routing::hub_outcome> after_deadline;
  int64_t t_kill_ms = 0;
};

/// Sends request `r1` from `hub` to `node/{key}`, waits until it landed (the hub holds it
/// without answering), kills silo `a` and records what `hub` got.
kill_after_landing request_then_kill(fixture& fx, silo_world& w,
                                     const routing::hub_endpoint_actor& hub,
                                     const std::string& key, const silo_address& a) {
  kill_after_landing out;
  auto off = clock_offset_ms(fx);
  caf::anon_send(hub, ep_request_atom::value, make_delivery("r1", "node/" + key),
                 int64_t{30000});
  REQUIRE(landed(fx, w, key, "r1"));
  fx.run();
  REQUIRE(outcomes_for(hub, "r1").empty()); // the hub holds it and does not answer
  auto tk = fx.now_ms();
  w.kill(a);
  out.at_kill = outcomes_for(hub, "r1");
  out.t_kill_ms = tk + off;
  fx.run_to(tk + 40000);
  out.after_deadline = outcomes_for(hub, "r1");
  return out;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "a pure client's request that landed at a hub of a silo other than its gateway ends with one NACK failed at the instant that silo is killed and nothing at its deadline") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  w.add_silo("c");
  REQUIRE(w.last_start->ok());
  auto pc = client_on(*this, w, "pc-b", b, "client/pb");
  auto key = key_built_on(*this, w, pc.hub, a);
  REQUIRE(!key.empty());
  auto r = request_then_kill(*this, w, pc.hub, key, a);
  REQUIRE(r.at_kill.size() == 1);
  CHECK(r.at_kill[0].kind == "nack");
  CHECK(r.at_kill[0].verdict == verdict::failed);
  CHECK(r.at_kill[0].t_ms == r.t_kill_ms);
  CHECK(contains(r.at_kill[0].message, "silo " + a.to_string() + " departed after its hub took "
                                       "the request, before the answer left; its outcome is "
                                       "unknown"));
  REQUIRE(r.after_deadline.size() == 1);
  CHECK(r.after_deadline[0].kind == "nack");
  CHECK(hub_of(pc.hub).tracker.duplicates_dropped() == 0); // one NACK, no second one
  CHECK(service_of(pc.c.routing).stats.landing_nacks == 1);
}

TEST_CASE_FIXTURE(fixture, "a co-hosted hub's request that landed at a hub of another silo ends with one NACK failed at the instant that silo is killed and nothing at its deadline") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  w.add_silo("c");
  REQUIRE(w.last_start->ok());
  auto hub = cohosted_hub(*this, w, b, "portal/ub");
  auto key = key_built_on(*this, w, hub, a);
  REQUIRE(!key.empty());
  auto r = request_then_kill(*this, w, hub, key, a);
  REQUIRE(r.at_kill.size() == 1);
  CHECK(r.at_kill[0].kind == "nack");
  CHECK(r.at_kill[0].verdict == verdict::failed);
  CHECK(r.at_kill[0].t_ms == r.t_kill_ms);
  CHECK(contains(r.at_kill[0].message, "its outcome is unknown"));
  CHECK(r.after_deadline.size() == 1);
  CHECK(hub_of(hub).tracker.duplicates_dropped() == 0);
  CHECK(service_of(w.at(b).routing).stats.landing_nacks == 1);
}

TEST_CASE_FIXTURE(fixture, "a response that arrives after its request was NACKed because its landing silo was reported gone is dropped as a duplicate: one outcome") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  w.add_silo("c");
  REQUIRE(w.last_start->ok());
  auto pc = client_on(*this, w, "pc-b", b, "client/pb");
  auto key = key_built_on(*this, w, pc.hub, a);
  REQUIRE(!key.empty());
  caf::anon_send(pc.hub, ep_request_atom::value, make_delivery("r1", "node/" + key),
                 int64_t{30000});
  REQUIRE(landed(*this, w, key, "r1"));
  run();
  // The client's connection to A breaks (its centre says so) while A still runs.
  caf::anon_send(pc.c.routing, mc_gone_atom::value, a);
  run();
  auto os = outcomes_for(pc.hub, "r1");
  REQUIRE(os.size() == 1);
  CHECK(os[0].kind == "nack");
  CHECK(os[0].verdict == verdict::failed);
  // A's hub answers after all; the answer reaches the client through its gateway.
  envelope r;
  r.id = "r1-response";
  r.sender = address::from("node/" + key);
  r.target = address::from("client/pb");
  r.request_id = std::string{"r1"};
  r.payload_type = "response";
  r.payload_json = "{}";
  caf::anon_send(w.at(a).routing, rs_deliver_atom::value, r);
  run_to(now_ms() + 1000);
  os = outcomes_for(pc.hub, "r1");
  REQUIRE(os.size() == 1);
  CHECK(os[0].kind == "nack");
  CHECK(hub_of(pc.hub).tracker.duplicates_dropped() == 1);
  CHECK(logs.count("duplicate outcome for delivery r1 dropped") == 1);
}

TEST_CASE("held requests: a landing reported after its silo departed, a graceful leave, the deadline") {
  held_requests h;
  silo_address g{"g", 1, 1};
  silo_address x{"x", 1, 2};
  envelope e;
  e.id = "r1";
  h.hold(e, g, 1000, 0);
  e.id = "r2";
  h.hold(e, g, 1000, 0);
  e.id = "r3";
  h.hold(e, silo_address{}, 1000, 0);
  CHECK(h.landed("r1", x));
  CHECK(h.landed("r3", x));
  CHECK_FALSE(h.landed("p9", x)); // a post: never held
  // The gateway leaves gracefully: nothing depends on it any more, r1 and r3 on x still.
  h.left(g);
  CHECK(h.departed(g, 10).empty());
  auto lost = h.departed(x, 10);
  REQUIRE(lost.size() == 2);
  CHECK(lost[0].req.env.id == "r1");
  CHECK(lost[0].why == held_loss::landing);
  CHECK(lost[1].req.env.id == "r3");
  CHECK(h.size() == 1);
  // Past its deadline a request is dropped without a NACK.
  CHECK(!h.take("r2", 1000));
  CHECK(h.size() == 0);
}

TEST_CASE("landing stamp: the silo address survives its rendering, malformed text is none") {
  silo_address s{"10.0.0.1", 11111, 1733100000000};
  envelope a;
  stamp_landing(a, s);
  auto back = landing_of(a);
  REQUIRE(back);
  CHECK(*back == s);
  silo_address v6{"::1", 7, 3};
  CHECK(parse_silo_address(v6.to_string()) == v6);
  CHECK(!parse_silo_address("Shost:99999@1"));
  CHECK(!parse_silo_address("host:1@1"));
  CHECK(!parse_silo_address("Shost:1@"));
  CHECK(!parse_silo_address("Shost:1@99999999999999999999"));
  envelope none;
  CHECK(!landing_of(none));
}
