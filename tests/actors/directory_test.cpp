#include <algorithm>
#include <chrono>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/sim_world.hpp"

using namespace std::chrono_literals;
using namespace cafmesh;
using namespace cafmesh::testing;

namespace {

using user_lookup_atom = caf::atom_constant<caf::atom("tulookup")>;
using user_reg_atom = caf::atom_constant<caf::atom("tureg")>;
using user_unreg_atom = caf::atom_constant<caf::atom("tuunreg")>;

/// A placement-like user of the directory: cache first, then one lookup attempt.
struct user_state {
  testing::fixture* fx = nullptr;
  directory_client client;
  directory_cache cache;
  uint64_t hits = 0;
  std::vector<activation_address> dropped;
  std::vector<std::pair<int64_t, lookup_result>> lookups;
  std::vector<std::pair<int64_t, caf::error>> errors;
  std::vector<activation_address> winners;
  static inline const char* name = "test.dir_user";
};

caf::behavior dir_user(caf::stateful_actor<user_state>* self, testing::fixture* fx,
                       directory_client client) {
  self->state.fx = fx;
  self->state.client = std::move(client);
  auto fail = [=](caf::error e) { self->state.errors.emplace_back(self->state.fx->now_ms(), std::move(e)); };
  return {
    [=](mb_snapshot_atom, const membership_snapshot& snap) {
      self->state.client.on_snapshot(snap);
      auto d = self->state.cache.on_snapshot(snap);
      self->state.dropped.insert(self->state.dropped.end(), d.begin(), d.end());
    },
    [=](user_lookup_atom, const grain_id& g) {
      if (auto hit = self->state.cache.get(g)) {
        ++self->state.hits;
        self->state.lookups.emplace_back(self->state.fx->now_ms(), lookup_result{true, *hit});
        return;
      }
      self->state.client.lookup(
        self, g,
        [=](lookup_result r) {
          if (r.registered)
            self->state.cache.put(r.address);
          self->state.lookups.emplace_back(self->state.fx->now_ms(), r);
        },
        fail);
    },
    [=](user_reg_atom, const activation_address& a) {
      self->state.client.register_activation(
        self, a, [=](activation_address w) { self->state.winners.push_back(w); }, fail);
    },
    [=](user_unreg_atom, const activation_address& a) {
      self->state.client.unregister(self, a, [] {}, fail);
    },
  };
}

struct dir_fixture : testing::fixture {
  caf::actor spawn_probe() { return track(sys.spawn(probe, static_cast<testing::fixture*>(this))); }
  template <class Handle>
  void ask(const caf::actor& p, const Handle& to, caf::message m, std::string tag) {
    caf::anon_send(p, probe_ask_atom::value, caf::actor_cast<caf::actor>(to), std::move(m),
                   int64_t{60000}, std::move(tag));
  }
  probe_state& probe_of(const caf::actor& p) { return state_of<probe_state>(p); }

  caf::actor spawn_user(sim_world& w, const sim_silo& s, bool bypass = true) {
    directory_client c{s.addr, s.mc, directory_resolver{default_manifest(), bypass}};
    auto u = track(sys.spawn(dir_user, static_cast<testing::fixture*>(this), std::move(c)));
    caf::anon_send(s.agent, mb_subscribe_atom::value, u);
    (void) w;
    return u;
  }
  user_state& user_of(const caf::actor& u) { return state_of<user_state>(u); }

  /// The first key `messagehub/k{i}` whose owner in `ring` is `owner`.
  grain_id owned_by(const hash_ring& ring, const silo_address& owner, int skip = 0) {
    for (int i = 0;; ++i) {
      grain_id g{"messagehub", "k" + std::to_string(i)};
      if (ring.owner(g) == owner && skip-- == 0)
        return g;
    }
  }

  activation_address act(const grain_id& g, const silo_address& s, uint32_t tag) {
    return activation_address{g, s, activation_tag{tag}};
  }
};

/// Sends partition `to` a hand-off of this build's protocol, as the partition on `from`
/// would.
void send_handoff(const directory_partition_actor& to, const silo_address& from, uint64_t ring_version,
                  std::vector<activation_address> xs) {
  caf::anon_send(to, dir_handoff_atom::value, directory_protocol_version, from, ring_version,
                 std::move(xs));
}

/// Frames accepted by the network (`send` lines) after trace line `mark` containing `what`.
size_t frames_after(sim_world& w, size_t mark, const std::string& what) {
  auto& t = w.net_state().trace;
  size_t n = 0;
  for (size_t i = mark; i < t.size(); ++i)
    if (t[i].find(" send n") != std::string::npos && t[i].find(what) != std::string::npos)
      ++n;
  return n;
}

/// Owner by a naive scan: the member of highest weight, computed from the rendered forms.
silo_address naive_owner(const std::vector<silo_address>& members, const grain_id& g) {
  silo_address best;
  uint64_t best_weight = 0;
  bool found = false;
  for (auto& s : members) {
    auto w = hash_ring::mix64(fnv1a64(g.to_string())
                              ^ hash_ring::mix64(fnv1a64(s.to_string())));
    if (!found || w > best_weight || (w == best_weight && s.to_string() < best.to_string())) {
      best = s;
      best_weight = w;
      found = true;
    }
  }
  return best;
}

/// `n` silos on 127.0.0.1 with distinct, unordered ports and generations, as a demo run on
/// one host has them.
std::vector<silo_address> loopback_silos(size_t n) {
  static const uint16_t ports[] = {41873, 35022, 52217, 39410, 60133,
                                   33781, 47596, 44002, 58819, 36655};
  std::vector<silo_address> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(silo_address{"127.0.0.1", ports[i], 1764578000 + 17 * i});
  return out;
}

/// The grain id `messagehub/Org/N{n}`.
grain_id org_node(int n) {
  return grain_id{"messagehub", "Org/N" + std::to_string(n)};
}

constexpr int spread_ids = 100000;

/// How many of the ids `messagehub/Org/N0` .. `N99999` each member of `ring` owns.
std::map<silo_address, int> owned_counts(const hash_ring& ring) {
  std::map<silo_address, int> out;
  for (auto& m : ring.members())
    out[m] = 0;
  for (int n = 0; n < spread_ids; ++n)
    ++out[*ring.owner(org_node(n))];
  return out;
}

/// Checks that every member of `ring` owns between 0.8/N and 1.2/N of the ids.
void check_even(const hash_ring& ring) {
  auto n = static_cast<int>(ring.members().size());
  auto counts = owned_counts(ring);
  REQUIRE(counts.size() == ring.members().size());
  int total = 0;
  for (auto& kv : counts) {
    INFO(kv.first.to_string() << " owns " << kv.second << " of " << spread_ids);
    CHECK(kv.second * n * 10 >= 8 * spread_ids);
    CHECK(kv.second * n * 10 <= 12 * spread_ids);
    total += kv.second;
  }
  CHECK(total == spread_ids);
}

} // namespace

