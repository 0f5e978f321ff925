// Network mode of the message centre's seam (net_link.hpp): two actor systems in one
// process, each with its own message centre and network link, connected by CAF's io
// middleman over 127.0.0.1 on ports chosen by the OS. Every wait is bounded (10 s), and
// every published or long-lived actor is sent an exit before its system is destroyed
// (docs/caf-notes.md "Shutdown"), so a failure cannot hang CI.

#include <chrono>
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/net_link.hpp"
#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/register_types.hpp"

using namespace std::chrono_literals;
using cafmesh::component;
using cafmesh::fault;
using cafmesh::mesh_errc;
using cafmesh::silo_address;
using cafmesh::routing::address;
using cafmesh::routing::delivery_state;
using cafmesh::routing::envelope;

namespace {

using nt_echo_atom = caf::atom_constant<caf::atom("ntecho")>;
using nt_fail_atom = caf::atom_constant<caf::atom("ntfail")>;
using nt_hold_atom = caf::atom_constant<caf::atom("nthold")>;
using nt_note_atom = caf::atom_constant<caf::atom("ntnote")>;
using nt_release_atom = caf::atom_constant<caf::atom("ntrelease")>;

constexpr auto wait_bound = 10s;

struct echo_state {
  std::vector<caf::response_promise> held;
  static const char* name;
};
const char* echo_state::name = "net_test.echo";

/// The test component on silo B: echoes an envelope and a fault, answers a fault as an
/// error, holds a call (telling `probe`) until released with a value, and passes one-way
/// notes to `probe`.
caf::behavior echo(caf::stateful_actor<echo_state>* self, caf::actor probe) {
  return {
    [=](nt_echo_atom, const envelope& e, const fault& f) -> caf::result<envelope, fault> {
      return {e, f};
    },
    [=](nt_fail_atom, const fault& f) -> caf::error { return cafmesh::to_error(f); },
    [=](nt_hold_atom) -> caf::response_promise {
      auto rp = self->make_response_promise();
      self->state.held.push_back(rp);
      self->send(probe, nt_hold_atom::value);
      return rp;
    },
    [=](nt_note_atom, const std::string& text) { self->send(probe, nt_note_atom::value, text); },
    [=](nt_release_atom, int value) {
      for (auto& rp : self->state.held)
        rp.deliver(value);
      self->state.held.clear();
    },
  };
}

/// One silo process: its own actor system with the io middleman, a network link listening
/// on 127.0.0.1 (port chosen by the OS) and a message centre using the link.
struct net_silo {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  cafmesh::net_link_actor link;
  caf::actor centre;
  silo_address addr;
  std::vector<caf::actor> extra; ///< other actors to exit at shutdown

  explicit net_silo(uint64_t generation) {
    cafmesh::register_types(cfg);
    cfg.load<caf::io::middleman>();
    cfg.set("scheduler.max-threads", size_t{2});
    sys = std::make_unique<caf::actor_system>(cfg);
    cafmesh::config::network_section net;
    net.heartbeat_interval_ms = 200;
    net.failure_detection_ms = 2000;
    link = cafmesh::spawn_net_link(*sys, net);
    uint16_t port = 0;
    {
      caf::scoped_actor self{*sys};
      self->request(link, wait_bound, cafmesh::nl_port_atom::value)
        .receive([&](uint16_t p) { port = p; },
                 [&](caf::error& e) { FAIL("no port: " << sys->render(e)); });
    }
    addr = silo_address{"127.0.0.1", port, generation};
    centre = cafmesh::spawn_message_center(*sys, addr, link);
  }

  /// Registers `h` as component `c` with this silo's centre.
  void add_component(component c, caf::actor h) {
    extra.push_back(h);
    caf::scoped_actor self{*sys};
    bool ok = false;
    self->request(centre, wait_bound, cafmesh::mc_register_atom::value, c, h)
      .receive([&](caf::ok_atom) { ok = true; },
               [&](caf::error& e) { FAIL("register failed: " << sys->render(e)); });
    REQUIRE(ok);
  }

