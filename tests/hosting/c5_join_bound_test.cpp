// SPEC §15 C5: a join that cannot reach its membership table gives up after
// `membership.max_join_time_ms` and names the address it tried
// (docs/behaviour/membership.md#a-join-that-cannot-reach-the-table). Silos and a pure client
// built by the hosting layer, their oracle replaced by a table nobody reaches, driven in
// virtual time through their hosts and agents.

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include <caf/all.hpp>

#include "cafmesh/actors/membership.hpp"
#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/builder_access.hpp"

using namespace cafmesh;
using namespace cafmesh::lifecycle;

namespace {

/// An oracle whose process never answers: every message stays in its mailbox (the oracle
/// relay of a process whose primary is not running queues what it is asked the same way).
membership_oracle_actor deaf_oracle(testing::fixture& fx) {
  auto a = fx.sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
    self->set_default_handler(caf::skip);
    return {[](caf::ok_atom) {}};
  });
  return caf::actor_cast<membership_oracle_actor>(fx.track(a));
}

/// An oracle that refuses every request at once as unreachable, as the table oracle does
/// when no etcd member answers; counts the joins it refused.
membership_oracle_actor unreachable_oracle(testing::fixture& fx, std::shared_ptr<int> joins) {
  auto refusal = [] {
    return to_error(fault{mesh_errc::departed_silo,
                          "the membership table cannot be reached: no etcd endpoint answered"});
  };
  auto a = fx.sys.spawn([=](caf::event_based_actor*) -> caf::behavior {
    return {
      [=](mb_join_atom, const membership_row&) -> caf::result<uint64_t> {
        ++*joins;
        return refusal();
      },
      [=](mb_get_atom) -> caf::result<membership_snapshot> { return refusal(); },
      [=](mb_status_atom, const silo_address&, silo_status) -> caf::result<uint64_t> {
        return refusal();
      },
      [=](mb_dead_atom, const silo_address&) -> caf::result<uint64_t> { return refusal(); },
      [](mb_subscribe_atom, const caf::actor&) {},
    };
  });
  return caf::actor_cast<membership_oracle_actor>(fx.track(a));
}

/// A silo whose primary is 127.0.0.1:4100 and whose oracle is `oracle`.
caf::expected<silo> silo_with(testing::fixture& fx, membership_oracle_actor oracle,
                              int64_t max_join_time_ms) {
  config::mesh_config cfg;
  cfg.mesh.role = config::process_role::silo_host;
  cfg.network.primary_host = "127.0.0.1";
  cfg.network.primary_port = 4100;
  cfg.membership.max_join_time_ms = max_join_time_ms;
  silo_builder builder{fx.sys};
  builder.config(cfg).cluster(make_in_process_cluster(fx.sys));
  testing::builder_access::override_options(builder,
                                            [oracle](silo_options& so) { so.oracle = oracle; });
  return builder.build();
}

} // namespace

TEST_CASE("C5 a join that cannot reach its membership table gives up after membership.max_join_time_ms (default 60,000 ms): the silo's start fails at 60,000 ms naming 127.0.0.1:4100") {
  testing::fixture fx;
  config::mesh_config defaults;
  REQUIRE(defaults.membership.max_join_time_ms == 60000);
  auto s = silo_with(fx, deaf_oracle(fx), defaults.membership.max_join_time_ms);
  REQUIRE(s);
  auto t0 = fx.now_ms();
  auto started = testing::ask(fx, s->host(), host_start_atom::value);
  auto active = testing::ask(fx, s->host(), host_active_atom::value);
  // One virtual millisecond before the bound the start still waits.
  fx.run_to(t0 + 59999);
  CHECK_FALSE(active->done);
  REQUIRE(fx.run_until([&] { return active->done; }, std::chrono::minutes(2)));
  CHECK(active->t_ms - t0 == 60000);
  REQUIRE(active->err);
  auto f = to_fault(active->err);
  CHECK(f.code == mesh_errc::departed_silo);
  CHECK(f.render()
        == "membership: could not reach the membership table at 127.0.0.1:4100 for 60,000 ms "
           "(membership.max_join_time_ms); is the primary process (the one that hosts the "
           "development table) running there? start it first, check network.primary_host "
           "and network.primary_port, or raise the bound");
  CHECK(started->done);
  CHECK(fx.logs.count("could not reach the membership table at 127.0.0.1:4100") >= 1);
  // The host stops the silo after the failed start; its Dead is not waited for (the table has
  // no row of it): the stop's membership step ends at once, not after a membership bound.
  auto failed_at = active->t_ms;
  REQUIRE(fx.run_until(
    [&] { return fx.logs.count("membership: Dead not published: this silo never joined") == 1; },
    std::chrono::minutes(2)));
  CHECK(fx.now_ms() - failed_at < 1000);
}

