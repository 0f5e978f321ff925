// fuzz_make_seeds <corpus dir>: writes the seed corpora of the library's fuzz targets
// (tests/fuzz/corpus/<target>/) from real values: rendered configurations, envelopes, faults
// and NACKs serialised with CAF's binary serialiser and the NACK codec. The shipped files of
// examples/config/ are copied in by hand (docs/testing.md#fuzzing); the main job's readers
// have their own seed writer (examples/mainjob/fuzz/make_seeds.cpp).

#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_serializer.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/routing/dispatch_batch.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/nack_codec.hpp"
#include "cafmesh/routing/register_types.hpp"
#include "cafmesh/routing/router_atoms.hpp"
#include "cafmesh/testing/fuzz.hpp"

using namespace cafmesh;

namespace {

/// `x` in CAF's binary form; `sys` when `x` holds a `caf::message` (its type names come from
/// the system's registry).
template <class T>
std::string binary(T x, caf::actor_system* sys = nullptr) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys != nullptr ? sys->dummy_execution_unit() : nullptr, buf};
  if (auto err = sink(x)) {
    std::fprintf(stderr, "cannot serialise\n");
    std::exit(1);
  }
  return std::string{buf.begin(), buf.end()};
}

/// An envelope of `type` (payload `{"$type":type}` plus `extra`) from `sender` to `target`.
routing::envelope envelope_of(std::string id, const std::string& sender,
                              const std::string& target, const std::string& type,
                              const std::string& extra) {
  routing::envelope e;
  e.id = std::move(id);
  e.sender = routing::address::from(sender);
  e.target = routing::address::from(target);
  e.payload_type = type;
  e.payload_json = R"({"$type":")" + type + "\"," + extra + "}";
  return e;
}

routing::envelope request() {
  auto e = envelope_of("client1-7", "portal/user1/tab1~client/c1", "node/Org/N1",
                       "demo.request", R"("n":7)");
  e.properties = {{"trace", "\"t-1\""}, {"priority", "3"}};
  e.access_context = std::string{"user1"};
  e.routing_path = {routing::address::from("router/A"), routing::address::from("router/B")};
  return e;
}

routing::envelope frame() {
  auto e = envelope_of("silo-A-12", "node/Owner/O1", "portal/user2/tab1~mesh/m1", "demo.frame",
                       R"("v":3)");
  e.state = routing::delivery_state::forwarded;
  e.ordering_key = std::string{"stream-2"};
  e.answer_suppressed = true;
  return e;
}

routing::envelope failed_answer() {
  auto e = request();
  e.state = routing::delivery_state::failed;
  e.properties["error"] = "\"the target is stopping\"";
  e.properties["verdict"] = "\"shutting_down\"";
  e.request_id = std::string{"client1-7"};
  return e;
}

fault timeout_tree() {
  fault leaf{mesh_errc::departed_silo, "silo left"};
  leaf.silo = silo_address{"10.0.0.2", 4711, 3};
  fault busy{mesh_errc::overloaded, "shed load"};
  busy.retry_after_ms = 250u;
  fault gone{mesh_errc::activation_deactivated, "deactivated"};
  gone.activation_error_recorded = tri_bool::yes;
  fault probe{mesh_errc::runtime_gone, "runtime torn down"};
  probe.probe = probe_answer::torn_down;
  return fault{mesh_errc::response_timeout, "no answer", {leaf, busy, gone, probe}};
}

routing::delivery_failure nack_of(const routing::envelope& e, routing::verdict v,
                                  bool unserved) {
  caf::optional<silo_address> silo;
  if (unserved)
    silo = silo_address{"127.0.0.1", 9000, 2};
  return routing::make_delivery_failure(e, "Delivery to '" + e.target.to_string()
                                             + "' failed: " + routing::to_string(v),
                                        v, unserved, silo);
}