  /// Exits every actor of this silo and destroys its actor system.
  void shutdown() {
    if (!sys)
      return;
    // The centre and the link first: nothing a component does while exiting may reach
    // a peer any more.
    caf::anon_send_exit(centre, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(link, caf::exit_reason::user_shutdown);
    for (auto& a : extra)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    extra.clear();
    centre = nullptr;
    link = nullptr;
    sys.reset();
  }

  ~net_silo() { shutdown(); }
};

envelope sample_envelope() {
  envelope e;
  e.id = "na-1";
  e.sender = address::from("portal/alice/tab1~mesh/m1");
  e.target = address::from("node/Org/Acme");
  e.state = delivery_state::forwarded;
  e.properties = {{"verdict", "\"shutting_down\""}, {"count", "3"}};
  e.access_context = std::string{"user:alice"};
  e.routing_path = {address::from("mesh/m1")};
  e.payload_type = "DataChangedEvent";
  e.payload_json = R"({"$type":"DataChangedEvent","changes":[1,2,3]})";
  e.ordering_key = std::string{"stream-9"};
  e.request_id = std::string{"p3-17"};
  return e;
}

fault sample_fault() {
  fault leaf{mesh_errc::activation_deactivated, "activation #1a2b3c4d is gone"};
  leaf.activation_error_recorded = cafmesh::tri_bool::yes;
  fault root{mesh_errc::runtime_gone, "catalog torn down", {leaf}};
  root.probe = cafmesh::probe_answer::torn_down;
  root.retry_after_ms = 1500u;
  root.silo = silo_address{"127.0.0.1", 11111, 7};
  return root;
}

} // namespace

TEST_CASE("net link: a call through centre A reaches an echo component on B over a real socket") {
  net_silo a{1};
  net_silo b{1};
  REQUIRE(a.addr.port != 0);
  REQUIRE(b.addr.port != 0);
  REQUIRE(a.addr.port != b.addr.port);
  caf::scoped_actor probe{*b.sys};
  b.add_component(component::test, b.sys->spawn(echo, caf::actor{probe}));
  caf::scoped_actor self{*a.sys};

  // Request with an envelope and a fault: the reply comes back equal.
  bool replied = false;
  self->request(a.centre, wait_bound,
                cafmesh::make_call(b.addr, component::test, nt_echo_atom::value,
                                   sample_envelope(), sample_fault()))
    .receive(
      [&](const envelope& e, const fault& f) {
        replied = true;
        CHECK(e == sample_envelope());
        CHECK(f == sample_fault());
      },
      [&](caf::error& e) { FAIL("call failed: " << a.sys->render(e)); });
  CHECK(replied);

  // An error answer crosses intact.
  bool failed = false;
  self->request(a.centre, wait_bound,
                cafmesh::make_call(b.addr, component::test, nt_fail_atom::value,
                                   sample_fault()))
    .receive([&](const envelope&, const fault&) { FAIL("expected an error"); },
             [&](caf::error& e) {
               failed = true;
               CHECK(cafmesh::to_fault(e) == sample_fault());
             });
  CHECK(failed);

  // A one-way send arrives at the component.
  self->send(a.centre, cafmesh::mc_send_atom::value, b.addr, component::test,
             caf::make_message(nt_note_atom::value, std::string{"hello over tcp"}));
  std::string note;
  probe->receive([&](nt_note_atom, const std::string& text) { note = text; },
                 caf::after(wait_bound) >> [&] { FAIL("one-way message did not arrive"); });
  CHECK(note == "hello over tcp");

  // An unregistered component on B answers silo_unavailable from B.
  self->request(a.centre, wait_bound,
                cafmesh::make_call(b.addr, component::catalog, nt_echo_atom::value))
    .receive([&](const envelope&, const fault&) { FAIL("expected an error"); },
             [&](caf::error& e) {
               auto f = cafmesh::to_fault(e);
               CHECK(f.code == mesh_errc::silo_unavailable);
               CHECK(f.text == "component catalog is not registered on silo " + b.addr.to_string());
             });

  // Both links see each other as connected peers.
  self->request(a.link, wait_bound, cafmesh::nl_peers_atom::value)
    .receive([&](const std::vector<silo_address>& ps) {
               CHECK(ps == std::vector<silo_address>{b.addr});
             },
             [&](caf::error& e) { FAIL(a.sys->render(e)); });
  {
    caf::scoped_actor sb{*b.sys};
    sb->request(b.link, wait_bound, cafmesh::nl_peers_atom::value)
      .receive([&](const std::vector<silo_address>& ps) {
                 CHECK(ps == std::vector<silo_address>{a.addr});
               },
               [&](caf::error& e) { FAIL(b.sys->render(e)); });
  }
}

TEST_CASE("net link: a call whose time-to-live runs out while a link holds it never reaches its component, held both ways") {
  net_silo a{1};
  net_silo b{1};
  caf::scoped_actor probe{*b.sys};
  b.add_component(component::test, b.sys->spawn(echo, caf::actor{probe}));
  caf::scoped_actor self{*a.sys};
  caf::scoped_actor sb{*b.sys};
  auto stall = [&](caf::scoped_actor& s, const cafmesh::net_link_actor& link, bool on) {
    s->request(link, wait_bound, cafmesh::nl_stall_atom::value, on, false)
      .receive([](caf::ok_atom) {}, [&](caf::error& e) { FAIL("stall: " << a.sys->render(e)); });
  };
  auto bounded_hold = [&](const char* what) {
    self->request(a.centre, 300ms,
                  cafmesh::make_bounded_call(300, b.addr, component::test, nt_hold_atom::value))
      .receive([&](caf::message&) { FAIL(what << ": the held call cannot be answered"); },
               [&](caf::error& e) { CHECK(e == caf::sec::request_timeout); });
  };
  auto centre_stats = [&](caf::scoped_actor& s, const caf::actor& centre) {
    cafmesh::message_center_stats out;
    s->request(centre, wait_bound, cafmesh::mc_stats_atom::value)
      .receive([&](const cafmesh::message_center_stats& st) { out = st; },
               [&](caf::error& e) { FAIL(a.sys->render(e)); });
    return out;
  };
  // Make sure the connection is up before the stalls.
  self->send(a.centre, cafmesh::mc_send_atom::value, b.addr, component::test,
             caf::make_message(nt_note_atom::value, std::string{"warm-up"}));
  probe->receive([&](nt_note_atom, const std::string&) {},
                 caf::after(wait_bound) >> [&] { FAIL("warm-up note did not arrive"); });
  for (auto held_at : {"B, inbound", "A, outbound"}) {
    CAPTURE(held_at);
    bool at_b = std::string{held_at} == "B, inbound";
    if (at_b)
      stall(sb, b.link, true);
    else
      stall(self, a.link, true);
    bounded_hold(held_at); // A gives up after 300 ms
    // Behind it on the same connection: a one-way note without a time-to-live.
    self->send(a.centre, cafmesh::mc_send_atom::value, b.addr, component::test,
               caf::make_message(nt_note_atom::value, std::string{held_at}));
    // Let the frame's deadline pass in the holding process too.
    probe->receive([&](nt_hold_atom) { FAIL("the held call reached B during the stall"); },
                   caf::after(300ms) >> [] {});
    if (at_b)
      stall(sb, b.link, false);
    else
      stall(self, a.link, false);
    // Frames arrive in order: the note comes, the expired call never does.
    std::string note;
    probe->receive([&](nt_hold_atom) { FAIL("the expired call reached B's component"); },
                   [&](nt_note_atom, const std::string& text) { note = text; },
                   caf::after(wait_bound) >> [&] { FAIL("the note did not arrive"); });
    CHECK(note == held_at);
  }
  // Held at B: B's centre answered it expired (in transit). Held at A: A's link answered
  // it without sending. Either way A's centre has no pending call left.
  CHECK(centre_stats(sb, b.centre).expired == 1);
  CHECK(centre_stats(self, a.centre).pending_calls == 0);
}

TEST_CASE("net link: a call to a wrong generation of a live endpoint fails departed_silo") {
  net_silo a{1};
  net_silo b{5};
  caf::scoped_actor probe{*b.sys};
  b.add_component(component::test, b.sys->spawn(echo, caf::actor{probe}));
  caf::scoped_actor self{*a.sys};
  auto old_b = b.addr;
  old_b.generation = 4;
  self->request(a.centre, wait_bound,
                cafmesh::make_call(old_b, component::test, nt_echo_atom::value,
                                   sample_envelope(), sample_fault()))
    .receive([&](const envelope&, const fault&) { FAIL("expected departed_silo"); },
             [&](caf::error& e) {
               auto f = cafmesh::to_fault(e);
               CHECK(f.code == mesh_errc::departed_silo);
               CHECK(f.silo == caf::optional<silo_address>{old_b});
             });
  // The live generation still answers.
  bool replied = false;
  self->request(a.centre, wait_bound,
                cafmesh::make_call(b.addr, component::test, nt_echo_atom::value,
                                   sample_envelope(), sample_fault()))
    .receive([&](const envelope& e, const fault&) { replied = e == sample_envelope(); },
             [&](caf::error& e) { FAIL(a.sys->render(e)); });
  CHECK(replied);
}

TEST_CASE("net link: a call to an endpoint where nothing listens fails departed_silo") {
  net_silo a{1};
  uint16_t closed_port = 0;
  {
    // Find a port that is surely closed: the one a just-shut-down silo listened on.
    net_silo gone{1};
    closed_port = gone.addr.port;
  }
  caf::scoped_actor self{*a.sys};
  silo_address nobody{"127.0.0.1", closed_port, 1};
  self->request(a.centre, wait_bound,
                cafmesh::make_call(nobody, component::test, nt_echo_atom::value))
    .receive([&](const envelope&, const fault&) { FAIL("expected departed_silo"); },
             [&](caf::error& e) {
               auto f = cafmesh::to_fault(e);
               CHECK(f.code == mesh_errc::departed_silo);
               CHECK(f.text == "silo " + nobody.to_string() + " has departed");
             });
}

TEST_CASE("net link: when B's actor system shuts down, A's pending and later calls fail departed_silo") {
  net_silo a{1};
  net_silo b{1};
  auto b_addr = b.addr;
  caf::scoped_actor self{*a.sys};
  auto probe = std::make_unique<caf::scoped_actor>(*b.sys);
  b.add_component(component::test, b.sys->spawn(echo, caf::actor{*probe}));
  // A call B's component holds forever.
  auto pending = self->request(a.centre, wait_bound,
                               cafmesh::make_call(b_addr, component::test, nt_hold_atom::value));
  bool held = false;
  (*probe)->receive([&](nt_hold_atom) { held = true; },
                    caf::after(wait_bound) >> [&] { FAIL("the call never reached B"); });
  REQUIRE(held);
  probe.reset();
  auto t0 = std::chrono::steady_clock::now();
  b.shutdown();
  bool departed = false;
  pending.receive([&](caf::message&) { FAIL("the held call cannot be answered"); },
                  [&](caf::error& e) {
                    auto f = cafmesh::to_fault(e);
                    departed = f.code == mesh_errc::departed_silo;
                    // The call had reached B: its outcome is unknown, so it is final.
                    CHECK(f.text == "silo " + b_addr.to_string()
                                      + " departed while the call was in flight; its "
                                        "outcome is unknown");
                    CHECK(f.silo == caf::optional<silo_address>{b_addr});
                    CHECK(f.causes.size() == 1);
                    CHECK(f.causes.at(0).code == mesh_errc::response_timeout);
                  });
  CHECK(departed);
  auto elapsed = std::chrono::steady_clock::now() - t0;
  MESSAGE("pending call failed departed_silo "
          << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
          << " ms after B's shutdown began");
  // Later calls fail the same way, at once.
  self->request(a.centre, wait_bound,
                cafmesh::make_call(b_addr, component::test, nt_echo_atom::value,
                                   sample_envelope(), sample_fault()))
    .receive([&](const envelope&, const fault&) { FAIL("B is gone"); },
             [&](caf::error& e) {
               CHECK(cafmesh::to_fault(e).code == mesh_errc::departed_silo);
               CHECK(cafmesh::to_fault(e).text == "silo " + b_addr.to_string() + " has departed");
             });
  self->request(a.centre, wait_bound, cafmesh::mc_stats_atom::value)
    .receive([&](const cafmesh::message_center_stats& st) {
               CHECK(st.departed_fails == 2);
               CHECK(st.in_flight_fails == 1);
               CHECK(st.pending_calls == 0);
             },
             [&](caf::error& e) { FAIL(a.sys->render(e)); });
  // A's link forgot B.
  self->request(a.link, wait_bound, cafmesh::nl_peers_atom::value)
    .receive([&](const std::vector<silo_address>& ps) { CHECK(ps.empty()); },
             [&](caf::error& e) { FAIL(a.sys->render(e)); });
}

TEST_CASE("net link: an answer B sent before it left completes A's call although membership showed B Dead first, whether A's link holds it or not") {
  // Membership reaches A apart from B's connection, so it can overtake B's last answers;
  // a call B answered must end with that answer, not with a resendable departed_silo
  // (docs/behaviour/membership.md#departures-and-the-wire).
  for (auto held_by_stall : {false, true}) {
    CAPTURE(held_by_stall);
    net_silo a{1};
    net_silo b{1};
    caf::scoped_actor self{*a.sys};
    caf::scoped_actor probe{*b.sys};
    auto echo_b = b.sys->spawn(echo, caf::actor{probe});
    b.add_component(component::test, echo_b);
    auto snapshot = [&](uint64_t version, cafmesh::silo_status b_status) {
      cafmesh::membership_snapshot v;
      v.version = version;
      v.rows = {cafmesh::membership_row{a.addr, cafmesh::silo_status::active, {}, false},
                cafmesh::membership_row{b.addr, b_status, {}, false}};
      caf::anon_send(a.centre, cafmesh::mb_snapshot_atom::value, v);
    };
    auto stall_a = [&](bool on) {
      self->request(a.link, wait_bound, cafmesh::nl_stall_atom::value, on, false)
        .receive([](caf::ok_atom) {},
                 [&](caf::error& e) { FAIL("stall: " << a.sys->render(e)); });
    };
    auto call = self->request(a.centre, wait_bound,
                              cafmesh::make_call(b.addr, component::test, nt_hold_atom::value));
    bool held = false;
    probe->receive([&](nt_hold_atom) { held = true; },
                   caf::after(wait_bound) >> [&] { FAIL("the call never reached B"); });
    REQUIRE(held);
    if (held_by_stall) {
      stall_a(true);
      caf::anon_send(echo_b, nt_release_atom::value, 2);
      // B's answer crosses the socket and waits in A's link while A learns B is Dead, and
      // longer than the flush's bound (twice the 200 ms heartbeat interval).
      probe->receive(caf::after(200ms) >> [] {});
      snapshot(1, cafmesh::silo_status::shutting_down);
      snapshot(2, cafmesh::silo_status::dead);
      probe->receive(caf::after(600ms) >> [] {});
      stall_a(false);
    } else {
      snapshot(1, cafmesh::silo_status::shutting_down);
      snapshot(2, cafmesh::silo_status::dead);
      // A's centre has seen B Dead; B's connection is still up and B answers now.
      probe->receive(caf::after(200ms) >> [] {});
      caf::anon_send(echo_b, nt_release_atom::value, 1);
    }
    int answer = 0;
    call.receive([&](int v) { answer = v; },
                 [&](caf::error& e) { FAIL("the answered call failed: " << a.sys->render(e)); });
    CHECK(answer == (held_by_stall ? 2 : 1));
    // The departure still counts: a new call fails at once.
    self->request(a.centre, wait_bound,
                  cafmesh::make_call(b.addr, component::test, nt_hold_atom::value))
      .receive([&](caf::message&) { FAIL("B departed"); },
               [&](caf::error& e) { CHECK(cafmesh::to_fault(e).code == mesh_errc::departed_silo); });
  }
}

TEST_CASE("net link: when B's centre exits while B's system lives, A's pending call fails departed_silo naming B and later calls fail at once") {
  net_silo a{1};
  net_silo b{1};
  auto b_addr = b.addr;
  caf::scoped_actor self{*a.sys};
  auto probe = std::make_unique<caf::scoped_actor>(*b.sys);
  b.add_component(component::test, b.sys->spawn(echo, caf::actor{*probe}));
  auto pending = self->request(a.centre, wait_bound,
                               cafmesh::make_call(b_addr, component::test, nt_hold_atom::value));
  bool held = false;
  (*probe)->receive([&](nt_hold_atom) { held = true; },
                    caf::after(wait_bound) >> [&] { FAIL("the call never reached B"); });
  REQUIRE(held);
  // Only B's centre goes; B's link exits with it (it monitors its centre), so A's link
  // sees B's link go down.
  auto t0 = std::chrono::steady_clock::now();
  caf::anon_send_exit(b.centre, caf::exit_reason::user_shutdown);
  bool departed = false;
  pending.receive([&](caf::message&) { FAIL("the held call cannot be answered"); },
                  [&](caf::error& e) {
                    auto f = cafmesh::to_fault(e);
                    departed = f.code == mesh_errc::departed_silo;
                    CHECK(f.silo == caf::optional<silo_address>{b_addr});
                  });
  CHECK(departed);
  CHECK(std::chrono::steady_clock::now() - t0 < wait_bound);
  auto t1 = std::chrono::steady_clock::now();
  self->request(a.centre, wait_bound,
                cafmesh::make_call(b_addr, component::test, nt_hold_atom::value))
    .receive([&](caf::message&) { FAIL("B is gone"); },
             [&](caf::error& e) {
               CHECK(cafmesh::to_fault(e).code == mesh_errc::departed_silo);
             });
  CHECK(std::chrono::steady_clock::now() - t1 < 1s);
}

TEST_CASE("net link: 2000 one-way frames arrive in order, in batches both links count alike, and calls round-trip (measured)") {
  net_silo a{1};
  net_silo b{1};
  caf::scoped_actor probe{*b.sys};
  b.add_component(component::test, b.sys->spawn(echo, caf::actor{probe}));
  caf::scoped_actor self{*a.sys};
  constexpr int n = 2000;
  for (int i = 0; i < n; ++i)
    self->send(a.centre, cafmesh::mc_send_atom::value, b.addr, component::test,
               caf::make_message(nt_note_atom::value, "n" + std::to_string(i)));
  int in_order = 0;
  bool timed_out = false;
  for (int i = 0; i < n && !timed_out; ++i)
    probe->receive(
      [&](nt_note_atom, const std::string& text) {
        if (text == "n" + std::to_string(in_order))
          ++in_order;
      },
      caf::after(wait_bound) >> [&] { timed_out = true; });
  CHECK_FALSE(timed_out);
  CHECK(in_order == n);
  // The frames crossed in batches (SPEC §14 B7): every frame counted once each side, and
  // what A's link sent is what B's link received, message for message.
  auto wire_of = [&](net_silo& s) {
    cafmesh::link_wire_stats out;
    caf::scoped_actor q{*s.sys};
    q->request(s.link, wait_bound, cafmesh::nl_wire_atom::value)
      .receive([&](cafmesh::link_wire_stats& x) { out = x; },
               [&](caf::error& err) { FAIL("no link stats: " << s.sys->render(err)); });
    return out;
  };
  auto wa = wire_of(a);
  auto wb = wire_of(b);
  MESSAGE(n << " one-way frames A -> B in " << wa.messages_out << " link messages");
  CHECK(wa.frames_out == static_cast<uint64_t>(n));
  CHECK(wb.frames_in == wa.frames_out);
  CHECK(wb.messages_in == wa.messages_out);
  CHECK(wa.messages_out >= 1);
  CHECK(wa.messages_out <= wa.frames_out);
  // Sequential calls through both centres and links: round-trip times.
  std::vector<int64_t> rtt_us;
  auto e = sample_envelope();
  auto f = sample_fault();
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    bool ok = false;
    self->request(a.centre, wait_bound,
                  cafmesh::make_call(b.addr, component::test, nt_echo_atom::value, e, f))
      .receive([&](const envelope& re, const fault&) { ok = re.id == e.id; },
               [&](caf::error&) {});
    REQUIRE(ok);
    rtt_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::steady_clock::now() - t0)
                       .count());
  }
  std::sort(rtt_us.begin(), rtt_us.end());
  MESSAGE("call RTT through centre A, link A, TCP, link B, centre B, echo and back (" << n
          << " calls): median " << rtt_us[n / 2] << " us, p99 " << rtt_us[n * 99 / 100]
          << " us, max " << rtt_us.back() << " us");
  CHECK(rtt_us.size() == static_cast<size_t>(n));
}