TEST_CASE("directory: fnv1a64 matches the FNV-1a 64 test vectors and the owner weights have fixed values on every platform") {
  CHECK(fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64("foobar") == 0x85944171f73967e8ull);
  // The finaliser is splitmix64's: its first output for seed 0 is a published value.
  CHECK(hash_ring::mix64(0x9e3779b97f4a7c15ull) == 0xe220a8397b1dcdafull);
  CHECK(hash_ring::mix64(0) == 0);
  CHECK(hash_ring::mix64(1) == 0x5692161d100b05e5ull);
  CHECK(hash_ring::mix64(0x0123456789abcdefull) == 0xb2c058e4ebb5112cull);
  grain_id g{"messagehub", "Org/N0"};
  silo_address s{"127.0.0.1", 11111, 7};
  CHECK(hash_ring::grain_hash(g) == fnv1a64("messagehub/Org/N0"));
  CHECK(hash_ring::grain_hash(g) == 0xd9ed84c1d8080fe9ull);
  CHECK(hash_ring::silo_hash(s) == fnv1a64("S127.0.0.1:11111@7"));
  CHECK(hash_ring::silo_hash(s) == 0x27fd0974fecb34bfull);
  CHECK(hash_ring::weight(g, s) == 0x06c068e3e4117a02ull);
  CHECK(hash_ring::weight(grain_id{"routing", "default"}, silo_address{"10.0.0.1", 11111, 7})
        == 0x9652c8a724d8f851ull);
  // Owners over three loopback silos: the highest of the three weights.
  std::vector<silo_address> three{{"127.0.0.1", 40001, 1},
                                  {"127.0.0.1", 40002, 2},
                                  {"127.0.0.1", 40003, 3}};
  hash_ring ring{three};
  CHECK(hash_ring::weight(org_node(0), three[0]) == 0x257e6bce314a19a3ull);
  CHECK(hash_ring::weight(org_node(0), three[1]) == 0xa26850cd9ad4d455ull);
  CHECK(hash_ring::weight(org_node(0), three[2]) == 0x9f1bc4bff0276c9cull);
  CHECK(*ring.owner(org_node(0)) == three[1]);
  CHECK(*ring.owner(org_node(1)) == three[2]);
  CHECK(*ring.owner(org_node(2)) == three[2]);
  CHECK(*ring.owner(org_node(3)) == three[1]);
  CHECK(*ring.owner(org_node(4)) == three[1]);
  CHECK(*ring.owner(org_node(5)) == three[2]);
}

TEST_CASE("directory: ring owners are deterministic, independent of member order, and the member of highest weight") {
  std::vector<silo_address> members{{"a", 11111, 1}, {"b", 11111, 2}, {"c", 11111, 3}};
  hash_ring r1{members};
  hash_ring r2{{members[2], members[0], members[1], members[0]}};
  CHECK(r1 == r2);
  CHECK(r1.members() == members);
  std::map<silo_address, int> per_owner;
  for (int i = 0; i < 5000; ++i) {
    grain_id g{"messagehub", "Org/" + std::to_string(i)};
    auto o = r1.owner(g);
    REQUIRE(o);
    CHECK(*o == *r2.owner(g));
    CHECK(*o == naive_owner(members, g));
    CHECK(r1.owner_of(g) != nullptr);
    CHECK(*r1.owner_of(g) == *o);
    CHECK(r1.owns(*o, g));
    ++per_owner[*o];
  }
  CHECK(per_owner.size() == 3);
  CHECK_FALSE(hash_ring{}.owner(grain_id{"x", "y"}));
  CHECK(hash_ring{}.owner_of(grain_id{"x", "y"}) == nullptr);
  CHECK_FALSE(hash_ring{}.owns(members[0], grain_id{"x", "y"}));
  // One member owns everything.
  hash_ring one{{members[1]}};
  CHECK(*one.owner(grain_id{"x", "y"}) == members[1]);
}

TEST_CASE("S13.15 given 3, 5 and 10 Active silos and 100,000 distinct grain ids, each silo owns between 0.8/N and 1.2/N of them") {
  for (size_t n : {3u, 5u, 10u}) {
    INFO(n << " silos");
    check_even(hash_ring{loopback_silos(n)});
  }
}

TEST_CASE("S13.15 when one of 3, 5 or 10 silos leaves exactly the ids it owned change owner, and when it rejoins with a new generation only ids move to it") {
  for (size_t n : {3u, 5u, 10u}) {
    for (size_t k = 0; k < n; ++k) {
      INFO(n << " silos, silo " << k << " leaves and rejoins");
      auto all = loopback_silos(n);
      hash_ring before{all};
      auto leaver = all[k];
      auto rest = all;
      rest.erase(rest.begin() + static_cast<ptrdiff_t>(k));
      hash_ring after{rest};
      auto rejoined = leaver;
      ++rejoined.generation;
      auto back = rest;
      back.push_back(rejoined);
      hash_ring again{back};
      int owned = 0, changed = 0, changed_elsewhere = 0;
      int gained = 0, moved_elsewhere = 0;
      for (int i = 0; i < spread_ids; ++i) {
        auto g = org_node(i);
        auto o0 = *before.owner(g);
        auto o1 = *after.owner(g);
        auto o2 = *again.owner(g);
        owned += o0 == leaver ? 1 : 0;
        changed += o0 != o1 ? 1 : 0;
        changed_elsewhere += (o0 != o1 && o0 != leaver) ? 1 : 0;
        gained += o1 != o2 && o2 == rejoined ? 1 : 0;
        moved_elsewhere += o1 != o2 && o2 != rejoined ? 1 : 0;
      }
      CHECK(owned > 0);
      CHECK(changed == owned);
      CHECK(changed_elsewhere == 0);
      CHECK(gained > 0);
      CHECK(moved_elsewhere == 0);
      // Back at N silos, the shares are even again.
      check_even(again);
    }
  }
}

TEST_CASE_FIXTURE(dir_fixture, "directory: register is first-wins, unregister needs the registered address, unregister_silo drops a silo's entries") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  for (auto s : {a.addr, b.addr, c.addr})
    w.join_active(s);
  hash_ring ring{{a.addr, b.addr, c.addr}};
  auto g = owned_by(ring, b.addr);
  auto g2 = owned_by(ring, b.addr, 1);
  auto p = spawn_probe();
  auto call = [&](auto... xs) { return make_call(b.addr, component::directory, xs...); };
  ask(p, a.mc, call(dir_register_atom::value, act(g, a.addr, 1)), "first");
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 1; }));
  ask(p, c.mc, call(dir_register_atom::value, act(g, c.addr, 2)), "second");
  ask(p, c.mc, call(dir_register_atom::value, act(g2, c.addr, 3)), "other");
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 3; }));
  auto& ans = probe_of(p).answers;
  CHECK(ans[0].reply.get_as<activation_address>(0) == act(g, a.addr, 1));
  CHECK(ans[1].reply.get_as<activation_address>(0) == act(g, a.addr, 1));
  CHECK(ans[2].reply.get_as<activation_address>(0) == act(g2, c.addr, 3));
  ask(p, a.mc, call(dir_unregister_atom::value, act(g, c.addr, 2)), "wrong unreg");
  REQUIRE(run_until([&] { return ans.size() == 4; }));
  ask(p, a.mc, call(dir_lookup_atom::value, g), "still");
  REQUIRE(run_until([&] { return ans.size() == 5; }));
  CHECK(ans[4].reply.get_as<lookup_result>(0).registered);
  CHECK(ans[4].reply.get_as<lookup_result>(0).address == act(g, a.addr, 1));
  ask(p, a.mc, call(dir_unregister_atom::value, act(g, a.addr, 1)), "right unreg");
  REQUIRE(run_until([&] { return ans.size() == 6; }));
  ask(p, a.mc, call(dir_lookup_atom::value, g), "gone");
  REQUIRE(run_until([&] { return ans.size() == 7; }));
  CHECK_FALSE(ans[6].reply.get_as<lookup_result>(0).registered);
  ask(p, a.mc, call(dir_unreg_silo_atom::value, c.addr), "unreg silo");
  REQUIRE(run_until([&] { return ans.size() == 8; }));
  ask(p, a.mc, call(dir_lookup_atom::value, g2), "g2");
  REQUIRE(run_until([&] { return ans.size() == 9; }));
  CHECK_FALSE(ans[8].reply.get_as<lookup_result>(0).registered);
}

