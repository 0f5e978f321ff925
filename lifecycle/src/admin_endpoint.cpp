#include "cafmesh/lifecycle/admin_endpoint.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <sys/socket.h>

#include <caf/all.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include "admin_server.hpp"
#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/net_link.hpp"
#include "cafmesh/actors/peer_auth.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/gateway_atoms.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/routing/routing_service.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::lifecycle {

std::string to_string(admin_phase x) {
  switch (x) {
    case admin_phase::starting: return "starting";
    case admin_phase::active: return "active";
    case admin_phase::stopping: return "stopping";
    case admin_phase::stopped: return "stopped";
    default: return "failed";
  }
}

namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

/// How long one scrape waits for each component's statistics.
constexpr auto scrape_wait = std::chrono::seconds(1);

} // namespace

void admin_meters::on_hold(int64_t hold_ms) {
  hold_ms_total += hold_ms;
  ++holds;
}

// -- readiness probe ----------------------------------------------------------

namespace {

using admin_watch_atom = caf::atom_constant<caf::atom("admwatch")>;

struct probe_state {
  static const char* name;
  admin_meters_ptr meters;
};

const char* probe_state::name = "cafmesh.admin_probe";

void set_phase(admin_meters& m, admin_phase p) {
  m.phase = static_cast<uint8_t>(p);
}

/// The probe's interface: the host's stopping signal, the watch of its host, its phase.
using admin_probe_actor
  = stopping_recipient_actor::extend<caf::reacts_to<admin_watch_atom, host_actor>,
                                     caf::replies_to<caf::get_atom>::with<uint8_t>>;

admin_probe_actor::behavior_type admin_probe(admin_probe_actor::stateful_pointer<probe_state> self,
                                             admin_meters_ptr meters) {
  self->state.meters = std::move(meters);
  return {
    [=](host_stopping_atom) {
      auto& m = *self->state.meters;
      if (m.phase != static_cast<uint8_t>(admin_phase::stopped)) {
        set_phase(m, admin_phase::stopping);
        int64_t none = -1;
        m.stopping_since_ms.compare_exchange_strong(none, steady_ms());
      }
      return caf::ok_atom::value;
    },
    [=](admin_watch_atom, const host_actor& host) {
      self->request(host, caf::infinite, host_active_atom::value)
        .then(
          [=](caf::ok_atom) {
            auto& m = *self->state.meters;
            uint8_t starting = static_cast<uint8_t>(admin_phase::starting);
            m.phase.compare_exchange_strong(starting, static_cast<uint8_t>(admin_phase::active));
          },
          [=](caf::error&) {
            auto& m = *self->state.meters;
            uint8_t starting = static_cast<uint8_t>(admin_phase::starting);
            m.phase.compare_exchange_strong(starting, static_cast<uint8_t>(admin_phase::failed));
          });
      self->request(host, caf::infinite, host_await_atom::value)
        .then(
          [=](caf::ok_atom) {
            auto& m = *self->state.meters;
            auto since = m.stopping_since_ms.load();
            if (since >= 0) {
              m.stop_ms_total += steady_ms() - since;
              ++m.stops;
            }
            if (m.phase != static_cast<uint8_t>(admin_phase::failed))
              set_phase(m, admin_phase::stopped);
          },
          [=](caf::error&) {});
    },
    [=](caf::get_atom) { return self->state.meters->phase.load(); },
  };
}

} // namespace

stopping_recipient_actor spawn_admin_probe(caf::actor_system& sys, admin_meters_ptr meters) {
  return sys.spawn(admin_probe, std::move(meters));
}

void watch_host(const stopping_recipient_actor& probe, const host_actor& host) {
  caf::anon_send(caf::actor_cast<caf::actor>(probe), admin_watch_atom::value, host);
}

// -- metrics --------------------------------------------------------------------

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

/// Asks `a` for its statistics; none when it is absent or does not answer in time.
template <class T, class Handle, class... Ts>
std::optional<T> ask(caf::scoped_actor& self, const Handle& a, Ts... xs) {
  std::optional<T> out;
  if (!a)
    return out;
  self->request(a, scrape_wait, xs...)
    .receive([&](T& x) { out = std::move(x); }, [](caf::error&) {});
  return out;
}

/// Builds the families of one scrape.
class families {
public:
  families(const admin_sources& src) : src_(src) {
    // nop
  }

  MetricFamily& family(const std::string& name, MetricType type, const std::string& help) {
    for (auto& f : out_)
      if (f.name == name)
        return f;
    out_.push_back(MetricFamily{name, help, type, {}});
    return out_.back();
  }

