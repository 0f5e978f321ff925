// Hub homing (hub_homing.hpp): sending hubs of an application next to several silos move
// off a stopping silo, hold what must not overtake earlier frames, and claim again on the
// next incarnation of their home.

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/lifecycle/hub_homing.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/register_types.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;
using lifecycle::hub_home_kind;
using lifecycle::hub_homing;

namespace {

/// What a stand-in routing service or hub endpoint was told, in its mailbox order.
struct probe_state {
  std::string label;
  std::shared_ptr<std::map<caf::actor_addr, std::string>> names;
  std::vector<std::string> seen;
  static inline const char* name = "test.homing_probe";
};

caf::behavior homing_probe(caf::stateful_actor<probe_state>* self, std::string name,
                           std::shared_ptr<std::map<caf::actor_addr, std::string>> names) {
  self->state.label = std::move(name);
  self->state.names = std::move(names);
  auto who = [=](const caf::actor& a) {
    auto i = self->state.names->find(a.address());
    return i == self->state.names->end() ? std::string{"?"} : i->second;
  };
  return {
    [=](rs_register_atom, const address& a, const caf::actor& ep) {
      self->state.seen.push_back("register " + to_string(a) + " " + who(ep));
    },
    [=](ep_rehome_atom, const caf::actor& routing) {
      self->state.seen.push_back("rehome " + who(routing));
    },
    [=](ep_post_atom, const envelope& e) { self->state.seen.push_back("post " + e.id); },
    [=](ep_request_atom, const envelope& e, int64_t deadline_ms) {
      self->state.seen.push_back("request " + e.id + " " + std::to_string(deadline_ms));
    },
  };
}

/// Three silos A, B, C (search order), their routing services, hubs and the claims made.
struct homing_bed {
  testing::fixture fx;
  std::shared_ptr<std::map<caf::actor_addr, std::string>> names
    = std::make_shared<std::map<caf::actor_addr, std::string>>();
  std::map<std::string, caf::actor> routing; ///< current incarnation's routing service
  std::vector<std::string> claims;
  hub_homing homing{{"A", "B", "C"},
                    {[this](const std::string& n) { return routing[n]; },
                     [this](const std::string& n, const address& a) {
                       claims.push_back(n + " " + to_string(a));
                     }}};

  caf::actor probe(const std::string& name) {
    auto p = fx.track(fx.sys.spawn(homing_probe, name, names));
    (*names)[p.address()] = name;
    return p;
  }

  homing_bed() {
    for (auto n : {"A", "B", "C"}) {
      routing[n] = probe(std::string{"rs-"} + n);
      homing.up(n);
    }
  }

  std::vector<std::string> seen(const caf::actor& a) {
    fx.run();
    return testing::fixture::state_of<probe_state>(a).seen;
  }

  static envelope frame(const std::string& id) {
    envelope e;
    e.id = id;
    return e;
  }
};

using strings = std::vector<std::string>;

} // namespace

TEST_CASE("hub homing: an owner holds its frames from its home's stop until the home's stage Active stopped, then moves to the next available silo and sends them in order") {
  homing_bed b;
  auto ep = b.probe("owner");
  b.homing.add(hub_home_kind::owner, address::from("node/Owner/O0"), ep, "A");
  CHECK(b.seen(b.routing["A"]) == strings{"register node/Owner/O0 owner"});
  REQUIRE(b.homing.submit("node/Owner/O0", homing_bed::frame("d1"), -1));
  b.homing.stopping("A");
  CHECK_FALSE(b.homing.available("A"));
  REQUIRE(b.homing.submit("node/Owner/O0", homing_bed::frame("d2"), 2000));
  REQUIRE(b.homing.submit("node/Owner/O0", homing_bed::frame("d3"), -1));
  CHECK(b.homing.held() == 2);
  CHECK(b.seen(ep) == strings{"post d1"});
  CHECK(b.homing.home_of("node/Owner/O0") == "A");
  b.homing.active_stopped("A");
  CHECK(b.homing.held() == 0);
  CHECK(b.homing.home_of("node/Owner/O0") == "B");
  CHECK(b.seen(b.routing["B"]) == strings{"register node/Owner/O0 owner"});
  CHECK(b.seen(ep) == strings{"post d1", "rehome rs-B", "request d2 2000", "post d3"});
  // An unknown sender is refused, nothing is held for it.
  CHECK_FALSE(b.homing.submit("node/Owner/O9", homing_bed::frame("d4"), -1));
  CHECK(b.homing.held() == 0);
}

TEST_CASE("hub homing: a silo coming up while an owner's home is stopping does not move the owner before that home's stage Active stopped") {
  homing_bed b;
  auto ep = b.probe("owner");
  b.homing.add(hub_home_kind::owner, address::from("node/Owner/O0"), ep, "A");
  b.homing.killed("C"); // C is gone; its next incarnation comes up while A is stopping
  b.homing.stopping("A");
  REQUIRE(b.homing.submit("node/Owner/O0", homing_bed::frame("d1"), -1));
  b.routing["C"] = b.probe("rs-C2");
  b.homing.up("C");
  // A still drains its legs of the owner's channels: a frame sent through C now could
  // overtake them (docs/hosting.md, "Hubs next to several silos").
  CHECK(b.homing.home_of("node/Owner/O0") == "A");
  CHECK(b.homing.held() == 1);
  CHECK(b.seen(ep) == strings{});
  b.homing.active_stopped("A");
  CHECK(b.homing.home_of("node/Owner/O0") == "B");
  CHECK(b.homing.held() == 0);
  CHECK(b.seen(ep) == strings{"rehome rs-B", "post d1"});
}

