#pragma once

/// @file
/// Building a silo (docs/hosting.md): `silo_builder{sys}` with the configuration, the
/// application's grain types and hubs, then `build()`; the `silo` it answers is a
/// `mesh_process` (start, stop, hubs, entry) that also reaches its grains (`grain<I>(key)`).
/// A grain factory may take a `grain_context` (grain_context.hpp) to call other grains, and a
/// hub handler a `grain_factory`: both are bound to the silo's placement service at `build()`.
///
/// ```
/// auto silo = cafmesh::lifecycle::silo_builder{sys}.grain<greeter>("greeter", make).build();
/// silo->start();
/// if (auto err = silo->when_active()) ...
/// ```
///
/// Transport: by default the silo runs on an `in_process_cluster` of its own (one process,
/// no sockets); `cluster(c)` puts several on one; `network()` runs it over CAF io on
/// `network.host:network.port`, joining the primary at `network.primary_port` (or hosting
/// the development oracle when that is 0). `build()` validates the configuration exactly as
/// the JSON loader does (same messages, same JSON pointers) and fails `config_invalid` with
/// them.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/lifecycle/grain_context.hpp"
#include "cafmesh/lifecycle/grain_ref.hpp"
#include "cafmesh/lifecycle/in_process_cluster.hpp"
#include "cafmesh/lifecycle/mesh_process.hpp"
#include "cafmesh/lifecycle/silo_components.hpp"
#include "cafmesh/lifecycle/typed_grain.hpp"

namespace cafmesh::testing {
struct builder_access;
} // namespace cafmesh::testing

namespace cafmesh::lifecycle {

/// An asynchronous hub handler (application_hub.hpp) that also gets the silo's grain factory.
using grain_hub_handler
  = std::function<void(caf::event_based_actor* self, const routing::envelope& d,
                       routing::hub_responder r, const grain_factory& grains)>;

/// A silo an application embeds.
class silo : public mesh_process {
public:
  /// A typed reference to the grain `(type, key)` of interface `Interface` (grain_ref.hpp),
  /// called through this silo's placement service.
  template <class Interface>
  grain_ref<Interface> grain(const std::string& type, const std::string& key) const {
    return grain_ref<Interface>{placement(), grain_id{type, key}};
  }
  /// The silo's grain factory (grain_context.hpp): references called through its placement.
  grain_factory grains() const { return grain_factory{placement()}; }
  /// The placement service (docs/behaviour/directory-and-placement.md#placement) grain calls
  /// go through.
  const caf::actor& placement() const;
  /// Every component of the silo (tests and diagnostics).
  const silo_components& components() const;
  /// Over CAF io: the network endpoint (link, oracle or its relay); in process: empty.
  const net_endpoint& endpoint() const;

private:
  friend class silo_builder;
  explicit silo(std::unique_ptr<state> st);
};

/// Builds a `silo` (see the file comment).
class silo_builder {
public:
  explicit silo_builder(caf::actor_system& sys);