  ClientMetric& sample(MetricFamily& f,
                       std::vector<std::pair<std::string, std::string>> labels = {}) {
    ClientMetric m;
    m.label.push_back({"silo", src_.addr.to_string()});
    for (auto& [k, v] : labels)
      m.label.push_back({k, v});
    f.metric.push_back(std::move(m));
    return f.metric.back();
  }

  void counter(const std::string& name, const std::string& help, double value,
               std::vector<std::pair<std::string, std::string>> labels = {}) {
    sample(family(name, MetricType::Counter, help), std::move(labels)).counter.value = value;
  }

  void gauge(const std::string& name, const std::string& help, double value,
             std::vector<std::pair<std::string, std::string>> labels = {}) {
    sample(family(name, MetricType::Gauge, help), std::move(labels)).gauge.value = value;
  }

  void summary(const std::string& name, const std::string& help, uint64_t count, double sum) {
    auto& m = sample(family(name, MetricType::Summary, help));
    m.summary.sample_count = count;
    m.summary.sample_sum = sum;
  }

  std::vector<MetricFamily> take() { return std::move(out_); }

private:
  const admin_sources& src_;
  std::vector<MetricFamily> out_;
};

void add_router_core(families& fs, const routing::router_core_stats& x) {
  const std::string deliveries = "cafmesh_deliveries_total";
  const std::string deliveries_help
    = "Deliveries this router core accepted that ended, by outcome (landed, nacked by "
      "verdict, abandoned by a pool drain, released by a stop, crashed)";
  fs.counter(deliveries, deliveries_help, static_cast<double>(x.landed),
             {{"entry", "router_core"}, {"outcome", "landed"}, {"verdict", ""}});
  for (size_t v = 0; v < x.nacks_by_verdict.size(); ++v)
    if (x.nacks_by_verdict[v] > 0)
      fs.counter(deliveries, deliveries_help, static_cast<double>(x.nacks_by_verdict[v]),
                 {{"entry", "router_core"},
                  {"outcome", "nacked"},
                  {"verdict", routing::to_string(static_cast<routing::verdict>(v))}});
  fs.counter(deliveries, deliveries_help, static_cast<double>(x.abandoned),
             {{"entry", "router_core"}, {"outcome", "abandoned"}, {"verdict", ""}});
  fs.counter(deliveries, deliveries_help, static_cast<double>(x.ended_by_release),
             {{"entry", "router_core"}, {"outcome", "released"}, {"verdict", ""}});
  fs.counter(deliveries, deliveries_help, static_cast<double>(x.crashed),
             {{"entry", "router_core"}, {"outcome", "crashed"}, {"verdict", ""}});
  const std::string accepted_help
    = "Deliveries the router core accepted, by entry (co_hosted: this silo's routing service; "
      "routing_grain: the routing grain, for pure clients and other silos)";
  fs.counter("cafmesh_router_accepted_total", accepted_help,
             static_cast<double>(x.accepted_co_hosted), {{"entry", "co_hosted"}});
  fs.counter("cafmesh_router_accepted_total", accepted_help,
             static_cast<double>(x.accepted - x.accepted_co_hosted), {{"entry", "routing_grain"}});
  fs.gauge("cafmesh_router_in_flight", "Accepted legs that have not ended",
           static_cast<double>(x.in_flight));
  fs.gauge("cafmesh_router_queued", "Accepted legs not dispatched yet",
           static_cast<double>(x.queued));
  fs.gauge("cafmesh_router_channels", "Open ordering channels of the router core",
           static_cast<double>(x.channels));
  fs.gauge("cafmesh_router_saturated", "1 while the router core's saturation report is latched",
           x.saturation_latched ? 1.0 : 0.0);
  const std::string refused_help
    = "Deliveries the router core refused before accepting them, by reason";
  fs.counter("cafmesh_router_refused_total", refused_help,
             static_cast<double>(x.refused_overloaded), {{"reason", "overloaded"}});
  fs.counter("cafmesh_router_refused_total", refused_help, static_cast<double>(x.refused_stopping),
             {{"reason", "stopping"}});
  fs.counter("cafmesh_router_refused_total", refused_help, static_cast<double>(x.routing_loops),
             {{"reason", "routing_loop"}});
  const std::string rung_help = "NACKs delivered to their senders, by the rung that carried them";
  fs.counter("cafmesh_nacks_sent_total", rung_help, static_cast<double>(x.nacks_local),
             {{"rung", "local"}});
  fs.counter("cafmesh_nacks_sent_total", rung_help, static_cast<double>(x.nacks_node_hub),
             {{"rung", "node_hub"}});
  fs.counter("cafmesh_nacks_sent_total", rung_help, static_cast<double>(x.nacks_pod_hub),
             {{"rung", "pod_hub"}});
  fs.counter("cafmesh_nacks_sent_total", rung_help, static_cast<double>(x.nacks_stream),
             {{"rung", "stream"}});
  fs.counter("cafmesh_nacks_failed_total", "NACKs no rung could carry",
             static_cast<double>(x.nacks_failed + x.nacks_unsent));
  fs.counter("cafmesh_suppressed_failures_total",
             "Failures of answer-suppressed deliveries (no NACK is sent for them)",
             static_cast<double>(x.suppressed_failures));
  fs.counter("cafmesh_grain_attempts_total", "Grain calls issued by legs, each retry counted",
             static_cast<double>(x.grain_attempts));
  // The histogram: cumulative counts per upper bound, in seconds.
  auto& h = fs.sample(fs.family("cafmesh_delivery_latency_seconds", MetricType::Histogram,
                                "Time from a leg's acceptance to its terminal event"));
  uint64_t cumulative = 0;
  for (size_t i = 0; i < routing::leg_latency_bounds_ms.size(); ++i) {
    cumulative += i < x.latency_buckets.size() ? x.latency_buckets[i] : 0;
    h.histogram.bucket.push_back(
      {cumulative, static_cast<double>(routing::leg_latency_bounds_ms[i]) / 1000.0});
  }
  if (x.latency_buckets.size() > routing::leg_latency_bounds_ms.size())
    cumulative += x.latency_buckets.back();
  h.histogram.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
  h.histogram.sample_count = cumulative;
  h.histogram.sample_sum = static_cast<double>(x.latency_sum_ms) / 1000.0;
}

