// Fuzz target: the NACK JSON decoder (routing/include/cafmesh/routing/nack_codec.hpp,
// `from_json_text`) on arbitrary text. Invariants: it never throws; a refusal leaves its
// output untouched; what it accepts encodes to a text it accepts again as an equal value,
// and that text encodes to itself.

#include <cstddef>
#include <cstdint>
#include <string>

#include "cafmesh/routing/nack_codec.hpp"
#include "cafmesh/testing/fuzz.hpp"

using namespace cafmesh;
namespace fuzz = cafmesh::testing::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  routing::delivery_failure untouched;
  untouched.message = "untouched";
  auto out = untouched;
  if (!routing::from_json_text(fuzz::as_text(data, size), out)) {
    fuzz::check(out == untouched, "a refused NACK leaves the output untouched");
    return 0;
  }
  auto text = routing::to_json_text(out);
  routing::delivery_failure back;
  fuzz::check(routing::from_json_text(text, back), "an encoded NACK decodes");
  fuzz::check(back == out, "an encoded NACK decodes to the same value");
  fuzz::check(routing::to_json_text(back) == text, "the encoding is stable");
  (void) routing::to_delivery_error(out);
  return 0;
}
