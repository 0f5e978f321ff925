// The seam setters of `builder_access` (docs/testing.md#builder-access): the one place of the
// test support that sees the library's private `silo_seams` (tests/CMakeLists.txt adds
// lifecycle/src as a private include directory of `cafmesh_testing`).

#include "cafmesh/testing/builder_access.hpp"

#include <memory>
#include <utility>

#include "silo_seams.hpp"

namespace cafmesh::testing {

namespace {

/// A copy of the seams of `so` (the production defaults if none), changed by `f` and set back.
template <class F>
void change_seams(lifecycle::silo_options& so, F f) {
  auto seams = so.seams ? std::make_shared<lifecycle::silo_seams>(*so.seams)
                        : std::make_shared<lifecycle::silo_seams>();
  f(*seams);
  so.seams = std::move(seams);
}

} // namespace

void builder_access::wrap_grain_port(
  lifecycle::silo_options& so,
  std::function<routing::grain_port_actor(routing::grain_port_actor)> f) {
  change_seams(so, [&](lifecycle::silo_seams& x) { x.wrap_grain_port = std::move(f); });
}

void builder_access::wrap_gateway(lifecycle::silo_options& so,
                                  std::function<caf::actor(caf::actor)> f) {
  change_seams(so, [&](lifecycle::silo_seams& x) { x.wrap_gateway = std::move(f); });
}

void builder_access::without_quiescence_participant(lifecycle::silo_options& so) {
  change_seams(so, [](lifecycle::silo_seams& x) { x.subscribe_quiescence = false; });
}

} // namespace cafmesh::testing