void add_routing_service(families& fs, const routing::routing_service_stats& x,
                         const std::string& role) {
  fs.counter("cafmesh_entry_deliveries_total",
             "Deliveries handed to this process's routing service",
             static_cast<double>(x.delivered));
  fs.counter("cafmesh_local_route_deliveries_total",
             "Deliveries the routing service handed straight to a hub or entry of this process "
             "(an address registered here: no leg, no router core)",
             static_cast<double>(x.local_hits));
  const std::string refused_help
    = "Deliveries the routing service refused before accepting them, by reason";
  fs.counter("cafmesh_entry_refused_total", refused_help, static_cast<double>(x.size_refused),
             {{"reason", "too_large"}});
  fs.counter("cafmesh_entry_refused_total", refused_help,
             static_cast<double>(x.stopping_refused + x.stopping_nacks), {{"reason", "stopping"}});
  fs.counter("cafmesh_entry_refused_total", refused_help, static_cast<double>(x.refused_overloaded),
             {{"reason", "overloaded"}});
  if (role == "pure_client") {
    const std::string help = "Dispatches of this pure client to its gateways, by result";
    fs.counter("cafmesh_client_dispatches_total", help, static_cast<double>(x.client_accepted),
               {{"result", "accepted"}});
    fs.counter("cafmesh_client_dispatches_total", help, static_cast<double>(x.client_failed),
               {{"result", "failed"}});
    fs.counter("cafmesh_client_rehomes_total", "Gateways this pure client left",
               static_cast<double>(x.rehomes));
  }
}

void add_membership(families& fs, const membership_snapshot& x) {
  std::map<std::string, uint64_t> by_status;
  for (auto s : {silo_status::joining, silo_status::active, silo_status::shutting_down,
                 silo_status::stopping, silo_status::dead})
    by_status[to_string(s)] = 0;
  for (auto& r : x.rows)
    ++by_status[to_string(r.status)];
  for (auto& [status, n] : by_status)
    fs.gauge("cafmesh_membership_silos", "Silos in this process's membership view, by status",
             static_cast<double>(n), {{"status", status}});
  fs.gauge("cafmesh_membership_version", "Version of this process's membership view",
           static_cast<double>(x.version));
}

void add_catalog(families& fs, const catalog_report& x) {
  for (size_t i = 0; i < x.grain_types.size() && i < x.activations.size(); ++i)
    fs.gauge("cafmesh_catalog_activations", "Live grain activations of this silo, by grain type",
             static_cast<double>(x.activations[i]), {{"grain_type", x.grain_types[i]}});
  fs.family("cafmesh_catalog_activations", MetricType::Gauge,
            "Live grain activations of this silo, by grain type");
  fs.counter("cafmesh_catalog_activated_total", "Activations this silo created",
             static_cast<double>(x.counters.activated));
  fs.counter("cafmesh_catalog_deactivated_total", "Activations of this silo that ended",
             static_cast<double>(x.counters.deactivated));
  fs.counter("cafmesh_catalog_turns_total", "Grain turns completed on this silo",
             static_cast<double>(x.counters.turns));
}