/// A link frame from silo A to silo B (or back, `response`) with `payload`, in CAF's binary
/// form: its payload a flat record when it has a registered shape (frame_codec.hpp).
std::string frame_bytes(caf::actor_system& sys, caf::message payload, bool response) {
  wire_frame f;
  f.src = silo_address{"10.0.0.1", 4000, 7};
  f.dst = silo_address{"10.0.0.2", 4000, 9};
  f.correlation_id = 31;
  f.target = response ? component::none : component::activation;
  f.is_response = response;
  f.ttl_ms = response ? 0 : 2500;
  f.payload = std::move(payload);
  return binary(std::move(f), &sys);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds <corpus dir>\n");
    return 2;
  }
  testing::fuzz::seed_corpus corpus{argv[1]};

  // Configurations: every role, rendered as the loader reads them.
  for (auto role : {config::process_role::silo_host, config::process_role::pure_client,
                    config::process_role::monolith}) {
    config::mesh_config c;
    c.mesh.role = role;
    c.mesh.name = "fuzz";
    if (role == config::process_role::pure_client)
      c.network.primary_port = 4242;
    corpus.write("fuzz_config_loader", "rendered-" + config::to_string(role) + ".json",
                 config::to_json_text(c));
  }

  // Envelopes, faults and NACKs: CAF's binary form, and the NACK's JSON.
  corpus.write("fuzz_envelope_binary", "request.bin", binary(request()));
  corpus.write("fuzz_envelope_binary", "frame.bin", binary(frame()));
  corpus.write("fuzz_envelope_binary", "failed-answer.bin", binary(failed_answer()));
  auto nack = nack_of(request(), routing::verdict::not_found, false);
  corpus.write("fuzz_envelope_binary", "nack.bin",
               binary(routing::make_nack_envelope(nack, "router-A-1",
                                                  routing::address::from("router/A"))));
  corpus.write("fuzz_fault_binary", "leaf.bin",
               binary(fault{mesh_errc::not_found, "no such hub"}));
  corpus.write("fuzz_fault_binary", "tree.bin", binary(timeout_tree()));
  corpus.write("fuzz_fault_binary", "nested.bin",
               binary(fault{mesh_errc::resolve_failed, "resolve", {timeout_tree()}}));
  int n = 0;
  for (const auto& [e, v, unserved] :
       {std::tuple{request(), routing::verdict::shutting_down, false},
        std::tuple{frame(), routing::verdict::unavailable, true},
        std::tuple{failed_answer(), routing::verdict::routing_loop, false}}) {
    auto f = nack_of(e, v, unserved);
    auto name = "nack-" + std::to_string(++n);
    corpus.write("fuzz_nack_binary", name + ".bin", binary(f));
    corpus.write("fuzz_nack_json", name + ".json", routing::to_json_text(f));
  }

  // Link frames: each flat shape of the routing layer and a nested caf::message.
  caf::actor_system_config cfg;
  register_types(cfg);
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  silo_address a{"10.0.0.1", 4000, 7};
  grain_id hub{"podhub", "portal/user2/tab1"};
  corpus.write("fuzz_frame_binary", "call-direct.bin",
               frame_bytes(sys,
                           caf::make_message(ct_invoke_atom::value, hub, activation_tag{0x2a},
                                             int32_t{0},
                                             caf::make_message(routing::hg_deliver_atom::value,
                                                               frame(), a, true)),
                           false));
  corpus.write("fuzz_frame_binary", "call-placed.bin",
               frame_bytes(sys,
                           caf::make_message(ct_invoke_atom::value, hub, activation_tag{0x2a},
                                             int32_t{1},
                                             caf::make_message(routing::hg_deliver_atom::value,
                                                               frame(), a)),
                           false));
  corpus.write("fuzz_frame_binary", "dispatch.bin",
               frame_bytes(sys,
                           caf::make_message(pl_call_atom::value, grain_id{"routing", "default"},
                                             int32_t{0},
                                             caf::make_message(
                                               routing::hg_routes_atom::value,
                                               std::vector<routing::dispatch_item>{
                                                 {request(), caf::timespan{29000000000}},
                                                 {frame(), caf::timespan{0}}},
                                               a)),
                           false));
  corpus.write("fuzz_frame_binary", "hand-over.bin",
               frame_bytes(sys, caf::make_message(routing::lr_deliver_atom::value, request()),
                           false));
  corpus.write("fuzz_frame_binary", "answer.bin",
               frame_bytes(sys, caf::make_message(failed_answer()), true));
  corpus.write("fuzz_frame_binary", "dispatch-answer.bin",
               frame_bytes(sys, caf::make_message(true), true));
  corpus.write("fuzz_frame_binary", "dispatch-verdicts.bin",
               frame_bytes(sys,
                           caf::make_message(routing::dispatch_verdicts{
                             caf::error{},
                             to_error(fault{mesh_errc::overloaded, "silo S overloaded"})}),
                           true));
  corpus.write("fuzz_frame_binary", "nested.bin",
               frame_bytes(sys, caf::make_message(routing::hg_deliver_atom::value, frame()),
                           false));
  return corpus.exit_code();
}
