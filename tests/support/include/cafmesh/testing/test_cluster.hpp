#pragma once

/// @file
/// `test_cluster`: a service's silos and pure clients in virtual time on a simulated network
/// with seeded link latency (docs/hosting.md#testing-a-service-in-virtual-time). Silos are
/// built by `silo_builder` and clients by `client_builder`, exactly as in production, on
/// one `sim_network` and one membership oracle; each is started through its host and the
/// cluster runs until every process sees every live silo Active. Stop one gracefully, kill
/// one, stall one, partition two, and send requests from a client whose outcomes are recorded with
/// the virtual time they arrived. Part of cafmesh::testing (installed).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/builder_access.hpp"

namespace cafmesh::testing {

/// The link latency of a `test_cluster`'s network: every message draws a latency in
/// [`min_ms`, `max_ms`] from a PRNG seeded with `seed` (sim_network.hpp), so a run repeats
/// exactly. All zero: messages cross at once.
struct link_latency {
  int64_t min_ms = 0;
  int64_t max_ms = 0;
  uint64_t seed = 1;
};

/// Silos and pure clients of one service on a simulated network (see the file comment).
/// Declare it after the `fixture` it runs on; it names every process, silo or client, by
/// the name it was added with.
class test_cluster {
public:
  /// A cluster on `fx` whose links take `latency`, and whose oracle declares a silent
  /// (killed) silo Dead after `failure_detection`.
  explicit test_cluster(fixture& fx, link_latency latency = {},
                        std::chrono::milliseconds failure_detection = std::chrono::seconds(10))
    : fx_(fx) {
    sim_network_config nc;
    nc.seed = latency.seed;
    nc.link_latency_min_ms = latency.min_ms;
    nc.link_latency_max_ms = latency.max_ms;
    net_ = fx_.track(spawn_sim_network(fx_.sys, nc));
    auto oracle = fx_.track(spawn_membership_oracle(fx_.sys, {failure_detection.count()}, net_));
    cluster_ = std::make_shared<lifecycle::in_process_cluster>(net_, oracle);
  }

  test_cluster(const test_cluster&) = delete;
  test_cluster& operator=(const test_cluster&) = delete;

  /// Builds the silo `name` on this cluster with `configure` (its grains and hubs, as in
  /// production), starts it and runs until every process sees it Active. Throws
  /// `std::logic_error` when it cannot be built or started.
  lifecycle::silo& add_silo(const std::string& name,
                            std::function<void(lifecycle::silo_builder&)> configure = {},
                            config::mesh_config cfg = {}) {
    cfg.mesh.name = name;
    lifecycle::silo_builder b{fx_.sys};
    b.config(std::move(cfg)).cluster(cluster_);
    builder_access::at(b, silo_address{name, 11111, ++generation_});
    if (configure)
      configure(b);
    auto built = b.build();
    if (!built)
      throw std::logic_error("test_cluster: silo " + name + ": "
                             + to_fault(built.error()).render());
    auto& s = *(silos_[name] = std::make_unique<lifecycle::silo>(std::move(*built)));
    start(name, s);
    return s;
  }

  /// Builds the pure client `name` on this cluster, starts it and runs until it sees every
  /// live silo Active. Throws `std::logic_error` when it cannot be built or started.
  lifecycle::client& add_client(const std::string& name, config::mesh_config cfg = {}) {
    cfg.mesh.role = config::process_role::pure_client;
    cfg.mesh.name = name;
    auto built = lifecycle::client_builder{fx_.sys}
                   .config(std::move(cfg))
                   .cluster(cluster_)
                   .generation(++generation_)
                   .build();
    if (!built)
      throw std::logic_error("test_cluster: client " + name + ": "
                             + to_fault(built.error()).render());
    auto& c = *(clients_[name] = std::make_unique<lifecycle::client>(std::move(*built)));
    start(name, c);
    return c;
  }

  /// The silo `name`.
  lifecycle::silo& silo(const std::string& name) { return *silos_.at(name); }

  /// The pure client `name`.
  lifecycle::client& client(const std::string& name) { return *clients_.at(name); }

  /// The address of the silo or client `name`.
  const silo_address& address(const std::string& name) { return process(name).address(); }

  /// Begins the graceful stop of `name` (its host's stop sequence: the silo leaves
  /// membership, drains and hands over its grains) and returns at once; the reply is done
  /// when the stop completed. Run the fixture to let it proceed.
  std::shared_ptr<reply<caf::ok_atom>> stop(const std::string& name) {
    auto& p = process(name);
    leaves(name);
    return ask(fx_, p.host(), lifecycle::host_halt_atom::value, true);
  }

