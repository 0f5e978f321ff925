// Refusals of the JSON configuration loader (examples/config/README.md#keys,
// docs/architecture.md#process-roles): exact messages, all errors collected in document order,
// nothing partially applied.

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "cafmesh/config/load.hpp"

using namespace cafmesh::config;

namespace {

/// A document with a valid role and the given further members (`"section":{...}` text).
std::string with_role(const std::string& members) {
  return R"({"mesh":{"process_role":"silo_host"},)" + members + "}";
}

const std::string role_expected
  = R"(expected one of "silo_host", "pure_client", "monolith")";

/// Bad documents, each with the one exact message it must produce.
const std::vector<std::pair<std::string, std::string>> bad_documents{
  // Malformed JSON: line and column from the parser, the whole document as pointer.
  {R"({"mesh": {"process_role": "silo_host",}})",
   ": expected valid JSON, got a parse error at line 1, column 39: syntax error while "
   "parsing object key - unexpected '}'; expected string literal"},
  {"",
   ": expected valid JSON, got a parse error at line 1, column 1: syntax error while "
   "parsing value - unexpected end of input; expected '[', '{', or a literal"},
  {"{\n  \"mesh\": {}\n} // comment",
   ": expected valid JSON, got a parse error at line 3, column 3: syntax error while "
   "parsing value - invalid literal; last read: '\"mesh\": {}<U+000A>} /'; expected end of "
   "input"},
  // A number beyond the range of a double: valid JSON grammar, refused with the parser's text.
  {with_role(R"("routing":{"retry_max":4.43e444})"),
   ": expected JSON numbers within the range of a double, got number overflow parsing "
   "'4.43e444'"},
  // The root and the sections must be objects.
  {R"([1,2])", ": expected an object, got [1,2]"},
  {with_role(R"("pool":5)"), "/pool: expected an object, got 5"},
  {R"({"mesh":"silo_host"})", R"(/mesh: expected an object, got "silo_host")"},
  // The process role (docs/architecture.md#process-roles): required, one of three names.
  {R"({})", "/mesh/process_role: " + role_expected + ", got nothing"},
  {R"({"mesh":{"name":"a"}})", "/mesh/process_role: " + role_expected + ", got nothing"},
  {R"({"mesh":{"process_role":"server"}})",
   "/mesh/process_role: " + role_expected + R"(, got "server")"},
  {R"({"mesh":{"process_role":null}})", "/mesh/process_role: " + role_expected + ", got null"},
  // Unknown keys and sections.
  {with_role(R"("routing":{"retry_maxx":6})"),
   R"(/routing/retry_maxx: unknown key, did you mean "retry_max"?)"},
  {with_role(R"("routng":{})"), R"(/routng: unknown key, did you mean "routing"?)"},
  {with_role(R"("zzz":{})"),
   "/zzz: unknown key, known keys: mesh, lifecycle, host, catalog, membership, directory, "
   "placement, grain_call, routing, gateway, client, attach, pool, size, simulation, network, "
   "admin, log"},
  {R"({"mesh":{"process_role":"monolith","a/b~":1}})",
   "/mesh/a~1b~0: unknown key, known keys: process_role, name"},
  {R"({"mesh":{"process_role":"monolith","process_role":"silo_host"}})",
   "/mesh/process_role: duplicate key"},
  // Wrong types and ranges of single keys.
  {with_role(R"("routing":{"retry_max":"six"})"),
   R"(/routing/retry_max: expected an integer >= 0, got "six")"},
  {with_role(R"("routing":{"retry_max":-1})"),
   "/routing/retry_max: expected an integer >= 0, got -1"},
  {with_role(R"("placement":{"worker_count":0})"),
   "/placement/worker_count: expected an integer >= 1, got 0"},
  {with_role(R"("pool":{"cap":2.5})"), "/pool/cap: expected an integer >= 1, got 2.5"},
  {with_role(R"("routing":{"max_in_flight":-1})"),
   "/routing/max_in_flight: expected an integer >= 0, got -1"},
  {with_role(R"("routing":{"overload_retry_after_ms":0})"),
   "/routing/overload_retry_after_ms: expected an integer >= 1, got 0"},
  {with_role(R"("gateway":{"max_outstanding":"lots"})"),
   R"(/gateway/max_outstanding: expected an integer >= 0, got "lots")"},
  {with_role(R"("pool":{"cap":256.0})"), "/pool/cap: expected an integer >= 1, got 256.0"},
  {with_role(R"("catalog":{"idle_deactivation_ms":-1})"),
   "/catalog/idle_deactivation_ms: expected an integer >= 0, got -1"},
  {with_role(R"("host":{"shutdown_budget_ms":0})"),
   "/host/shutdown_budget_ms: expected an integer >= 1, got 0"},
  {with_role(R"("lifecycle":{"quiescence_residual_sample":0})"),
   "/lifecycle/quiescence_residual_sample: expected an integer >= 1, got 0"},
  // A key of an earlier version that would be silently ignored now is refused by name.
  {with_role(R"("directory":{"ring_points_per_silo":16})"),
   "/directory/ring_points_per_silo: no longer a key: the directory owner of a grain id is "
   "chosen by rendezvous hashing over the active set, which has no ring points; remove it"},
  {with_role(R"("directory":{"ring_points_per_silo":true})"),
   "/directory/ring_points_per_silo: no longer a key: the directory owner of a grain id is "
   "chosen by rendezvous hashing over the active set, which has no ring points; remove it"},
  {with_role(R"("size":{"grain_call_body_limit_bytes":9223372036854775808})"),
   "/size/grain_call_body_limit_bytes: expected an integer from 1 to 9223372036854775807, "
   "got 9223372036854775808"},
  {with_role(R"("network":{"port":70000})"),
   "/network/port: expected an integer from 0 to 65535, got 70000"},
  {with_role(R"("network":{"host":""})"), R"(/network/host: expected a non-empty string, got "")"},
  {with_role(R"("network":{"cluster_id":""})"),
   R"(/network/cluster_id: expected a string of 1 to 64 bytes, got "")"},
  {with_role(R"("network":{"cluster_secret":"s3cret","cluster_secret_file":"/run/s"})"),
   "/network/cluster_secret_file: expected an empty string when /network/cluster_secret is "
   R"(set (one source of the secret), got "/run/s")"},
  {with_role(R"("network":{"tls_certificate_file":"/etc/c.pem","tls_ca_file":"/etc/ca.pem"})"),
   "/network/tls_key_file: expected a file name when another /network/tls_* key is set (TLS "
   R"(needs the certificate, its key and the CA), got "")"},
  {with_role(R"("network":{"authentication_timeout_ms":0})"),
   "/network/authentication_timeout_ms: expected an integer >= 1, got 0"},
  {with_role(R"("simulation":{"seed":-1})"),
   "/simulation/seed: expected an integer from 0 to 18446744073709551615, got -1"},
  {with_role(R"("directory":{"stateless_worker_bypass":"yes"})"),
   R"(/directory/stateless_worker_bypass: expected true or false, got "yes")"},
  {with_role(R"("log":{"level":"warn"})"),
   R"(/log/level: expected one of "trace", "debug", "info", "warning", "error", "critical", )"
   R"("off", got "warn")"},
  {with_role(R"("pool":{"cap":"0123456789012345678901234567890123456789012345678901234567890"})"),
   R"(/pool/cap: expected an integer >= 1, got "01234567890123456789012345678901234567890123456789012345...)"},
  // Address-type lists (docs/behaviour/envelope.md#addresses).
  {with_role(R"("routing":{"stream_routed_address_types":"portal"})"),
   R"(/routing/stream_routed_address_types: expected an array of address types, got "portal")"},
  {with_role(R"("routing":{"client_hosted_address_types":["kiosk","a/b"]})"),
   R"(/routing/client_hosted_address_types/1: expected a non-empty string without '/' or '~', )"
   R"(got "a/b")"},
  {with_role(R"("routing":{"client_hosted_address_types":["",7,"x~y"]})"),
   R"(/routing/client_hosted_address_types/0: expected a non-empty string without '/' or '~', )"
   R"(got "")"
   "\n"
   R"(/routing/client_hosted_address_types/1: expected a non-empty string without '/' or '~', )"
   "got 7\n"
   R"(/routing/client_hosted_address_types/2: expected a non-empty string without '/' or '~', )"
   R"(got "x~y")"},
  {with_role(R"("routing":{"stream_routed_address_types":["mesh","portal","mesh"]})"),
   R"(/routing/stream_routed_address_types/2: expected an address type not listed before, )"
   R"(got "mesh")"},
  // Where membership lives.
  {with_role(R"("membership":{"provider":"zookeeper"})"),
   R"(/membership/provider: expected one of "oracle", "etcd", got "zookeeper")"},
  {with_role(R"("membership":{"etcd_endpoints":["http://10.0.0.1:2379","ftp://x","http://",3]})"),
   R"(/membership/etcd_endpoints/1: expected a URL that starts with http:// or https://, )"
   R"(got "ftp://x")"
   "\n"
   R"(/membership/etcd_endpoints/2: expected a URL that starts with http:// or https://, )"
   R"(got "http://")"
   "\n"
   "/membership/etcd_endpoints/3: expected a URL that starts with http:// or https://, got 3"},
  {with_role(R"("membership":{"etcd_prefix":"cafmesh"})"),
   R"(/membership/etcd_prefix: expected a string that starts and ends with '/', got "cafmesh")"},
  {with_role(R"("membership":{"provider":"etcd"})"),
   R"(/membership/etcd_endpoints: expected at least one etcd endpoint with provider "etcd", )"
   "got []"},
  // Relations between keys, checked once every key is valid on its own.
  {with_role(R"("simulation":{"link_latency_min_ms":10})"),
   "/simulation/link_latency_max_ms: expected an integer >= link_latency_min_ms (10), got 5"},
  {with_role(R"("routing":{"saturation_clear_count":64})"),
   "/routing/saturation_clear_count: expected an integer < saturation_report_count (64), "
   "got 64"},
  {with_role(R"("client":{"retry_base_ms":500,"retry_cap_ms":400})"),
   "/client/retry_cap_ms: expected an integer >= retry_base_ms (500), got 400"},
  {with_role(R"("routing":{"retry_cap_ms":100})"),
   "/routing/retry_cap_ms: expected an integer >= retry_base_ms (250), got 100"},
  {with_role(R"("attach":{"retry_base_ms":4001})"),
   "/attach/retry_cap_ms: expected an integer >= retry_base_ms (4001), got 4000"},
  {with_role(R"("network":{"heartbeat_interval_ms":10000})"),
   "/network/failure_detection_ms: expected an integer > heartbeat_interval_ms (10000), "
   "got 10000"},
};

} // namespace

TEST_CASE("config: every bad document is refused with its exact message") {
  REQUIRE(bad_documents.size() >= 15);
  for (auto& [doc, message] : bad_documents) {
    CAPTURE(doc);
    auto r = parse(doc);
    CHECK_FALSE(r.ok);
    CHECK(r.message() == message);
  }
}

TEST_CASE("config: all errors are collected in document order") {
  auto r = parse(R"({"routing":{"retry_max":"six","retry_base_ms":0},
                     "bogus":1,
                     "pool":{"cap":0,"drain_grace_ms":-1},
                     "mesh":{"process_role":"monolith"},
                     "log":{"level":"loud"}})");
  CHECK_FALSE(r.ok);
  CHECK(r.errors
        == std::vector<std::string>{
          R"(/routing/retry_max: expected an integer >= 0, got "six")",
          "/routing/retry_base_ms: expected an integer >= 1, got 0",
          "/bogus: unknown key, known keys: mesh, lifecycle, host, catalog, membership, "
          "directory, placement, grain_call, routing, gateway, client, attach, pool, size, simulation, "
          "network, admin, log",
          "/pool/cap: expected an integer >= 1, got 0",
          "/pool/drain_grace_ms: expected an integer >= 0, got -1",
          R"(/log/level: expected one of "trace", "debug", "info", "warning", "error", )"
          R"("critical", "off", got "loud")",
        });
  CHECK(r.message() == r.errors[0] + "\n" + r.errors[1] + "\n" + r.errors[2] + "\n"
                         + r.errors[3] + "\n" + r.errors[4] + "\n" + r.errors[5]);
}

