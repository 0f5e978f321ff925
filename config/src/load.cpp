#include "cafmesh/config/load.hpp"
#include "cafmesh/config/text.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "cafmesh/config/json_preview.hpp"
#include "cafmesh/config/json_rules.hpp"

namespace cafmesh::config {

namespace {

// ordered_json keeps the document's member order, so errors come in order of appearance;
// escape, shown, refuse, refuse_unknown, in_range and duplicate_finder are the shared rules.
using namespace cafmesh::config::json_rules;

const std::vector<std::string> role_names{"silo_host", "pure_client", "monolith"};
const std::vector<std::string> provider_names{"oracle", "etcd"};
const std::vector<std::string> level_names{"trace", "debug",    "info", "warning",
                                           "error", "critical", "off"};

// -- error texts --------------------------------------------------------------

std::string joined(const std::vector<std::string>& names, const std::string& quote) {
  std::string out;
  for (auto& name : names)
    out += (out.empty() ? "" : ", ") + quote + name + quote;
  return out;
}

// -- value rules --------------------------------------------------------------

/// What one key accepts: `what` describes a valid value (also used for a missing required
/// key); `check` appends the refusals of one value found at a pointer.
struct rule {
  std::string what;
  std::function<void(const json&, const std::string&, error_list&)> check;
};

/// A rule refusing, as `expected {what}`, every value `fits` rejects.
rule plain(std::string what, std::function<bool(const json&)> fits) {
  return {what, [=](const json& v, const std::string& ptr, error_list& errs) {
            if (!fits(v))
              refuse(errs, ptr, what, shown(v));
          }};
}

rule integer(int64_t min, int64_t max = int64_max) {
  auto range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  auto what = max == int64_max ? "an integer >= " + std::to_string(min) : range;
  return {what, [=](const json& v, const std::string& ptr, error_list& errs) {
            if (in_range(v, min, max))
              return;
            auto beyond = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{int64_max};
            refuse(errs, ptr, beyond ? range : what, shown(v));
          }};
}

/// Any integer the unsigned 64-bit type holds.
rule unsigned_integer() {
  return plain("an integer from 0 to " + std::to_string(std::numeric_limits<uint64_t>::max()),
               [](const json& v) { return v.is_number_unsigned() || in_range(v, 0, int64_max); });
}

rule boolean() {
  return plain("true or false", [](const json& v) { return v.is_boolean(); });
}

rule text(bool non_empty) {
  return plain(non_empty ? "a non-empty string" : "a string", [=](const json& v) {
    return v.is_string() && !(non_empty && v.get_ref<const std::string&>().empty());
  });
}

rule one_of(const std::vector<std::string>& names) {
  return plain("one of " + joined(names, "\""), [=](const json& v) {
    return v.is_string() && std::count(names.begin(), names.end(), v.get<std::string>()) > 0;
  });
}

/// A cluster id: 1 to 64 bytes (the handshake carries its length in one byte).
rule cluster_id_text() {
  return plain("a string of 1 to 64 bytes", [](const json& v) {
    return v.is_string() && !v.get_ref<const std::string&>().empty()
           && v.get_ref<const std::string&>().size() <= 64;
  });
}

/// An array of distinct address types: non-empty strings without `/` or `~`
/// (docs/behaviour/envelope.md#addresses).
rule address_types() {
  return {"an array of address types", [](const json& v, const std::string& ptr, error_list& errs) {
            if (!v.is_array()) {
              refuse(errs, ptr, "an array of address types", shown(v));
              return;
            }
            std::set<std::string> listed;
            for (size_t i = 0; i < v.size(); ++i) {
              auto& e = v[i];
              auto at = ptr + "/" + std::to_string(i);
              if (!e.is_string() || e.get<std::string>().empty()
                  || e.get<std::string>().find_first_of("/~") != std::string::npos)
                refuse(errs, at, "a non-empty string without '/' or '~'", shown(e));
              else if (!listed.insert(e.get<std::string>()).second)
                refuse(errs, at, "an address type not listed before", shown(e));
            }
          }};
}

/// An array of etcd client URLs: `http://` or `https://` and a host.
rule etcd_urls() {
  return {"an array of etcd client URLs",
          [](const json& v, const std::string& ptr, error_list& errs) {
            if (!v.is_array()) {
              refuse(errs, ptr, "an array of etcd client URLs", shown(v));
              return;
            }
            for (size_t i = 0; i < v.size(); ++i) {
              auto& e = v[i];
              auto has_scheme = [&](const std::string& scheme) {
                const auto& x = e.get_ref<const std::string&>();
                return x.size() > scheme.size() && x.rfind(scheme, 0) == 0;
              };
              if (!e.is_string() || !(has_scheme("http://") || has_scheme("https://")))
                refuse(errs, ptr + "/" + std::to_string(i),
                       "a URL that starts with http:// or https://", shown(e));
            }
          }};
}

// -- the schema ---------------------------------------------------------------

/// One key: its rule, and how its value moves between the JSON and `mesh_config`.
struct key_spec {
  std::string name;
  rule accepts;
  bool required;
  std::function<void(mesh_config&, const json&)> store;
  std::function<json(const mesh_config&)> render;
};

/// A key an earlier version accepted that no longer means anything, with the reason.
struct retired_key {
  std::string name;
  std::string reason;
};

struct section_spec {
  std::string name;
  std::vector<key_spec> keys;
  std::vector<retired_key> retired;
};

/// A relation between keys, checked on a config whose keys are each valid.
using cross_rule = std::function<void(const mesh_config&, error_list&)>;

struct schema {
  std::vector<section_spec> sections;
  std::vector<cross_rule> relations;
  std::vector<std::string> section_names;
};

template <class T>
json to_json_value(const T& x) {
  return json(x);
}

json to_json_value(process_role x) {
  return to_string(x);
}

template <class T>
void from_json_value(const json& v, T& x) {
  x = v.get<T>();
}

void from_json_value(const json& v, process_role& x) {
  auto i = std::find(role_names.begin(), role_names.end(), v.get<std::string>());
  x = static_cast<process_role>(i - role_names.begin());
}

/// Adds the keys of one section, naming each by its member pointer.
template <class Section>
class section_builder {
public:
  section_builder(schema& s, const char* name, Section mesh_config::*section)
    : schema_(s), section_(section) {
    schema_.sections.push_back({name, {}, {}});
    schema_.section_names.push_back(name);
  }

