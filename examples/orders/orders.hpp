#pragma once

// The orders service's application, shared by its silo process and its tests: an inventory
// grain per SKU, an order grain per order that reserves stock on the inventory grain inside
// its turn (a grain calling a grain through its `grain_context`), and the hub
// `node/orders/{order}` that answers requests by asking the order grain.

#include <cstdint>
#include <memory>
#include <string>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "cafmesh/lifecycle/hosting.hpp"

namespace orders {

using reserve_atom = caf::atom_constant<caf::atom("reserve")>;
using place_atom = caf::atom_constant<caf::atom("place")>;

/// Every SKU's stock when its inventory grain activates (the example keeps no state store).
constexpr int64_t initial_stock = 1000000;

/// The inventory grain `inventory/{sku}`: `(reserve_atom, qty) -> (reserved, left)` takes
/// `qty` from the stock when there is enough.
using inventory = caf::typed_actor<caf::replies_to<reserve_atom, int64_t>::with<bool, int64_t>>;

/// The order grain `order/{id}`: `(place_atom, sku, qty) -> JSON` reserves `qty` of `sku`
/// and answers `{"order":id,"sku":sku,"reserved":bool,"left":n,"lines":n}`.
using order
  = caf::typed_actor<caf::replies_to<place_atom, std::string, int64_t>::with<std::string>>;

/// One activation of `inventory/{sku}`.
inline inventory::behavior_type inventory_grain(caf::event_based_actor*,
                                                const cafmesh::grain_id&) {
  auto stock = std::make_shared<int64_t>(initial_stock);
  return {[stock](reserve_atom, int64_t qty) {
    bool ok = qty > 0 && qty <= *stock;
    if (ok)
      *stock -= qty;
    return caf::make_result(ok, *stock);
  }};
}

/// One activation of `order/{id}`: each `place` calls the inventory grain and answers once
/// it answered. The turn lasts until then, so the order takes no other message meanwhile.
inline order::behavior_type order_grain(caf::event_based_actor* self,
                                        const cafmesh::lifecycle::grain_context& ctx) {
  auto lines = std::make_shared<int64_t>(0); // the lines reserved so far
  return {[self, ctx, lines](place_atom, const std::string& sku, int64_t qty) {
    auto rp = self->make_response_promise<std::string>();
    ctx.grain<inventory>("inventory", sku)
      .request(self, reserve_atom::value, qty)
      .then(
        [rp, ctx, lines, sku](bool reserved, int64_t left) mutable {
          if (reserved)
            ++*lines;
          rp.deliver(nlohmann::json{{"order", ctx.id().key},
                                    {"sku", sku},
                                    {"reserved", reserved},
                                    {"left", left},
                                    {"lines", *lines}}
                       .dump());
        },
        [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
    return rp;
  }};
}

/// The hub `node/orders/{id}`: a request with payload `{"sku":"...","qty":n}` places that
/// line on the grain `order/{id}` and is answered with the order grain's JSON.
inline void orders_hub(caf::event_based_actor* self, const cafmesh::routing::envelope& d,
                       cafmesh::routing::hub_responder r,
                       const cafmesh::lifecycle::grain_factory& grains) {
  auto id = d.target.id.substr(d.target.id.find('/') + 1); // node/orders/{id}
  auto line = nlohmann::json::parse(d.payload_json, nullptr, false);
  if (!line.is_object() || !line["sku"].is_string() || !line["qty"].is_number_integer()) {
    r.fail("expected {\"sku\":\"...\",\"qty\":n}");
    return;
  }
  grains.grain<order>("order", id)
    .request(self, place_atom::value, line["sku"].get<std::string>(), line["qty"].get<int64_t>())
    .then([r](const std::string& json) { r.respond({json}); },
          // A transient fault (a silo of the call is leaving) reaches the sender as a verdict
          // it may send again on.
          [r](caf::error& err) { r.fail(err); });
}

/// Adds the orders service's grain types and hub to a silo being built.
inline cafmesh::lifecycle::silo_builder& with_orders(cafmesh::lifecycle::silo_builder& b) {
  return b.grain<inventory>("inventory", inventory_grain)
    .grain<order>("order", order_grain)
    .hub("node/orders/*", orders_hub);
}

} // namespace orders
