// Defaults, rendering, round trips and the shipped examples of the JSON configuration (SPEC §11).

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <doctest/doctest.h>

#include "cafmesh/config/load.hpp"

using namespace cafmesh::config;

namespace {

/// Checks every key of `c` against the default SPEC §11 (and the cafmesh extensions) gives it.
void check_spec_defaults(const mesh_config& c) {
  CHECK(c.mesh.role == process_role::silo_host);
  CHECK(c.mesh.name == "");
  CHECK(c.lifecycle.quiescence_hold_ms == 30000);
  CHECK(c.lifecycle.quiescence_residual_sample == 10);
  CHECK(c.lifecycle.slow_observer_log_ms == 1000);
  CHECK(c.host.shutdown_budget_ms == 30000);
  CHECK(c.host.teardown_budget_ms == 30000);
  CHECK(c.catalog.deactivation_timeout_ms == 30000);
  CHECK(c.catalog.activation_timeout_ms == 30000);
  CHECK(c.membership.shutdown_grace_ms == 5000);
  CHECK(c.membership.dead_publish_ms == 60000);
  CHECK(c.directory.ring_points_per_silo == 16);
  CHECK(c.directory.lookup_attempt_timeout_ms == 5000);
  CHECK(c.directory.stateless_worker_bypass == true);
  CHECK(c.placement.timeout_ms == 30000);
  CHECK(c.placement.worker_count == 16);
  CHECK(c.placement.max_forward_count == 2);
  CHECK(c.placement.stateless_worker_max_local == 1);
  CHECK(c.grain_call.response_timeout_ms == 30000);
  CHECK(c.routing.stream_routed_address_types
        == std::vector<std::string>{"portal", "client", "cache", "mesh"});
  CHECK(c.routing.client_hosted_address_types.empty());
  CHECK(c.routing.resolve_timeout_ms == 30000);
  CHECK(c.routing.subscriber_probe_timeout_ms == 10000);
  CHECK(c.routing.stream_post_timeout_ms == 60000);
  CHECK(c.routing.stream_transport_timeout_ms == 30000);
  CHECK(c.routing.retry_max == 6);
  CHECK(c.routing.retry_base_ms == 250);
  CHECK(c.routing.retry_cap_ms == 3000);
  CHECK(c.routing.placement_timeout_attempts == 2);
  CHECK(c.routing.saturation_report_count == 64);
  CHECK(c.routing.saturation_clear_count == 32);
  CHECK(c.routing.leg_self_bound_ms == 100000);
  CHECK(c.routing.saturation_review_ms == 10000);
  CHECK(c.routing.refusal_log_window_ms == 60000);
  CHECK(c.routing.refusal_log_sweep_entries == 512);
  CHECK(c.routing.refusal_log_idle_windows == 10);
  CHECK(c.routing.outcome_dedup_window_ms == 120000);
  CHECK(c.routing.outcome_dedup_max_ids == 65536);
  CHECK(c.client.retry_max == 5);
  CHECK(c.client.retry_base_ms == 200);
  CHECK(c.client.retry_cap_ms == 30000);
  CHECK(c.client.slow_dispatch_log_ms == 500);
  CHECK(c.attach.retry_max == 5);
  CHECK(c.attach.retry_base_ms == 250);
  CHECK(c.attach.retry_cap_ms == 4000);
  CHECK(c.pool.cap == 256);
  CHECK(c.pool.drain_grace_ms == 8000);
  CHECK(c.pool.cancel_wait_ms == 30000);
  CHECK(c.pool.join_ms == 30000);
  CHECK(c.pool.teardown_join_ms == 30000);
  CHECK(c.size.grain_call_body_limit_bytes == 104857600);
  CHECK(c.simulation.seed == 1u);
  CHECK(c.simulation.link_latency_min_ms == 1);
  CHECK(c.simulation.link_latency_max_ms == 5);
  CHECK(c.simulation.failure_detection_ms == 10000);
  CHECK(c.simulation.virtual_time_cap_ms == 3600000);
  CHECK(c.network.host == "127.0.0.1");
  CHECK(c.network.port == 0);
  CHECK(c.network.primary_host == "127.0.0.1");
  CHECK(c.network.primary_port == 0);
  CHECK(c.network.heartbeat_interval_ms == 1000);
  CHECK(c.network.failure_detection_ms == 10000);
  CHECK(c.log.level == "info");
}

/// The rendering of `mesh_config{}`: every key, in declaration order.
const char* default_text = R"({
  "mesh": {
    "process_role": "silo_host",
    "name": ""
  },
  "lifecycle": {
    "quiescence_hold_ms": 30000,
    "quiescence_residual_sample": 10,
    "slow_observer_log_ms": 1000
  },
  "host": {
    "shutdown_budget_ms": 30000,
    "teardown_budget_ms": 30000
  },
  "catalog": {
    "deactivation_timeout_ms": 30000,
    "activation_timeout_ms": 30000
  },
  "membership": {
    "shutdown_grace_ms": 5000,
    "dead_publish_ms": 60000
  },
  "directory": {
    "ring_points_per_silo": 16,
    "lookup_attempt_timeout_ms": 5000,
    "stateless_worker_bypass": true
  },
  "placement": {
    "timeout_ms": 30000,
    "worker_count": 16,
    "max_forward_count": 2,
    "stateless_worker_max_local": 1
  },
  "grain_call": {
    "response_timeout_ms": 30000
  },
  "routing": {
    "stream_routed_address_types": [
      "portal",
      "client",
      "cache",
      "mesh"
    ],
    "client_hosted_address_types": [],
    "resolve_timeout_ms": 30000,
    "subscriber_probe_timeout_ms": 10000,
    "stream_post_timeout_ms": 60000,
    "stream_transport_timeout_ms": 30000,
    "retry_max": 6,
    "retry_base_ms": 250,
    "retry_cap_ms": 3000,
    "placement_timeout_attempts": 2,
    "saturation_report_count": 64,
    "saturation_clear_count": 32,
    "leg_self_bound_ms": 100000,
    "saturation_review_ms": 10000,
    "refusal_log_window_ms": 60000,
    "refusal_log_sweep_entries": 512,
    "refusal_log_idle_windows": 10,
    "outcome_dedup_window_ms": 120000,
    "outcome_dedup_max_ids": 65536
  },
  "client": {
    "retry_max": 5,
    "retry_base_ms": 200,
    "retry_cap_ms": 30000,
    "slow_dispatch_log_ms": 500
  },
  "attach": {
    "retry_max": 5,
    "retry_base_ms": 250,
    "retry_cap_ms": 4000
  },
  "pool": {
    "cap": 256,
    "drain_grace_ms": 8000,
    "cancel_wait_ms": 30000,
    "join_ms": 30000,
    "teardown_join_ms": 30000
  },
  "size": {
    "grain_call_body_limit_bytes": 104857600
  },
  "simulation": {
    "seed": 1,
    "link_latency_min_ms": 1,
    "link_latency_max_ms": 5,
    "failure_detection_ms": 10000,
    "virtual_time_cap_ms": 3600000
  },
  "network": {
    "host": "127.0.0.1",
    "port": 0,
    "primary_host": "127.0.0.1",
    "primary_port": 0,
    "heartbeat_interval_ms": 1000,
    "failure_detection_ms": 10000
  },
  "log": {
    "level": "info"
  }
}
)";

