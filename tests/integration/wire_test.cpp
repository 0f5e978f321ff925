// The wire vocabulary on a real wire (docs/behaviour/envelope.md): two actor systems in one
// process, connected by CAF's middleman over 127.0.0.1, exchange an envelope, a NACK and a 3-deep
// fault tree (as a value, inside a caf::error as data, and as an error response) and both sides see
// them arrive equal. Every wait is bounded (10 s), and the published actor is sent an exit
// before the systems are destroyed (docs/caf-notes.md "Shutdown"), so a failure cannot hang CI.

#include <chrono>
#include <string>
#include <tuple>

#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/register_types.hpp"

using namespace std::chrono_literals;
using cafmesh::fault;
using cafmesh::mesh_errc;
using cafmesh::silo_address;
using cafmesh::routing::address;
using cafmesh::routing::delivery_failure;
using cafmesh::routing::delivery_state;
using cafmesh::routing::envelope;
using cafmesh::routing::verdict;

namespace {

using vw_echo_atom = caf::atom_constant<caf::atom("vwecho")>;
using vw_err_atom = caf::atom_constant<caf::atom("vwerr")>;
using vw_fail_atom = caf::atom_constant<caf::atom("vwfail")>;

/// Echoes what it receives, with `true` if it arrived equal to the value the client built.
using wire_echo_actor = caf::typed_actor<
  caf::replies_to<vw_echo_atom, envelope>::with<bool, envelope>,
  caf::replies_to<vw_echo_atom, delivery_failure>::with<bool, delivery_failure>,
  caf::replies_to<vw_echo_atom, fault>::with<bool, fault>,
  // A caf::error as message data: answers whether its fault arrived equal, and the fault.
  caf::replies_to<vw_err_atom, caf::error>::with<bool, fault>,
  // Answers with to_error(fault) as an error response.
  caf::replies_to<vw_fail_atom, fault>::with<bool>>;

envelope full_envelope() {
  envelope e;
  e.id = "p7-42";
  e.sender = address::from("portal/alice/tab1~mesh/m1");
  e.target = address::from("node/Org/Acme");
  e.state = delivery_state::forwarded;
  e.properties = {{"error", "\"Hub node/Org/Acme is shutting down\""},
                  {"verdict", "\"shutting_down\""},
                  {"count", "3"}};
  e.access_context = std::string{"user:alice"};
  e.routing_path = {address::from("mesh/m1"), address::from("client/7f3a~portal/alice~mesh/m1"),
                    address::from("node/Org/Acme")};
  e.payload_type = "MeshWeaver.Data.DataChangedEvent";
  e.payload_json = R"({"$type":"DataChangedEvent","changes":[1,2,3],"text":"\u00e9/~"})";
  e.ordering_key = std::string{"stream-9"};
  e.answer_suppressed = true;
  e.request_id = std::string{"p3-17"};
  return e;
}

fault three_deep_fault() {
  fault leaf{mesh_errc::activation_deactivated, "activation #1a2b3c4d is gone"};
  leaf.activation_error_recorded = cafmesh::tri_bool::yes;
  leaf.silo = silo_address{"10.0.0.2", 11112, 42};
  fault middle{mesh_errc::runtime_gone, "catalog torn down", {leaf}};
  middle.probe = cafmesh::probe_answer::torn_down;
  middle.retry_after_ms = 1500u;
  fault sibling{mesh_errc::response_timeout, "no answer in 30000 ms"};
  fault root{mesh_errc::departed_silo, "Delivery to 'node/Org/Acme' failed", {middle, sibling}};
  root.silo = silo_address{"127.0.0.1", 11111, 7};
  return root;
}

delivery_failure full_nack() {
  delivery_failure n;
  n.request_id = "p7-42";
  n.original = full_envelope();
  n.message = "Delivery to 'node/Org/Acme' failed: Hub node/Org/Acme is shutting down";
  n.verdict = verdict::shutting_down;
  n.target_unserved = true;
  n.responding_silo = silo_address{"127.0.0.1", 11111, 7};
  return n;
}

wire_echo_actor::behavior_type wire_echo() {
  return {
    [](vw_echo_atom, const envelope& x) -> caf::result<bool, envelope> {
      return {x == full_envelope(), x};
    },
    [](vw_echo_atom, const delivery_failure& x) -> caf::result<bool, delivery_failure> {
      return {x == full_nack(), x};
    },
    [](vw_echo_atom, const fault& x) -> caf::result<bool, fault> {
      return {x == three_deep_fault(), x};
    },
    [](vw_err_atom, const caf::error& e) -> caf::result<bool, fault> {
      auto f = cafmesh::to_fault(e);
      return {f == three_deep_fault(), f};
    },
    [](vw_fail_atom, const fault& x) -> caf::result<bool> { return cafmesh::to_error(x); },
  };
}

/// Renders why `x` holds no value, for a failure message. doctest evaluates the message of
/// every logged assertion (also passing ones under `-s`); CAF 0.17's `expected::error()` on a
/// value and `render` of an empty error both read invalid memory.
template <class T>
std::string describe(caf::actor_system& sys, const caf::expected<T>& x) {
  return x ? std::string{"ok"} : sys.render(x.error());
}

/// Both sides: the middleman plus every cafmesh type.
struct wire_config : caf::actor_system_config {
  explicit wire_config(bool announce = true) {
    load<caf::io::middleman>();
    if (announce)
      cafmesh::register_types(*this);
    set("scheduler.max-threads", size_t{2});
  }
};

/// Sends the published actor an exit when the test leaves its scope, even through a failed
/// REQUIRE, so `~actor_system` can finish.
struct exit_on_scope_end {
  caf::actor handle;
  ~exit_on_scope_end() { caf::anon_send_exit(handle, caf::exit_reason::user_shutdown); }
};

} // namespace