void add_peer_auth(families& fs, const peer_auth_stats& x) {
  fs.counter("cafmesh_peer_handshakes_admitted_total",
             "Connections whose peer authenticated (docs/behaviour/peer-authentication.md)",
             static_cast<double>(x.admitted));
  const std::string help = "Connections refused before they authenticated, by reason";
  for (size_t i = 0; i < peer_refusal_count; ++i)
    fs.counter("cafmesh_peer_refusals_total", help, static_cast<double>(x.refused[i]),
               {{"reason", to_string(static_cast<peer_refusal>(i))}});
}

void add_placement(families& fs, const placement_stats& x) {
  fs.counter("cafmesh_placement_calls_total", "Grain calls through this silo's placement service",
             static_cast<double>(x.calls));
  const std::string lookups = "cafmesh_directory_lookups_total";
  const std::string help = "Directory resolutions of grain calls, by result";
  fs.counter(lookups, help, static_cast<double>(x.cache_hits), {{"result", "cache_hit"}});
  fs.counter(lookups, help, static_cast<double>(x.lookups), {{"result", "lookup"}});
  fs.counter("cafmesh_placement_activations_total", "Activations placement asked catalogs for",
             static_cast<double>(x.activations));
  const std::string failed = "Placements that failed, by reason";
  fs.counter("cafmesh_placement_failures_total", failed, static_cast<double>(x.timeouts),
             {{"reason", "timeout"}});
  fs.counter("cafmesh_placement_failures_total", failed, static_cast<double>(x.no_candidate),
             {{"reason", "no_compatible_silo"}});
}

std::string render_metrics(caf::actor_system& sys, const admin_sources& src,
                           const admin_meters& m) {
  families fs{src};
  caf::scoped_actor self{sys};
  if (auto x = ask<routing::router_core_stats>(self, src.core, routing::rc_stats_atom::value))
    add_router_core(fs, *x);
  if (auto x = ask<routing::routing_service_stats>(self, src.routing,
                                                   routing::rs_stats_atom::value))
    add_routing_service(fs, *x, src.role);
  if (auto x = ask<membership_snapshot>(self, src.agent, mb_get_atom::value))
    add_membership(fs, *x);
  if (auto x = ask<catalog_report>(self, src.catalog, ct_stats_atom::value))
    add_catalog(fs, *x);
  if (auto x = ask<placement_stats>(self, src.placement, pl_stats_atom::value))
    add_placement(fs, *x);
  if (auto x = ask<peer_auth_stats>(self, src.link, nl_auth_atom::value))
    add_peer_auth(fs, *x);
  if (auto x = ask<std::vector<silo_address>>(self, src.gateway, routing::gw_clients_atom::value))
    fs.gauge("cafmesh_gateway_clients_seen",
             "Pure clients that connected to this silo's gateway since it opened (clients that "
             "left are still counted)",
             static_cast<double>(x->size()));
  fs.summary("cafmesh_quiescence_hold_seconds",
             "How long each stop held the silo at stage Active until its routing work landed",
             m.holds.load(), static_cast<double>(m.hold_ms_total.load()) / 1000.0);
  fs.summary("cafmesh_silo_stop_seconds",
             "Stops of this process, from the stopping signal to the runtime torn down",
             m.stops.load(), static_cast<double>(m.stop_ms_total.load()) / 1000.0);
  auto phase = static_cast<admin_phase>(m.phase.load());
  fs.gauge("cafmesh_ready", "1 while /healthz/ready answers 200",
           phase == admin_phase::active ? 1.0 : 0.0);
  return prometheus::TextSerializer{}.Serialize(fs.take());
}

std::string render_members(caf::actor_system& sys, const admin_sources& src) {
  caf::scoped_actor self{sys};
  nlohmann::ordered_json j;
  j["self"] = src.addr.to_string();
  auto snap = ask<membership_snapshot>(self, src.agent, mb_get_atom::value);
  j["version"] = snap ? nlohmann::ordered_json(snap->version) : nlohmann::ordered_json(nullptr);
  auto rows = nlohmann::ordered_json::array();
  if (snap)
    for (auto& r : snap->rows)
      rows.push_back({{"silo", r.silo.to_string()},
                      {"host", r.silo.host},
                      {"port", r.silo.port},
                      {"generation", r.silo.generation},
                      {"status", to_string(r.status)},
                      {"gateway", r.gateway}});
  j["members"] = std::move(rows);
  return j.dump(2) + "\n";
}

} // namespace

