#include "cafmesh/mainjob/client_mesh.hpp"

#include "cafmesh/lifecycle/client_builder.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/mainjob/demo_process.hpp"
#include "cafmesh/mainjob/driver.hpp"
#include "cafmesh/mainjob/mesh_parts.hpp"
#include "cafmesh/mainjob/run_loop.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/lifecycle/pure_client.hpp"
#include "cafmesh/routing/routing_service.hpp"

namespace cafmesh::mainjob {

std::vector<std::string> client_scenario_errors(const scenario& s) {
  std::vector<std::string> out;
  if (!s.roll.order.empty())
    out.push_back("/roll/order: expected [] (cafmesh-client cannot stop or restart the "
                  "cluster's silos), got "
                  + std::to_string(s.roll.order.size()) + " stop(s)");
  if (!s.roll.steps.empty())
    out.push_back("/roll/steps: expected [] (cafmesh-client cannot stop or restart the "
                  "cluster's silos), got "
                  + std::to_string(s.roll.steps.size()) + " step(s)");
  if (!s.faults.empty())
    out.push_back("/faults: expected [] (cafmesh-client cannot stall, kill or signal the "
                  "cluster's silos), "
                  "got "
                  + std::to_string(s.faults.size()) + " fault(s)");
  if (s.traffic.senders != sender_placement::pure_client)
    out.push_back("/traffic/senders: expected \"pure_client\" (cafmesh-client hosts no hubs "
                  "in silos), got \""
                  + to_string(s.traffic.senders) + "\"");
  return out;
}

bool is_stream_routed(const std::string& address, const std::vector<std::string>& types) {
  auto type = address.substr(0, address.find('/'));
  return std::find(types.begin(), types.end(), type) != types.end();
}

std::set<std::string> client_hosted_hubs(const client_traffic& t,
                                         const std::vector<std::string>& stream_routed_types) {
  std::set<std::string> out;
  if (t.trace) {
    for (auto& e : *t.trace) {
      out.insert(e.sender);
      if (is_stream_routed(e.target, stream_routed_types))
        out.insert(e.target);
    }
    return out;
  }
  for (int64_t i = 0; i < t.s.traffic.owner_hubs; ++i)
    out.insert(owner_hub_address(i));
  for (int64_t i = 0; i < t.s.traffic.portal_hubs; ++i)
    out.insert(portal_hub_address(i));
  return out;
}

bool client_observes_success(const planned_delivery& d, const std::set<std::string>& hosted) {
  return d.kind == delivery_kind::request || hosted.count(d.target) > 0;
}

namespace {

using clock_type = std::chrono::steady_clock;

uint64_t wall_generation() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
}

/// The client's `mesh_port`: its hubs send through the pure client's routing service.
class client_mesh : public mesh_port {
public:
  client_mesh(std::map<std::string, std::pair<routing::address, caf::actor>> hubs,
              std::set<std::string> hosted, int64_t request_deadline_ms)
    : hubs_(std::move(hubs)),
      hosted_(std::move(hosted)),
      request_deadline_ms_(request_deadline_ms) {
    // nop
  }

  void submit(const planned_delivery& d) override {
    auto i = hubs_.find(d.sender);
    if (i == hubs_.end()) {
      std::cerr << "cafmesh-client: no sender hub " << d.sender << "\n";
      return;
    }
    auto& [addr, ep] = i->second;
    auto e = to_envelope(d, addr);
    if (d.kind == delivery_kind::request)
      caf::anon_send(ep, routing::ep_request_atom::value, std::move(e), request_deadline_ms_);
    else
      caf::anon_send(ep, routing::ep_post_atom::value, std::move(e));
  }

  // Refused before the run (client_scenario_errors): the driver never asks for these.
  void stop_silo(const std::string& name) override { refused("stop", name); }
  void restart_silo(const std::string& name) override { refused("restart", name); }
  void stall_silo(const std::string& name, bool) override { refused("stall", name); }
  void unstall_silo(const std::string& name) override { refused("unstall", name); }