TEST_CASE("wire: an envelope, a NACK and a 3-deep fault cross the middleman on 127.0.0.1 and arrive equal") {
  wire_config server_cfg;
  caf::actor_system server_sys{server_cfg};
  wire_config client_cfg;
  caf::actor_system client_sys{client_cfg};
  auto impl = server_sys.spawn(wire_echo);
  exit_on_scope_end guard{caf::actor_cast<caf::actor>(impl)};
  auto port = server_sys.middleman().publish(impl, 0, "127.0.0.1");
  REQUIRE_MESSAGE(port, describe(server_sys, port));
  CHECK(*port != 0);
  auto remote = client_sys.middleman().remote_actor<wire_echo_actor>("127.0.0.1", *port);
  REQUIRE_MESSAGE(remote, describe(client_sys, remote));
  // A proxy for the other system's actor, not a local shortcut.
  CHECK((*remote)->node() == server_sys.node());
  CHECK((*remote)->node() != client_sys.node());
  caf::scoped_actor self{client_sys};
  std::string failure;
  auto on_error = [&](caf::error& err) { failure = client_sys.render(err); };

  SUBCASE("an envelope with every field set") {
    bool server_saw_equal = false;
    envelope back;
    self->request(*remote, 10s, vw_echo_atom::value, full_envelope())
      .receive(
        [&](bool eq, envelope& x) {
          server_saw_equal = eq;
          back = std::move(x);
        },
        on_error);
    CHECK_MESSAGE(failure.empty(), failure);
    CHECK(server_saw_equal);
    CHECK(back == full_envelope());
    CHECK(back.routing_path[1].to_string() == "client/7f3a~portal/alice~mesh/m1");
    REQUIRE(back.ordering_key);
    CHECK(*back.ordering_key == "stream-9");
  }

  SUBCASE("a delivery_failure NACK echoing that envelope") {
    bool server_saw_equal = false;
    delivery_failure back;
    self->request(*remote, 10s, vw_echo_atom::value, full_nack())
      .receive(
        [&](bool eq, delivery_failure& x) {
          server_saw_equal = eq;
          back = std::move(x);
        },
        on_error);
    CHECK_MESSAGE(failure.empty(), failure);
    CHECK(server_saw_equal);
    CHECK(back == full_nack());
  }

  SUBCASE("a 3-deep fault as a value") {
    bool server_saw_equal = false;
    fault back;
    self->request(*remote, 10s, vw_echo_atom::value, three_deep_fault())
      .receive(
        [&](bool eq, fault& x) {
          server_saw_equal = eq;
          back = std::move(x);
        },
        on_error);
    CHECK_MESSAGE(failure.empty(), failure);
    CHECK(server_saw_equal);
    CHECK(back == three_deep_fault());
    CHECK(back.render()
          == "Delivery to 'node/Org/Acme' failed <- catalog torn down <- activation #1a2b3c4d "
             "is gone <- no answer in 30000 ms");
  }

  SUBCASE("a 3-deep fault inside a caf::error sent as data") {
    bool server_saw_equal = false;
    fault back;
    self->request(*remote, 10s, vw_err_atom::value, cafmesh::to_error(three_deep_fault()))
      .receive(
        [&](bool eq, fault& x) {
          server_saw_equal = eq;
          back = std::move(x);
        },
        on_error);
    CHECK_MESSAGE(failure.empty(), failure);
    CHECK(server_saw_equal);
    CHECK(back == three_deep_fault());
  }

  SUBCASE("a 3-deep fault inside a caf::error error response") {
    bool got_value = false;
    caf::error err;
    self->request(*remote, 10s, vw_fail_atom::value, three_deep_fault())
      .receive([&](bool) { got_value = true; }, [&](caf::error& e) { err = std::move(e); });
    CHECK_FALSE(got_value);
    REQUIRE(err);
    CHECK(err.category() == caf::atom("mesh"));
    CHECK(err.code() == static_cast<uint8_t>(mesh_errc::departed_silo));
    CHECK(cafmesh::to_fault(err) == three_deep_fault());
    CHECK(client_sys.render(err)
          == "mesh_error(departed_silo, Delivery to 'node/Org/Acme' failed <- catalog torn "
             "down <- activation #1a2b3c4d is gone <- no answer in 30000 ms)");
  }
}