/// A document setting every key to a value different from its default and from its
/// neighbours' values, in canonical form (as `to_json_text` renders it).
const char* distinct_text = R"({
  "mesh": {
    "process_role": "pure_client",
    "name": "front-7"
  },
  "lifecycle": {
    "quiescence_hold_ms": 30001,
    "quiescence_residual_sample": 11,
    "slow_observer_log_ms": 1001
  },
  "host": {
    "shutdown_budget_ms": 30002,
    "teardown_budget_ms": 30003
  },
  "catalog": {
    "deactivation_timeout_ms": 30004,
    "activation_timeout_ms": 30005
  },
  "membership": {
    "shutdown_grace_ms": 5001,
    "dead_publish_ms": 60001
  },
  "directory": {
    "ring_points_per_silo": 17,
    "lookup_attempt_timeout_ms": 5002,
    "stateless_worker_bypass": false
  },
  "placement": {
    "timeout_ms": 30006,
    "worker_count": 18,
    "max_forward_count": 0,
    "stateless_worker_max_local": 3
  },
  "grain_call": {
    "response_timeout_ms": 30007
  },
  "routing": {
    "stream_routed_address_types": [
      "portal",
      "edge"
    ],
    "client_hosted_address_types": [
      "kiosk"
    ],
    "resolve_timeout_ms": 30008,
    "subscriber_probe_timeout_ms": 10001,
    "stream_post_timeout_ms": 60002,
    "stream_transport_timeout_ms": 30009,
    "retry_max": 0,
    "retry_base_ms": 251,
    "retry_cap_ms": 3001,
    "placement_timeout_attempts": 4,
    "saturation_report_count": 65,
    "saturation_clear_count": 0,
    "leg_self_bound_ms": 100001,
    "saturation_review_ms": 10002,
    "refusal_log_window_ms": 60003,
    "refusal_log_sweep_entries": 513,
    "refusal_log_idle_windows": 12,
    "outcome_dedup_window_ms": 120001,
    "outcome_dedup_max_ids": 65537
  },
  "client": {
    "retry_max": 7,
    "retry_base_ms": 201,
    "retry_cap_ms": 30010,
    "slow_dispatch_log_ms": 0
  },
  "attach": {
    "retry_max": 8,
    "retry_base_ms": 252,
    "retry_cap_ms": 252
  },
  "pool": {
    "cap": 257,
    "drain_grace_ms": 0,
    "cancel_wait_ms": 30011,
    "join_ms": 30012,
    "teardown_join_ms": 30013
  },
  "size": {
    "grain_call_body_limit_bytes": 104857601
  },
  "simulation": {
    "seed": 18446744073709551615,
    "link_latency_min_ms": 0,
    "link_latency_max_ms": 0,
    "failure_detection_ms": 10003,
    "virtual_time_cap_ms": 3600001
  },
  "network": {
    "host": "10.0.0.7",
    "port": 65535,
    "primary_host": "10.0.0.1",
    "primary_port": 4242,
    "heartbeat_interval_ms": 999,
    "failure_detection_ms": 10004
  },
  "log": {
    "level": "off"
  }
}
)";

