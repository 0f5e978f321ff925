// Fuzz target: a link frame as it comes off a peer's connection (wire_frame,
// actors/include/cafmesh/actors/message_center.hpp), its payload a flat record of one of the
// routing layer's shapes or a nested caf::message (actors/include/cafmesh/actors/frame_codec.hpp,
// routing/include/cafmesh/routing/frame_shapes.hpp). Invariants: a frame that decodes writes
// bytes that decode to a frame writing the same bytes; a payload record that does not decode
// leaves no payload behind.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "cafmesh/actors/frame_codec.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/frame_shapes.hpp"

#include "fuzz_binary.hpp"

using namespace cafmesh;
namespace fuzz = cafmesh::testing::fuzz;

namespace {

/// The actor system a link decodes with: the delivery vocabulary and the frame shapes.
struct decoder {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  decoder() {
    cfg.add_message_type<routing::address>("cafmesh.address");
    cfg.add_message_type<routing::envelope>("cafmesh.envelope");
    cfg.add_message_type<grain_id>("cafmesh.grain_id");
    cfg.add_message_type<silo_address>("cafmesh.silo_address");
    cfg.add_message_type<activation_tag>("cafmesh.activation_tag");
    cfg.set("scheduler.max-threads", 1);
    routing::register_frame_shapes();
    sys = std::make_unique<caf::actor_system>(cfg);
  }
};

caf::actor_system& system_of_decoder() {
  // Never destroyed: CAF's own statics may be gone by the time an exit handler would run.
  static auto* d = new decoder;
  return *d->sys;
}

std::vector<char> write(caf::actor_system& sys, wire_frame& f) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  fuzz::check(!sink(f), "a decoded frame writes");
  return buf;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& sys = system_of_decoder();
  auto bytes = reinterpret_cast<const char*>(data);
  {
    // The payload record alone, as the link reads it after a frame's header.
    caf::binary_deserializer source{sys, bytes, size};
    caf::message payload;
    if (load_frame_payload(source, payload))
      fuzz::check(payload.empty(), "a payload record that does not decode leaves no payload");
  }
  wire_frame f;
  caf::binary_deserializer source{sys, bytes, size};
  if (source(f))
    return 0;
  auto once = write(sys, f);
  wire_frame back;
  caf::binary_deserializer again{sys, once.data(), once.size()};
  fuzz::check(!again(back), "a written frame reads back");
  fuzz::check(write(sys, back) == once, "a frame read back writes the same bytes");
  return 0;
}