  /// The whole configuration (default: the defaults of every section). Its `log` section
  /// is applied only when `log_level` was not called.
  silo_builder& config(config::mesh_config cfg);
  /// Reads the configuration from a JSON file at `build()`.
  silo_builder& config_file(std::string path);
  /// Registers a typed grain type (typed_grain.hpp). `factory(self, id)` answers an
  /// `Interface::behavior_type`; so does `factory(self, ctx)` taking a `grain_context`, whose
  /// `grain<I>(type, key)` calls other grains through this silo (grain_context.hpp).
  template <class Interface, class Factory>
  silo_builder& grain(std::string type, Factory factory, grain_options opts = {}) {
    grain_types_.push_back([type = std::move(type), factory = std::move(factory),
                            opts = std::move(opts)](grain_registry& reg,
                                                    const detail::placement_slot_ptr& slot) {
      return add_typed_grain<Interface>(reg, type,
                                        detail::with_grain_context<Interface>(factory, slot), opts);
    });
    return *this;
  }
  /// Registers an untyped grain type: `add(registry)` answers false when it could not.
  silo_builder& grains(std::function<bool(grain_registry&)> add);
  /// An application hub (application_hub.hpp): a handler answering at once, or an
  /// asynchronous one ending each delivery through its responder.
  silo_builder& hub(std::string pattern, routing::hub_handler handler);
  silo_builder& hub(std::string pattern, routing::async_hub_handler handler);
  /// An asynchronous hub whose handler also gets the silo's `grain_factory` (grain_context.hpp)
  /// to call grains.
  silo_builder& hub(std::string pattern, grain_hub_handler handler);
  /// The silo's path resolver (docs/architecture.md#one-silo); default: `spawn_node_path_resolver`.
  silo_builder& path_resolver(caf::actor resolver);
  /// Runs the silo on `cluster` (shared with other silos and clients in this system).
  silo_builder& cluster(in_process_cluster_ptr cluster);
  /// Runs the silo over CAF io (see the file comment).
  silo_builder& network();
  /// The silo's generation (docs/behaviour/envelope.md#silo-addresses-and-activations); default:
  /// the wall-clock ms.
  silo_builder& generation(uint64_t g);
  /// No correlating entry (`entry()` stays null): an application that accounts for every
  /// pod hub and routing call of its silo (the demo, `cafmesh-node`), and test beds that
  /// account for every actor and grain activation.
  silo_builder& without_entry();
  /// Tells `observer` every failure of an answer-suppressed delivery routed by this silo's
  /// router core, which no NACK may carry (docs/behaviour/routing.md#nacks step 1):
  /// `(ep_event_atom, "suppressed", delivery id, uint8_t verdict, text)` one-way
  /// (`router_core_options::failure_observer`), e.g. to a traffic driver keeping an outcome
  /// ledger. Default: none.
  silo_builder& failure_observer(caf::actor observer);
  /// The silo's node hubs come from `factory` (a `hub_factory_actor`,
  /// docs/architecture.md#one-silo) instead of the hub table `hub(...)` fills; the hubs
  /// registered with `hub(...)` are then not served, and the silo's membership row publishes
  /// no hub patterns, so no silo can prove an address unserved
  /// (docs/behaviour/routing.md#unserved-addresses). The application owns `factory`.
  silo_builder& hub_factory(caf::actor factory);
  /// cafmesh's log level on its sink (default for an embedded silo: `warning`).
  silo_builder& log_level(log::level lvl);
  /// Serves the admin endpoint (admin_endpoint.hpp) on `host:port` (0: the OS chooses; read
  /// it from `admin()`), whatever the configuration's `admin` section says.
  silo_builder& admin(std::string host = "127.0.0.1", uint16_t port = 0);

  /// Validates, spawns and wires the silo; nothing has started yet.
  caf::expected<silo> build();

private:
  /// Test beds name a silo's address and change its assembled options
  /// (tests/support/include/cafmesh/testing/builder_access.hpp).
  friend struct cafmesh::testing::builder_access;

  /// In-process only: the silo's exact address instead of the cluster's next one.
  silo_builder& at(silo_address addr);
  /// Changes the assembled options right before the silo is spawned; over CAF io the
  /// endpoint sets `self`, `link` and `oracle` after it.
  silo_builder& override_options(std::function<void(silo_options&)> f);

  caf::actor_system& sys_;
  config::mesh_config cfg_;
  std::string config_path_;
  std::vector<std::function<bool(grain_registry&, const detail::placement_slot_ptr&)>> grain_types_;
  /// Each hub's handler, made at `build()` for the silo's placement service.
  std::vector<std::pair<
    std::string, std::function<routing::async_hub_handler(const detail::placement_slot_ptr&)>>>
    hubs_;
  caf::actor resolver_;
  in_process_cluster_ptr cluster_;
  bool network_ = false;
  std::optional<uint64_t> generation_;
  std::optional<silo_address> at_;
  bool with_entry_ = true;
  caf::actor failure_observer_;
  caf::actor hub_factory_;
  std::optional<log::level> log_level_;
  std::optional<config::admin_section> admin_;
  bool config_given_ = false;
  std::vector<std::function<void(silo_options&)>> overrides_;
};

} // namespace cafmesh::lifecycle