  bool observes_success(const planned_delivery& d) const override {
    return client_observes_success(d, hosted_);
  }

private:
  static void refused(const char* what, const std::string& name) {
    std::cerr << "cafmesh-client: cannot " << what << " silo " << name << "\n";
  }

  std::map<std::string, std::pair<routing::address, caf::actor>> hubs_;
  std::set<std::string> hosted_;
  int64_t request_deadline_ms_;
};

/// Waits (bounded) until the pure client's membership view shows an Active gateway silo.
/// Answers how many there are (0: none within the bound).
size_t wait_for_gateway(caf::scoped_actor& self, const membership_agent_actor& agent,
                        int64_t bound_ms) {
  auto until = clock_type::now() + std::chrono::milliseconds(bound_ms);
  for (;;) {
    size_t n = 0;
    self->request(agent, std::chrono::seconds(5), mb_get_atom::value)
      .receive([&](const membership_snapshot& s) { n = s.gateways().size(); },
               [](caf::error&) {});
    if (n > 0 || clock_type::now() >= until)
      return n;
    self->receive([](caf::message&) {}, caf::after(std::chrono::milliseconds(100)) >> [] {});
  }
}

} // namespace

client_result run_client(const config::mesh_config& mc, const client_traffic& t,
                         const client_run_settings& rs) {
  client_result result;
  caf::actor_system_config cfg;
  register_demo_types(cfg);
  cfg.load<caf::io::middleman>();
  cfg.set("scheduler.max-threads", size_t{2});
  cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  // The second process: the routing service of the hubs that are not stream-routed
  // (owners), so that their frames to the client's portal hubs cross the cluster.
  auto base_name = mc.mesh.name.empty() ? std::string{"client"} : mc.mesh.name;
  auto owners_cfg = mc;
  owners_cfg.network.port = 0;
  owners_cfg.mesh.name = base_name + "-owners";
  // Final failures of answer-suppressed dispatches come to the run loop (`suppressed`).
  auto observer = caf::actor_cast<caf::actor>(self);
  auto generation = wall_generation();
  auto client_process
    = lifecycle::client_builder{sys}.config(mc).network().generation(generation)
        .failure_observer(observer).build();
  if (!client_process) {
    std::cerr << "cafmesh-client: network endpoint: " << sys.render(client_process.error())
              << "\n";
    return result;
  }
  auto owners_process
    = lifecycle::client_builder{sys}.config(owners_cfg).network().generation(generation + 1)
        .failure_observer(observer).build();
  if (!owners_process) {
    std::cerr << "cafmesh-client: second network endpoint: "
              << sys.render(owners_process.error()) << "\n";
    return result;
  }
  const auto& client = client_process->components();
  const auto& owners = owners_process->components();
  std::vector<caf::actor> hub_actors;
  auto stop_everything = [&] {
    for (auto& a : hub_actors)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    client.stop_all();
    owners.stop_all();
  };
  // The client's join: its membership table answers within membership.max_join_time_ms
  // (the agent bounds it and names the address it tried,
  // docs/behaviour/membership.md#a-join-that-cannot-reach-the-table).
  caf::error unreached;
  self->request(client.agent, caf::infinite, mb_reach_atom::value)
    .receive([](uint64_t) {}, [&](caf::error& e) { unreached = std::move(e); });
  if (unreached) {
    std::cerr << "cafmesh-client: " << to_fault(unreached).render() << "; nothing was sent\n";
    stop_everything();
    return result;
  }
  auto gateways = wait_for_gateway(self, client.agent, rs.wait_active_ms);
  if (gateways > 0 && wait_for_gateway(self, owners.agent, rs.wait_active_ms) == 0)
    gateways = 0;
  if (gateways == 0) {
    auto table = mc.membership.provider == "etcd"
                   ? std::string{"the membership table on etcd"}
                   : "the membership of " + mc.network.primary_host + ":"
                       + std::to_string(mc.network.primary_port);
    std::cerr << "cafmesh-client: no Active gateway silo in " << table << " within "
              << rs.wait_active_ms / 1000
              << " s; nothing was sent. Start a silo_host of that cluster first, or wait "
                 "longer with --wait-active-s\n";
    stop_everything();
    return result;
  }
  if (rs.pace.out)
    *rs.pace.out << "cafmesh-client: " << client.addr.to_string() << " and "
                 << owners.addr.to_string() << " joined; " << gateways
                 << " Active gateway silo(s)" << std::endl;
  // The hubs (file comment), registered as local routes: stream-routed ones are attached.
  auto& types = mc.routing.stream_routed_address_types;
  auto hosted = client_hosted_hubs(t, types);
  std::map<std::string, std::pair<routing::address, caf::actor>> hubs;
  auto main = caf::actor_cast<caf::actor>(self);
  // A hub answers what lands on it (`respond`) only if the trace sends it requests: an
  // answering hub would also send a response for every frame.
  std::set<std::string> answering;
  if (t.trace)
    for (auto& e : *t.trace)
      if (e.kind == "request")
        answering.insert(e.target);
  for (auto& text : hosted) {
    auto addr = routing::address::from(text);
    auto& r = is_stream_routed(text, types) ? client.routing : owners.routing;
    auto hub = spawn_app_hub(sys, addr, r, mc.routing, answering.count(text) > 0, main);
    caf::anon_send(r, routing::rs_register_atom::value, addr, hub);
    hub_actors.push_back(hub);
    hubs.emplace(text, std::make_pair(addr, hub));
  }
  // Let the inbound attaches settle (bounded, 1 s).
  for (auto until = clock_type::now() + std::chrono::seconds(1); clock_type::now() < until;)
    self->receive([](caf::message&) {}, caf::after(std::chrono::milliseconds(50)) >> [] {});
  client_mesh mesh{std::move(hubs), hosted, t.s.traffic.request_deadline_ms};
  auto driver = t.trace ? demo_driver{t.s, mesh, "client",
                                      trace_replay{*t.trace, t.id_prefix, t.origin,
                                                   t.s.traffic.request_max_resends}}
                        : demo_driver{t.s, mesh, "client", t.id_prefix};
  driver.write_ledger_events_to(rs.ledger_out);
  auto t0 = clock_type::now();
  auto now_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0)
      .count();
  };
  auto receive_one = [&](std::chrono::milliseconds wait) {
    bool got = false;
    self->receive(
      hub_event_handler(
        driver,
        [&](const std::string& id) { return driver.ledger().answer_suppressed(id); }, now_ms,
        got),
      [&](caf::message&) { got = true; }, caf::after(wait) >> [] {});
    return got;
  };
  pace_driver(driver, rs.pace, "cafmesh-client", now_ms,
              [&](std::chrono::milliseconds wait) { receive_batch(wait, receive_one); });
  driver.mark_unconfirmed(now_ms());
  std::vector<entry_use> entries;
  for (auto* pc : {&client, &owners}) {
    entry_use e;
    e.process = (pc == &client ? base_name : owners_cfg.mesh.name) + " "
                + pc->addr.to_string() + " (cafmesh-client)";
    e.entry = "pure_client";
    e.origins = pc == &client ? "stream-routed senders (e.g. portal hubs)"
                              : "other senders (e.g. owner hubs, origin grain)";
    self->request(pc->routing, std::chrono::seconds(5), routing::rs_stats_atom::value)
      .receive(
        [&](const routing::routing_service_stats& x) {
          e.delivered = x.delivered;
          e.routing_default_calls = x.client_attempts;
        },
        [&](caf::error& err) {
          std::cerr << "cafmesh-client: the routing service's counters: " << sys.render(err)
                    << "\n";
        });
    entries.push_back(std::move(e));
  }
  driver.set_entries(std::move(entries));
  result.rep = driver.finish();
  result.exit_code = result.rep->exit_code;
  if (rs.on_report)
    rs.on_report(*result.rep);
  // Teardown, bounded: a hanging teardown cannot change the run's result.
  arm_teardown_watchdog("cafmesh-client", result.exit_code, rs.teardown_timeout_ms);
  stop_everything();
  return result;
}

} // namespace cafmesh::mainjob
