// The runtime services at RuntimeServices 4000: the start subscribes the catalog and the
// pod-hub claimer to membership, registers the catalog at the message centre, hands it to
// placement and publishes Joining with the silo's manifest (with the hub table's patterns:
// docs/behaviour/routing.md#unserved-addresses). A stop blocks application messages at the
// message centre, then stops the directory partition.

#include "silo_component.hpp"

#include <caf/send.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/application_hub.hpp"

namespace cafmesh::lifecycle::components {

namespace {

namespace ev = silo_event_text;

/// The application's hub factory when it is a hub table, else null.
caf::actor hub_table_of(const silo_options& opts) {
  return opts.hubs_is_table ? caf::actor_cast<caf::actor>(opts.hubs) : caf::actor{};
}

} // namespace

extern const silo_component runtime_services{
  [](silo_wiring& w) {
    if (auto table = hub_table_of(w.opts))
      caf::anon_send(w.s.agent, mb_subscribe_atom::value, table);
  },
  [](silo_wiring& w) {
    auto centre = w.s.centre;
    auto agent = w.s.agent;
    auto partition = w.s.partition;
    auto placement = w.s.placement;
    auto catalog = w.s.catalog;
    auto claimer = w.s.claimer;
    auto registry = w.s.registry;
    auto hub_table = hub_table_of(w.opts);
    const bool is_gateway = w.opts.gateway;
    auto lg = w.lg;
    w.subscribe(
      stages::runtime_services, "runtime-services",
      [=](stage_self self, bool, stage_promise rp) mutable {
        for (auto& sub : {catalog, caf::actor_cast<caf::actor>(claimer)})
          caf::anon_send(agent, mb_subscribe_atom::value, sub);
        caf::anon_send(centre, mc_register_atom::value, component::catalog, catalog);
        caf::anon_send(centre, mc_register_atom::value, component::activation, catalog);
        // Calls to this silo's activations go from placement to the catalog directly.
        caf::anon_send(placement, pl_catalog_atom::value, catalog);
        lg->info(ev::runtime_started);
        auto join = [=](std::vector<grain_type_info> manifest) mutable {
          call(
            self, agent, 0,
            [=](caf::error e) mutable {
              if (e) {
                lg->error("joining the cluster failed: " + to_fault(e).render());
                rp.deliver(std::move(e));
                return;
              }
              lg->info(ev::joining_published);
              rp.deliver(caf::ok_atom::value);
            },
            mb_join_atom::value, std::move(manifest), is_gateway);
        };
        if (!hub_table) {
          join(registry->manifest());
          return;
        }
        request_any(
          self, hub_table, 0, caf::make_message(routing::ht_patterns_atom::value),
          [=](caf::message m) mutable {
            auto manifest = registry->manifest();
            if (m.match_elements<std::vector<std::string>>())
              for (auto& e : routing::hub_pattern_manifest(m.get_as<std::vector<std::string>>(0)))
                manifest.push_back(std::move(e));
            join(std::move(manifest));
          },
          [=](caf::error) mutable { join(registry->manifest()); });
      },
      [=](stage_self self, bool, stage_promise rp) mutable {
        call(
          self, centre, 0,
          [=](caf::error e) mutable {
            log_step(*lg, e, "message centre block", ev::messages_blocked);
            call(
              self, centre, 0,
              [=](caf::error) mutable {
                self->send_exit(partition, caf::exit_reason::user_shutdown);
                lg->info(ev::directory_stopped);
                rp.deliver(caf::ok_atom::value);
              },
              mc_unregister_atom::value, component::directory);
          },
          mc_block_atom::value, true);
      });
  },
  nullptr,
};

} // namespace cafmesh::lifecycle::components
