// The catalog repairs a lost directory entry when placement asks it to activate a grain that
// is already active here (docs/behaviour/routing.md#hubs: a ring change can lose the directory
// entry; the pod-hub owner's claim must then put it back, not answer an address nobody else
// can find).

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/directory.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/placement_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using testing::fixture;

namespace {

bool has_entry(fixture& fx, const directory_partition_actor& partition,
               const activation_address& a) {
  auto r = testing::ask<std::vector<activation_address>>(fx, partition, dir_entries_atom::value);
  fx.run();
  REQUIRE(r->ok());
  return std::find(r->value.begin(), r->value.end(), a) != r->value.end();
}

bool has_grain(fixture& fx, const directory_partition_actor& partition, const grain_id& g) {
  auto r = testing::ask<std::vector<activation_address>>(fx, partition, dir_entries_atom::value);
  fx.run();
  REQUIRE(r->ok());
  return std::any_of(r->value.begin(), r->value.end(),
                     [&](const activation_address& x) { return x.grain == g; });
}

} // namespace

TEST_CASE_FIXTURE(fixture, "catalog: activating a grain already active here registers it again, so a claim repairs a lost directory entry") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  w.add_silo("b");
  grain_id g{"podhub", "portal/user1/tab1"};
  auto first = testing::ask<activation_address>(*this, w.at(a).catalog, ct_activate_atom::value, g);
  run();
  REQUIRE(first->ok());
  CHECK(first->value.silo == a);
  auto owner = w.at(ring_owner(w.active_set(), g)).partition;
  REQUIRE(has_entry(*this, owner, first->value));
  // The entry is lost (as a hand-off that never arrived would lose it).
  auto un = testing::ask<caf::ok_atom>(*this, owner, dir_unregister_atom::value, first->value);
  run();
  REQUIRE(un->ok());
  REQUIRE_FALSE(has_grain(*this, owner, g));
  // Placement found no entry and asks the catalog again: the same activation answers and
  // the directory knows it again.
  auto again = testing::ask<activation_address>(*this, w.at(a).catalog, ct_activate_atom::value, g);
  run();
  REQUIRE(again->ok());
  CHECK(again->value == first->value);
  CHECK(has_entry(*this, owner, first->value));
  CHECK(w.catalog_of(a).activations.size() == 1);
  CHECK(w.catalog_of(a).stats.deactivated == 0);
}

TEST_CASE_FIXTURE(fixture, "catalog: an activation whose lost entry another activation took meanwhile deactivates and the winner is answered") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  grain_id g{"podhub", "portal/user2/tab1"};
  auto on_a = testing::ask<activation_address>(*this, w.at(a).catalog, ct_activate_atom::value, g);
  run();
  REQUIRE(on_a->ok());
  auto owner = w.at(ring_owner(w.active_set(), g)).partition;
  auto un = testing::ask<caf::ok_atom>(*this, owner, dir_unregister_atom::value, on_a->value);
  run();
  REQUIRE(un->ok());
  // Meanwhile B activates the grain and wins the empty entry.
  auto on_b = testing::ask<activation_address>(*this, w.at(b).catalog, ct_activate_atom::value, g);
  run();
  REQUIRE(on_b->ok());
  CHECK(on_b->value.silo == b);
  // A is asked again: it loses to B's activation, deactivates, and answers the winner.
  auto again = testing::ask<activation_address>(*this, w.at(a).catalog, ct_activate_atom::value, g);
  run();
  REQUIRE(again->ok());
  CHECK(again->value == on_b->value);
  CHECK(w.catalog_of(a).activations.empty());
  CHECK(w.catalog_of(a).stats.deactivated == 1);
  CHECK(has_entry(*this, owner, on_b->value));
}

TEST_CASE_FIXTURE(fixture, "catalog: an activation deactivated while its first registration is unanswered answers its activate waiter activation_deactivated at once") {
  placement_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  // A grain whose directory owner is B; B stalls, so A's registration stays unanswered.
  grain_id g;
  for (int i = 0;; ++i) {
    g = grain_id{"podhub", "portal/user" + std::to_string(i) + "/tab1"};
    if (ring_owner(w.active_set(), g) == b)
      break;
  }
  w.stall(b);
  auto first = testing::ask<activation_address>(*this, w.at(a).catalog, ct_activate_atom::value, g);
  run();
  REQUIRE_FALSE(first->done);
  REQUIRE(w.catalog_of(a).activations.size() == 1);
  // A's catalog deactivates everything (as at a stop) before the directory answered.
  auto all = testing::ask<caf::ok_atom>(*this, w.at(a).catalog, ct_deact_all_atom::value);
  run();
  REQUIRE(all->ok());
  CHECK(w.catalog_of(a).activations.empty());
  REQUIRE(first->done);
  CHECK(first->t_ms == all->t_ms);
  CHECK(first->code() == mesh_errc::activation_deactivated);
  CHECK(to_fault(first->err).text
        == "the activation of " + g.to_string() + " on silo " + a.to_string()
             + " deactivated before its registration completed");
}