  template <class T>
  section_builder& key(const char* name, T Section::*member, rule accepts, bool required = false) {
    auto sec = section_;
    schema_.sections.back().keys.push_back(
      {name, std::move(accepts), required,
       [=](mesh_config& c, const json& v) { from_json_value(v, (c.*sec).*member); },
       [=](const mesh_config& c) { return to_json_value((c.*sec).*member); }});
    return *this;
  }

  /// Refuses `key` wherever it appears, saying `reason`: an earlier version's key whose
  /// setting would be silently ignored now.
  section_builder& retired(const char* name, std::string reason) {
    schema_.sections.back().retired.push_back({name, std::move(reason)});
    return *this;
  }

  /// Refuses `key` unless `key op other` holds; `op` is `>=`, `>` or `<`.
  section_builder& relation(const char* key, int64_t Section::*member, const std::string& op,
                            const char* other, int64_t Section::*other_member) {
    auto sec = section_;
    auto ptr = "/" + schema_.sections.back().name + "/" + key;
    auto what = "an integer " + op + " " + other + " (";
    schema_.relations.push_back([=](const mesh_config& c, error_list& errs) {
      auto x = (c.*sec).*member;
      auto y = (c.*sec).*other_member;
      if (!(op == ">=" ? x >= y : op == ">" ? x > y : x < y))
        refuse(errs, ptr, what + std::to_string(y) + ")", std::to_string(x));
    });
    return *this;
  }

