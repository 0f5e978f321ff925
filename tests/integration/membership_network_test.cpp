#include <chrono>

#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/routing/register_types.hpp"

using namespace std::chrono_literals;
using namespace cafmesh;

namespace {

struct mb_net_config : caf::actor_system_config {
  mb_net_config() {
    load<caf::io::middleman>();
    set("scheduler.max-threads", size_t{2});
    register_types(*this);
  }
};

/// Receives snapshots until `pred` holds for one (or 10 s pass); answers the last one.
template <class Pred>
membership_snapshot await_snapshot(caf::scoped_actor& self, Pred pred) {
  membership_snapshot last;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  bool done = false;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    self->receive(
      [&](mb_snapshot_atom, const membership_snapshot& snap) {
        last = snap;
        done = pred(snap);
      },
      caf::after(std::chrono::milliseconds(200)) >> [] {});
  }
  return last;
}

} // namespace

TEST_CASE("membership network mode: an oracle hosted on the primary silo serves remote agents and declares a vanished silo Dead") {
  mb_net_config cfg_a, cfg_b;
  caf::actor_system sys_a{cfg_a};
  caf::actor_system sys_b{cfg_b};
  auto a = start_network_message_center(sys_a, "127.0.0.1", 0, 1);
  auto b = start_network_message_center(sys_b, "127.0.0.1", 0, 2);
  REQUIRE(a);
  REQUIRE(b);
  auto [mc_a, addr_a] = *a;
  auto [mc_b, addr_b] = *b;
  auto oracle = spawn_hosted_membership_oracle(sys_a, {500}, mc_a);
  auto client_a = spawn_oracle_client(sys_a, addr_a, mc_a, addr_a);
  auto client_b = spawn_oracle_client(sys_b, addr_b, mc_b, addr_a);
  auto agent_a = spawn_membership_agent(sys_a, addr_a, client_a);
  auto agent_b = spawn_membership_agent(sys_b, addr_b, client_b);
  caf::anon_send(agent_a, mb_subscribe_atom::value, mc_a);
  caf::anon_send(agent_b, mb_subscribe_atom::value, mc_b);
  caf::scoped_actor obs{sys_a};
  caf::anon_send(agent_a, mb_subscribe_atom::value, caf::actor{obs});
  caf::scoped_actor self_b{sys_b};
  std::vector<grain_type_info> manifest{{"routing", placement_strategy::stateless_worker, 1}};
  auto fail_with = [&](caf::error& e) { FAIL("unexpected error: " << sys_a.render(e)); };
  caf::scoped_actor self_a{sys_a};
  self_a->request(agent_a, 10s, mb_join_atom::value, manifest, true)
    .receive([&](uint64_t v) { CHECK(v == 1); }, fail_with);
  self_a->request(agent_a, 10s, mb_status_atom::value, silo_status::active)
    .receive([&](uint64_t v) { CHECK(v == 2); }, fail_with);
  self_b->request(agent_b, 10s, mb_join_atom::value, manifest, false)
    .receive([&](uint64_t v) { CHECK(v == 3); }, fail_with);
  self_b->request(agent_b, 10s, mb_status_atom::value, silo_status::active)
    .receive([&](uint64_t v) { CHECK(v == 4); }, fail_with);
  auto snap = await_snapshot(obs, [](const membership_snapshot& s) { return s.version == 4; });
  CHECK(snap.version == 4);
  auto expected = addr_a < addr_b ? std::vector<silo_address>{addr_a, addr_b}
                                  : std::vector<silo_address>{addr_b, addr_a};
  CHECK(snap.active_set() == expected);
  CHECK(snap.is_active(addr_a));
  CHECK(snap.is_active(addr_b));
  CHECK(snap.gateways() == std::vector<silo_address>{addr_a});
  // b's agent sees the same view (pushed through the message centres).
  self_b->request(agent_b, 10s, mb_get_atom::value)
    .receive([&](const membership_snapshot& s) { CHECK(s.version == 4); }, fail_with);
  // b vanishes (its centre and agent exit): the oracle declares it Dead after 500 ms.
  auto t0 = std::chrono::steady_clock::now();
  caf::anon_send_exit(agent_b, caf::exit_reason::kill);
  caf::anon_send_exit(client_b, caf::exit_reason::kill);
  caf::anon_send_exit(mc_b, caf::exit_reason::kill);
  snap = await_snapshot(obs, [&](const membership_snapshot& s) {
    return s.find(addr_b) && s.find(addr_b)->status == silo_status::dead;
  });
  REQUIRE(snap.find(addr_b));
  CHECK(snap.find(addr_b)->status == silo_status::dead);
  CHECK(std::chrono::steady_clock::now() - t0 >= 500ms);
  CHECK(snap.active_set() == std::vector<silo_address>{addr_a});
  for (auto& h : {oracle, client_a, agent_a, mc_a})
    caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
}