TEST_CASE_FIXTURE(dir_fixture, "directory: a partition answers directory_unstable for a grain id it does not own") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  w.join_active(a.addr);
  w.join_active(b.addr);
  hash_ring ring{{a.addr, b.addr}};
  auto g = owned_by(ring, b.addr);
  auto p = spawn_probe();
  ask(p, a.mc, make_call(a.addr, component::directory, dir_lookup_atom::value, g), "lookup");
  ask(p, a.mc, make_call(a.addr, component::directory, dir_register_atom::value, act(g, a.addr, 1)), "reg");
  run();
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 2);
  for (auto& x : ans) {
    REQUIRE(x.error);
    auto f = to_fault(x.error);
    CHECK(f.code == mesh_errc::directory_unstable);
    CHECK(f.text == "directory partition on Sa:11111@1 does not own " + g.to_string() + "; retry later");
  }
}

TEST_CASE_FIXTURE(dir_fixture, "directory: a leaving silo's partition hands its entries to the new owner in one message") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  for (auto s : {a.addr, b.addr, c.addr})
    w.join_active(s);
  auto user = spawn_user(w, a);
  run();
  hash_ring ring{{a.addr, b.addr, c.addr}};
  std::vector<grain_id> gs;
  for (int i = 0; i < 12; ++i) {
    gs.push_back(owned_by(ring, b.addr, i));
    caf::anon_send(user, user_reg_atom::value, act(gs.back(), a.addr, 100 + i));
  }
  REQUIRE(run_until([&] { return user_of(user).winners.size() == 12; }));
  hash_ring after{{a.addr, c.addr}};
  std::map<silo_address, size_t> expected;
  for (auto& g : gs)
    ++expected[*after.owner(g)];
  auto mark = w.net_state().trace.size();
  w.set_status(b.addr, silo_status::shutting_down);
  run_up_to(100ms);
  // One hand-off frame (a one-way `directory send`) from b per member of the new ring, each
  // new owner's entries in it.
  REQUIRE(expected.size() == 2);
  for (auto& kv : expected)
    CHECK(frames_after(w, mark, "Sb:11111@2 -> " + kv.first.to_string() + " #0 directory send +") == 1);
  // Besides them b sends one frame to each peer it exchanged frames with, a and c (c got
  // b's empty hand-off when it joined): its leaving notice
  // (docs/behaviour/membership.md#dead-peers).
  CHECK(frames_after(w, mark, "Sb:11111@2 -> Sa:11111@1 #0 none send") == 1);
  CHECK(frames_after(w, mark, "Sb:11111@2 -> Sc:11111@3 #0 none send") == 1);
  CHECK(frames_after(w, mark, "Sb:11111@2 -> ") == expected.size() + 2);
  auto p = spawn_probe();
  ask(p, a.partition, caf::make_message(dir_entries_atom::value), "a");
  ask(p, c.partition, caf::make_message(dir_entries_atom::value), "c");
  ask(p, b.partition, caf::make_message(dir_entries_atom::value), "b");
  run();
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 3);
  CHECK(ans[0].reply.get_as<std::vector<activation_address>>(0).size() == expected[a.addr]);
  CHECK(ans[1].reply.get_as<std::vector<activation_address>>(0).size() == expected[c.addr]);
  CHECK(ans[2].reply.get_as<std::vector<activation_address>>(0).empty());
  // Lookups through the new ring find every entry.
  auto& us = user_of(user);
  for (auto& g : gs) {
    us.cache.invalidate(g);
    caf::anon_send(user, user_lookup_atom::value, g);
  }
  REQUIRE(run_until([&] { return us.lookups.size() == 12; }));
  REQUIRE(us.lookups.size() == 12);
  for (auto& l : us.lookups)
    CHECK(l.second.registered);
  CHECK(us.errors.empty());
}

TEST_CASE_FIXTURE(dir_fixture, "directory: a partition hands the entries it does not own to their owners, one message per owner") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  auto& d = w.add_member("d");
  w.join_active(b.addr);
  w.join_active(c.addr);
  // a is Joining (outside the ring) and holds entries handed to it early: 5 owned by b and
  // 5 by c. At its next snapshot (d joins) a owns none of them and hands each group to its
  // owner, one message each; when d becomes Active, b and c hand d its share.
  caf::anon_send(a.agent, mb_join_atom::value, default_manifest(), true);
  run();
  hash_ring now{{b.addr, c.addr}};
  std::vector<activation_address> held;
  for (int i = 0; i < 5; ++i) {
    held.push_back(act(owned_by(now, b.addr, i), b.addr, i));
    held.push_back(act(owned_by(now, c.addr, i), c.addr, 10 + i));
  }
  // Handed by a ring of a's own version: a keeps them until a newer ring.
  auto p0 = spawn_probe();
  ask(p0, a.agent, caf::make_message(mb_get_atom::value), "view");
  run();
  REQUIRE(probe_of(p0).answers.size() == 1);
  auto v = probe_of(p0).answers[0].reply.get_as<membership_snapshot>(0).version;
  send_handoff(a.partition, b.addr, v, held);
  run();
  auto mark = w.net_state().trace.size();
  w.join_active(d.addr);
  run_up_to(100ms);
  CHECK(w.net_state().count("Sa:11111@1 -> Sb:11111@2 #0 directory send +") == 1);
  CHECK(w.net_state().count("Sa:11111@1 -> Sc:11111@3 #0 directory send +") == 1);
  CHECK(frames_after(w, mark, "Sa:11111@1 -> ") == 2);
  hash_ring after{{b.addr, c.addr, d.addr}};
  std::map<silo_address, size_t> expected;
  for (auto& x : held)
    ++expected[*after.owner(x.grain)];
  auto p = spawn_probe();
  for (auto s : {b.addr, c.addr, d.addr})
    ask(p, w.members[s].partition, caf::make_message(dir_entries_atom::value), s.to_string());
  ask(p, a.partition, caf::make_message(dir_entries_atom::value), "a");
  run();
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 4);
  CHECK(ans[0].reply.get_as<std::vector<activation_address>>(0).size() == expected[b.addr]);
  CHECK(ans[1].reply.get_as<std::vector<activation_address>>(0).size() == expected[c.addr]);
  CHECK(ans[2].reply.get_as<std::vector<activation_address>>(0).size() == expected[d.addr]);
  CHECK(ans[3].reply.get_as<std::vector<activation_address>>(0).empty());
}

TEST_CASE_FIXTURE(dir_fixture, "directory: every partition drops the entries of a silo that becomes Dead") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  for (auto s : {a.addr, b.addr, c.addr})
    w.join_active(s);
  auto user = spawn_user(w, a);
  run();
  hash_ring ring{{a.addr, b.addr, c.addr}};
  auto ga = owned_by(ring, a.addr);
  auto gb = owned_by(ring, b.addr);
  caf::anon_send(user, user_reg_atom::value, act(ga, c.addr, 1));
  caf::anon_send(user, user_reg_atom::value, act(gb, c.addr, 2));
  caf::anon_send(user, user_reg_atom::value, act(owned_by(ring, b.addr, 1), b.addr, 3));
  REQUIRE(run_until([&] { return user_of(user).winners.size() == 3; }));
  w.set_status(c.addr, silo_status::stopping);
  caf::anon_send(w.oracle, mb_dead_atom::value, c.addr);
  run_up_to(100ms);
  auto p = spawn_probe();
  ask(p, a.partition, caf::make_message(dir_entries_atom::value), "a");
  ask(p, b.partition, caf::make_message(dir_entries_atom::value), "b");
  run();
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 2);
  CHECK(ans[0].reply.get_as<std::vector<activation_address>>(0).empty());
  auto rest = ans[1].reply.get_as<std::vector<activation_address>>(0);
  REQUIRE(rest.size() == 1);
  CHECK(rest[0].silo == b.addr);
}

