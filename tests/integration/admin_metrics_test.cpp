// The admin endpoint of an embedded silo (docs/operations.md), scraped over a real socket
// with a threaded actor system: the meters after a known number of requests, readiness
// through the silo's life, and the stop's meters once it stopped.

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <regex>
#include <string>
#include <thread>

#include <caf/all.hpp>
#include <httplib.h>

#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/routing/entry_atoms.hpp"

using namespace cafmesh;
using namespace cafmesh::lifecycle;

namespace {

/// The value of the sample `name{labels}` in Prometheus text `text`; -1 when absent.
double sample(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  if (at == std::string::npos)
    return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

/// GETs `path`; the status (0 when nothing answered) and the body.
std::pair<int, std::string> get(uint16_t port, const std::string& path) {
  httplib::Client cli{"127.0.0.1", port};
  auto res = cli.Get(path.c_str());
  if (!res)
    return {0, {}};
  return {res->status, res->body};
}

/// GETs `path` until `settled(status, body)` holds or 5 s passed, every 10 ms; the last
/// answer. The endpoint learns the host's phases and the router core its legs' ends by
/// messages of their own, a little after the caller's own answer (docs/operations.md).
std::pair<int, std::string>
get_settled(uint16_t port, const std::string& path,
            const std::function<bool(const std::pair<int, std::string>&)>& settled) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    auto answer = get(port, path);
    if (settled(answer) || std::chrono::steady_clock::now() >= deadline)
      return answer;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

} // namespace

TEST_CASE("admin endpoint: meters after 5 requests, readiness from start to stop, the stop's "
          "meters") {
  caf::actor_system_config cfg;
  prepare(cfg);
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  auto silo = silo_builder{sys}
                .hub("node/echo/*",
                     [](const routing::envelope&) {
                       return std::optional<routing::reply>{routing::reply{"{}"}};
                     })
                .admin()
                .build();
  REQUIRE(silo);
  auto port = silo->admin().port;
  REQUIRE(port != 0);
  CHECK(silo->admin().host == "127.0.0.1");
  // Built, not started: live, not ready.
  CHECK(get(port, "/healthz/live") == std::pair<int, std::string>{200, "live\n"});
  CHECK(get(port, "/healthz/ready") == std::pair<int, std::string>{503, "starting\n"});
  // Another process may not take the same port (no SO_REUSEPORT), nor may an empty host.
  auto twin = silo_builder{sys}.admin("127.0.0.1", port).build();
  REQUIRE(!twin);
  CHECK(sys.render(twin.error()).find("cannot listen on 127.0.0.1:" + std::to_string(port))
        != std::string::npos);
  auto nowhere = silo_builder{sys}.admin("", 0).build();
  REQUIRE(!nowhere);
  CHECK(sys.render(nowhere.error()).find("/admin/host: expected a non-empty string")
        != std::string::npos);
  REQUIRE(!silo->when_active());
  auto is = [](int status, const std::string& body) {
    return [=](const std::pair<int, std::string>& x) { return x.first == status && x.second == body; };
  };
  CHECK(get_settled(port, "/healthz/ready", is(200, "ready\n"))
        == std::pair<int, std::string>{200, "ready\n"});
  auto self_addr = silo->address().to_string();
  {
    caf::scoped_actor self{sys};
    for (int i = 0; i < 5; ++i) {
      bool answered = false;
      self
        ->request(silo->entry(), std::chrono::seconds(10), routing::ce_request_atom::value,
                  routing::address::from("node/echo/" + std::to_string(i)),
                  std::string{"request"}, std::string{"{}"}, int64_t{10000}, false)
        .receive([&](const std::string& body) { answered = body == "{}"; },
                 [&](caf::error& err) { FAIL_CHECK(sys.render(err)); });
      REQUIRE(answered);
    }
  }
  auto l = [&](const std::string& rest) { return "{silo=\"" + self_addr + "\"" + rest + "}"; };
  // Settled once every accepted leg has ended.
  auto [status, text] = get_settled(port, "/metrics", [&](const std::pair<int, std::string>& x) {
    return x.first == 200 && sample(x.second, "cafmesh_router_in_flight" + l("")) == 0;
  });
  REQUIRE(status == 200);
  INFO(text);
  // Each request is one leg of the router core, handed over by the silo's own routing
  // service, to its node hub (one `messagehub` activation per address); its response comes
  // back to the entry in this process by the routing service's local route, not as a leg.
  CHECK(sample(text, "cafmesh_router_accepted_total" + l(",entry=\"co_hosted\"")) == 5);
  CHECK(sample(text, "cafmesh_router_accepted_total" + l(",entry=\"routing_grain\"")) == 0);
  CHECK(sample(text, "cafmesh_deliveries_total"
                       + l(",entry=\"router_core\",outcome=\"landed\",verdict=\"\""))
        == 5);
  CHECK(sample(text, "cafmesh_delivery_latency_seconds_count" + l("")) == 5);
  CHECK(sample(text, "cafmesh_delivery_latency_seconds_bucket" + l(",le=\"+Inf\"")) == 5);
  CHECK(sample(text, "cafmesh_router_in_flight" + l("")) == 0);
  CHECK(sample(text, "cafmesh_router_queued" + l("")) == 0);
  CHECK(sample(text, "cafmesh_entry_deliveries_total" + l("")) == 10); // 5 requests, 5 responses
  CHECK(sample(text, "cafmesh_membership_silos" + l(",status=\"Active\"")) == 1);
  CHECK(sample(text, "cafmesh_catalog_activations" + l(",grain_type=\"messagehub\"")) == 5);
  CHECK(sample(text, "cafmesh_catalog_activations" + l(",grain_type=\"podhub\"")) == 1);
  CHECK(sample(text, "cafmesh_gateway_clients_seen" + l("")) == 0);
  // The 5 responses reached the entry by the local route.
  CHECK(sample(text, "cafmesh_local_route_deliveries_total" + l("")) == 5);
  CHECK(sample(text, "cafmesh_ready" + l("")) == 1);
  CHECK(sample(text, "cafmesh_quiescence_hold_seconds_count" + l("")) == 0);
  CHECK(sample(text, "cafmesh_silo_stop_seconds_count" + l("")) == 0);
  auto [mstatus, members] = get(port, "/cluster/members");
  CHECK(mstatus == 200);
  CHECK(members.find("\"self\": \"" + self_addr + "\"") != std::string::npos);
  CHECK(members.find("\"status\": \"Active\"") != std::string::npos);
  // Stopped: the handle still serves its endpoint until it is destroyed.
  REQUIRE(!silo->stop());
  CHECK(get_settled(port, "/healthz/ready", is(503, "stopped\n"))
        == std::pair<int, std::string>{503, "stopped\n"});
  auto [s2, after] = get(port, "/metrics");
  REQUIRE(s2 == 200);
  CHECK(sample(after, "cafmesh_quiescence_hold_seconds_count" + l("")) == 1);
  CHECK(sample(after, "cafmesh_silo_stop_seconds_count" + l("")) == 1);
  CHECK(sample(after, "cafmesh_ready" + l("")) == 0);
}
