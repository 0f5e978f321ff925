#include "cafmesh/lifecycle/client_builder.hpp"

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/net_process.hpp"
#include "hosting_steps.hpp"
#include "mesh_process_state.hpp"

namespace cafmesh::lifecycle {

client::client(std::unique_ptr<state> st) : mesh_process(std::move(st)) {
  // nop
}

namespace {

/// The pure client's host (docs/behaviour/lifecycle.md#the-host without a lifecycle subject: steps
/// 1, 4 and 5).
host_actor spawn_client_host(caf::actor_system& sys, const config::mesh_config& cfg,
                             const pure_client& pc, const stopping_recipient_actor& probe,
                             const net_link_actor& link) {
  host_options ho;
  ho.silo_name = pc.addr.to_string();
  ho.recipients.push_back(caf::actor_cast<stopping_recipient_actor>(pc.routing));
  if (probe)
    ho.recipients.push_back(probe);
  // A network link gives its join up when the client stops before it joined.
  if (link)
    ho.recipients.push_back(caf::actor_cast<stopping_recipient_actor>(link));
  ho.budgets = cfg.host;
  return spawn_host(sys, std::move(ho));
}

} // namespace

const pure_client& client::components() const {
  return st_->client_components;
}

const net_endpoint& client::endpoint() const {
  return st_->endpoint;
}

client_builder::client_builder(caf::actor_system& sys) : sys_(sys) {
  cfg_.mesh.role = config::process_role::pure_client; // the embedded default
}

client_builder& client_builder::config(config::mesh_config cfg) {
  cfg_ = std::move(cfg);
  config_given_ = true;
  return *this;
}

client_builder& client_builder::config_file(std::string path) {
  config_path_ = std::move(path);
  config_given_ = true;
  return *this;
}

client_builder& client_builder::hub(std::string pattern, routing::hub_handler handler) {
  return hub(std::move(pattern), routing::as_async(std::move(handler)));
}

client_builder& client_builder::hub(std::string pattern, routing::async_hub_handler handler) {
  hubs_.emplace_back(std::move(pattern), std::move(handler));
  return *this;
}

client_builder& client_builder::cluster(in_process_cluster_ptr cluster) {
  cluster_ = std::move(cluster);
  network_ = false;
  return *this;
}

client_builder& client_builder::network() {
  network_ = true;
  cluster_ = nullptr;
  return *this;
}

client_builder& client_builder::generation(uint64_t g) {
  generation_ = g;
  return *this;
}

client_builder& client_builder::log_level(log::level lvl) {
  log_level_ = lvl;
  return *this;
}

client_builder& client_builder::wait_for_gateway(bool on) {
  wait_for_gateway_ = on;
  return *this;
}

client_builder& client_builder::admin(std::string host, uint16_t port) {
  admin_ = config::admin_section{true, std::move(host), port};
  return *this;
}

client_builder& client_builder::failure_observer(caf::actor observer) {
  failure_observer_ = std::move(observer);
  return *this;
}

client_builder& client_builder::override_options(std::function<void(pure_client_options&)> f) {
  overrides_.push_back(std::move(f));
  return *this;
}

caf::expected<client> client_builder::build() {
  auto cfg = hosting::checked_config(cfg_, config_path_, config::process_role::pure_client,
                                     "client_builder");
  if (!cfg)
    return cfg.error();
  if (!network_ && !cluster_)
    return to_error(fault{mesh_errc::config_invalid,
                          "client_builder: a pure client needs a cluster: cluster(c) for "
                          "silos in this process, network() for silos over CAF io"});
  hosting::apply_embedded_defaults(*cfg, log_level_, config_given_);
  auto admin = prepare_admin(sys_, *cfg, admin_);
  if (!admin)
    return admin.error();
  auto st = std::make_unique<mesh_process::state>();
  st->sys = &sys_;
  st->role = "pure_client";
  pure_client_options po;
  po.cfg = *cfg;
  std::vector<caf::actor> endpoint;
  if (network_) {
    auto ep = start_net_link(sys_, cfg->network, cfg->membership,
                             generation_ ? *generation_ : hosting::wall_generation());
    if (!ep) {
      if (admin->probe)
        caf::anon_send_exit(admin->probe, caf::exit_reason::user_shutdown);
      return ep.error();
    }
    po.self = ep->addr;
    po.link = ep->link;
    po.oracle = ep->oracle;
    endpoint = {caf::actor_cast<caf::actor>(ep->link), caf::actor_cast<caf::actor>(ep->oracle)};
    st->endpoint = *ep;
  } else {
    st->cluster = cluster_;
    po.self = cluster_->next_address();
    if (generation_)
      po.self.generation = *generation_;
    po.link = cluster_->link();
    po.oracle = cluster_->oracle();
  }
  po.failure_observer = failure_observer_;
  for (auto& f : overrides_)
    f(po);
  auto pc = spawn_pure_client(sys_, po);
  auto table = routing::spawn_hub_table(sys_, routing::hub_key_form::node_prefix, cfg->routing);
  caf::anon_send(table, routing::ht_routing_atom::value, pc.routing, caf::actor{});
  auto host = spawn_client_host(sys_, *cfg, pc, admin->probe,
                                network_ ? st->endpoint.link : net_link_actor{});
  auto entry = hosting::spawn_entry(sys_, *cfg, pc.addr, pc.routing, caf::actor{});
  st->client_components = pc;
  st->await_gateway = wait_for_gateway_;
  st->addr = pc.addr;
  st->host = host;
  st->routing = pc.routing;
  st->hub_table = table;
  st->entry = entry;
  st->owned = {caf::actor_cast<caf::actor>(table),
               caf::actor_cast<caf::actor>(entry),
               caf::actor_cast<caf::actor>(host),
               pc.routing,
               caf::actor_cast<caf::actor>(pc.streams),
               caf::actor_cast<caf::actor>(pc.agent),
               pc.centre};
  st->owned.insert(st->owned.end(), endpoint.begin(), endpoint.end());
  if (admin->probe)
    st->owned.push_back(caf::actor_cast<caf::actor>(admin->probe));
  if (auto err = hosting::add_hubs(table, hubs_)) {
    release_actors(*st, false);
    st->torn_down = true;
    return err;
  }
  admin_sources src{st->role,     pc.addr,      host,     caf::actor{}, pc.routing,
                    caf::actor{}, caf::actor{}, pc.agent, caf::actor{}, st->endpoint.link};
  admin->serve_into(sys_, std::move(src), st->admin);
  return client{std::move(st)};
}

} // namespace cafmesh::lifecycle