TEST_CASE_FIXTURE(dir_fixture, "S12.48 a snapshot in which silo B leaves drops exactly the cache entries whose owner changed or that point at B") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  auto& d = w.add_member("d");
  std::vector<silo_address> all{a.addr, b.addr, c.addr, d.addr};
  for (auto s : all)
    w.join_active(s);
  auto user = spawn_user(w, a);
  run_up_to(100ms); // the joins' hand-offs land
  auto& us = user_of(user);
  // 40 grains, 10 owned by each silo, activations spread over all four silos.
  hash_ring ring0{all};
  std::vector<grain_id> gs;
  for (int i = 0; i < 40; ++i) {
    gs.push_back(owned_by(ring0, all[i / 10], i % 10));
    caf::anon_send(user, user_reg_atom::value, act(gs.back(), all[(i + i / 10) % 4], 1000 + i));
  }
  REQUIRE(run_until([&] { return us.winners.size() == 40; }));
  for (auto& g : gs)
    caf::anon_send(user, user_lookup_atom::value, g);
  REQUIRE(run_until([&] { return us.lookups.size() == 40; }));
  REQUIRE(us.cache.size() == 40);
  CHECK(us.client.lookups_sent() == 40);
  CHECK(us.hits == 0);
  // Expected drops, computed independently of the cache.
  hash_ring before{all}, after{{a.addr, c.addr, d.addr}};
  std::set<grain_id> expected;
  int owner_changed_only = 0, on_b_only = 0;
  for (int i = 0; i < 40; ++i) {
    bool changed = *before.owner(gs[i]) != *after.owner(gs[i]);
    bool on_b = all[(i + i / 10) % 4] == b.addr;
    if (changed || on_b)
      expected.insert(gs[i]);
    owner_changed_only += changed && !on_b ? 1 : 0;
    on_b_only += on_b && !changed ? 1 : 0;
  }
  REQUIRE(owner_changed_only > 0); // the scenario exercises both rules
  REQUIRE(on_b_only > 0);
  REQUIRE(expected.size() < 40);
  us.dropped.clear();
  w.set_status(b.addr, silo_status::shutting_down);
  run_up_to(100ms);
  std::set<grain_id> dropped;
  for (auto& x : us.dropped)
    dropped.insert(x.grain);
  CHECK(dropped == expected);
  CHECK(us.cache.size() == 40 - expected.size());
  // The rest are used without a lookup.
  auto lookups_before = us.client.lookups_sent();
  auto frames_before = w.net_state().requests_by_component[component::directory];
  for (auto& g : gs)
    caf::anon_send(user, user_lookup_atom::value, g);
  REQUIRE(run_until([&] { return us.lookups.size() == 80; }));
  CHECK(us.hits == 40 - expected.size());
  CHECK(us.client.lookups_sent() - lookups_before == expected.size());
  uint64_t remote = 0;
  for (auto& g : expected)
    remote += *after.owner(g) != a.addr ? 1 : 0;
  CHECK(w.net_state().requests_by_component[component::directory] - frames_before == remote);
  CHECK(us.errors.empty());
}

TEST_CASE_FIXTURE(dir_fixture, "directory: the resolver sends stateless workers to the null directory with zero lookups sent") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  for (auto s : {a.addr, b.addr, c.addr})
    w.join_active(s);
  directory_resolver with{default_manifest(), true}, without{default_manifest(), false};
  CHECK(with.resolve("routing") == directory_kind::null);
  CHECK(with.resolve("messagehub") == directory_kind::ring);
  CHECK(with.resolve("unknown") == directory_kind::ring);
  CHECK(without.resolve("routing") == directory_kind::ring);
  auto user = spawn_user(w, a, true);
  auto old_build = spawn_user(w, b, false);
  run_up_to(100ms); // the joins' hand-offs land
  auto frames0 = w.net_state().frames_sent;
  auto directory_requests0 = w.net_state().requests_by_component[component::directory];
  auto t0 = now_ms();
  caf::anon_send(user, user_lookup_atom::value, grain_id{"routing", "default"});
  caf::anon_send(user, user_reg_atom::value, act(grain_id{"routing", "default"}, a.addr, 7));
  run();
  auto& us = user_of(user);
  REQUIRE(us.lookups.size() == 1);
  CHECK(us.lookups[0].first == t0);
  CHECK_FALSE(us.lookups[0].second.registered);
  REQUIRE(us.winners.size() == 1);
  CHECK(us.winners[0] == act(grain_id{"routing", "default"}, a.addr, 7));
  CHECK(us.client.lookups_sent() == 0);
  CHECK(us.client.registers_sent() == 0);
  CHECK(w.net_state().frames_sent == frames0);
  // A previous-build silo without the bypass: one ring lookup, answered not_registered.
  caf::anon_send(old_build, user_lookup_atom::value, grain_id{"routing", "default"});
  REQUIRE(run_until([&] { return user_of(old_build).lookups.size() == 1; }));
  auto& ob = user_of(old_build);
  CHECK(ob.client.lookups_sent() == 1);
  CHECK_FALSE(ob.lookups[0].second.registered);
  CHECK(ob.errors.empty());
  auto owner = *hash_ring({a.addr, b.addr, c.addr}).owner(grain_id{"routing", "default"});
  CHECK(w.net_state().requests_by_component[component::directory] - directory_requests0
        == (owner == b.addr ? 0u : 1u));
}

TEST_CASE_FIXTURE(dir_fixture, "directory: a lookup at a stalled owner fails after lookup_attempt_timeout_ms = 5,000 ms") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  w.join_active(a.addr);
  w.join_active(b.addr);
  auto user = spawn_user(w, a);
  run();
  caf::anon_send(w.net, sim_stall_atom::value, b.addr, false);
  run();
  auto g = owned_by(hash_ring{{a.addr, b.addr}}, b.addr);
  auto t0 = now_ms();
  caf::anon_send(user, user_lookup_atom::value, g);
  REQUIRE(run_until([&] { return !user_of(user).errors.empty(); }));
  auto& us = user_of(user);
  REQUIRE(us.errors.size() == 1);
  CHECK(us.errors[0].first - t0 == 5000);
  CHECK(us.errors[0].second == caf::sec::request_timeout);
  CHECK(to_fault(us.errors[0].second).code == mesh_errc::response_timeout);
  caf::anon_send(w.net, sim_unstall_atom::value, b.addr);
  run();
}

TEST_CASE_FIXTURE(dir_fixture, "directory: the cache actor answers, invalidates and follows snapshots") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  w.join_active(a.addr);
  w.join_active(b.addr);
  auto cache = track(spawn_directory_cache(sys, a.agent));
  run();
  grain_id g1{"messagehub", "x"}, g2{"messagehub", "y"};
  caf::anon_send(cache, dir_put_atom::value, act(g1, a.addr, 1));
  caf::anon_send(cache, dir_put_atom::value, act(g2, b.addr, 2));
  auto p = spawn_probe();
  ask(p, cache, caf::make_message(dir_get_atom::value, g1), "g1");
  ask(p, cache, caf::make_message(dir_invalidate_atom::value, act(g1, a.addr, 9)), "wrong");
  ask(p, cache, caf::make_message(dir_get_atom::value, g1), "g1 again");
  ask(p, cache, caf::make_message(dir_invalidate_atom::value, g1), "inv");
  ask(p, cache, caf::make_message(dir_get_atom::value, g1), "g1 gone");
  run();
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 5);
  CHECK(ans[0].reply.get_as<lookup_result>(0).registered);
  CHECK(ans[2].reply.get_as<lookup_result>(0).registered);
  CHECK_FALSE(ans[4].reply.get_as<lookup_result>(0).registered);
  w.set_status(b.addr, silo_status::stopping);
  ask(p, cache, caf::make_message(dir_get_atom::value, g2), "g2 after b left");
  run();
  REQUIRE(ans.size() == 6);
  CHECK_FALSE(ans[5].reply.get_as<lookup_result>(0).registered);
}