// -- server ---------------------------------------------------------------------

struct admin_server::impl {
  httplib::Server http;
  std::thread worker;
  std::atomic<bool> listen_returned{false};
  admin_address addr;
};

admin_server::admin_server(std::unique_ptr<impl> x) : impl_(std::move(x)) {
  // nop
}

admin_server::~admin_server() {
  if (!impl_)
    return;
  if (!impl_->worker.joinable())
    return;
  // `stop` ends a listening server only: wait until the worker listens (or gave up).
  while (!impl_->http.is_running() && !impl_->listen_returned)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->http.stop();
  impl_->worker.join();
}

const admin_address& admin_server::address() const {
  return impl_->addr;
}

void admin_server::serve(caf::actor_system& sys, admin_sources sources, admin_meters_ptr meters,
                         caf::actor probe) {
  auto& http = impl_->http;
  auto src = std::make_shared<admin_sources>(std::move(sources));
  auto* sysp = &sys;
  http.Get("/metrics", [=](const httplib::Request&, httplib::Response& res) {
    res.set_content(render_metrics(*sysp, *src, *meters), "text/plain; version=0.0.4");
  });
  http.Get("/healthz/live", [=](const httplib::Request&, httplib::Response& res) {
    caf::scoped_actor self{*sysp};
    auto phase = ask<uint8_t>(self, probe, caf::get_atom::value);
    res.status = phase ? 200 : 503;
    res.set_content(phase ? "live\n" : "not answering\n", "text/plain");
  });
  http.Get("/healthz/ready", [=](const httplib::Request&, httplib::Response& res) {
    auto phase = static_cast<admin_phase>(meters->phase.load());
    bool ready = phase == admin_phase::active;
    res.status = ready ? 200 : 503;
    res.set_content(ready ? std::string{"ready\n"} : to_string(phase) + "\n", "text/plain");
  });
  http.Get("/cluster/members", [=](const httplib::Request&, httplib::Response& res) {
    res.set_content(render_members(*sysp, *src), "application/json");
  });
  auto* raw = impl_.get();
  impl_->worker = std::thread{[raw] {
    raw->http.listen_after_bind();
    raw->listen_returned = true;
  }};
}

caf::expected<std::unique_ptr<admin_server>> bind_admin_server(const config::admin_section& cfg) {
  if (cfg.host.empty())
    return to_error(
      fault{mesh_errc::config_invalid, "/admin/host: expected a non-empty string, got \"\""});
  auto x = std::make_unique<admin_server::impl>();
  auto& http = x->http;
  http.new_task_queue = [] { return new httplib::ThreadPool(2); };
  // cpp-httplib's default sets SO_REUSEPORT, which lets a second process bind the same port
  // and take half of its scrapes and probes. SO_REUSEADDR only: a port in use is refused.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  int port = cfg.port == 0 ? http.bind_to_any_port(cfg.host)
                           : (http.bind_to_port(cfg.host, cfg.port) ? cfg.port : -1);
  if (port <= 0)
    return to_error(fault{mesh_errc::config_invalid, "admin endpoint: cannot listen on " + cfg.host
                                                       + ":" + std::to_string(cfg.port)});
  x->addr = admin_address{cfg.host, static_cast<uint16_t>(port)};
  return std::unique_ptr<admin_server>{new admin_server(std::move(x))};
}

void admin_setup::serve_into(caf::actor_system& sys, admin_sources src,
                             std::unique_ptr<admin_server>& slot) {
  if (!server)
    return;
  watch_host(probe, src.host);
  server->serve(sys, std::move(src), meters, caf::actor_cast<caf::actor>(probe));
  slot = std::move(server);
}

caf::expected<admin_setup> prepare_admin(caf::actor_system& sys, config::mesh_config& mc,
                                         const std::optional<config::admin_section>& override) {
  if (override)
    mc.admin = *override;
  const auto& cfg = mc.admin;
  admin_setup out;
  if (!cfg.enabled)
    return out;
  auto server = bind_admin_server(cfg);
  if (!server)
    return server.error();
  out.server = std::move(*server);
  out.meters = std::make_shared<admin_meters>();
  out.probe = spawn_admin_probe(sys, out.meters);
  return out;
}

} // namespace cafmesh::lifecycle
