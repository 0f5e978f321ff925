// Defaults, rendering, round trips and the shipped examples of the JSON configuration
// (examples/config/README.md#keys).

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "cafmesh/config/load.hpp"

using namespace cafmesh::config;

namespace {

using json = nlohmann::json;

/// One key, read through its member (independently of the loader's schema), with the
/// default examples/config/README.md#keys (or the cafmesh extension) gives it.
struct field {
  std::string pointer;
  json spec_default;
  std::function<json(const mesh_config&)> get;
};

#define CAFMESH_FIELD(section, key, value)                                                  \
  field {                                                                                   \
    "/" #section "/" #key, json(value),                                                     \
      [](const mesh_config& c) { return json(c.section.key); }                              \
  }

/// Every key of the document.
const std::vector<field> fields{
  {"/mesh/process_role", "silo_host",
   [](const mesh_config& c) { return json(to_string(c.mesh.role)); }},
  CAFMESH_FIELD(mesh, name, ""),
  CAFMESH_FIELD(lifecycle, quiescence_hold_ms, 30000),
  CAFMESH_FIELD(lifecycle, quiescence_residual_sample, 10),
  CAFMESH_FIELD(lifecycle, slow_observer_log_ms, 1000),
  CAFMESH_FIELD(host, shutdown_budget_ms, 30000),
  CAFMESH_FIELD(host, teardown_budget_ms, 30000),
  CAFMESH_FIELD(catalog, deactivation_timeout_ms, 30000),
  CAFMESH_FIELD(catalog, activation_timeout_ms, 30000),
  CAFMESH_FIELD(catalog, idle_deactivation_ms, 0),
  CAFMESH_FIELD(membership, shutdown_grace_ms, 5000),
  CAFMESH_FIELD(membership, dead_publish_ms, 60000),
  CAFMESH_FIELD(membership, provider, "oracle"),
  CAFMESH_FIELD(membership, etcd_endpoints, json::array()),
  CAFMESH_FIELD(membership, etcd_prefix, "/cafmesh/default/"),
  CAFMESH_FIELD(membership, etcd_request_timeout_ms, 2000),
  CAFMESH_FIELD(membership, max_join_time_ms, 60000),
  CAFMESH_FIELD(directory, lookup_attempt_timeout_ms, 5000),
  CAFMESH_FIELD(directory, stateless_worker_bypass, true),
  CAFMESH_FIELD(placement, timeout_ms, 30000),
  CAFMESH_FIELD(placement, worker_count, 16),
  CAFMESH_FIELD(placement, max_forward_count, 2),
  CAFMESH_FIELD(placement, stateless_worker_max_local, 1),
  CAFMESH_FIELD(grain_call, response_timeout_ms, 30000),
  CAFMESH_FIELD(routing, stream_routed_address_types,
                json::array({"portal", "client", "cache", "mesh"})),
  CAFMESH_FIELD(routing, client_hosted_address_types, json::array()),
  CAFMESH_FIELD(routing, resolve_timeout_ms, 30000),
  CAFMESH_FIELD(routing, subscriber_probe_timeout_ms, 10000),
  CAFMESH_FIELD(routing, stream_post_timeout_ms, 60000),
  CAFMESH_FIELD(routing, stream_transport_timeout_ms, 30000),
  CAFMESH_FIELD(routing, continuation_attempt_timeout_ms, 5000),
  CAFMESH_FIELD(routing, channel_batch_max, 64),
  CAFMESH_FIELD(routing, retry_max, 6),
  CAFMESH_FIELD(routing, retry_base_ms, 250),
  CAFMESH_FIELD(routing, retry_cap_ms, 3000),
  CAFMESH_FIELD(routing, placement_timeout_attempts, 2),
  CAFMESH_FIELD(routing, saturation_report_count, 64),
  CAFMESH_FIELD(routing, saturation_clear_count, 32),
  CAFMESH_FIELD(routing, leg_self_bound_ms, 100000),
  CAFMESH_FIELD(routing, saturation_review_ms, 10000),
  CAFMESH_FIELD(routing, saturation_warn_after_ms, 0),
  CAFMESH_FIELD(routing, refusal_log_window_ms, 60000),
  CAFMESH_FIELD(routing, refusal_log_sweep_entries, 512),
  CAFMESH_FIELD(routing, refusal_log_idle_windows, 10),
  CAFMESH_FIELD(routing, outcome_dedup_window_ms, 120000),
  CAFMESH_FIELD(routing, outcome_dedup_max_ids, 65536),
  CAFMESH_FIELD(routing, endpoint_record_max, 1024),
  CAFMESH_FIELD(routing, max_in_flight, 768),
  CAFMESH_FIELD(routing, max_in_flight_per_destination, 256),
  CAFMESH_FIELD(routing, overload_retry_after_ms, 500),
  CAFMESH_FIELD(gateway, max_outstanding, 384),
  CAFMESH_FIELD(client, retry_max, 5),
  CAFMESH_FIELD(client, retry_base_ms, 200),
  CAFMESH_FIELD(client, retry_cap_ms, 30000),
  CAFMESH_FIELD(client, slow_dispatch_log_ms, 500),
  CAFMESH_FIELD(client, attempt_record_max, 1024),
  CAFMESH_FIELD(attach, retry_max, 5),
  CAFMESH_FIELD(attach, retry_base_ms, 250),
  CAFMESH_FIELD(attach, retry_cap_ms, 4000),
  CAFMESH_FIELD(pool, cap, 256),
  CAFMESH_FIELD(pool, drain_grace_ms, 8000),
  CAFMESH_FIELD(pool, cancel_wait_ms, 30000),
  CAFMESH_FIELD(pool, join_ms, 30000),
  CAFMESH_FIELD(pool, teardown_join_ms, 30000),
  CAFMESH_FIELD(size, grain_call_body_limit_bytes, 104857600),
  CAFMESH_FIELD(simulation, seed, 1),
  CAFMESH_FIELD(simulation, link_latency_min_ms, 1),
  CAFMESH_FIELD(simulation, link_latency_max_ms, 5),
  CAFMESH_FIELD(simulation, failure_detection_ms, 10000),
  CAFMESH_FIELD(simulation, virtual_time_cap_ms, 3600000),
  CAFMESH_FIELD(network, host, "127.0.0.1"),
  CAFMESH_FIELD(network, port, 0),
  CAFMESH_FIELD(network, primary_host, "127.0.0.1"),
  CAFMESH_FIELD(network, primary_port, 0),
  CAFMESH_FIELD(network, heartbeat_interval_ms, 1000),
  CAFMESH_FIELD(network, failure_detection_ms, 10000),
  CAFMESH_FIELD(network, cluster_id, "cafmesh"),
  CAFMESH_FIELD(network, cluster_secret, ""),
  CAFMESH_FIELD(network, cluster_secret_file, ""),
  CAFMESH_FIELD(network, authentication_timeout_ms, 5000),
  CAFMESH_FIELD(network, tls_certificate_file, ""),
  CAFMESH_FIELD(network, tls_key_file, ""),
  CAFMESH_FIELD(network, tls_ca_file, ""),
  CAFMESH_FIELD(admin, enabled, false),
  CAFMESH_FIELD(admin, host, "127.0.0.1"),
  CAFMESH_FIELD(admin, port, 0),
  CAFMESH_FIELD(log, level, "info"),
};

#undef CAFMESH_FIELD

/// Checks every key of `c` against its documented default.
void check_spec_defaults(const mesh_config& c) {
  for (auto& f : fields) {
    CAPTURE(f.pointer);
    CHECK(f.get(c) == f.spec_default);
  }
}

/// Checks every key of `c` against the value `doc` gives it.
void check_matches(const mesh_config& c, const json& doc) {
  for (auto& f : fields) {
    CAPTURE(f.pointer);
    CHECK(f.get(c) == doc.at(json::json_pointer(f.pointer)));
  }
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
    "activation_timeout_ms": 30000,
    "idle_deactivation_ms": 0
  },
  "membership": {
    "shutdown_grace_ms": 5000,
    "dead_publish_ms": 60000,
    "provider": "oracle",
    "etcd_endpoints": [],
    "etcd_prefix": "/cafmesh/default/",
    "etcd_request_timeout_ms": 2000,
    "max_join_time_ms": 60000
  },
  "directory": {
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
    "continuation_attempt_timeout_ms": 5000,
    "channel_batch_max": 64,
    "retry_max": 6,
    "retry_base_ms": 250,
    "retry_cap_ms": 3000,
    "placement_timeout_attempts": 2,
    "saturation_report_count": 64,
    "saturation_clear_count": 32,
    "leg_self_bound_ms": 100000,
    "saturation_review_ms": 10000,
    "saturation_warn_after_ms": 0,
    "refusal_log_window_ms": 60000,
    "refusal_log_sweep_entries": 512,
    "refusal_log_idle_windows": 10,
    "outcome_dedup_window_ms": 120000,
    "outcome_dedup_max_ids": 65536,
    "endpoint_record_max": 1024,
    "max_in_flight": 768,
    "max_in_flight_per_destination": 256,
    "overload_retry_after_ms": 500
  },
  "gateway": {
    "max_outstanding": 384
  },
  "client": {
    "retry_max": 5,
    "retry_base_ms": 200,
    "retry_cap_ms": 30000,
    "slow_dispatch_log_ms": 500,
    "attempt_record_max": 1024
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
    "failure_detection_ms": 10000,
    "cluster_id": "cafmesh",
    "cluster_secret": "",
    "cluster_secret_file": "",
    "authentication_timeout_ms": 5000,
    "tls_certificate_file": "",
    "tls_key_file": "",
    "tls_ca_file": ""
  },
  "admin": {
    "enabled": false,
    "host": "127.0.0.1",
    "port": 0
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
    "activation_timeout_ms": 30005,
    "idle_deactivation_ms": 900000
  },
  "membership": {
    "shutdown_grace_ms": 5001,
    "dead_publish_ms": 60001,
    "provider": "etcd",
    "etcd_endpoints": [
      "http://10.0.0.1:2379",
      "https://10.0.0.2:2379"
    ],
    "etcd_prefix": "/cafmesh/distinct/",
    "etcd_request_timeout_ms": 2001,
    "max_join_time_ms": 0
  },
  "directory": {
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
    "continuation_attempt_timeout_ms": 5004,
    "channel_batch_max": 17,
    "retry_max": 0,
    "retry_base_ms": 251,
    "retry_cap_ms": 3001,
    "placement_timeout_attempts": 4,
    "saturation_report_count": 65,
    "saturation_clear_count": 0,
    "leg_self_bound_ms": 100001,
    "saturation_review_ms": 10002,
    "saturation_warn_after_ms": 1003,
    "refusal_log_window_ms": 60003,
    "refusal_log_sweep_entries": 513,
    "refusal_log_idle_windows": 12,
    "outcome_dedup_window_ms": 120001,
    "outcome_dedup_max_ids": 65537,
    "endpoint_record_max": 1025,
    "max_in_flight": 9000,
    "max_in_flight_per_destination": 257,
    "overload_retry_after_ms": 501
  },
  "gateway": {
    "max_outstanding": 4097
  },
  "client": {
    "retry_max": 7,
    "retry_base_ms": 201,
    "retry_cap_ms": 30010,
    "slow_dispatch_log_ms": 0,
    "attempt_record_max": 1025
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
    "failure_detection_ms": 10004,
    "cluster_id": "orders-eu",
    "cluster_secret": "",
    "cluster_secret_file": "/run/secrets/cafmesh",
    "authentication_timeout_ms": 5001,
    "tls_certificate_file": "/etc/cafmesh/silo.crt",
    "tls_key_file": "/etc/cafmesh/silo.key",
    "tls_ca_file": "/etc/cafmesh/ca.crt"
  },
  "admin": {
    "enabled": true,
    "host": "10.0.0.8",
    "port": 9464
  },
  "log": {
    "level": "off"
  }
}
)";