/// Checks every key of `c` against `distinct_text`.
void check_distinct(const mesh_config& c) {
  CHECK(c.mesh.role == process_role::pure_client);
  CHECK(c.mesh.name == "front-7");
  CHECK(c.lifecycle.quiescence_hold_ms == 30001);
  CHECK(c.lifecycle.quiescence_residual_sample == 11);
  CHECK(c.lifecycle.slow_observer_log_ms == 1001);
  CHECK(c.host.shutdown_budget_ms == 30002);
  CHECK(c.host.teardown_budget_ms == 30003);
  CHECK(c.catalog.deactivation_timeout_ms == 30004);
  CHECK(c.catalog.activation_timeout_ms == 30005);
  CHECK(c.membership.shutdown_grace_ms == 5001);
  CHECK(c.membership.dead_publish_ms == 60001);
  CHECK(c.directory.ring_points_per_silo == 17);
  CHECK(c.directory.lookup_attempt_timeout_ms == 5002);
  CHECK(c.directory.stateless_worker_bypass == false);
  CHECK(c.placement.timeout_ms == 30006);
  CHECK(c.placement.worker_count == 18);
  CHECK(c.placement.max_forward_count == 0);
  CHECK(c.placement.stateless_worker_max_local == 3);
  CHECK(c.grain_call.response_timeout_ms == 30007);
  CHECK(c.routing.stream_routed_address_types == std::vector<std::string>{"portal", "edge"});
  CHECK(c.routing.client_hosted_address_types == std::vector<std::string>{"kiosk"});
  CHECK(c.routing.resolve_timeout_ms == 30008);
  CHECK(c.routing.subscriber_probe_timeout_ms == 10001);
  CHECK(c.routing.stream_post_timeout_ms == 60002);
  CHECK(c.routing.stream_transport_timeout_ms == 30009);
  CHECK(c.routing.retry_max == 0);
  CHECK(c.routing.retry_base_ms == 251);
  CHECK(c.routing.retry_cap_ms == 3001);
  CHECK(c.routing.placement_timeout_attempts == 4);
  CHECK(c.routing.saturation_report_count == 65);
  CHECK(c.routing.saturation_clear_count == 0);
  CHECK(c.routing.leg_self_bound_ms == 100001);
  CHECK(c.routing.saturation_review_ms == 10002);
  CHECK(c.routing.refusal_log_window_ms == 60003);
  CHECK(c.routing.refusal_log_sweep_entries == 513);
  CHECK(c.routing.refusal_log_idle_windows == 12);
  CHECK(c.routing.outcome_dedup_window_ms == 120001);
  CHECK(c.routing.outcome_dedup_max_ids == 65537);
  CHECK(c.client.retry_max == 7);
  CHECK(c.client.retry_base_ms == 201);
  CHECK(c.client.retry_cap_ms == 30010);
  CHECK(c.client.slow_dispatch_log_ms == 0);
  CHECK(c.attach.retry_max == 8);
  CHECK(c.attach.retry_base_ms == 252);
  CHECK(c.attach.retry_cap_ms == 252);
  CHECK(c.pool.cap == 257);
  CHECK(c.pool.drain_grace_ms == 0);
  CHECK(c.pool.cancel_wait_ms == 30011);
  CHECK(c.pool.join_ms == 30012);
  CHECK(c.pool.teardown_join_ms == 30013);
  CHECK(c.size.grain_call_body_limit_bytes == 104857601);
  CHECK(c.simulation.seed == 18446744073709551615u);
  CHECK(c.simulation.link_latency_min_ms == 0);
  CHECK(c.simulation.link_latency_max_ms == 0);
  CHECK(c.simulation.failure_detection_ms == 10003);
  CHECK(c.simulation.virtual_time_cap_ms == 3600001);
  CHECK(c.network.host == "10.0.0.7");
  CHECK(c.network.port == 65535);
  CHECK(c.network.primary_host == "10.0.0.1");
  CHECK(c.network.primary_port == 4242);
  CHECK(c.network.heartbeat_interval_ms == 999);
  CHECK(c.network.failure_detection_ms == 10004);
  CHECK(c.log.level == "off");
}