  section_builder& retry_policy() {
    return key("retry_max", &Section::retry_max, integer(0))
      .key("retry_base_ms", &Section::retry_base_ms, integer(1))
      .key("retry_cap_ms", &Section::retry_cap_ms, integer(1))
      .relation("retry_cap_ms", &Section::retry_cap_ms, ">=", "retry_base_ms",
                &Section::retry_base_ms);
  }

private:
  schema& schema_;
  Section mesh_config::*section_;
};

// Ranges: a timeout, budget, race window or timer interval must be >= 1 ms (0 would expire
// or spin at once); log thresholds, the pool's drain grace, latencies and the idle collection
// age (0: off) may be 0; counts of
// things that must exist (workers, pool slots, samples, ids) are >= 1; retry and
// forward counts may be 0. examples/config/README.md lists every key with its range.
schema make_schema() {
  schema s;
  using S = mesh_config;
  section_builder<mesh_section>(s, "mesh", &S::mesh)
    .key("process_role", &mesh_section::role, one_of(role_names), true)
    .key("name", &mesh_section::name, text(false));
  section_builder<lifecycle_section>(s, "lifecycle", &S::lifecycle)
    .key("quiescence_hold_ms", &lifecycle_section::quiescence_hold_ms, integer(1))
    .key("quiescence_residual_sample", &lifecycle_section::quiescence_residual_sample, integer(1))
    .key("slow_observer_log_ms", &lifecycle_section::slow_observer_log_ms, integer(0));
  section_builder<host_section>(s, "host", &S::host)
    .key("shutdown_budget_ms", &host_section::shutdown_budget_ms, integer(1))
    .key("teardown_budget_ms", &host_section::teardown_budget_ms, integer(1));
  section_builder<catalog_section>(s, "catalog", &S::catalog)
    .key("deactivation_timeout_ms", &catalog_section::deactivation_timeout_ms, integer(1))
    .key("activation_timeout_ms", &catalog_section::activation_timeout_ms, integer(1))
    .key("idle_deactivation_ms", &catalog_section::idle_deactivation_ms, integer(0));
  section_builder<membership_section>(s, "membership", &S::membership)
    .key("shutdown_grace_ms", &membership_section::shutdown_grace_ms, integer(1))
    .key("dead_publish_ms", &membership_section::dead_publish_ms, integer(1))
    .key("provider", &membership_section::provider, one_of(provider_names))
    .key("etcd_endpoints", &membership_section::etcd_endpoints, etcd_urls())
    .key("etcd_prefix", &membership_section::etcd_prefix,
         plain("a string that starts and ends with '/'",
               [](const json& v) {
                 if (!v.is_string())
                   return false;
                 const auto& x = v.get_ref<const std::string&>();
                 return !x.empty() && x.front() == '/' && x.back() == '/';
               }))
    .key("etcd_request_timeout_ms", &membership_section::etcd_request_timeout_ms, integer(1))
    .key("max_join_time_ms", &membership_section::max_join_time_ms, integer(0));
  s.relations.push_back([](const mesh_config& c, error_list& errs) {
    if (c.membership.provider == "etcd" && c.membership.etcd_endpoints.empty())
      refuse(errs, "/membership/etcd_endpoints",
             "at least one etcd endpoint with provider \"etcd\"", "[]");
  });
  section_builder<directory_section>(s, "directory", &S::directory)
    .retired("ring_points_per_silo",
             "no longer a key: the directory owner of a grain id is chosen by rendezvous "
             "hashing over the active set, which has no ring points; remove it")
    .key("lookup_attempt_timeout_ms", &directory_section::lookup_attempt_timeout_ms, integer(1))
    .key("stateless_worker_bypass", &directory_section::stateless_worker_bypass, boolean());
  section_builder<placement_section>(s, "placement", &S::placement)
    .key("timeout_ms", &placement_section::timeout_ms, integer(1))
    .key("worker_count", &placement_section::worker_count, integer(1))
    .key("max_forward_count", &placement_section::max_forward_count, integer(0))
    .key("stateless_worker_max_local", &placement_section::stateless_worker_max_local, integer(1));
  section_builder<grain_call_section>(s, "grain_call", &S::grain_call)
    .key("response_timeout_ms", &grain_call_section::response_timeout_ms, integer(1));
  using R = routing_section;
  section_builder<R>(s, "routing", &S::routing)
    .key("stream_routed_address_types", &R::stream_routed_address_types, address_types())
    .key("client_hosted_address_types", &R::client_hosted_address_types, address_types())
    .key("resolve_timeout_ms", &R::resolve_timeout_ms, integer(1))
    .key("subscriber_probe_timeout_ms", &R::subscriber_probe_timeout_ms, integer(1))
    .key("stream_post_timeout_ms", &R::stream_post_timeout_ms, integer(1))
    .key("stream_transport_timeout_ms", &R::stream_transport_timeout_ms, integer(1))
    .key("continuation_attempt_timeout_ms", &R::continuation_attempt_timeout_ms, integer(1))
    .key("channel_batch_max", &R::channel_batch_max, integer(1, 256))
    .retry_policy()
    .key("placement_timeout_attempts", &R::placement_timeout_attempts, integer(1))
    .key("saturation_report_count", &R::saturation_report_count, integer(1))
    .key("saturation_clear_count", &R::saturation_clear_count, integer(0))
    .relation("saturation_clear_count", &R::saturation_clear_count, "<", "saturation_report_count",
              &R::saturation_report_count)
    .key("leg_self_bound_ms", &R::leg_self_bound_ms, integer(1))
    .key("saturation_review_ms", &R::saturation_review_ms, integer(1))
    .key("saturation_warn_after_ms", &R::saturation_warn_after_ms, integer(0))
    .key("refusal_log_window_ms", &R::refusal_log_window_ms, integer(1))
    .key("refusal_log_sweep_entries", &R::refusal_log_sweep_entries, integer(1))
    .key("refusal_log_idle_windows", &R::refusal_log_idle_windows, integer(1))
    .key("outcome_dedup_window_ms", &R::outcome_dedup_window_ms, integer(1))
    .key("outcome_dedup_max_ids", &R::outcome_dedup_max_ids, integer(1))
    .key("endpoint_record_max", &R::endpoint_record_max, integer(0))
    .key("max_in_flight", &R::max_in_flight, integer(0))
    .key("max_in_flight_per_destination", &R::max_in_flight_per_destination, integer(0))
    .key("overload_retry_after_ms", &R::overload_retry_after_ms, integer(1));
  section_builder<gateway_section>(s, "gateway", &S::gateway)
    .key("max_outstanding", &gateway_section::max_outstanding, integer(0));
  section_builder<client_section>(s, "client", &S::client)
    .retry_policy()
    .key("slow_dispatch_log_ms", &client_section::slow_dispatch_log_ms, integer(0))
    .key("attempt_record_max", &client_section::attempt_record_max, integer(0));
  section_builder<attach_section>(s, "attach", &S::attach).retry_policy();
  section_builder<pool_section>(s, "pool", &S::pool)
    .key("cap", &pool_section::cap, integer(1))
    .key("drain_grace_ms", &pool_section::drain_grace_ms, integer(0))
    .key("cancel_wait_ms", &pool_section::cancel_wait_ms, integer(1))
    .key("join_ms", &pool_section::join_ms, integer(1))
    .key("teardown_join_ms", &pool_section::teardown_join_ms, integer(1));
  section_builder<size_section>(s, "size", &S::size)
    .key("grain_call_body_limit_bytes", &size_section::grain_call_body_limit_bytes, integer(1));
  using M = simulation_section;
  section_builder<M>(s, "simulation", &S::simulation)
    .key("seed", &M::seed, unsigned_integer())
    .key("link_latency_min_ms", &M::link_latency_min_ms, integer(0))
    .key("link_latency_max_ms", &M::link_latency_max_ms, integer(0))
    .relation("link_latency_max_ms", &M::link_latency_max_ms, ">=", "link_latency_min_ms",
              &M::link_latency_min_ms)
    .key("failure_detection_ms", &M::failure_detection_ms, integer(1))
    .key("virtual_time_cap_ms", &M::virtual_time_cap_ms, integer(1));
  using N = network_section;
  section_builder<N>(s, "network", &S::network)
    .key("host", &N::host, text(true))
    .key("port", &N::port, integer(0, 65535))
    .key("primary_host", &N::primary_host, text(true))
    .key("primary_port", &N::primary_port, integer(0, 65535))
    .key("heartbeat_interval_ms", &N::heartbeat_interval_ms, integer(1))
    .key("failure_detection_ms", &N::failure_detection_ms, integer(1))
    .relation("failure_detection_ms", &N::failure_detection_ms, ">", "heartbeat_interval_ms",
              &N::heartbeat_interval_ms)
    .key("cluster_id", &N::cluster_id, cluster_id_text())
    .key("cluster_secret", &N::cluster_secret, text(false))
    .key("cluster_secret_file", &N::cluster_secret_file, text(false))
    .key("authentication_timeout_ms", &N::authentication_timeout_ms, integer(1))
    .key("tls_certificate_file", &N::tls_certificate_file, text(false))
    .key("tls_key_file", &N::tls_key_file, text(false))
    .key("tls_ca_file", &N::tls_ca_file, text(false));
  s.relations.push_back([](const mesh_config& c, error_list& errs) {
    if (!c.network.cluster_secret.empty() && !c.network.cluster_secret_file.empty())
      refuse(errs, "/network/cluster_secret_file",
             "an empty string when /network/cluster_secret is set (one source of the secret)",
             shown(json(c.network.cluster_secret_file)));
    // TLS needs all three files (docs/behaviour/peer-authentication.md#tls).
    const std::pair<const char*, const std::string*> tls[]
      = {{"tls_certificate_file", &c.network.tls_certificate_file},
         {"tls_key_file", &c.network.tls_key_file},
         {"tls_ca_file", &c.network.tls_ca_file}};
    auto set = std::count_if(std::begin(tls), std::end(tls),
                             [](auto& x) { return !x.second->empty(); });
    if (set > 0 && set < 3)
      for (auto& [name, value] : tls)
        if (value->empty())
          refuse(errs, std::string{"/network/"} + name,
                 "a file name when another /network/tls_* key is set (TLS needs the "
                 "certificate, its key and the CA)",
                 shown(json(*value)));
  });
  // Any role may be the primary (`primary_port` 0: it hosts the development membership
  // oracle), a pure client included: a process with no hubs of its own is then a dedicated
  // oracle process that can be stopped last, or in any order.
  section_builder<admin_section>(s, "admin", &S::admin)
    .key("enabled", &admin_section::enabled, boolean())
    .key("host", &admin_section::host, text(true))
    .key("port", &admin_section::port, integer(0, 65535));
  section_builder<log_section>(s, "log", &S::log)
    .key("level", &log_section::level, one_of(level_names));
  return s;
}

const schema& the_schema() {
  static const schema s = make_schema();
  return s;
}

// -- parsing ------------------------------------------------------------------

template <class Named>
const Named* find_named(const std::vector<Named>& xs, const std::string& name) {
  auto i = std::find_if(xs.begin(), xs.end(), [&](auto& x) { return x.name == name; });
  return i == xs.end() ? nullptr : &*i;
}

std::vector<std::string> key_names(const section_spec& sec) {
  std::vector<std::string> out;
  for (auto& k : sec.keys)
    out.push_back(k.name);
  return out;
}

/// Validates `doc` against the schema, storing each valid value into `cfg`.
void apply(const json& doc, const std::set<std::string>& duplicates, mesh_config& cfg,
           error_list& errs) {
  auto& s = the_schema();
  if (!doc.is_object()) {
    refuse(errs, "", "an object", shown(doc));
    return;
  }
  auto check_duplicate = [&](const std::string& ptr) {
    if (duplicates.count(ptr) > 0)
      errs.push_back(ptr + ": duplicate key");
  };
  auto check_required = [&](const section_spec& sec, const json* body) {
    for (auto& k : sec.keys)
      if (k.required && (body == nullptr || !body->contains(k.name)))
        refuse(errs, "/" + sec.name + "/" + k.name, k.accepts.what, "nothing");
  };
  for (auto& [name, body] : doc.items()) {
    auto ptr = "/" + escape(name);
    check_duplicate(ptr);
    auto* sec = find_named(s.sections, name);
    if (sec == nullptr) {
      refuse_unknown(errs, ptr, name, s.section_names);
      continue;
    }
    if (!body.is_object()) {
      refuse(errs, ptr, "an object", shown(body));
      continue;
    }
    for (auto& [key, value] : body.items()) {
      auto key_ptr = ptr + "/" + escape(key);
      check_duplicate(key_ptr);
      if (auto* r = find_named(sec->retired, key)) {
        errs.push_back(key_ptr + ": " + r->reason);
        continue;
      }
      auto* k = find_named(sec->keys, key);
      if (k == nullptr) {
        refuse_unknown(errs, key_ptr, key, key_names(*sec));
        continue;
      }
      auto before = errs.size();
      k->accepts.check(value, key_ptr, errs);
      if (errs.size() == before)
        k->store(cfg, value);
    }
    check_required(*sec, &body);
  }
  for (auto& sec : s.sections)
    if (!doc.contains(sec.name))
      check_required(sec, nullptr);
  if (errs.empty())
    for (auto& relation : s.relations)
      relation(cfg, errs);
}

} // namespace

std::string load_result::message() const {
  std::string out;
  for (auto& e : errors)
    out += (out.empty() ? "" : "\n") + e;
  return out;
}

load_result parse(const std::string& json_text) {
  load_result result;
  std::set<std::string> duplicates;
  json doc;
  if (!parse_json(json_text, "", doc, duplicates, result.errors))
    return result;
  mesh_config candidate;
  apply(doc, duplicates, candidate, result.errors);
  if (result.errors.empty()) {
    result.ok = true;
    result.value = std::move(candidate);
  }
  return result;
}

load_result load_file(const std::string& path) {
  std::string text;
  int read_errno = cafmesh::config::read_text_file(path, text);
  if (read_errno == 0)
    return parse(text);
  load_result result;
  result.errors.push_back("cannot read config file \"" + path + "\": " + std::strerror(read_errno));
  return result;
}

load_result validate(const mesh_config& cfg) {
  return parse(to_json_text(cfg));
}

std::string to_json_text(const mesh_config& cfg) {
  json doc = json::object();
  for (auto& sec : the_schema().sections) {
    auto& body = doc[sec.name] = json::object();
    for (auto& k : sec.keys)
      body[k.name] = k.render(cfg);
  }
  return doc.dump(2) + "\n";
}

} // namespace cafmesh::config
