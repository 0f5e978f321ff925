// Tests for the hub endpoint's receiver side (hub_endpoint.hpp): a delivery repeated by a
// retried hand-over is taken in once, and the observer is told what happened.

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/routing/hub_protocol.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/routing/detail/hub_endpoint_state.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;

namespace {

struct event_log {
  std::vector<std::string> lines; ///< "{kind} {id}"
};

caf::behavior event_recorder(caf::event_based_actor*, std::shared_ptr<event_log> log) {
  return {
    [=](ep_event_atom, const std::string& kind, const std::string& id, uint8_t,
        const std::string&) { log->lines.push_back(kind + " " + id); },
  };
}

envelope frame(const std::string& id) {
  envelope e;
  e.id = id;
  e.sender = address::from("node/Owner/O1");
  e.target = address::from("portal/user1/tab1");
  e.payload_type = "demo.frame";
  e.payload_json = "{}";
  e.ordering_key = std::string{"stream-1"};
  return e;
}

} // namespace

TEST_CASE_FIXTURE(testing::fixture, "hub endpoint: a delivery handed over twice is taken in once and the second copy is reported as a duplicate") {
  auto log = std::make_shared<event_log>();
  auto rec = track(sys.spawn(event_recorder, log));
  auto ep = track(spawn_hub_endpoint(sys, address::from("portal/user1/tab1"), caf::actor{},
                                     config::routing_section{}, false, rec));
  caf::anon_send(ep, hb_in_atom::value, frame("d-1"));
  caf::anon_send(ep, hb_in_atom::value, frame("d-2"));
  caf::anon_send(ep, hb_in_atom::value, frame("d-1")); // the retried copy
  run();
  // A node-hub hand-over of the same id is answered processed but not taken in again.
  auto answer = testing::ask<envelope>(*this, ep, hb_deliver_atom::value, frame("d-2"));
  run();
  REQUIRE(answer->done);
  CHECK(answer->value.state == delivery_state::processed);
  CHECK(cafmesh::routing::detail::state_of(ep).received.size() == 2);
  CHECK(log->lines
        == std::vector<std::string>{"received d-1", "received d-2", "duplicate d-1",
                                    "duplicate d-2"});
}

TEST_CASE_FIXTURE(testing::fixture, "hub endpoint: a send through a routing service that is gone ends at once in entry_failed shutting_down") {
  auto log = std::make_shared<event_log>();
  auto rec = track(sys.spawn(event_recorder, log));
  auto gone = sys.spawn([](caf::event_based_actor* self) { self->quit(); });
  run();
  auto ep = track(spawn_hub_endpoint(sys, address::from("portal/user1/tab1"), gone,
                                     config::routing_section{}, false, rec));
  caf::anon_send(ep, ep_post_atom::value, frame("p-1"));
  run();
  auto& st = cafmesh::routing::detail::state_of(ep);
  REQUIRE(st.outcomes.size() == 1);
  CHECK(st.outcomes[0].kind == "entry_failed");
  CHECK(st.outcomes[0].verdict == verdict::shutting_down);
  CHECK(st.outcomes[0].message.rfind("Host is shutting down, cannot route to portal/user1/tab1 (routing service unreachable: ", 0) == 0);
  CHECK(log->lines == std::vector<std::string>{"entry_failed p-1"});
}

TEST_CASE_FIXTURE(testing::fixture, "hub endpoint: its records keep the newest routing.endpoint_record_max entries while duplicates are still dropped") {
  auto log = std::make_shared<event_log>();
  auto rec = track(sys.spawn(event_recorder, log));
  auto gone = sys.spawn([](caf::event_based_actor* self) { self->quit(); });
  run();
  config::routing_section cfg;
  cfg.endpoint_record_max = 3;
  auto ep = track(spawn_hub_endpoint(sys, address::from("portal/user1/tab1"), gone, cfg, false,
                                     rec));
  for (int i = 1; i <= 5; ++i) {
    caf::anon_send(ep, hb_in_atom::value, frame("d-" + std::to_string(i)));
    caf::anon_send(ep, ep_post_atom::value, frame("p-" + std::to_string(i)));
  }
  run();
  auto& st = cafmesh::routing::detail::state_of(ep);
  std::vector<std::string> received;
  for (auto& r : st.received)
    received.push_back(r.env.id);
  CHECK(received == std::vector<std::string>{"d-3", "d-4", "d-5"});
  std::vector<std::string> outcomes;
  for (auto& o : st.outcomes)
    outcomes.push_back(o.id);
  CHECK(outcomes == std::vector<std::string>{"p-3", "p-4", "p-5"});
  // The first copies left the records, not the dedup window: repeats are still dropped.
  log->lines.clear();
  caf::anon_send(ep, hb_in_atom::value, frame("d-1"));
  caf::anon_send(ep, ep_post_atom::value, frame("p-1"));
  run();
  CHECK(st.received.size() == 3);
  CHECK(st.outcomes.size() == 3);
  CHECK(st.received.front().env.id == "d-3");
  CHECK(log->lines == std::vector<std::string>{"duplicate d-1"});
}

TEST_CASE_FIXTURE(testing::fixture, "hub endpoint: with routing.endpoint_record_max 0 it keeps no records and still tells the observer everything") {
  auto log = std::make_shared<event_log>();
  auto rec = track(sys.spawn(event_recorder, log));
  config::routing_section cfg;
  cfg.endpoint_record_max = 0;
  auto ep = track(spawn_hub_endpoint(sys, address::from("portal/user1/tab1"), caf::actor{}, cfg,
                                     false, rec));
  caf::anon_send(ep, hb_in_atom::value, frame("d-1"));
  caf::anon_send(ep, hb_in_atom::value, frame("d-2"));
  caf::anon_send(ep, hb_in_atom::value, frame("d-1"));
  run();
  CHECK(cafmesh::routing::detail::state_of(ep).received.empty());
  CHECK(log->lines
        == std::vector<std::string>{"received d-1", "received d-2", "duplicate d-1"});
}