// -- hand-off during a restart --------------------------------------------------------------------
// docs/behaviour/directory-and-placement.md#who-owns-a-grain-id, #lookup-registration-cache, docs/known-limits.md#a-brief-second-activation-after-a-ring-change

namespace {

/// Trace lines after `mark` that contain both `a` and `b`.
size_t lines_after(sim_world& w, size_t mark, const std::string& a, const std::string& b) {
  auto& t = w.net_state().trace;
  size_t n = 0;
  for (size_t i = mark; i < t.size(); ++i)
    if (t[i].find(a) != std::string::npos && t[i].find(b) != std::string::npos)
      ++n;
  return n;
}

/// The snapshots a probe subscribed to the oracle recorded, in arrival order.
std::vector<membership_snapshot> recorded_snapshots(probe_state& ps) {
  std::vector<membership_snapshot> out;
  for (auto& kv : ps.told)
    if (kv.second.match_elements<mb_snapshot_atom, membership_snapshot>())
      out.push_back(kv.second.get_as<membership_snapshot>(1));
  return out;
}

/// The first grain id `messagehub/{i}/h` for which `pred` holds (keys varying early spread
/// over the ring better than `k{i}`); fails the test if none of the first 100,000 does.
template <class Pred>
grain_id find_key(Pred pred) {
  for (int i = 0; i < 100000; ++i) {
    grain_id g{"messagehub", std::to_string(i) + "/h"};
    if (pred(g))
      return g;
  }
  FAIL("no key satisfies the predicate");
  return {};
}

std::vector<activation_address> entries_of(dir_fixture& fx,
                                           const directory_partition_actor& partition) {
  auto p = fx.spawn_probe();
  fx.ask(p, partition, caf::make_message(dir_entries_atom::value), "entries");
  fx.run();
  auto& ans = fx.probe_of(p).answers;
  REQUIRE(ans.size() == 1);
  return ans[0].reply.get_as<std::vector<activation_address>>(0);
}

} // namespace

TEST_CASE_FIXTURE(dir_fixture, "directory: a restarted silo's partition keeps a hand-off that arrives before its own snapshots and bounces nothing back") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  for (auto s : {a.addr, b.addr, c.addr})
    w.join_active(s);
  auto user = spawn_user(w, a);
  run();
  // C is killed and declared Dead: the ring is {A, B}.
  auto c_addr = c.addr;
  w.kill(c_addr);
  caf::anon_send(w.oracle, mb_dead_atom::value, c_addr);
  run_up_to(100ms);
  // C restarts with the next generation. Its partition is not subscribed to its agent: the
  // test hands it its snapshots itself, after the hand-offs from A and B have reached it.
  auto c2 = w.add_silo("c", 11111);
  REQUIRE(c2.generation > c_addr.generation);
  auto c2_agent = track(spawn_membership_agent(sys, c2, w.oracle));
  caf::anon_send(c2_agent, mb_subscribe_atom::value, w.centres[c2]);
  auto c2_part
    = track(spawn_directory_partition(sys, c2, w.centres[c2], membership_agent_actor{}));
  auto rec = spawn_probe();
  caf::anon_send(w.oracle, mb_subscribe_atom::value, rec);
  run();
  // Six grains that C2 owns in the final ring {A, B, C2}, registered now (ring {A, B}) with
  // activations on A and B.
  hash_ring final_ring{{a.addr, b.addr, c2}};
  std::vector<activation_address> regs;
  for (int i = 0; i < 6; ++i) {
    regs.push_back(act(owned_by(final_ring, c2, i), i % 2 == 0 ? a.addr : b.addr, 100 + i));
    caf::anon_send(user, user_reg_atom::value, regs.back());
  }
  REQUIRE(run_until([&] { return user_of(user).winners.size() == 6; }));
  std::sort(regs.begin(), regs.end(),
            [](const activation_address& x, const activation_address& y) { return x.grain < y.grain; });
  auto winners = user_of(user).winners;
  std::sort(winners.begin(), winners.end(),
            [](const activation_address& x, const activation_address& y) { return x.grain < y.grain; });
  REQUIRE(winners == regs);
  // C2 joins and becomes Active; A and B hand C2 its entries (one message each at most).
  auto mark = w.net_state().trace.size();
  caf::anon_send(c2_agent, mb_join_atom::value, default_manifest(), true);
  run();
  caf::anon_send(c2_agent, mb_status_atom::value, silo_status::active);
  run_up_to(100ms);
  auto to_c2 = " -> " + c2.to_string() + " #0 directory send";
  CHECK(lines_after(w, mark, " deliver ", to_c2) >= 1);
  CHECK(entries_of(*this, c2_part).size() == 6);
  // Only now does C2's partition see its snapshots: first the stale one in which C2 is
  // Joining (ring {A, B}), then the one in which it is Active.
  auto snaps = recorded_snapshots(probe_of(rec));
  membership_snapshot joining, active;
  for (auto& s : snaps) {
    if (auto r = s.find(c2); r != nullptr && r->status == silo_status::joining && joining.version == 0)
      joining = s;
    if (s.is_active(c2) && active.version == 0)
      active = s;
  }
  REQUIRE(joining.version > 0);
  REQUIRE(active.version > joining.version);
  mark = w.net_state().trace.size();
  caf::anon_send(c2_part, mb_snapshot_atom::value, joining);
  run_up_to(100ms);
  caf::anon_send(c2_part, mb_snapshot_atom::value, active);
  run_up_to(100ms);
  // Nothing bounced: C2 sent no hand-off, A and B hold none of C2's entries, C2 holds all.
  CHECK(lines_after(w, mark, c2.to_string() + " -> ", "directory send +") == 0);
  auto held = entries_of(*this, c2_part);
  CHECK(held == regs);
  CHECK(entries_of(*this, a.partition).empty());
  CHECK(entries_of(*this, b.partition).empty());
  // A lookup through A's ring finds every original activation: none would be placed twice.
  auto& us = user_of(user);
  for (auto& x : regs) {
    us.cache.invalidate(x.grain);
    caf::anon_send(user, user_lookup_atom::value, x.grain);
  }
  REQUIRE(run_until([&] { return us.lookups.size() == 6; }));
  REQUIRE(us.lookups.size() == 6);
  std::vector<activation_address> found;
  for (auto& l : us.lookups) {
    CHECK(l.second.registered);
    found.push_back(l.second.address);
  }
  std::sort(found.begin(), found.end(),
            [](const activation_address& x, const activation_address& y) { return x.grain < y.grain; });
  CHECK(found == regs);
  CHECK(us.errors.empty());
}