TEST_CASE("config: nothing of a refused document is applied") {
  auto r = parse(R"({"mesh":{"process_role":"monolith","name":"x"},
                     "routing":{"retry_max":3,"retry_cap_ms":"soon"},
                     "pool":{"cap":9}})");
  CHECK_FALSE(r.ok);
  CHECK(r.errors
        == std::vector<std::string>{
          R"(/routing/retry_cap_ms: expected an integer >= 1, got "soon")"});
  CHECK(r.value.mesh.role == process_role::silo_host);
  CHECK(r.value.mesh.name == "");
  CHECK(r.value.routing.retry_max == 6);
  CHECK(r.value.pool.cap == 256);
  CHECK(to_json_text(r.value) == to_json_text(mesh_config{}));
}

TEST_CASE("config: the extreme values of a range are accepted") {
  auto r = parse(with_role(R"("network":{"port":65535,"primary_port":0},)"
                           R"("simulation":{"seed":18446744073709551615},)"
                           R"("routing":{"retry_max":0,"saturation_clear_count":63},)"
                           R"("size":{"grain_call_body_limit_bytes":9223372036854775807})"));
  REQUIRE(r.errors == std::vector<std::string>{});
  CHECK(r.value.network.port == 65535);
  CHECK(r.value.simulation.seed == 18446744073709551615u);
  CHECK(r.value.routing.saturation_clear_count == 63);
  CHECK(r.value.size.grain_call_body_limit_bytes == 9223372036854775807);
}

TEST_CASE("config: load_file of a missing file names the path") {
  auto r = load_file("/nonexistent/cafmesh/silo.json");
  CHECK_FALSE(r.ok);
  CHECK(r.message()
        == R"(cannot read config file "/nonexistent/cafmesh/silo.json": No such file or directory)");
}

TEST_CASE("config: load_file reads and validates a file") {
  auto path = std::filesystem::temp_directory_path() / "cafmesh_config_load_file_test.json";
  {
    auto* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fputs(R"({"mesh":{"process_role":"monolith"},"pool":{"cap":"many"}})", f);
    std::fclose(f);
  }
  auto r = load_file(path.string());
  std::filesystem::remove(path);
  CHECK_FALSE(r.ok);
  CHECK(r.message() == R"(/pool/cap: expected an integer >= 1, got "many")");
}

TEST_CASE("config: a value nested 100,000 levels deep is refused with a bounded preview, no crash") {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = cafmesh::config::parse(R"({"mesh":{"process_role":"silo_host"},"routing":{"retry_max":)"
                                  + deep + "}}");
  REQUIRE_FALSE(r.ok);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0]
        == "/routing/retry_max: expected an integer >= 0, got "
             + std::string(57, '[') + "...");
}
