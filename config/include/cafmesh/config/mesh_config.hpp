#pragma once

/// @file
/// The cafmesh configuration (SPEC §11): one struct per JSON section, every key with its
/// SPEC default. Loading and validation live in `cafmesh/config/load.hpp`. This header has
/// no CAF or JSON dependency.

#include <cstdint>
#include <string>
#include <vector>

namespace cafmesh::config {

/// `mesh.process_role` (SPEC §1.3); read once at start and never changed.
enum class process_role : uint8_t { silo_host, pure_client, monolith };

/// Renders `silo_host`, `pure_client` or `monolith`.
std::string to_string(process_role r);

/// Section `mesh`.
struct mesh_section {
  process_role role = process_role::silo_host; ///< required in a document: no default there
  std::string name;                            ///< optional process tag for ids and logs
};

/// Section `lifecycle` (SPEC §8.2, §3.3).
struct lifecycle_section {
  int64_t quiescence_hold_ms = 30000;
  int64_t quiescence_residual_sample = 10;
  int64_t slow_observer_log_ms = 1000;
};

/// Section `host` (SPEC §3.7).
struct host_section {
  int64_t shutdown_budget_ms = 30000;
  int64_t teardown_budget_ms = 30000;
};

/// Section `catalog` (SPEC §3.6).
struct catalog_section {
  int64_t deactivation_timeout_ms = 30000;
  int64_t activation_timeout_ms = 30000;
};

/// Section `membership` (SPEC §3.5, §4).
struct membership_section {
  int64_t shutdown_grace_ms = 5000;
  int64_t dead_publish_ms = 60000;
};

/// Section `directory` (SPEC §5.1–§5.3).
struct directory_section {
  int64_t ring_points_per_silo = 16;
  int64_t lookup_attempt_timeout_ms = 5000;
  bool stateless_worker_bypass = true;
};

/// Section `placement` (SPEC §5.4, §3.6).
struct placement_section {
  int64_t timeout_ms = 30000;
  int64_t worker_count = 16;
  int64_t max_forward_count = 2;
  int64_t stateless_worker_max_local = 1;
};

/// Section `grain_call` (SPEC §5.4).
struct grain_call_section {
  int64_t response_timeout_ms = 30000;
};

/// Section `routing` (SPEC §6, §7.5).
struct routing_section {
  std::vector<std::string> stream_routed_address_types{"portal", "client", "cache", "mesh"};
  std::vector<std::string> client_hosted_address_types{};
  int64_t resolve_timeout_ms = 30000;
  int64_t subscriber_probe_timeout_ms = 10000;
  int64_t stream_post_timeout_ms = 60000;
  int64_t stream_transport_timeout_ms = 30000;
  int64_t retry_max = 6;
  int64_t retry_base_ms = 250;
  int64_t retry_cap_ms = 3000;
  int64_t placement_timeout_attempts = 2;
  int64_t saturation_report_count = 64;
  int64_t saturation_clear_count = 32;
  int64_t leg_self_bound_ms = 100000;
  int64_t saturation_review_ms = 10000;
  int64_t refusal_log_window_ms = 60000;
  int64_t refusal_log_sweep_entries = 512;
  int64_t refusal_log_idle_windows = 10;
  int64_t outcome_dedup_window_ms = 120000;
  int64_t outcome_dedup_max_ids = 65536;
};

/// Section `client` (SPEC §7.5).
struct client_section {
  int64_t retry_max = 5;
  int64_t retry_base_ms = 200;
  int64_t retry_cap_ms = 30000;
  int64_t slow_dispatch_log_ms = 500;
};

/// Section `attach` (SPEC §7.5).
struct attach_section {
  int64_t retry_max = 5;
  int64_t retry_base_ms = 250;
  int64_t retry_cap_ms = 4000;
};

/// Section `pool` (SPEC §6.7).
struct pool_section {
  int64_t cap = 256;
  int64_t drain_grace_ms = 8000;
  int64_t cancel_wait_ms = 30000;
  int64_t join_ms = 30000;
  int64_t teardown_join_ms = 30000;
};

/// Section `size` (SPEC §9.2).
struct size_section {
  int64_t grain_call_body_limit_bytes = 104857600;
};

/// Section `simulation` (SPEC §12.1).
struct simulation_section {
  uint64_t seed = 1;
  int64_t link_latency_min_ms = 1;
  int64_t link_latency_max_ms = 5;
  int64_t failure_detection_ms = 10000;
  int64_t virtual_time_cap_ms = 3600000;
};

/// Section `network` (cafmesh extension, not in SPEC §11): where this process listens and
/// how it finds the membership oracle's primary silo over CAF io. Port 0 = chosen by the OS.
struct network_section {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string primary_host = "127.0.0.1";
  uint16_t primary_port = 0; ///< 0: this process is the primary (hosts the oracle)
  int64_t heartbeat_interval_ms = 1000;
  int64_t failure_detection_ms = 10000;
};

/// Section `log` (cafmesh extension): level of the process's stderr sink.
struct log_section {
  std::string level = "info"; ///< trace, debug, info, warning, error, critical, off
};

/// The whole configuration document.
struct mesh_config {
  mesh_section mesh;
  lifecycle_section lifecycle;
  host_section host;
  catalog_section catalog;
  membership_section membership;
  directory_section directory;
  placement_section placement;
  grain_call_section grain_call;
  routing_section routing;
  client_section client;
  attach_section attach;
  pool_section pool;
  size_section size;
  simulation_section simulation;
  network_section network;
  log_section log;
};

/// Fixed limits (SPEC §11, not configurable).
inline constexpr int64_t stream_block_limit_bytes = 1048576;
inline constexpr int64_t nack_echo_limit_bytes = 1048576;
inline constexpr int64_t payload_preview_chars = 200;
inline constexpr int64_t echo_note_bound_chars = 4096;

} // namespace cafmesh::config
