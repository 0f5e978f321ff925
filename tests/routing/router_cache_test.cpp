// Cacheable resolutions (docs/behaviour/routing.md#cacheable-resolutions): the router core
// keeps a found node the resolver marked cacheable and drops it on a membership change, a
// fault of that node's hub or `rc_forget`.

#include "router_fakes.hpp"

using namespace cafmesh::testing::router_bed;
using cafmesh::testing::fixture;

namespace {

/// Routes one delivery `id` to `node/Org/Acme` and runs until the core is idle.
void one(fixture& fx, bed& b, const std::string& id) {
  b.route(bed::make(id, "node/Org/Acme"));
  fx.run();
}

} // namespace

TEST_CASE_FIXTURE(fixture, "router cache: a cacheable resolution is asked once per target until rc_forget, a hub fault or a new membership version drops it") {
  bed b(*this);
  b.start();
  one(*this, b, "d1");
  one(*this, b, "d2");
  CHECK(b.res().calls.size() == 1);
  CHECK(b.grain().attempts.size() == 2);
  // Explicit invalidation.
  caf::anon_send(b.rc, rc_forget_atom::value, std::string{"node/Org/Acme"});
  one(*this, b, "d3");
  CHECK(b.res().calls.size() == 2);
  // A transient fault of the hub: the failing leg retries, the next leg resolves afresh.
  b.script("messagehub/Org/Acme",
           {answer::err(fault{mesh_errc::directory_unstable, "directory is moving"})});
  one(*this, b, "d4");
  REQUIRE(run_until([&] { return b.stats().landed == 4; }, std::chrono::minutes(1)));
  one(*this, b, "d5");
  CHECK(b.res().calls.size() == 3);
  // A new membership version.
  membership_snapshot v;
  v.version = 7;
  caf::anon_send(b.rc, mb_snapshot_atom::value, v);
  one(*this, b, "d6");
  CHECK(b.res().calls.size() == 4);
  caf::anon_send(b.rc, mb_snapshot_atom::value, v); // the same version keeps it
  one(*this, b, "d7");
  CHECK(b.res().calls.size() == 4);
  CHECK(b.stats().landed == 7);
  CHECK(b.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "router cache: a resolution not marked cacheable is asked for every leg") {
  bed b(*this);
  b.start();
  b.res().cacheable = false;
  one(*this, b, "d1");
  one(*this, b, "d2");
  one(*this, b, "d3");
  CHECK(b.res().calls.size() == 3);
  CHECK(b.stats().landed == 3);
}

TEST_CASE_FIXTURE(fixture, "router cache: a path not found is not cached") {
  bed b(*this);
  b.start();
  b.route(bed::make("d1", "user/zed"));
  run();
  b.route(bed::make("d2", "user/zed"));
  run();
  CHECK(b.res().calls.size() == 2);
  CHECK(b.local_nacks().size() == 2);
}