TEST_CASE("wire: a peer without register_types cannot even bind the typed interface") {
  wire_config server_cfg;
  caf::actor_system server_sys{server_cfg};
  wire_config client_cfg{false};
  caf::actor_system client_sys{client_cfg};
  auto impl = server_sys.spawn(wire_echo);
  exit_on_scope_end guard{caf::actor_cast<caf::actor>(impl)};
  auto port = server_sys.middleman().publish(impl, 0, "127.0.0.1");
  REQUIRE_MESSAGE(port, describe(server_sys, port));
  auto remote = client_sys.middleman().remote_actor<wire_echo_actor>("127.0.0.1", *port);
  REQUIRE_FALSE(remote);
  CHECK(remote.error() == caf::sec::unexpected_actor_messaging_interface);
  // The server's interface names the announced wire names.
  CHECK(client_sys.render(remote.error()).find("cafmesh.envelope") != std::string::npos);
}

TEST_CASE("wire: a remote actor that has exited - down reason and a late request, translated as documented") {
  wire_config server_cfg;
  caf::actor_system server_sys{server_cfg};
  wire_config client_cfg;
  caf::actor_system client_sys{client_cfg};
  auto impl = server_sys.spawn(wire_echo);
  exit_on_scope_end guard{caf::actor_cast<caf::actor>(impl)};
  auto port = server_sys.middleman().publish(impl, 0, "127.0.0.1");
  REQUIRE_MESSAGE(port, describe(server_sys, port));
  auto remote = client_sys.middleman().remote_actor<wire_echo_actor>("127.0.0.1", *port);
  REQUIRE_MESSAGE(remote, describe(client_sys, remote));
  caf::scoped_actor self{client_sys};
  self->monitor(*remote);
  // One round trip after the monitor: the connection is FIFO, so the monitor is in place.
  bool echoed = false;
  self->request(*remote, 10s, vw_echo_atom::value, three_deep_fault())
    .receive([&](bool eq, fault&) { echoed = eq; }, [](caf::error&) {});
  REQUIRE(echoed);
  caf::anon_send_exit(impl, caf::exit_reason::user_shutdown);
  caf::error down_reason;
  bool got_down = false;
  self->receive(
    [&](caf::down_msg& dm) {
      got_down = true;
      down_reason = dm.reason;
    },
    caf::after(10s) >> [] {});
  REQUIRE(got_down);
  CHECK(down_reason == caf::exit_reason::user_shutdown);
  // A graceful exit is no connection loss: application, with CAF's rendering as text.
  auto f = cafmesh::to_fault(down_reason);
  CHECK(f.code == mesh_errc::application);
  CHECK(f.text == "exit_reason(user_shutdown)");
  // CAF 0.17 does not bounce a request to a remote actor known to be dead: it times out.
  // (A caller must monitor, and a response timeout is never resendable,
  // docs/behaviour/classification.md#why-a-response-timeout-is-never-resent.)
  caf::error err;
  self->request(*remote, 2s, vw_echo_atom::value, three_deep_fault())
    .receive([](bool, fault&) {}, [&](caf::error& e) { err = std::move(e); });
  REQUIRE(err);
  CHECK(err == caf::sec::request_timeout);
  CHECK(cafmesh::to_fault(err).code == mesh_errc::response_timeout);
  CHECK(cafmesh::to_fault(err).text == "system_error(request_timeout)");
}