  /// Kills `name`: from now on the network discards its frames, those already on the wire
  /// included, and its actors exit without a stop (as a crashed process). Its peers learn
  /// it is gone from membership, after the failure detection.
  void kill(const std::string& name) {
    auto addr = process(name).address();
    leaves(name);
    caf::anon_send(net_, sim_kill_atom::value, addr);
    fx_.run();
    silos_.erase(name); // destroying the handle exits every actor of the process
    clients_.erase(name);
    fx_.run();
  }

  /// Holds every frame between `a` and `b` (both directions) until `heal(a, b)`.
  void partition(const std::string& a, const std::string& b) {
    caf::anon_send(net_, sim_partition_atom::value, address(a), address(b));
    fx_.run();
  }

  /// Ends the partition between `a` and `b`; what it held is delivered in link order.
  void heal(const std::string& a, const std::string& b) {
    caf::anon_send(net_, sim_heal_atom::value, address(a), address(b));
    fx_.run();
  }

  /// Holds every frame to and from the silo `name` until `unstall(name)`, unseen by
  /// membership: its peers still see it Active, its actors still run, it answers nothing
  /// meanwhile (a process paused, or a network that stopped carrying its frames).
  void stall(const std::string& name) {
    caf::anon_send(net_, sim_stall_atom::value, address(name), false);
    fx_.run();
  }

  /// Ends the stall of `name`; what it held is delivered in link order.
  void unstall(const std::string& name) {
    caf::anon_send(net_, sim_unstall_atom::value, address(name));
    fx_.run();
  }

  /// Sends a request for `target` (an address path, e.g. `node/orders/o1`) with
  /// `payload_json` through the correlating entry of `from` (a silo or client), sent again
  /// while its failure is resendable (`request_options{true}`). The reply holds the
  /// answer's payload, or the `delivery_error` (`routing::delivery_error_of(r->err)`).
  std::shared_ptr<reply<std::string>>
  request(const std::string& from, const std::string& target, std::string payload_json,
          std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    return ask<std::string>(fx_, process(from).entry(), routing::ce_request_atom::value,
                            routing::address::from(target), std::string{"request"},
                            std::move(payload_json), static_cast<int64_t>(timeout.count()),
                            true);
  }

  /// The simulated network (fault injection and its trace: sim_network.hpp).
  const sim_network_actor& network() const { return net_; }

private:
  lifecycle::mesh_process& process(const std::string& name) {
    if (auto i = silos_.find(name); i != silos_.end())
      return *i->second;
    if (auto i = clients_.find(name); i != clients_.end())
      return *i->second;
    throw std::logic_error("test_cluster: no process " + name);
  }

  /// Starts `p` through its host, then runs until every started process sees every live
  /// silo Active (placement places only on silos it sees Active).
  template <class Process>
  void start(const std::string& name, Process& p) {
    auto r = ask(fx_, p.host(), lifecycle::host_start_atom::value);
    if (!fx_.run_until([&] { return r->done; }, std::chrono::minutes(1)) || !r->ok())
      throw std::logic_error("test_cluster: " + name + " did not start");
    if (silos_.count(name))
      live_.insert(p.address());
    watchers_[name] = p.components().agent;
    for (int i = 0; i < 600; ++i) {
      if (all_see_live())
        return;
      fx_.run_for(std::chrono::milliseconds(100));
    }
    throw std::logic_error("test_cluster: the silos never all saw " + name);
  }

  /// `name` is stopping or gone: no longer expected to be seen, nor asked what it sees.
  void leaves(const std::string& name) {
    live_.erase(process(name).address());
    watchers_.erase(name);
  }

  bool all_see_live() {
    for (auto& [name, agent] : watchers_) {
      auto view = ask<membership_snapshot>(fx_, agent, mb_get_atom::value);
      if (!fx_.run_until([&] { return view->done; }, std::chrono::minutes(1)) || !view->ok())
        return false;
      for (auto& s : live_)
        if (view->value.status_of(s) != silo_status::active)
          return false;
    }
    return true;
  }

  fixture& fx_;
  sim_network_actor net_;
  lifecycle::in_process_cluster_ptr cluster_;
  std::map<std::string, std::unique_ptr<lifecycle::silo>> silos_;
  std::map<std::string, std::unique_ptr<lifecycle::client>> clients_;
  std::set<silo_address> live_; ///< silos started and neither stopping nor killed
  std::map<std::string, membership_agent_actor> watchers_; ///< processes started and live
  uint64_t generation_ = 0;
};

} // namespace cafmesh::testing
