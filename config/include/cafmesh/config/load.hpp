#pragma once

/// @file
/// Loading and validating the JSON configuration (examples/config/README.md#keys,
/// docs/architecture.md#process-roles).
///
/// A document is one JSON object with one object per section (`mesh`, `lifecycle`, ...,
/// `simulation`, plus the cafmesh extensions `network` and `log`), holding the keys of
/// `mesh_config`. Omitted sections and keys take their defaults, except `/mesh/process_role`,
/// which is required. examples/config/README.md lists every key with default, unit and range.
///
/// Refusals. Every problem becomes one line `{pointer}: {what}`, where `{pointer}` is the RFC
/// 6901 JSON pointer of the offending place (`~` written `~0`, `/` written `~1`; the whole
/// document is the empty pointer, so its lines start with `:`):
/// - `{ptr}: expected {what}, got {found}` for a wrong type, a value out of range or a missing
///   required key. `{found}` is the compact JSON of the value, cut to 60 characters ending in
///   `...`, or `nothing` for a missing key. Example:
///   `/routing/retry_max: expected an integer >= 0, got "six"`. Integers are 64-bit signed
///   unless said otherwise; `2.0` is not an integer. An element of an address-type list is
///   named by its index: `/routing/client_hosted_address_types/1: expected a non-empty string
///   without '/' or '~', got "a/b"`.
/// - `{ptr}: unknown key, did you mean "{known}"?` when a known key at that level is at most two
///   edits away, else `{ptr}: unknown key, known keys: {k1}, {k2}, ...`.
/// - `{ptr}: duplicate key` for a key given twice in one object.
/// - Relations between keys name the key that must change, e.g.
///   `/routing/retry_cap_ms: expected an integer >= retry_base_ms (250), got 100`. They are
///   cap >= base of each retry policy (`routing`, `client`, `attach`),
///   `saturation_clear_count < saturation_report_count`,
///   `link_latency_max_ms >= link_latency_min_ms`,
///   `network.failure_detection_ms > network.heartbeat_interval_ms`, and a `pure_client`
///   needs `network.primary_port` from 1 to 65535.
/// - Malformed JSON: `: expected valid JSON, got a parse error at line L, column C: {parser text}`;
///   a number no double holds: `: expected JSON numbers within the range of a double, got
///   number overflow parsing '1e999'`.
///
/// Order: all errors of a document are collected, in order of appearance in the document; a
/// missing required key is reported after the other errors of its section (or at the end when
/// the section is absent). Relations are checked only once every key is valid on its own, in
/// the order listed above. Nothing is partially applied: on any error `ok` is false and
/// `value` is `mesh_config{}`.

#include <string>
#include <vector>

#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh::config {

/// The outcome of a load: either `ok` with `value`, or `errors` (lines as described in the
/// file comment, in document order) with `value` left at `mesh_config{}`.
struct load_result {
  bool ok = false;
  mesh_config value;
  std::vector<std::string> errors;

  /// All errors joined by newlines.
  std::string message() const;
};

/// Parses and validates a JSON document given as text.
load_result parse(const std::string& json_text);

/// Reads `path` and parses it. An unreadable file gives the single error
/// `cannot read config file "{path}": {strerror text}`; errors inside the file are reported as
/// by `parse` (without the path).
load_result load_file(const std::string& path);

/// Validates a configuration built in code exactly as a JSON document is validated: the
/// same rules, the same messages, the same JSON pointers (`parse(to_json_text(cfg))`). On
/// success `value` is `cfg`.
load_result validate(const mesh_config& cfg);

/// Renders the effective configuration as a JSON document: every section and key in
/// declaration order, 2-space indent, ending in a newline. `parse(to_json_text(c))` gives back
/// `c` whenever `c` itself is valid (the files in examples/config/ are in this form).
std::string to_json_text(const mesh_config& cfg);

} // namespace cafmesh::config
