#include <chrono>

#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/routing/register_types.hpp"

using namespace std::chrono_literals;
using namespace cafmesh;

namespace {

using nt_echo_atom = caf::atom_constant<caf::atom("ntecho")>;
using nt_hold_atom = caf::atom_constant<caf::atom("nthold")>;
using nt_count_atom = caf::atom_constant<caf::atom("ntcount")>;

struct net_config : caf::actor_system_config {
  net_config() {
    load<caf::io::middleman>();
    set("scheduler.max-threads", size_t{2});
    register_types(*this);
  }
};

struct holder_state {
  std::vector<caf::response_promise> held;
  static inline const char* name = "test.holder";
};

/// `(nt_echo_atom, int x) -> x * 2`; `(nt_hold_atom)` never answers; `(nt_count_atom) -> held`.
caf::behavior echo_holder(caf::stateful_actor<holder_state>* self) {
  return {
    [](nt_echo_atom, int x) { return x * 2; },
    [=](nt_hold_atom) -> caf::response_promise {
      self->state.held.push_back(self->make_response_promise());
      return self->state.held.back();
    },
    [=](nt_count_atom) { return static_cast<int>(self->state.held.size()); },
  };
}

} // namespace

TEST_CASE("message_center network mode: calls cross CAF io, departures fail pending calls with departed_silo") {
  net_config cfg_a, cfg_b;
  caf::actor_system sys_a{cfg_a};
  caf::actor_system sys_b{cfg_b};
  auto a = start_network_message_center(sys_a, "127.0.0.1", 0, 1);
  auto b = start_network_message_center(sys_b, "127.0.0.1", 0, 2);
  REQUIRE(a);
  REQUIRE(b);
  auto [mc_a, addr_a] = *a;
  auto [mc_b, addr_b] = *b;
  CHECK(addr_a.port != 0);
  CHECK(addr_b.port != addr_a.port);
  auto holder = sys_b.spawn(echo_holder);
  caf::anon_send(mc_b, mc_register_atom::value, component::test, holder);
  caf::scoped_actor self{sys_a};
  caf::scoped_actor self_b{sys_b};
  auto fail_with = [&](caf::error& e) { FAIL("unexpected error: " << sys_a.render(e)); };

  // 1. A call crosses the wire and returns the component's reply.
  self->request(mc_a, 10s, make_call(addr_b, component::test, nt_echo_atom::value, 21))
    .receive([&](int x) { CHECK(x == 42); }, fail_with);

  // 2. An unregistered component answers silo_unavailable from the peer.
  self->request(mc_a, 10s, make_call(addr_b, component::catalog, nt_echo_atom::value, 1))
    .receive([&](int) { FAIL("expected an error"); },
             [&](caf::error& e) {
               auto f = to_fault(e);
               CHECK(f.code == mesh_errc::silo_unavailable);
               CHECK(f.text == "component catalog is not registered on silo " + addr_b.to_string());
             });

  // 3. A frame naming another generation of b's endpoint is refused by b: departed_silo.
  auto old_b = addr_b;
  old_b.generation = 1;
  self->request(mc_a, 10s, make_call(old_b, component::test, nt_echo_atom::value, 1))
    .receive([&](int) { FAIL("expected an error"); },
             [&](caf::error& e) { CHECK(to_fault(e).code == mesh_errc::departed_silo); });

  // 4. A pending call fails departed_silo when b's centre goes away.
  auto pending = self->request(mc_a, 20s, make_call(addr_b, component::test, nt_hold_atom::value));
  int held = 0;
  for (int i = 0; i < 200 && held == 0; ++i)
    self_b->request(holder, 1s, nt_count_atom::value)
      .receive([&](int n) { held = n; }, [&](caf::error&) {});
  REQUIRE(held == 1);
  caf::anon_send_exit(mc_b, caf::exit_reason::user_shutdown);
  auto t0 = std::chrono::steady_clock::now();
  pending.receive([&]() { FAIL("expected departed_silo"); },
                  [&](caf::error& e) {
                    auto f = to_fault(e);
                    CHECK(f.code == mesh_errc::departed_silo);
                    REQUIRE(f.silo);
                    CHECK(*f.silo == addr_b);
                  });
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);

  // 5. Later calls to b fail at once; a closed port fails the connect the same way.
  self->request(mc_a, 10s, make_call(addr_b, component::test, nt_echo_atom::value, 1))
    .receive([&](int) { FAIL("expected an error"); },
             [&](caf::error& e) { CHECK(to_fault(e).code == mesh_errc::departed_silo); });
  silo_address nobody{"127.0.0.1", 1, 9};
  self->request(mc_a, 10s, make_call(nobody, component::test, nt_echo_atom::value, 1))
    .receive([&](int) { FAIL("expected an error"); },
             [&](caf::error& e) { CHECK(to_fault(e).code == mesh_errc::departed_silo); });

  caf::anon_send_exit(mc_a, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(holder, caf::exit_reason::user_shutdown);
}