TEST_CASE("net link: a port already in use fails the link's port request and start_net_process") {
  net_silo a{1};
  caf::actor_system_config cfg;
  cafmesh::register_types(cfg);
  cfg.load<caf::io::middleman>();
  caf::actor_system sys{cfg};
  cafmesh::config::network_section net;
  net.port = a.addr.port;
  net.primary_port = 1; // not the primary: no oracle
  auto started = cafmesh::start_net_process(sys, net, 1);
  REQUIRE_FALSE(started);
  CHECK(started.error() == caf::sec::cannot_open_port);
}

TEST_CASE("net link: a process with membership on a table keeps its oracle to itself: a process that takes it for its primary is told config_invalid, and learns no handle") {
  // A: membership on etcd, so its link reports suspicions to a table oracle of its own,
  // a detached actor whose handle must never reach a peer (net_link.hpp, "The oracle over
  // the network"). No etcd member answers here (nothing listens on port 1): the oracle
  // starts all the same, and the link's hello answer is what this case is about.
  caf::actor_system_config cfg_a;
  cafmesh::register_types(cfg_a);
  cfg_a.load<caf::io::middleman>();
  cfg_a.set("scheduler.max-threads", size_t{2});
  auto sys_a = std::make_unique<caf::actor_system>(cfg_a);
  cafmesh::config::network_section net_a;
  net_a.heartbeat_interval_ms = 200;
  net_a.failure_detection_ms = 2000;
  cafmesh::config::membership_section table;
  table.provider = "etcd";
  table.etcd_endpoints = {"http://127.0.0.1:1"};
  table.etcd_request_timeout_ms = 200;
  auto a = cafmesh::start_net_link(*sys_a, net_a, table, 1, std::chrono::seconds(10));
  REQUIRE(a);
  auto centre_a = cafmesh::spawn_message_center(*sys_a, a->addr, a->link);
  // B: configured with A as its primary (a mixed-up configuration).
  caf::actor_system_config cfg_b;
  cafmesh::register_types(cfg_b);
  cfg_b.load<caf::io::middleman>();
  cfg_b.set("scheduler.max-threads", size_t{2});
  auto sys_b = std::make_unique<caf::actor_system>(cfg_b);
  cafmesh::config::network_section net_b = net_a;
  net_b.primary_host = "127.0.0.1";
  net_b.primary_port = a->addr.port;
  auto link_b = cafmesh::spawn_net_link(*sys_b, net_b);
  uint16_t port_b = 0;
  caf::error oracle_err;
  bool got_handle = false;
  {
    caf::scoped_actor self{*sys_b};
    self->request(link_b, wait_bound, cafmesh::nl_port_atom::value)
      .receive([&](uint16_t p) { port_b = p; },
               [&](caf::error& e) { FAIL("no port: " << sys_b->render(e)); });
    auto centre_b
      = cafmesh::spawn_message_center(*sys_b, silo_address{"127.0.0.1", port_b, 2}, link_b);
    self->request(link_b, wait_bound, cafmesh::nl_oracle_atom::value)
      .receive([&](const caf::actor& o) { got_handle = static_cast<bool>(o); },
               [&](caf::error& e) { oracle_err = std::move(e); });
    caf::anon_send_exit(centre_b, caf::exit_reason::user_shutdown);
  }
  CHECK_FALSE(got_handle);
  REQUIRE(oracle_err);
  auto f = cafmesh::to_fault(oracle_err);
  CHECK(f.code == mesh_errc::config_invalid);
  CHECK(f.text
        == "the primary 127.0.0.1:" + std::to_string(a->addr.port)
             + " serves no membership oracle: it is not the process that hosts the"
               " development oracle (name that process's port in network.primary_port), or"
               " its membership is on a shared table (membership.provider; give every process"
               " of the cluster the same provider)");
  caf::anon_send_exit(link_b, caf::exit_reason::user_shutdown);
  link_b = nullptr;
  sys_b.reset();
  for (auto& x : {centre_a, caf::actor_cast<caf::actor>(a->link),
                  caf::actor_cast<caf::actor>(a->oracle)})
    caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
  centre_a = nullptr;
  a->link = nullptr;
  a->oracle = nullptr;
  sys_a.reset();
}