/// examples/config/, found from this file's place in the source tree.
std::filesystem::path examples_dir() {
  return std::filesystem::path(CAFMESH_SOURCE_DIR) / "examples"
         / "config";
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace

TEST_CASE("config: mesh_config{} holds every documented default") {
  REQUIRE(fields.size() == 87);
  std::set<std::string> pointers;
  for (auto& f : fields)
    CHECK(pointers.insert(f.pointer).second);
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
  check_matches(r.value, json::parse(distinct_text));
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
  check_matches(again.value, json::parse(distinct_text));
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

TEST_CASE("config: examples/config/README.md documents every key with its default") {
  // Rows look like: | `routing.retry_max` | 6 | retries | >= 0 | meaning |
  // docs/behaviour/classification.md#retry-policies |
  auto defaults = json::parse(to_json_text(mesh_config{}));
  std::istringstream readme(read_text(examples_dir() / "README.md"));
  std::set<std::string> documented;
  bool in_keys = false;
  for (std::string line; std::getline(readme, line);) {
    in_keys = in_keys || line == "## Keys";
    if (!in_keys || line.rfind("| `", 0) != 0)
      continue;
    auto key = line.substr(3, line.find('`', 3) - 3);
    auto rest = line.substr(line.find("` | ") + 4);
    auto shown = rest.substr(0, rest.find(" | "));
    if (shown.size() >= 2 && shown.front() == '`')
      shown = shown.substr(1, shown.size() - 2);
    CAPTURE(key);
    CHECK(documented.insert(key).second);
    auto ptr = json::json_pointer("/" + key.replace(key.find('.'), 1, "/"));
    REQUIRE(defaults.contains(ptr));
    if (ptr.to_string() == "/mesh/process_role")
      CHECK(shown == "(required)");
    else
      CHECK(shown == defaults.at(ptr).dump());
  }
  size_t keys = 0;
  for (auto& section : defaults)
    keys += section.size();
  CHECK(keys == 87);
  CHECK(documented.size() == keys);
}
