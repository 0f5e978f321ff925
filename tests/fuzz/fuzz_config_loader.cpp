// Fuzz target: the configuration loader (config/include/cafmesh/config/load.hpp) on arbitrary
// text. Invariants: a refusal has at least one error line and leaves the value at its
// default; an accepted document renders to a text that is accepted again and renders the
// same (`parse(to_json_text(c))` gives back `c`).

#include <cstddef>
#include <cstdint>
#include <string>

#include "cafmesh/config/load.hpp"

#include "fuzz_support.hpp"

using namespace cafmesh;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = fuzz::as_text(data, size);
  auto res = config::parse(text);
  if (!res.ok) {
    fuzz::check(!res.errors.empty(), "a refused configuration has an error line");
    fuzz::check(config::to_json_text(res.value) == config::to_json_text(config::mesh_config{}),
                "a refused configuration leaves the value at mesh_config{}");
    return 0;
  }
  fuzz::check(res.errors.empty(), "an accepted configuration has no error line");
  auto rendered = config::to_json_text(res.value);
  auto again = config::parse(rendered);
  fuzz::check(again.ok, "the rendering of an accepted configuration is accepted");
  fuzz::check(config::to_json_text(again.value) == rendered,
              "parse(to_json_text(c)) gives back c");
  fuzz::check(config::validate(res.value).ok, "validate accepts an accepted configuration");
  return 0;
}