TEST_CASE("hub homing: an owner whose home's stage Active stopped with no silo available moves to the next one that comes up") {
  homing_bed b;
  auto ep = b.probe("owner");
  b.homing.add(hub_home_kind::owner, address::from("node/Owner/O0"), ep, "A");
  b.homing.killed("B");
  b.homing.killed("C");
  b.homing.stopping("A");
  REQUIRE(b.homing.submit("node/Owner/O0", homing_bed::frame("d1"), -1));
  b.homing.active_stopped("A"); // nowhere to go yet
  CHECK(b.homing.home_of("node/Owner/O0") == "A");
  CHECK(b.homing.held() == 1);
  b.routing["B"] = b.probe("rs-B2");
  b.homing.up("B");
  CHECK(b.homing.home_of("node/Owner/O0") == "B");
  CHECK(b.homing.held() == 0);
  CHECK(b.seen(ep) == strings{"rehome rs-B2", "post d1"});
}

TEST_CASE("hub homing: an answering hub answers through the next available silo from the moment its home starts stopping") {
  homing_bed b;
  auto ep = b.probe("answering");
  b.homing.add(hub_home_kind::answering, address::from("node/Org/N0"), ep, "C");
  b.homing.stopping("C");
  CHECK(b.homing.home_of("node/Org/N0") == "A"); // the search wraps around
  CHECK(b.seen(ep) == strings{"rehome rs-A"});
  CHECK(b.seen(b.routing["A"]).empty()); // an answering hub is no local route
}

TEST_CASE("hub homing: a portal holds while its home is down and registers, claims and sends on the home's next incarnation") {
  homing_bed b;
  auto ep = b.probe("portal");
  auto a = address::from("node/Portal/P0");
  b.homing.add(hub_home_kind::portal, a, ep, "B");
  CHECK(b.seen(b.routing["B"]) == strings{"register node/Portal/P0 portal"});
  CHECK(b.claims == strings{"B node/Portal/P0"});
  b.homing.stopping("B"); // a portal stays with its home
  CHECK(b.homing.home_of("node/Portal/P0") == "B");
  b.homing.down("B");
  REQUIRE(b.homing.submit("node/Portal/P0", homing_bed::frame("d1"), 500));
  CHECK(b.homing.held() == 1);
  auto old = b.routing["B"];
  b.routing["B"] = b.probe("rs-B2");
  b.homing.up("B");
  CHECK(b.homing.held() == 0);
  CHECK(b.claims == strings{"B node/Portal/P0", "B node/Portal/P0"});
  CHECK(b.seen(b.routing["B"]) == strings{"register node/Portal/P0 portal"});
  CHECK(b.seen(old) == strings{"register node/Portal/P0 portal"});
  CHECK(b.seen(ep) == strings{"rehome rs-B2", "request d1 500"});
}

TEST_CASE("hub homing: a killed home moves its owners at once, with no silo available they hold until one is Active") {
  homing_bed b;
  auto o1 = b.probe("o1");
  b.homing.add(hub_home_kind::owner, address::from("node/Owner/O1"), o1, "A");
  b.homing.killed("A"); // nothing drains on a killed silo: no wait for its Active stop
  CHECK(b.homing.home_of("node/Owner/O1") == "B");
  CHECK(b.seen(o1) == strings{"rehome rs-B"});
  b.homing.killed("C");
  b.homing.killed("B"); // no silo left
  REQUIRE(b.homing.submit("node/Owner/O1", homing_bed::frame("d1"), -1));
  CHECK(b.homing.held() == 1);
  CHECK(b.homing.next_available("B").empty());
  b.homing.up("C");
  CHECK(b.homing.home_of("node/Owner/O1") == "C");
  CHECK(b.homing.held() == 0);
  CHECK(b.seen(o1) == strings{"rehome rs-B", "rehome rs-C", "post d1"});
}

TEST_CASE("hub homing: a client hub sends through its pure client and never moves") {
  homing_bed b;
  auto client = b.probe("rs-client");
  auto ep = b.probe("client-hub");
  b.homing.add(hub_home_kind::client, address::from("node/Portal/P1"), ep, "A", client);
  CHECK(b.seen(client) == strings{"register node/Portal/P1 client-hub"});
  b.homing.stopping("A");
  b.homing.killed("B");
  REQUIRE(b.homing.submit("node/Portal/P1", homing_bed::frame("d1"), -1));
  CHECK(b.homing.home_of("node/Portal/P1").empty());
  CHECK(b.seen(ep) == strings{"post d1"});
}