TEST_CASE("C5 a join whose table refuses as unreachable is sent again every 1,000 ms and gives up at the configured 2,500 ms with the last refusal as its cause") {
  testing::fixture fx;
  auto joins = std::make_shared<int>(0);
  auto s = silo_with(fx, unreachable_oracle(fx, joins), 2500);
  REQUIRE(s);
  auto t0 = fx.now_ms();
  auto active = testing::ask(fx, s->host(), host_active_atom::value);
  testing::ask(fx, s->host(), host_start_atom::value);
  REQUIRE(fx.run_until([&] { return active->done; }, std::chrono::minutes(1)));
  CHECK(active->t_ms - t0 == 2500);
  CHECK(*joins == 3); // at +0, +1,000 and +2,000 ms
  REQUIRE(active->err);
  CHECK(to_fault(active->err).render()
        == "membership: could not reach the membership table at 127.0.0.1:4100 for 2,500 ms "
           "(membership.max_join_time_ms); is the primary process (the one that hosts the "
           "development table) running there? start it first, check network.primary_host "
           "and network.primary_port, or raise the bound <- the membership table cannot be "
           "reached: no etcd endpoint answered");
}

TEST_CASE("C5 membership.max_join_time_ms 0 means no bound: a join that cannot reach its table still waits after 10 minutes") {
  testing::fixture fx;
  auto joins = std::make_shared<int>(0);
  auto s = silo_with(fx, unreachable_oracle(fx, joins), 0);
  REQUIRE(s);
  auto t0 = fx.now_ms();
  auto active = testing::ask(fx, s->host(), host_active_atom::value);
  testing::ask(fx, s->host(), host_start_atom::value);
  fx.run_to(t0 + 600000);
  CHECK_FALSE(active->done);
  CHECK(*joins == 601); // every 1,000 ms from +0 to +600,000 ms
}

TEST_CASE("C5 a pure client whose membership table cannot be reached gives up its join at the configured 1,500 ms naming the etcd endpoints it tried") {
  testing::fixture fx;
  config::mesh_config cc;
  cc.mesh.role = config::process_role::pure_client;
  cc.membership.provider = "etcd";
  cc.membership.etcd_endpoints = {"http://127.0.0.1:2379", "http://127.0.0.1:22379"};
  cc.membership.max_join_time_ms = 1500;
  auto oracle = deaf_oracle(fx);
  client_builder builder{fx.sys};
  builder.config(cc).cluster(make_in_process_cluster(fx.sys));
  testing::builder_access::override_options(builder, [oracle](pure_client_options& po) {
    po.oracle = oracle;
  });
  auto client = builder.build();
  REQUIRE(client);
  auto t0 = fx.now_ms();
  auto reach = testing::ask<uint64_t>(fx, client->components().agent, mb_reach_atom::value);
  fx.run_to(t0 + 1499);
  CHECK_FALSE(reach->done);
  REQUIRE(fx.run_until([&] { return reach->done; }, std::chrono::minutes(1)));
  CHECK(reach->t_ms - t0 == 1500);
  REQUIRE(reach->err);
  CHECK(to_fault(reach->err).render()
        == "membership: could not reach the membership table on etcd at "
           "http://127.0.0.1:2379, http://127.0.0.1:22379 for 1,500 ms "
           "(membership.max_join_time_ms); is etcd running and reachable from this host? "
           "start it, check membership.etcd_endpoints, or raise the bound");
}

TEST_CASE("C5 a pure client whose table answers reaches it at once (its join needs no row)") {
  testing::fixture fx;
  auto cluster = make_in_process_cluster(fx.sys);
  config::mesh_config cc;
  cc.mesh.role = config::process_role::pure_client;
  auto client = client_builder{fx.sys}.config(cc).cluster(cluster).build();
  REQUIRE(client);
  auto t0 = fx.now_ms();
  auto reach = testing::ask<uint64_t>(fx, client->components().agent, mb_reach_atom::value);
  fx.run();
  REQUIRE(reach->done);
  CHECK_FALSE(reach->err);
  CHECK(reach->t_ms == t0);
}