TEST_CASE_FIXTURE(dir_fixture, "directory: a hand-off from an older ring is forwarded once to its owner, one from a newer ring is kept until the receiver's ring is newer") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  auto& d = w.add_member("d");
  for (auto s : {a.addr, b.addr, c.addr})
    w.join_active(s);
  auto p = spawn_probe();
  ask(p, a.agent, caf::make_message(mb_get_atom::value), "view");
  run();
  REQUIRE(probe_of(p).answers.size() == 1);
  auto v = probe_of(p).answers[0].reply.get_as<membership_snapshot>(0).version;
  REQUIRE(v >= 6);
  hash_ring ring{{a.addr, b.addr, c.addr}};
  hash_ring with_d{{a.addr, b.addr, c.addr, d.addr}};
  // (1) From an older ring (version 1) for a key B owns (also once D is in): A forwards it
  // to B in one message, B keeps it (its ring agrees), nothing comes back.
  auto e_b = act(find_key([&](const grain_id& x) {
                   return ring.owner(x) == b.addr && with_d.owner(x) == b.addr;
                 }),
                 c.addr, 7);
  auto mark = w.net_state().trace.size();
  send_handoff(a.partition, c.addr, 1, {e_b});
  run_up_to(100ms);
  CHECK(lines_after(w, mark, "Sa:11111@1 -> Sb:11111@2 #0 directory send +", "") == 1);
  CHECK(lines_after(w, mark, "directory send +", "") == 1);
  CHECK(entries_of(*this, a.partition).empty());
  CHECK(entries_of(*this, b.partition) == std::vector<activation_address>{e_b});
  // (2) From a newer ring (version v + 1: D is about to join) for a key A owns now and D
  // will own: B keeps it and sends nothing ...
  auto g = find_key([&](const grain_id& x) {
    return ring.owner(x) == a.addr && with_d.owner(x) == d.addr;
  });
  auto e_d = act(g, b.addr, 8);
  auto both = e_b.grain < e_d.grain ? std::vector<activation_address>{e_b, e_d}
                                    : std::vector<activation_address>{e_d, e_b};
  mark = w.net_state().trace.size();
  send_handoff(b.partition, a.addr, v + 1, {e_d});
  run_up_to(100ms);
  CHECK(lines_after(w, mark, "directory send +", "") == 0);
  CHECK(entries_of(*this, b.partition) == both);
  // ... through D's Joining snapshot (version v + 1, not newer than the entry's ring), and
  // hands it to D, its owner, at the first newer ring (D Active, version v + 2).
  caf::anon_send(d.agent, mb_join_atom::value, default_manifest(), true);
  run_up_to(100ms);
  CHECK(lines_after(w, mark, "directory send +", "") == 0);
  CHECK(entries_of(*this, b.partition) == both);
  w.set_status(d.addr, silo_status::active);
  run_up_to(100ms);
  CHECK(lines_after(w, mark, "Sb:11111@2 -> Sd:11111@4 #0 directory send +", "") == 1);
  CHECK(entries_of(*this, b.partition) == std::vector<activation_address>{e_b});
  auto at_d = entries_of(*this, d.partition);
  CHECK(std::count(at_d.begin(), at_d.end(), e_d) == 1);
}

TEST_CASE_FIXTURE(dir_fixture, "directory: a hand-off entry colliding with a registration made under an older ring keeps the registered one, and one made under the hand-off's ring gives way to the hand-off, the loser's catalog told once") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  for (auto s : {a.addr, b.addr, c.addr})
    w.join_active(s);
  auto cat_a = track(sys.spawn(echo));
  auto cat_b = track(sys.spawn(echo));
  w.reg(a.addr, component::catalog, cat_a);
  w.reg(b.addr, component::catalog, cat_b);
  auto user = spawn_user(w, b);
  run();
  hash_ring ring{{a.addr, b.addr, c.addr}};
  auto p = spawn_probe();
  ask(p, a.agent, caf::make_message(mb_get_atom::value), "view");
  run();
  auto v = probe_of(p).answers.at(0).reply.get_as<membership_snapshot>(0).version;
  auto& lost_a = state_of<echo_state>(cat_a).received;
  auto& lost_b = state_of<echo_state>(cat_b).received;
  // (1) Registered under ring v; a hand-off made by a newer ring (v + 1) brings another
  // activation of the same grain, on A: the registration is older, it stays.
  auto g1 = find_key([&](const grain_id& x) { return ring.owner(x) == c.addr; });
  auto registered = act(g1, b.addr, 2);
  caf::anon_send(user, user_reg_atom::value, registered);
  REQUIRE(run_until([&] { return user_of(user).winners.size() == 1; }));
  auto other = act(g1, a.addr, 1);
  send_handoff(c.partition, a.addr, v + 1, {other});
  run_up_to(100ms);
  CHECK(entries_of(*this, c.partition) == std::vector<activation_address>{registered});
  // A's catalog hears `(dir_lost, loser, winner)` exactly once.
  REQUIRE(lost_a.size() == 1);
  REQUIRE(lost_a[0].match_elements<dir_lost_atom, activation_address, activation_address>());
  CHECK(lost_a[0].get_as<activation_address>(1) == other);
  CHECK(lost_a[0].get_as<activation_address>(2) == registered);
  CHECK(logs.count("hand-off of " + other.to_string() + " lost to " + registered.to_string()) == 1);
  // The same entry again is no collision: nothing more is sent.
  send_handoff(c.partition, a.addr, v + 1, {registered});
  run_up_to(100ms);
  CHECK(lost_a.size() == 1);
  CHECK(lost_b.empty());
  // (2) Registered under ring v while a hand-off made by ring v was on its way (SPEC §15 C3:
  // a lookup that missed before the hand-off arrived, and its caller placed the grain again):
  // the hand-off's activation was registered with the previous owner first, so it stays and
  // B's catalog hears it lost, once.
  auto g2 = find_key([&](const grain_id& x) { return ring.owner(x) == c.addr && x != g1; });
  auto newer = act(g2, b.addr, 4);
  caf::anon_send(user, user_reg_atom::value, newer);
  REQUIRE(run_until([&] { return user_of(user).winners.size() == 2; }));
  auto handed = act(g2, a.addr, 3);
  send_handoff(c.partition, a.addr, v, {handed});
  run_up_to(100ms);
  auto held = entries_of(*this, c.partition);
  CHECK(std::count(held.begin(), held.end(), handed) == 1);
  CHECK(std::count(held.begin(), held.end(), newer) == 0);
  REQUIRE(lost_b.size() == 1);
  REQUIRE(lost_b[0].match_elements<dir_lost_atom, activation_address, activation_address>());
  CHECK(lost_b[0].get_as<activation_address>(1) == newer);
  CHECK(lost_b[0].get_as<activation_address>(2) == handed);
  CHECK(logs.count("registration of " + newer.to_string() + " lost to the hand-off of "
                   + handed.to_string() + ": registered with the previous owner first")
        == 1);
  CHECK(lost_a.size() == 1);
  // A registration of the loser now answers the hand-off's activation.
  caf::anon_send(user, user_reg_atom::value, newer);
  REQUIRE(run_until([&] { return user_of(user).winners.size() == 3; }));
  CHECK(user_of(user).winners[2] == handed);
}

TEST_CASE_FIXTURE(dir_fixture, "directory: a hand-off of another directory protocol version, the version-1 form included, is refused whole with a logged rejected error") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  for (auto s : {a.addr, b.addr})
    w.join_active(s);
  run();
  hash_ring ring{{a.addr, b.addr}};
  auto g = find_key([&](const grain_id& x) { return ring.owner(x) == b.addr; });
  auto g2 = find_key([&](const grain_id& x) { return ring.owner(x) == b.addr && x != g; });
  auto e = act(g, a.addr, 1);
  auto e2 = act(g2, a.addr, 2);
  auto p = spawn_probe();
  ask(p, b.agent, caf::make_message(mb_get_atom::value), "view");
  run();
  REQUIRE(probe_of(p).answers.size() == 1);
  auto v = probe_of(p).answers[0].reply.get_as<membership_snapshot>(0).version;
  REQUIRE(directory_protocol_version == 2);
  auto mark = w.net_state().trace.size();
  // The version-1 form (no protocol number), as a partition of the previous build sends it.
  caf::anon_send(b.partition, dir_handoff_atom::value, v, std::vector<activation_address>{e, e2});
  // A later version.
  caf::anon_send(b.partition, dir_handoff_atom::value, uint32_t{3}, a.addr, v,
                 std::vector<activation_address>{e});
  run_up_to(100ms);
  CHECK(entries_of(*this, b.partition).empty());
  CHECK(lines_after(w, mark, "directory send +", "") == 0);
  auto at_b = "[" + b.addr.to_string() + "] ";
  CHECK(logs.count(at_b + "rejected: directory hand-off of 2 entries from a partition refused: "
                          "protocol v1, this partition on " + b.addr.to_string()
                          + " runs v2; one owner rule per cluster, finish the roll",
                   log::level::error)
        == 1);
  CHECK(logs.count(at_b + "rejected: directory hand-off of 1 entries from " + a.addr.to_string()
                          + " refused: protocol v3, this partition on " + b.addr.to_string()
                          + " runs v2; one owner rule per cluster, finish the roll",
                   log::level::error)
        == 1);
  // The same entries in this build's protocol are kept.
  send_handoff(b.partition, a.addr, v, {e, e2});
  run_up_to(100ms);
  auto both = e.grain < e2.grain ? std::vector<activation_address>{e, e2}
                                 : std::vector<activation_address>{e2, e};
  CHECK(entries_of(*this, b.partition) == both);
  CHECK(logs.count("rejected: directory hand-off") == 2);
}

