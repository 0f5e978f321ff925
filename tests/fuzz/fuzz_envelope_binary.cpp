// Fuzz target: CAF binary deserialisation of the delivery envelope
// (routing/include/cafmesh/routing/envelope.hpp) and what the router does with an envelope
// that came off the wire: the result arm's judgement, the entry refusal, the host address,
// and the NACK built for it. Invariants: a decoded envelope writes and reads back equal; its
// NACK's JSON decodes whenever its addresses have a text form, to an equal value when its
// strings are UTF-8.

#include <cstddef>
#include <cstdint>
#include <string>

#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/nack_codec.hpp"

#include "fuzz_binary.hpp"

using namespace cafmesh;
namespace fuzz = cafmesh::testing::fuzz;

namespace {

bool all_utf8(const routing::envelope& e) {
  auto ok = fuzz::is_utf8(e.id) && fuzz::is_utf8(e.sender.to_string())
            && fuzz::is_utf8(e.target.to_string()) && fuzz::is_utf8(e.payload_type)
            && fuzz::is_utf8(e.payload_json)
            && (!e.access_context || fuzz::is_utf8(*e.access_context))
            && (!e.ordering_key || fuzz::is_utf8(*e.ordering_key))
            && (!e.request_id || fuzz::is_utf8(*e.request_id));
  for (const auto& [k, v] : e.properties)
    ok = ok && fuzz::is_utf8(k) && fuzz::is_utf8(v);
  for (const auto& a : e.routing_path)
    ok = ok && fuzz::is_utf8(a.to_string());
  return ok;
}

bool addresses_have_text(const routing::envelope& e) {
  auto ok = fuzz::text_round_trips(e.sender, true) && fuzz::text_round_trips(e.target, true);
  for (const auto& a : e.routing_path)
    ok = ok && fuzz::text_round_trips(a, false);
  return ok;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  routing::envelope e;
  if (!fuzz::load(reinterpret_cast<const char*>(data), size, e))
    return 0;
  fuzz::check_binary_round_trip(e, "a decoded envelope writes and reads back equal");
  (void) routing::host_address(e.target);
  (void) routing::judge_result(e);
  (void) routing::entry_refusal(e);
  (void) routing::is_failed_and_nacked(e);
  (void) routing::is_continuation(e);
  auto f = routing::make_delivery_failure(e, "fuzz", routing::verdict::failed);
  auto nack = routing::make_nack_envelope(f, "fuzz-1", e.target);
  fuzz::check_binary_round_trip(nack, "a NACK envelope writes and reads back equal");
  if (addresses_have_text(e)) {
    routing::delivery_failure back;
    fuzz::check(routing::from_json_text(nack.payload_json, back), "the NACK's JSON decodes");
    if (all_utf8(e))
      fuzz::check(back == f, "the NACK's JSON decodes to the NACK");
  }
  return 0;
}
