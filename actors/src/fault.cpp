#include "cafmesh/actors/fault.hpp"

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/exit_reason.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace cafmesh {

std::string to_string(mesh_errc x) {
  switch (x) {
    case mesh_errc::rejected: return "rejected";
    case mesh_errc::overloaded: return "overloaded";
    case mesh_errc::response_timeout: return "response_timeout";
    case mesh_errc::stream_post_timeout: return "stream_post_timeout";
    case mesh_errc::placement_timeout: return "placement_timeout";
    case mesh_errc::no_compatible_silo: return "no_compatible_silo";
    case mesh_errc::directory_unstable: return "directory_unstable";
    case mesh_errc::silo_unavailable: return "silo_unavailable";
    case mesh_errc::lifecycle_cancelled: return "lifecycle_cancelled";
    case mesh_errc::departed_silo: return "departed_silo";
    case mesh_errc::activation_deactivated: return "activation_deactivated";
    case mesh_errc::runtime_gone: return "runtime_gone";
    case mesh_errc::pod_hub_not_here: return "pod_hub_not_here";
    case mesh_errc::oversized: return "oversized";
    case mesh_errc::not_found: return "not_found";
    case mesh_errc::resolve_failed: return "resolve_failed";
    case mesh_errc::pool_refused: return "pool_refused";
    case mesh_errc::leg_crashed: return "leg_crashed";
    case mesh_errc::extension_missing: return "extension_missing";
    case mesh_errc::invalid_operation: return "invalid_operation";
    case mesh_errc::application: return "application";
    case mesh_errc::lifecycle_misuse: return "lifecycle_misuse";
    case mesh_errc::config_invalid: return "config_invalid";
  }
  return "mesh_errc(" + std::to_string(static_cast<int>(x)) + ")";
}

std::string to_string(tri_bool x) {
  switch (x) {
    case tri_bool::no: return "no";
    case tri_bool::yes: return "yes";
    default: return "unknown";
  }
}

std::string to_string(probe_answer x) {
  switch (x) {
    case probe_answer::alive: return "alive";
    case probe_answer::torn_down: return "torn_down";
    default: return "no_answer";
  }
}

namespace {

void render_to(const fault& f, std::string& out) {
  out += f.text;
  for (const auto& c : f.causes) {
    out += " <- ";
    render_to(c, out);
  }
}

} // namespace

std::string fault::render() const {
  std::string out;
  render_to(*this, out);
  return out;
}

bool operator==(const fault& x, const fault& y) {
  return x.code == y.code && x.text == y.text && x.causes == y.causes
         && x.retry_after_ms == y.retry_after_ms
         && x.activation_error_recorded == y.activation_error_recorded && x.probe == y.probe
         && x.silo == y.silo;
}

std::string to_string(const fault& x) {
  return x.render();
}

caf::atom_value mesh_error_category() {
  return caf::atom("mesh");
}

caf::error to_error(const fault& x) {
  return caf::error{static_cast<uint8_t>(x.code), mesh_error_category(), caf::make_message(x)};
}

caf::error make_error(mesh_errc x) {
  return to_error(fault{x, to_string(x)});
}

fault to_fault(const caf::error& e, bool receiver_departed) {
  // CAF 0.17's error::code() and category() dereference the error's data: an empty error
  // (no error at all) must not reach them.
  if (!e)
    return fault{mesh_errc::application, "none"};
  if (e.category() == mesh_error_category()) {
    const auto& ctx = e.context();
    if (ctx.match_elements<fault>())
      return ctx.get_as<fault>(0);
    return fault{static_cast<mesh_errc>(e.code()), to_string(static_cast<mesh_errc>(e.code()))};
  }
  auto rendered = caf::to_string(e);
  if (e.category() == caf::atom("system")) {
    switch (static_cast<caf::sec>(e.code())) {
      case caf::sec::request_timeout: return fault{mesh_errc::response_timeout, rendered};
      case caf::sec::request_receiver_down:
        if (receiver_departed)
          return fault{mesh_errc::departed_silo, rendered};
        else {
          fault f{mesh_errc::activation_deactivated, rendered};
          f.activation_error_recorded = tri_bool::unknown;
          return f;
        }
      case caf::sec::cannot_connect_to_node:
      case caf::sec::no_route_to_receiving_node:
      case caf::sec::disconnect_during_handshake:
      case caf::sec::socket_disconnected: return fault{mesh_errc::departed_silo, rendered};
      default: break;
    }
  } else if (e.category() == caf::atom("exit")) {
    switch (static_cast<caf::exit_reason>(e.code())) {
      case caf::exit_reason::remote_link_unreachable:
      case caf::exit_reason::unreachable: return fault{mesh_errc::departed_silo, rendered};
      default: break;
    }
  }
  return fault{mesh_errc::application, rendered};
}

} // namespace cafmesh
