#include "cafmesh/routing/delivery_error.hpp"

#include <caf/message.hpp>

namespace cafmesh::routing {

caf::atom_value delivery_error_category() {
  return caf::atom("cmdelivery");
}

// The code is the verdict + 1: CAF reads code 0 as "no error", and `shutting_down` is 0.
caf::error to_error(const delivery_error& x) {
  return caf::error{static_cast<uint8_t>(static_cast<uint8_t>(x.verdict) + 1),
                    delivery_error_category(), caf::make_message(x.text, x.resendable, x.deadline)};
}

delivery_error delivery_error_of(const caf::error& err, const std::string& fallback_text) {
  delivery_error out;
  if (!err) {
    out.text = "no error";
    return out;
  }
  if (err.category() != delivery_error_category()) {
    out.text = fallback_text.empty() ? "error code " + std::to_string(err.code()) : fallback_text;
    return out;
  }
  out.verdict = static_cast<routing::verdict>(err.code() - 1);
  const auto& ctx = err.context();
  if (ctx.match_elements<std::string, bool, bool>()) {
    out.text = ctx.get_as<std::string>(0);
    out.resendable = ctx.get_as<bool>(1);
    out.deadline = ctx.get_as<bool>(2);
  }
  return out;
}

std::string to_string(const delivery_error& x) {
  auto s = to_string(x.verdict) + ": " + x.text;
  if (x.deadline)
    s += " (deadline)";
  else if (x.resendable)
    s += " (resendable)";
  return s;
}

} // namespace cafmesh::routing
