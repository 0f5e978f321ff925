#include "cafmesh/routing/classify.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace cafmesh::routing {

namespace {

template <class Pred>
bool any_node(const fault& f, Pred& pred) {
  if (pred(f))
    return true;
  for (const auto& c : f.causes)
    if (any_node(c, pred))
      return true;
  return false;
}

template <class Pred>
bool any_node_of(const fault& f, Pred pred) {
  return any_node(f, pred);
}

std::string lower_ascii(std::string s) {
  for (auto& ch : s)
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

} // namespace

// -- one node -------------------------------------------------------------------

bool is_transient_node(const fault& node) {
  switch (node.code) {
    case mesh_errc::rejected:
    case mesh_errc::overloaded:
    case mesh_errc::response_timeout:
    case mesh_errc::stream_post_timeout:
    case mesh_errc::placement_timeout:
    case mesh_errc::no_compatible_silo:
    case mesh_errc::directory_unstable:
    case mesh_errc::silo_unavailable:
    case mesh_errc::lifecycle_cancelled:
    case mesh_errc::departed_silo:
    case mesh_errc::
      activation_deactivated: // every recorded value (docs/behaviour/classification.md#codes)
    case mesh_errc::pod_hub_not_here: return true;
    case mesh_errc::runtime_gone: return node.probe == probe_answer::torn_down;
    default: return false;
  }
}

bool is_response_timeout_node(const fault& node) {
  return node.code == mesh_errc::response_timeout || node.code == mesh_errc::stream_post_timeout;
}

verdict node_verdict(const fault& node) {
  switch (node.code) {
    case mesh_errc::placement_timeout: return verdict::unavailable;
    case mesh_errc::overloaded:
      // An admission refusal says when to come back; a target that merely shed load does
      // not, and stays `failed`.
      return node.retry_after_ms ? verdict::unavailable : verdict::failed;
    case mesh_errc::no_compatible_silo:
    case mesh_errc::directory_unstable:
    case mesh_errc::silo_unavailable:
    case mesh_errc::lifecycle_cancelled:
    case mesh_errc::departed_silo:
    case mesh_errc::pod_hub_not_here: return verdict::shutting_down;
    case mesh_errc::activation_deactivated:
      return node.activation_error_recorded == tri_bool::no ? verdict::shutting_down
                                                            : verdict::failed;
    case mesh_errc::runtime_gone:
      return node.probe == probe_answer::torn_down ? verdict::shutting_down : verdict::failed;
    case mesh_errc::oversized: return verdict::rejected;
    case mesh_errc::not_found: return verdict::not_found;
    default: return verdict::failed;
  }
}

std::string to_string(leg_retry x) {
  switch (x) {
    case leg_retry::no: return "no";
    case leg_retry::yes: return "yes";
    case leg_retry::re_resolving: return "re_resolving";
    case leg_retry::capped: return "capped";
    case leg_retry::stop_at_once: return "stop_at_once";
  }
  return "leg_retry(" + std::to_string(static_cast<int>(x)) + ")";
}

leg_retry retry_in_leg(mesh_errc code, tri_bool recorded, probe_answer probe) {
  switch (code) {
    case mesh_errc::rejected:
    case mesh_errc::overloaded:
    case mesh_errc::no_compatible_silo: return leg_retry::yes;
    case mesh_errc::placement_timeout: return leg_retry::capped;
    case mesh_errc::directory_unstable:
    case mesh_errc::silo_unavailable:
    case mesh_errc::lifecycle_cancelled:
    case mesh_errc::departed_silo: return leg_retry::re_resolving;
    case mesh_errc::activation_deactivated:
      return recorded == tri_bool::no ? leg_retry::re_resolving : leg_retry::yes;
    case mesh_errc::runtime_gone:
      return probe == probe_answer::torn_down ? leg_retry::stop_at_once : leg_retry::no;
    default: return leg_retry::no;
  }
}

leg_retry retry_in_leg(const fault& node) {
  return retry_in_leg(node.code, node.activation_error_recorded, node.probe);
}

// -- the whole tree ---------------------------------------------------------------

bool is_transient(const fault& f) {
  return any_node_of(f, [](const fault& n) { return is_transient_node(n); });
}

bool has_response_timeout(const fault& f) {
  return any_node_of(f, [](const fault& n) { return is_response_timeout_node(n); });
}

bool is_resendable(const fault& f) {
  return is_transient(f) && !has_response_timeout(f);
}

verdict classify(const fault& f) {
  if (!is_resendable(f))
    return verdict::failed;
  if (any_node_of(f, [](const fault& n) { return node_verdict(n) == verdict::shutting_down; }))
    return verdict::shutting_down;
  if (any_node_of(f, [](const fault& n) { return node_verdict(n) == verdict::unavailable; }))
    return verdict::unavailable;
  return verdict::failed;
}

const fault* find_code(const fault& f, mesh_errc code) {
  if (f.code == code)
    return &f;
  for (const auto& c : f.causes)
    if (auto p = find_code(c, code))
      return p;
  return nullptr;
}

bool re_resolves(const fault& f) {
  return any_node_of(f, [](const fault& n) { return retry_in_leg(n) == leg_retry::re_resolving; });
}

namespace {

void collect_departed(const fault& f, std::vector<silo_address>& out) {
  if (f.code == mesh_errc::departed_silo && f.silo
      && std::find(out.begin(), out.end(), *f.silo) == out.end())
    out.push_back(*f.silo);
  for (const auto& c : f.causes)
    collect_departed(c, out);
}

void max_hint(const fault& f, uint32_t& out) {
  if (f.retry_after_ms && *f.retry_after_ms > out)
    out = *f.retry_after_ms;
  for (const auto& c : f.causes)
    max_hint(c, out);
}

} // namespace

std::vector<silo_address> departed_silos(const fault& f) {
  std::vector<silo_address> out;
  collect_departed(f, out);
  return out;
}

bool has_leg_exclusion(const fault& f) {
  return any_node_of(f, [](const fault& n) {
    return n.code == mesh_errc::pod_hub_not_here || n.code == mesh_errc::runtime_gone;
  });
}

bool may_retry_in_leg(const fault& f) {
  return is_resendable(f) && !has_leg_exclusion(f);
}

uint32_t retry_hint_ms(const fault& f) {
  uint32_t out = 0;
  max_hint(f, out);
  return out;
}

// -- result arm and text rule -----------------------------------------------------

std::string unquote_json_string(const std::string& text) {
  // Only a literal that starts with a quote is a candidate; leading/trailing blanks allowed.
  auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '"')
    return text;
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_string())
    return text;
  return parsed.get<std::string>();
}

