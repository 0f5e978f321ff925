#pragma once

/// @file
/// The cafmesh configuration (examples/config/README.md#keys): one struct per JSON section, every
/// key with its documented default and the range the loader accepts (durations in ms on the actor clock).
/// Loading and validation live in `cafmesh/config/load.hpp`; examples/config/README.md
/// documents every key. This header has no CAF or JSON dependency.

#include <cstdint>
#include <string>
#include <vector>

namespace cafmesh::config {

/// `mesh.process_role` (docs/architecture.md#process-roles); read once at start and never changed.
enum class process_role : uint8_t { silo_host, pure_client, monolith };

/// Renders `silo_host`, `pure_client` or `monolith`.
std::string to_string(process_role r);

/// Section `mesh`.
struct mesh_section {
  process_role role = process_role::silo_host; ///< required in a document: no default there
  std::string name;                            ///< optional process tag for ids and logs
};

/// Section `lifecycle` (docs/behaviour/quiescence.md#the-participant-at-stage-active,
/// docs/behaviour/lifecycle.md#the-lifecycle-subject).
struct lifecycle_section {
  /// hold budget at stage Active (docs/behaviour/quiescence.md#the-participant-at-stage-active);
  /// >= 1
  int64_t quiescence_hold_ms = 30000;
  /// legs named on hold expiry (docs/behaviour/quiescence.md#the-participant-at-stage-active); >= 1
  int64_t quiescence_residual_sample = 10;
  /// log an observer whose stop takes longer (docs/behaviour/lifecycle.md#the-lifecycle-subject);
  /// >= 0
  int64_t slow_observer_log_ms = 1000;
};

/// Section `host` (docs/behaviour/lifecycle.md#the-host).
struct host_section {
  /// expiry sends `shutdown_budget_expired` (docs/behaviour/lifecycle.md#the-host); >= 1
  int64_t shutdown_budget_ms = 30000;
  /// mesh teardown after the silo stopped (docs/behaviour/lifecycle.md#the-host); >= 1
  int64_t teardown_budget_ms = 30000;
};

/// Section `catalog`
/// (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion).
struct catalog_section {
  /// per activation at GrainDeactivation
  /// (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion); >= 1
  int64_t deactivation_timeout_ms = 30000;
  int64_t activation_timeout_ms = 30000; ///< bound on activating a grain; >= 1
  /// an activation without an open turn for this long deactivates (idle collection, Orleans'
  /// collection age; docs/behaviour/directory-and-placement.md#idle-collection); 0: never; >= 0
  int64_t idle_deactivation_ms = 0;
};

/// Section `membership` (docs/behaviour/lifecycle.md#stages, docs/behaviour/membership.md).
struct membership_section {
  /// ShuttingDown publish race before Stopping (docs/behaviour/lifecycle.md#stages); >= 1
  int64_t shutdown_grace_ms = 5000;
  /// bound on publishing Dead at stage 2001 (docs/behaviour/lifecycle.md#stages); >= 1
  int64_t dead_publish_ms = 60000;
  /// Where membership lives (docs/behaviour/membership.md): `oracle`, the development
  /// oracle the primary process hosts (`network.primary_port`), or `etcd`, a membership
  /// table on an etcd cluster that no process hosts (every process then runs its own table
  /// oracle and `network.primary_*` are not used).
  std::string provider = "oracle";
  /// Client URLs of the etcd members (`http://host:port`); required with `etcd`.
  std::vector<std::string> etcd_endpoints{};
  /// Key prefix of this cluster's table in etcd; starts and ends with `/`.
  std::string etcd_prefix = "/cafmesh/default/";
  /// Bound of one call to one etcd member; >= 1
  int64_t etcd_request_timeout_ms = 2000;
  /// How long a silo's join (or a pure client's first read of the table) may keep trying to
  /// reach the membership table before the process's start fails, naming the address it tried
  /// (docs/behaviour/membership.md#a-join-that-cannot-reach-the-table); 0: no bound, it
  /// tries until the process is stopped; >= 0
  int64_t max_join_time_ms = 60000;
};

/// Section `directory` (docs/behaviour/directory-and-placement.md#who-owns-a-grain-id,
/// #lookup-registration-cache, #the-stateless-worker-bypass).
struct directory_section {
  /// one lookup request (docs/behaviour/directory-and-placement.md#lookup-registration-cache); >= 1
  int64_t lookup_attempt_timeout_ms = 5000;
  /// null directory for stateless workers
  /// (docs/behaviour/directory-and-placement.md#the-stateless-worker-bypass)
  bool stateless_worker_bypass = true;
};

/// Section `placement` (docs/behaviour/directory-and-placement.md#placement,
/// #deactivation-and-messages-in-motion).
struct placement_section {
  /// per placement work item (docs/behaviour/directory-and-placement.md#placement); >= 1
  int64_t timeout_ms = 30000;
  /// placement workers per silo (docs/behaviour/directory-and-placement.md#placement); >= 1
  int64_t worker_count = 16;
  /// reroutes of one message
  /// (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion); >= 0
  int64_t max_forward_count = 2;
  int64_t stateless_worker_max_local = 1; ///< default local activations of a stateless worker; >= 1
};

/// Section `grain_call` (docs/behaviour/directory-and-placement.md#placement).
struct grain_call_section {
  /// per attempt, from leaving placement (docs/behaviour/directory-and-placement.md#placement);
  /// >= 1
  int64_t response_timeout_ms = 30000;
};

/// Section `routing` (docs/behaviour/routing.md, docs/behaviour/classification.md#retry-policies).
/// Address types: distinct non-empty strings without `/` or `~`
/// (docs/behaviour/envelope.md#addresses). The router retry policy waits min(retry_base_ms·2ⁿ,
/// retry_cap_ms) before retry n; retry_max >= 0, retry_base_ms >= 1, retry_cap_ms >=
/// retry_base_ms (also in
/// `client` and `attach`).
struct routing_section {
  std::vector<std::string> stream_routed_address_types{"portal", "client", "cache", "mesh"};
  std::vector<std::string> client_hosted_address_types{};
  /// path resolution (docs/behaviour/routing.md#legs, #nacks); >= 1
  int64_t resolve_timeout_ms = 30000;
  /// no answer counts as "yes" (docs/behaviour/routing.md#legs); >= 1
  int64_t subscriber_probe_timeout_ms = 10000;
  /// router guard on one stream post (docs/behaviour/routing.md#legs); >= 1
  int64_t stream_post_timeout_ms = 60000;
  /// the stream transport's own bound (docs/behaviour/routing.md#legs); >= 1
  int64_t stream_transport_timeout_ms = 30000;
  /// Bound on one grain attempt of a continuation (a response or a NACK routed as a leg),
  /// below the usual placement + response bound; an attempt without an answer within it is
  /// sent again, since its receiver keeps one outcome per request
  /// (docs/behaviour/routing.md#continuations-sent-again); >= 1
  int64_t continuation_attempt_timeout_ms = 5000;
  /// Most deliveries one leg of an ordering channel carries: its head and the one-way
  /// deliveries queued behind it (docs/behaviour/routing.md#channel-batches, SPEC §14 B2);
  /// 1 .. 256 (1: off)
  int64_t channel_batch_max = 64;
  int64_t retry_max = 6;
  int64_t retry_base_ms = 250;
  int64_t retry_cap_ms = 3000;
  /// may end in placement_timeout (docs/behaviour/classification.md#retry-policies); >= 1
  int64_t placement_timeout_attempts = 2;
  /// report threshold (docs/behaviour/routing.md#saturation-report-and-refusal-log); >= 1
  int64_t saturation_report_count = 64;
  /// clear threshold (docs/behaviour/routing.md#saturation-report-and-refusal-log); 0 .. report
  /// count - 1
  int64_t saturation_clear_count = 32;
  /// critical leg age (docs/behaviour/routing.md#saturation-report-and-refusal-log); >= 1
  int64_t leg_self_bound_ms = 100000;
  /// latched re-check interval (docs/behaviour/routing.md#saturation-report-and-refusal-log); >= 1
  int64_t saturation_review_ms = 10000;
  /// A report below critical is logged at info, and a warning follows only if the episode
  /// is still latched this many ms later (docs/behaviour/routing.md); 0: the report itself
  /// is the warning (docs/behaviour/routing.md#saturation-report-and-refusal-log). The embedded
  /// default (a builder given no configuration) is 1,000. >= 0
  int64_t saturation_warn_after_ms = 0;
  /// refusal log window (docs/behaviour/routing.md#saturation-report-and-refusal-log); >= 1
  int64_t refusal_log_window_ms = 60000;
  /// sweep threshold (docs/behaviour/routing.md#saturation-report-and-refusal-log); >= 1
  int64_t refusal_log_sweep_entries = 512;
  /// idle windows before eviction (docs/behaviour/routing.md#saturation-report-and-refusal-log);
  /// >= 1
  int64_t refusal_log_idle_windows = 10;
  /// sender remembers terminated ids (docs/behaviour/routing.md#nacks); >= 1
  int64_t outcome_dedup_window_ms = 120000;
  /// most ids remembered (docs/behaviour/routing.md#nacks); >= 1
  int64_t outcome_dedup_max_ids = 65536;
  /// Most received deliveries, outcomes and entry answers a hub endpoint keeps for
  /// inspection, each record its own count; the oldest is dropped first
  /// (docs/behaviour/routing.md#bounded-records). 0: keeps none; >= 0.
  int64_t endpoint_record_max = 1024;
  /// Admission control: most legs a router core holds accepted and not terminated; a
  /// delivery beyond it is refused `unavailable` ("overloaded") before acceptance. 0: no
  /// bound; >= 0.
  int64_t max_in_flight = 768;
  /// Admission control per destination (SPEC C4): most grain attempts a router core holds
  /// outstanding to one destination silo; a delivery for a grain last answered from a silo
  /// that holds that many is refused `unavailable` ("destination {D} is not keeping up")
  /// before acceptance, while deliveries to other silos are accepted. 0: no bound; >= 0.
  int64_t max_in_flight_per_destination = 256;
  /// The `retry_after_ms` a refusal at `max_in_flight` (or `gateway.max_outstanding`)
  /// carries: how long a sender should wait before sending again; >= 1.
  int64_t overload_retry_after_ms = 500;
};

/// Section `gateway`: the silo side that serves pure clients.
struct gateway_section {
  /// Admission control: most client dispatches one gateway holds outstanding (handed to
  /// placement, not yet answered); beyond it a dispatch is refused `overloaded` with
  /// `routing.overload_retry_after_ms` before it reaches the router core. A pure client holds
  /// at most as many dispatches in progress itself and refuses the next delivery at once.
  /// 0: no bound; >= 0.
  int64_t max_outstanding = 384;
};

/// Section `client` (docs/behaviour/classification.md#retry-policies).
struct client_section {
  int64_t retry_max = 5;
  int64_t retry_base_ms = 200;
  int64_t retry_cap_ms = 30000;
  /// info log for a slower dispatch (docs/behaviour/routing.md#the-entry); >= 0
  int64_t slow_dispatch_log_ms = 500;
  /// Most delivery ids whose dispatch attempt times a pure client's routing service keeps
  /// for inspection; the oldest id is dropped first (docs/behaviour/routing.md#bounded-records).
  /// 0: keeps none; >= 0.
  int64_t attempt_record_max = 1024;
};

/// Section `attach` (docs/behaviour/classification.md#retry-policies).
struct attach_section {
  int64_t retry_max = 5;
  int64_t retry_base_ms = 250;
  int64_t retry_cap_ms = 4000;
};

/// Section `pool` (docs/behaviour/quiescence.md#the-routing-io-pool).
struct pool_section {
  int64_t cap = 256;                ///< concurrent leg starts; >= 1
  int64_t drain_grace_ms = 8000;    ///< restarted on every termination; >= 0
  int64_t cancel_wait_ms = 30000;   ///< wait for cancelled legs to exit; >= 1
  int64_t join_ms = 30000;          ///< >= 1
  int64_t teardown_join_ms = 30000; ///< pool teardown participant at First; >= 1
};

/// Section `size` (docs/behaviour/size-guard.md#limits).
struct size_section {
  int64_t grain_call_body_limit_bytes = 104857600; ///< >= 1
};

/// Section `simulation` (docs/testing.md#the-simulation-harness).
struct simulation_section {
  uint64_t seed = 1;               ///< PRNG seed; any value
  int64_t link_latency_min_ms = 1; ///< >= 0
  int64_t link_latency_max_ms = 5; ///< >= link_latency_min_ms
  /// silence before a killed silo is Dead (docs/behaviour/membership.md#leaving); >= 1
  int64_t failure_detection_ms = 10000;
  int64_t virtual_time_cap_ms = 3600000; ///< a scenario not finished by then fails; >= 1
};

/// Section `network` (cafmesh extension, not in examples/config/README.md#keys): where this process
/// listens and how it finds the membership oracle's primary silo over CAF io. Port 0 = chosen
/// by the OS.
struct network_section {
  std::string host = "127.0.0.1";         ///< listening host; non-empty
  uint16_t port = 0;                      ///< 0 = chosen by the OS
  std::string primary_host = "127.0.0.1"; ///< non-empty
  /// 0: this process is the primary: it hosts the development membership oracle, whatever
  /// its role (a `silo_host`, or a `pure_client`, which may host no hubs at all and so be a
  /// dedicated oracle process); every other process names the primary's port here.
  uint16_t primary_port = 0;
  int64_t heartbeat_interval_ms = 1000; ///< >= 1
  int64_t failure_detection_ms = 10000; ///< > heartbeat_interval_ms
  /// The cluster this process belongs to: a connection whose peer names another one is
  /// refused before any cafmesh message (docs/behaviour/peer-authentication.md); 1 to 64
  /// bytes. Not a secret: every process that connects learns it.
  std::string cluster_id = "cafmesh";
  /// The shared secret both ends of a connection prove they hold (HMAC-SHA256 over fresh
  /// nonces; it never crosses the wire). Empty: no secret, peers are admitted by cluster id
  /// alone. At most one of `cluster_secret` and `cluster_secret_file` is set.
  std::string cluster_secret;
  /// A file holding the secret (read when the process starts listening; trailing line
  /// breaks dropped; an empty or unreadable file fails the start). Empty: none.
  std::string cluster_secret_file;
  /// A connection that has not authenticated this long after it opened is closed; >= 1.
  int64_t authentication_timeout_ms = 5000;
  /// Mutual TLS (docs/behaviour/peer-authentication.md#tls): this process's certificate
  /// chain (PEM, its own certificate first). Empty: no TLS. The three `tls_*` keys are set
  /// all together or not at all; with them every connection of the process is TLS 1.3.
  std::string tls_certificate_file;
  /// The private key (PEM, unencrypted) of `tls_certificate_file`'s certificate.
  std::string tls_key_file;
  /// The cluster's CA certificates (PEM): a peer is admitted to the cafmesh handshake only
  /// with a certificate they issued. Host names are not checked.
  std::string tls_ca_file;
};

/// `admin.*`: the HTTP admin endpoint of a process (docs/operations.md): Prometheus metrics,
/// liveness and readiness probes and the membership view. Off unless `enabled`.
struct admin_section {
  bool enabled = false;           ///< serve the admin endpoint
  std::string host = "127.0.0.1"; ///< listening host; non-empty
  uint16_t port = 0;              ///< 0 = chosen by the OS
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
  gateway_section gateway;
  client_section client;
  attach_section attach;
  pool_section pool;
  size_section size;
  simulation_section simulation;
  network_section network;
  admin_section admin;
  log_section log;
};

/// Fixed limits (examples/config/README.md#keys, not configurable).
inline constexpr int64_t stream_block_limit_bytes = 1048576;
inline constexpr int64_t nack_echo_limit_bytes = 1048576;
inline constexpr int64_t payload_preview_chars = 200;
inline constexpr int64_t echo_note_bound_chars = 4096;

} // namespace cafmesh::config
