// docs/hosting.md#chaos-for-your-own-grains: a service of its own (an account grain behind an
// answering hub) under seeded chaos — stops, kills, stalls, partitions — in virtual time.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <string>

#include <caf/all.hpp>

#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/testing/service_chaos.hpp"

using namespace cafmesh;
using deposit_atom = caf::atom_constant<caf::atom("deposit")>;

/// The grain `account/{id}`: `(deposit_atom, amount) -> balance`.
using account = caf::typed_actor<caf::replies_to<deposit_atom, int64_t>::with<int64_t>>;

/// The service: account grains behind the hub `node/accounts/{id}`, whose request payload is
/// the amount and whose answer the new balance.
void with_accounts(lifecycle::silo_builder& b) {
  b.grain<account>("account", [](caf::event_based_actor*, const grain_id&)
                                -> account::behavior_type {
     auto balance = std::make_shared<int64_t>(0);
     return {[balance](deposit_atom, int64_t n) { return *balance += n; }};
   })
    .hub("node/accounts/*", [](caf::event_based_actor* self, const routing::envelope& d,
                               routing::hub_responder r, const lifecycle::grain_factory& g) {
      auto id = d.target.id.substr(d.target.id.rfind('/') + 1);
      g.grain<account>("account", id)
        .request(self, deposit_atom::value, std::stoll(d.payload_json))
        .then([r](int64_t balance) { r.respond({std::to_string(balance)}); },
              [r](caf::error& err) { r.fail(err); });
    });
}

TEST_CASE("accounts under chaos: every request ends once, failures only by a kill") {
  testing::service_chaos_options o;
  o.silos = {"a", "b", "c"};
  o.configure = with_accounts;
  o.next_request = [](uint64_t, std::mt19937_64& rng) {
    return testing::service_request{"node/accounts/" + std::to_string(rng() % 20),
                                    std::to_string(1 + rng() % 100)};
  };
  // A balance holds at least the last deposit (a kill loses the grains' state).
  o.check = [](const testing::service_request& req, const std::string& answer) {
    return std::stoll(answer) >= std::stoll(req.payload_json) ? "" : "balance below deposit";
  };
  for (auto seed : testing::service_chaos_seeds(1, 3)) { // CAFMESH_CHAOS_SEED=n: only n
    auto result = testing::run_service_chaos(seed, o);
    INFO(result.render()); // the seed, its schedule, the counts, what broke, how to replay
    CHECK(result.ok());
  }
}