/// examples/config/, found from this file's place in the source tree.
std::filesystem::path examples_dir() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "examples"
         / "config";
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace

TEST_CASE("config: mesh_config{} holds every SPEC 11 default") {
  check_spec_defaults(mesh_config{});
  CHECK(to_string(process_role::silo_host) == "silo_host");
  CHECK(to_string(process_role::pure_client) == "pure_client");
  CHECK(to_string(process_role::monolith) == "monolith");
}

TEST_CASE("config: to_json_text renders every key of the defaults") {
  CHECK(to_json_text(mesh_config{}) == default_text);
}

TEST_CASE("config: the minimal document loads with every default") {
  auto r = parse(R"({"mesh":{"process_role":"silo_host"}})");
  REQUIRE(r.ok);
  CHECK(r.errors.empty());
  CHECK(r.message() == "");
  check_spec_defaults(r.value);
}

TEST_CASE("config: each process role is read") {
  CHECK(parse(R"({"mesh":{"process_role":"monolith"}})").value.mesh.role
        == process_role::monolith);
  auto client = parse(R"({"mesh":{"process_role":"pure_client"},"network":{"primary_port":7}})");
  REQUIRE(client.ok);
  CHECK(client.value.mesh.role == process_role::pure_client);
  CHECK(client.value.network.primary_port == 7);
}

TEST_CASE("config: a partial section keeps the other keys at their defaults") {
  auto r = parse(R"({"routing":{"retry_max":3,"client_hosted_address_types":["kiosk"]},
                     "mesh":{"process_role":"silo_host"},"pool":{}})");
  REQUIRE(r.ok);
  CHECK(r.value.routing.retry_max == 3);
  CHECK(r.value.routing.client_hosted_address_types == std::vector<std::string>{"kiosk"});
  auto expected = mesh_config{};
  expected.routing.retry_max = 3;
  expected.routing.client_hosted_address_types = {"kiosk"};
  CHECK(to_json_text(r.value) == to_json_text(expected));
  CHECK(r.value.routing.retry_base_ms == 250);
  CHECK(r.value.pool.cap == 256);
}

TEST_CASE("config: a document setting every key is read key by key") {
  auto r = parse(distinct_text);
  REQUIRE(r.errors == std::vector<std::string>{});
  REQUIRE(r.ok);
  check_distinct(r.value);
  CHECK(to_json_text(r.value) == distinct_text);
}

TEST_CASE("config: parse of to_json_text gives back the defaults") {
  auto r = parse(to_json_text(mesh_config{}));
  REQUIRE(r.ok);
  check_spec_defaults(r.value);
}

TEST_CASE("config: parse of to_json_text gives back a non-default config") {
  auto first = parse(distinct_text);
  REQUIRE(first.ok);
  auto again = parse(to_json_text(first.value));
  REQUIRE(again.ok);
  check_distinct(again.value);
}

TEST_CASE("config: every example in examples/config loads and is in canonical form") {
  auto silo = mesh_config{};
  silo.mesh.name = "silo-1";
  silo.network.port = 4242;
  auto client = mesh_config{};
  client.mesh.role = process_role::pure_client;
  client.mesh.name = "client-1";
  client.network.primary_port = 4242;
  auto monolith = mesh_config{};
  monolith.mesh.role = process_role::monolith;
  monolith.mesh.name = "monolith";
  const std::map<std::string, mesh_config> expected{
    {"silo.json", silo}, {"client.json", client}, {"monolith.json", monolith}};
  size_t json_files = 0;
  for (auto& entry : std::filesystem::directory_iterator(examples_dir())) {
    if (entry.path().extension() != ".json")
      continue;
    ++json_files;
    auto name = entry.path().filename().string();
    CAPTURE(name);
    auto r = load_file(entry.path().string());
    CHECK(r.errors == std::vector<std::string>{});
    REQUIRE(expected.count(name) == 1);
    CHECK(to_json_text(r.value) == read_text(entry.path()));
    CHECK(to_json_text(r.value) == to_json_text(expected.at(name)));
  }
  CHECK(json_files == 3);
}