TEST_CASE_FIXTURE(dir_fixture, "directory: when a killed silo restarts, a peer's cache and client drop every entry on or owned by the old generation and send it no lookup") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  for (auto s : {a.addr, b.addr, c.addr})
    w.join_active(s);
  auto user = spawn_user(w, a);
  run_up_to(100ms); // the joins' hand-offs land
  auto& us = user_of(user);
  auto c1 = c.addr;
  hash_ring ring1{{a.addr, b.addr, c1}};
  // Four grains hosted on C (owned by A), four owned by C (hosted on B), four on A owned by A.
  std::vector<activation_address> on_c, owned_by_c, plain;
  for (int i = 0; i < 100000 && (on_c.size() < 4 || owned_by_c.size() < 4 || plain.size() < 4); ++i) {
    grain_id g{"messagehub", std::to_string(i) + "/r"};
    auto o = *ring1.owner(g);
    if (o == c1 && owned_by_c.size() < 4)
      owned_by_c.push_back(act(g, b.addr, 200 + i));
    else if (o == a.addr && on_c.size() < 4)
      on_c.push_back(act(g, c1, 300 + i));
    else if (o == a.addr && plain.size() < 4)
      plain.push_back(act(g, a.addr, 400 + i));
  }
  REQUIRE(owned_by_c.size() == 4);
  std::vector<activation_address> all;
  for (auto* v : {&on_c, &owned_by_c, &plain})
    all.insert(all.end(), v->begin(), v->end());
  for (auto& x : all)
    caf::anon_send(user, user_reg_atom::value, x);
  REQUIRE(run_until([&] { return us.winners.size() == all.size(); }));
  for (auto& x : all)
    caf::anon_send(user, user_lookup_atom::value, x.grain);
  REQUIRE(run_until([&] { return us.lookups.size() == all.size(); }));
  REQUIRE(us.cache.size() == all.size());
  // C is killed and restarts with the next generation; its join supersedes C1 (Dead in the
  // same snapshot that adds C2 as Joining).
  us.dropped.clear();
  auto& c2 = w.restart(c1);
  REQUIRE(c2.addr.generation > c1.generation);
  caf::anon_send(c2.agent, mb_join_atom::value, default_manifest(), true);
  run_up_to(100ms);
  // Dropped: every entry on C1 and every entry C1 owned; the rest survive.
  std::set<grain_id> dropped, expected;
  for (auto& x : us.dropped)
    dropped.insert(x.grain);
  for (auto* v : {&on_c, &owned_by_c})
    for (auto& x : *v)
      expected.insert(x.grain);
  CHECK(dropped == expected);
  CHECK(us.cache.size() == plain.size());
  CHECK(us.client.ring() == hash_ring{{a.addr, b.addr}});
  // Lookups now go by the ring {A, B}: none reaches C1; the grains on C1 are unregistered
  // everywhere (every partition dropped them).
  auto mark = w.net_state().trace.size();
  us.lookups.clear();
  for (auto& x : on_c)
    caf::anon_send(user, user_lookup_atom::value, x.grain);
  REQUIRE(run_until([&] { return us.lookups.size() == on_c.size(); }));
  for (auto& l : us.lookups)
    CHECK_FALSE(l.second.registered);
  CHECK(lines_after(w, mark, "-> " + c1.to_string(), "") == 0);
  // Once C2 is Active the client's ring names C2, never C1.
  w.set_status(c2.addr, silo_status::active);
  run_up_to(100ms);
  CHECK(us.client.ring() == hash_ring{{a.addr, b.addr, c2.addr}});
  for (auto& m : us.client.ring().members())
    CHECK(m != c1);
  CHECK(us.errors.empty());
}

TEST_CASE_FIXTURE(dir_fixture, "S15.03 directory: an entry held for an older generation of the registering silo's address, or for a silo the partition's view shows departed, gives way to the new registration and to a hand-off") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  auto& d = w.add_member("d");
  for (auto s : {a.addr, b.addr, c.addr, d.addr})
    w.join_active(s);
  hash_ring ring{{a.addr, b.addr, c.addr, d.addr}};
  auto g1 = owned_by(ring, c.addr);
  auto g2 = owned_by(ring, c.addr, 1);
  auto g3 = owned_by(ring, c.addr, 2);
  auto p = spawn_probe();
  auto& ans = probe_of(p).answers;
  auto call = [&](auto... xs) { return make_call(c.addr, component::directory, xs...); };
  // A's address restarted with a newer generation (a2) before C's view shows it: a2's
  // registration replaces a1's entry, and a1's registration no longer beats a2's.
  silo_address a2{a.addr.host, a.addr.port, a.addr.generation + 7};
  auto old1 = act(g1, a.addr, 1);
  auto new1 = act(g1, a2, 2);
  ask(p, b.mc, call(dir_register_atom::value, old1), "old");
  REQUIRE(run_until([&] { return ans.size() == 1; }));
  CHECK(ans[0].reply.get_as<activation_address>(0) == old1);
  ask(p, b.mc, call(dir_register_atom::value, new1), "new");
  REQUIRE(run_until([&] { return ans.size() == 2; }));
  CHECK(ans[1].reply.get_as<activation_address>(0) == new1);
  ask(p, b.mc, call(dir_register_atom::value, old1), "old again");
  REQUIRE(run_until([&] { return ans.size() == 3; }));
  CHECK(ans[2].reply.get_as<activation_address>(0) == new1);
  CHECK(logs.count("registration of " + new1.to_string() + " replaces " + old1.to_string()
                   + ": " + a.addr.to_string() + " is an older generation of "
                   + a2.to_string())
        == 1);
  // The same by a hand-off: an entry of a2 replaces the one a1 registered here.
  auto old2 = act(g2, a.addr, 3);
  auto new2 = act(g2, a2, 4);
  ask(p, b.mc, call(dir_register_atom::value, old2), "old2");
  REQUIRE(run_until([&] { return ans.size() == 4; }));
  ask(p, a.agent, caf::make_message(mb_get_atom::value), "view");
  REQUIRE(run_until([&] { return ans.size() == 5; }));
  auto v = ans[4].reply.get_as<membership_snapshot>(0).version;
  send_handoff(c.partition, b.addr, v, {new2});
  run_up_to(100ms);
  auto held = entries_of(*this, c.partition);
  CHECK(std::count(held.begin(), held.end(), new2) == 1);
  CHECK(std::count(held.begin(), held.end(), old2) == 0);
  // D is killed and declared Dead; an entry for D that reached C afterwards gives way to
  // the next registration.
  w.kill(d.addr);
  run_for(std::chrono::milliseconds(10000 + 1000));
  auto dead3 = act(g3, d.addr, 5);
  auto live3 = act(g3, b.addr, 6);
  ask(p, b.mc, call(dir_register_atom::value, dead3), "dead");
  REQUIRE(run_until([&] { return ans.size() == 6; }));
  ask(p, b.mc, call(dir_register_atom::value, live3), "live");
  REQUIRE(run_until([&] { return ans.size() == 7; }));
  CHECK(ans[6].reply.get_as<activation_address>(0) == live3);
  CHECK(logs.count("registration of " + live3.to_string() + " replaces " + dead3.to_string()
                   + ": " + d.addr.to_string() + " has departed")
        == 1);
}