verdict text_rule(const std::string& error_text) {
  auto plain = lower_ascii(unquote_json_string(error_text));
  return plain.find("is shutting down") != std::string::npos ? verdict::shutting_down
                                                             : verdict::failed;
}

bool is_owner_refusal(const std::string& text, const address& target) {
  static const std::string banner = "Hub ";
  static const std::string tail = " is shutting down";
  auto plain = unquote_json_string(text);
  auto lowered = lower_ascii(plain);
  auto own = target.path();
  for (auto pos = plain.find(banner); pos != std::string::npos; pos = plain.find(banner, pos + 1)) {
    auto subject_begin = pos + banner.size();
    auto subject_end = lowered.find(tail, subject_begin);
    if (subject_end == std::string::npos)
      return false; // no later banner can have a tail either
    auto subject = plain.substr(subject_begin, subject_end - subject_begin);
    if (subject.find(' ') != std::string::npos)
      continue; // not a single address: e.g. "Hub disposed before ... is shutting down"
    auto tilde = subject.find('~');
    if (tilde != std::string::npos)
      subject.erase(tilde);
    if (subject == own)
      return true;
  }
  return false;
}

std::string to_string(result_action x) {
  switch (x) {
    case result_action::landed: return "landed";
    case result_action::already_nacked: return "already_nacked";
    case result_action::nack_carried: return "nack_carried";
    case result_action::nack_text_rule: return "nack_text_rule";
    case result_action::nack_state: return "nack_state";
  }
  return "result_action(" + std::to_string(static_cast<int>(x)) + ")";
}

result_decision judge_result(const envelope& result) {
  result_decision out;
  auto error_text = [&] {
    auto i = result.properties.find("error");
    return i == result.properties.end() ? std::string{} : unquote_json_string(i->second);
  };
  switch (result.state) {
    case delivery_state::failed: {
      out.text = error_text();
      if (is_failed_and_nacked(result)) {
        out.action = result_action::already_nacked;
        return out;
      }
      auto i = result.properties.find("verdict");
      verdict carried;
      if (i != result.properties.end() && from_string(unquote_json_string(i->second), carried)) {
        if (carried == verdict::ignored) {
          out.action = result_action::landed;
          return out;
        }
        out.action = result_action::nack_carried;
        out.verdict = carried;
        return out;
      }
      out.action = result_action::nack_text_rule;
      out.verdict = text_rule(out.text);
      return out;
    }
    case delivery_state::not_found:
      out.text = error_text();
      out.action = result_action::nack_state;
      out.verdict = verdict::not_found;
      return out;
    case delivery_state::rejected:
      out.text = error_text();
      out.action = result_action::nack_state;
      out.verdict = verdict::rejected;
      return out;
    default: out.action = result_action::landed; return out;
  }
}

} // namespace cafmesh::routing
