// Fuzz target: CAF binary deserialisation of the NACK payload `delivery_failure`
// (routing/include/cafmesh/routing/envelope.hpp) and what a sender makes of it
// (routing/include/cafmesh/routing/nack_codec.hpp). Invariants: a decoded NACK writes and
// reads back equal; its JSON text decodes whenever its addresses have a text form.

#include <cstddef>
#include <cstdint>
#include <string>

#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/nack_codec.hpp"

#include "fuzz_binary.hpp"

using namespace cafmesh;
namespace fuzz = cafmesh::testing::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  routing::delivery_failure f;
  if (!fuzz::load(reinterpret_cast<const char*>(data), size, f))
    return 0;
  fuzz::check_binary_round_trip(f, "a decoded NACK writes and reads back equal");
  (void) routing::to_delivery_error(f);
  (void) routing::to_string(f.verdict);
  auto text = routing::to_json_text(f);
  auto ok = fuzz::text_round_trips(f.original.sender, true)
            && fuzz::text_round_trips(f.original.target, true);
  for (const auto& a : f.original.routing_path)
    ok = ok && fuzz::text_round_trips(a, false);
  routing::delivery_failure back;
  if (ok)
    fuzz::check(routing::from_json_text(text, back), "the NACK's JSON decodes");
  return 0;
}