TEST_CASE_FIXTURE(dir_fixture, "S15.03 directory: for 500 ms after a view shows an owner gone abruptly, a lookup of an id it owned that nobody registered again answers directory_unstable, a registration made meanwhile is found, and the lookup misses after") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  for (auto s : {a.addr, b.addr, c.addr})
    w.join_active(s);
  auto user = spawn_user(w, b);
  run();
  hash_ring ring{{a.addr, b.addr, c.addr}};
  hash_ring after{{a.addr, b.addr}};
  auto g1 = find_key([&](const grain_id& x) {
    return ring.owner(x) == c.addr && after.owner(x) == a.addr;
  });
  auto g2 = find_key([&](const grain_id& x) {
    return ring.owner(x) == c.addr && after.owner(x) == a.addr && x != g1;
  });
  auto mine = act(g1, b.addr, 1);
  caf::anon_send(user, user_reg_atom::value, mine);
  REQUIRE(run_until([&] { return user_of(user).winners.size() == 1; }));
  // C is killed; its entries die with it. Once the view shows it gone (Stopping, then Dead),
  // A owns both ids.
  w.kill(c.addr);
  REQUIRE(run_until([&] { return user_of(user).client.ring().members().size() == 2; }));
  auto& us = user_of(user);
  caf::anon_send(user, user_lookup_atom::value, g1);
  caf::anon_send(user, user_lookup_atom::value, g2);
  REQUIRE(run_until([&] { return us.errors.size() == 2; }));
  for (auto& [t, e] : us.errors) {
    auto f = to_fault(e);
    CHECK(f.code == mesh_errc::directory_unstable);
    CHECK(f.text.find(" died with " + c.addr.to_string() + " and may be registered again on "
                      + a.addr.to_string() + " shortly; retry later")
          != std::string::npos);
  }
  CHECK(us.lookups.empty());
  // B registers its activation of g1 again (as its catalog does at that view): found.
  caf::anon_send(user, user_reg_atom::value, mine);
  REQUIRE(run_until([&] { return us.winners.size() == 2; }));
  CHECK(us.winners[1] == mine);
  caf::anon_send(user, user_lookup_atom::value, g1);
  REQUIRE(run_until([&] { return us.lookups.size() == 1; }));
  CHECK(us.lookups[0].second.registered);
  CHECK(us.lookups[0].second.address == mine);
  // After the grace, the id nobody registered again misses: its caller places it.
  run_for(std::chrono::milliseconds(500));
  caf::anon_send(user, user_lookup_atom::value, g2);
  REQUIRE(run_until([&] { return us.lookups.size() == 2; }));
  CHECK_FALSE(us.lookups[1].second.registered);
  CHECK(us.errors.size() == 2);
}

TEST_CASE_FIXTURE(dir_fixture, "S15.07 directory: a joining silo's partition answers directory_unstable to a lookup that misses an id it gains from a silo still present until that silo's hand-off arrives, an empty one included, and for at most 500 ms, and takes a registration meanwhile") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto& a = w.add_member("a");
  auto& b = w.add_member("b");
  auto& c = w.add_member("c");
  auto& d = w.add_member("d");
  w.join_active(a.addr);
  w.join_active(b.addr);
  auto user = spawn_user(w, b);
  run();
  hash_ring before{{a.addr, b.addr}};
  hash_ring after{{a.addr, b.addr, c.addr}};
  auto from_a = [&](const grain_id& x) {
    return before.owner(x) == a.addr && after.owner(x) == c.addr;
  };
  auto g1 = find_key(from_a);
  auto g2 = find_key([&](const grain_id& x) { return from_a(x) && x != g1; });
  auto g3 = find_key([&](const grain_id& x) {
    return before.owner(x) == b.addr && after.owner(x) == c.addr;
  });
  auto kept = act(g1, b.addr, 1);
  caf::anon_send(user, user_reg_atom::value, kept);
  REQUIRE(run_until([&] { return user_of(user).winners.size() == 1; }));
  CHECK(user_of(user).winners[0] == kept);
  // A's frames to and from C are held: A's hand-off to C (g1's entry) waits. B's, empty,
  // arrives.
  caf::anon_send(w.net, sim_partition_atom::value, a.addr, c.addr);
  run();
  w.join_active(c.addr);
  auto& us = user_of(user);
  REQUIRE(run_until([&] { return us.client.ring().members().size() == 3; }));
  caf::anon_send(user, user_lookup_atom::value, g1);
  caf::anon_send(user, user_lookup_atom::value, g2);
  caf::anon_send(user, user_lookup_atom::value, g3);
  REQUIRE(run_until([&] { return us.errors.size() == 2 && us.lookups.size() == 1; }));
  for (auto& [t, e] : us.errors) {
    auto f = to_fault(e);
    CHECK(f.code == mesh_errc::directory_unstable);
    CHECK(f.silo == c.addr);
    CHECK(f.text.find(" is on its way from " + a.addr.to_string() + " to the directory partition on "
                      + c.addr.to_string() + "; retry later")
          != std::string::npos);
  }
  // g3 came from B, whose hand-off (empty) arrived: it misses at once.
  CHECK(us.lookups[0].second.registered == false);
  // A registration meanwhile is taken: a live activation reports itself (its catalog
  // registering it again after a departure, or a pure client's attach); only a miss could
  // make a second one.
  auto registered = act(g2, b.addr, 2);
  caf::anon_send(user, user_reg_atom::value, registered);
  REQUIRE(run_until([&] { return us.winners.size() == 2; }));
  CHECK(us.winners[1] == registered);
  // 400 ms later A's hand-off still waits: g1 is still not answered as missing.
  run_for(std::chrono::milliseconds(400));
  caf::anon_send(user, user_lookup_atom::value, g1);
  REQUIRE(run_until([&] { return us.errors.size() == 3; }));
  CHECK(to_fault(us.errors[2].second).code == mesh_errc::directory_unstable);
  // The link heals: A's hand-off arrives and C answers g1's entry, and g2's registration.
  caf::anon_send(w.net, sim_heal_atom::value, a.addr, c.addr);
  run();
  caf::anon_send(user, user_lookup_atom::value, g1);
  caf::anon_send(user, user_lookup_atom::value, g2);
  REQUIRE(run_until([&] { return us.lookups.size() == 3; }));
  CHECK(us.lookups[1].second.registered);
  CHECK(us.lookups[1].second.address == kept);
  CHECK(us.lookups[2].second.registered);
  CHECK(us.lookups[2].second.address == registered);
  CHECK(us.errors.size() == 3);
  // D joins while A's link to it is cut and stays cut: the wait for A's hand-off ends
  // 500 ms after D's partition saw the view, and an id it gained from A then misses.
  hash_ring with_d{{a.addr, b.addr, c.addr, d.addr}};
  auto g4 = find_key([&](const grain_id& x) {
    return after.owner(x) == a.addr && with_d.owner(x) == d.addr;
  });
  caf::anon_send(w.net, sim_partition_atom::value, a.addr, d.addr);
  run();
  w.join_active(d.addr);
  auto joined_ms = now_ms();
  REQUIRE(run_until([&] { return us.client.ring().members().size() == 4; }));
  caf::anon_send(user, user_lookup_atom::value, g4);
  REQUIRE(run_until([&] { return us.errors.size() == 4; }));
  CHECK(to_fault(us.errors[3].second).code == mesh_errc::directory_unstable);
  run_for(std::chrono::milliseconds(500 - (now_ms() - joined_ms)));
  caf::anon_send(user, user_lookup_atom::value, g4);
  REQUIRE(run_until([&] { return us.lookups.size() == 4; }));
  CHECK_FALSE(us.lookups[3].second.registered);
  CHECK(us.errors.size() == 4);
  caf::anon_send(w.net, sim_heal_atom::value, a.addr, d.addr);
  run();
}
