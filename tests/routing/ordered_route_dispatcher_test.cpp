// Tests for the ordered route dispatcher (docs/behaviour/routing.md#the-ordered-dispatcher).
// Dispatcher-level versions of S12.38, S12.39, S12.40 and S12.41; the full scenarios need the
// router core, the I/O pool and legs in virtual time and are finished in the router-core
// integration.

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/routing/ordered_route_dispatcher.hpp"
#include "cafmesh/testing/fixture.hpp"

using cafmesh::routing::leg_id;
using cafmesh::routing::make_channel;
using cafmesh::routing::ordered_route_dispatcher;
using cafmesh::routing::ordering_channel;

namespace {

ordering_channel wide(const std::string& dest) {
  return ordering_channel{dest, std::nullopt};
}

ordering_channel keyed(const std::string& dest, const std::string& key) {
  return ordering_channel{dest, key};
}

/// Pushes `legs` on the new channel `ch` in order: the first becomes its head, the others
/// queue behind it.
void push_all(ordered_route_dispatcher& d, const ordering_channel& ch,
              const std::vector<leg_id>& legs) {
  for (size_t k = 0; k < legs.size(); ++k)
    CHECK(d.push(ch, legs[k]) == (k == 0));
}

} // namespace

TEST_CASE("dispatcher: a channel is a pair, never a concatenated string") {
  auto x = keyed("cache/a", "b/c");
  auto y = keyed("cache/a/b", "c");
  CHECK(x != y);
  CHECK((x < y) != (y < x));
  CHECK(x.name() == "cache/a [b/c]");
  CHECK(y.name() == "cache/a/b [c]");
  CHECK(wide("cache/a").name() == "cache/a []");
  CHECK(wide("cache/a") != keyed("cache/a", ""));
  // Packaging: an empty ordering key counts as none (docs/behaviour/envelope.md#the-envelope).
  CHECK(make_channel("cache/a", "") == wide("cache/a"));
  CHECK(make_channel("cache/a", "s1") == keyed("cache/a", "s1"));
}

// Dispatcher part of S12.38.
TEST_CASE("dispatcher: 3 legs on one destination-wide channel start one at a time in order "
          "and leave no channel") {
  ordered_route_dispatcher d;
  std::vector<leg_id> admitted;
  auto ch = wide("portal/alice");
  for (leg_id i = 0; i < 3; ++i)
    if (d.enqueue(ch, i))
      admitted.push_back(i);
  // Only the first is admitted while it is blocked.
  CHECK(admitted == std::vector<leg_id>{0});
  CHECK(d.channel_count() == 1);
  CHECK(d.queued_behind(ch) == 2);
  CHECK(d.head_of(ch) == leg_id{0});
  // Each release starts the next.
  auto next = d.on_terminal(0);
  REQUIRE(next);
  admitted.push_back(*next);
  next = d.on_terminal(*next);
  REQUIRE(next);
  admitted.push_back(*next);
  CHECK_FALSE(d.on_terminal(*next));
  CHECK(admitted == std::vector<leg_id>{0, 1, 2});
  CHECK(d.channel_count() == 0);
  CHECK(d.leg_count() == 0);
  auto snap = d.snapshot();
  CHECK(snap.channels == 0);
  CHECK(snap.destinations == 0);
  CHECK(snap.deepest == 0);
  CHECK(d.max_depth() == 1);
}

TEST_CASE("dispatcher: negative control, 3 legs on 3 channels are all admitted at once") {
  ordered_route_dispatcher d;
  CHECK(d.enqueue(wide("portal/a"), 0));
  CHECK(d.enqueue(wide("portal/b"), 1));
  CHECK(d.enqueue(wide("portal/c"), 2));
  CHECK(d.channel_count() == 3);
}

// Dispatcher part of S12.39.
TEST_CASE("dispatcher: two destinations with the first blocked both start, keys A and B on "
          "one destination both start") {
  SUBCASE("two destinations") {
    ordered_route_dispatcher d;
    CHECK(d.enqueue(wide("portal/one"), 1));
    CHECK(d.enqueue(wide("portal/two"), 2));
    auto snap = d.snapshot();
    CHECK(snap.channels == 2);
    CHECK(snap.destinations == 2);
    CHECK(snap.deepest == 0);
  }
  SUBCASE("keys A and B on one destination") {
    ordered_route_dispatcher d;
    CHECK(d.enqueue(keyed("cache/mesh1", "A"), 1));
    CHECK(d.enqueue(keyed("cache/mesh1", "B"), 2));
    auto snap = d.snapshot();
    CHECK(snap.channels == 2);
    CHECK(snap.destinations == 1);
    CHECK(snap.deepest == 0);
    CHECK(snap.deepest_channel.empty());
    CHECK(to_string(snap) == "channels 2, destinations 1, deepest 0");
  }
}

TEST_CASE("dispatcher: keyed and destination-wide traffic of one destination are not ordered "
          "against each other") {
  ordered_route_dispatcher d;
  CHECK(d.enqueue(keyed("cache/mesh1", "s1"), 1));
  CHECK(d.enqueue(wide("cache/mesh1"), 2));
  CHECK_FALSE(d.enqueue(keyed("cache/mesh1", "s1"), 3));
  CHECK_FALSE(d.enqueue(wide("cache/mesh1"), 4));
  // Releasing the destination-wide head starts the next destination-wide leg only.
  CHECK(d.on_terminal(2) == leg_id{4});
  CHECK(d.is_head(1));
  CHECK_FALSE(d.is_head(3));
  CHECK(d.on_terminal(1) == leg_id{3});
}

// Dispatcher part of S12.40.
TEST_CASE("dispatcher: 3 legs with one destination and key run strictly in order with "
          "deepest 2, and (cache/a, b/c) and (cache/a/b, c) are independent") {
  SUBCASE("one key") {
    ordered_route_dispatcher d;
    auto ch = keyed("cache/mesh1", "stream-7");
    CHECK(d.enqueue(ch, 10));
    CHECK_FALSE(d.enqueue(ch, 11));
    CHECK_FALSE(d.enqueue(ch, 12));
    auto snap = d.snapshot();
    CHECK(snap.channels == 1);
    CHECK(snap.destinations == 1);
    CHECK(snap.deepest == 2);
    CHECK(snap.deepest_channel == "cache/mesh1 [stream-7]");
    CHECK(to_string(snap) == "channels 1, destinations 1, deepest 2 (cache/mesh1 [stream-7])");
    CHECK(d.is_head(10));
    CHECK_FALSE(d.is_head(11));
    CHECK(d.on_terminal(10) == leg_id{11});
    CHECK(d.snapshot().deepest == 1);
    CHECK(d.on_terminal(11) == leg_id{12});
    CHECK_FALSE(d.on_terminal(12));
    CHECK(d.channel_count() == 0);
  }
  SUBCASE("pairs that would collide as concatenated strings") {
    ordered_route_dispatcher d;
    CHECK(d.enqueue(keyed("cache/a", "b/c"), 1));
    CHECK(d.enqueue(keyed("cache/a/b", "c"), 2));
    auto snap = d.snapshot();
    CHECK(snap.channels == 2);
    CHECK(snap.destinations == 2);
    CHECK(snap.deepest == 0);
  }
}

TEST_CASE("dispatcher: the deepest channel is named among several") {
  ordered_route_dispatcher d;
  d.enqueue(keyed("cache/mesh1", "s1"), 1);
  d.enqueue(keyed("cache/mesh1", "s1"), 2);
  d.enqueue(keyed("cache/mesh1", "s2"), 3);
  d.enqueue(keyed("cache/mesh1", "s2"), 4);
  d.enqueue(keyed("cache/mesh1", "s2"), 5);
  d.enqueue(wide("portal/bob"), 6);
  auto snap = d.snapshot();
  CHECK(snap.channels == 3);
  CHECK(snap.destinations == 2);
  CHECK(snap.deepest == 2);
  CHECK(snap.deepest_channel == "cache/mesh1 [s2]");
}

TEST_CASE("dispatcher: a queued leg's terminal event removes it without starting anything") {
  ordered_route_dispatcher d;
  auto ch = wide("client/7f3a");
  CHECK(d.enqueue(ch, 1));
  CHECK_FALSE(d.enqueue(ch, 2));
  CHECK_FALSE(d.enqueue(ch, 3));
  CHECK_FALSE(d.on_terminal(2));
  CHECK_FALSE(d.contains(2));
  CHECK(d.queued_behind(ch) == 1);
  CHECK(d.on_terminal(1) == leg_id{3});
  CHECK_FALSE(d.on_terminal(3));
  CHECK(d.channel_count() == 0);
}

TEST_CASE("dispatcher: unknown and duplicate ids change nothing") {
  ordered_route_dispatcher d;
  auto ch = wide("client/7f3a");
  CHECK_FALSE(d.on_terminal(99));
  CHECK(d.enqueue(ch, 1));
  CHECK_FALSE(d.enqueue(wide("client/other"), 1));
  CHECK(d.channel_count() == 1);
  CHECK(d.leg_count() == 1);
  CHECK(d.channel_of(1) == ch);
  CHECK_FALSE(d.on_terminal(1));
  // A second terminal event for the same leg is ignored.
  CHECK_FALSE(d.on_terminal(1));
  CHECK(d.channel_count() == 0);
}

TEST_CASE("dispatcher: no idle state after 10,000 channels came and went") {
  ordered_route_dispatcher d;
  leg_id next = 0;
  for (int i = 0; i < 10000; ++i) {
    auto ch = keyed("cache/mesh" + std::to_string(i % 7), "s" + std::to_string(i));
    CHECK(d.enqueue(ch, next++));
    CHECK_FALSE(d.enqueue(ch, next++));
  }
  CHECK(d.channel_count() == 10000);
  CHECK(d.snapshot().destinations == 7);
  for (leg_id id = 0; id < next; id += 2)
    CHECK(d.on_terminal(id) == id + 1);
  for (leg_id id = 1; id < next; id += 2)
    CHECK_FALSE(d.on_terminal(id));
  CHECK(d.channel_count() == 0);
  CHECK(d.leg_count() == 0);
  CHECK(d.snapshot().destinations == 0);
  CHECK(d.max_depth() == 1);
}

// --- the owner pattern in actors: a running head with 32 legs queued behind it, then the
// pool drains. The "pool" here is a stand-in that refuses admissions by a separate message
// (docs/behaviour/quiescence.md#the-routing-io-pool); the real pool and router core finish S12.41
// in the integration.

namespace {

using dt_admit_atom = caf::atom_constant<caf::atom("dtadmit")>;
using dt_term_atom = caf::atom_constant<caf::atom("dtterm")>;
using dt_drain_atom = caf::atom_constant<caf::atom("dtdrain")>;

struct dt_pool_state {
  bool drained = false;
  std::vector<leg_id> running;
  caf::actor owner;
};

caf::behavior dt_pool(caf::stateful_actor<dt_pool_state>* self) {
  return {
    [=](dt_admit_atom, leg_id leg) {
      auto owner = caf::actor_cast<caf::actor>(self->current_sender());
      self->state.owner = owner;
      if (self->state.drained)
        self->send(owner, dt_term_atom::value, leg, std::string{"refused"});
      else
        self->state.running.push_back(leg);
    },
    [=](dt_drain_atom) {
      self->state.drained = true;
      for (auto leg : self->state.running)
        self->send(self->state.owner, dt_term_atom::value, leg, std::string{"abandoned"});
      self->state.running.clear();
    },
  };
}

struct dt_owner_state {
  ordered_route_dispatcher dispatcher;
  std::map<leg_id, int> events;       // terminal events handled per leg
  std::vector<leg_id> order;          // legs in the order their events were handled
  std::vector<std::string> outcomes;  // outcome per handled event
  int turns = 0;                      // handler invocations of terminal events
};

caf::behavior dt_owner(caf::stateful_actor<dt_owner_state>* self, caf::actor pool) {
  auto& st = self->state;
  auto ch = ordering_channel{"cache/mesh1", std::string{"sync"}};
  for (leg_id i = 0; i < 33; ++i)
    if (st.dispatcher.enqueue(ch, i))
      self->send(pool, dt_admit_atom::value, i);
  return {
    [=](dt_term_atom, leg_id leg, const std::string& outcome) {
      auto& st = self->state;
      ++st.turns;
      ++st.events[leg];
      st.order.push_back(leg);
      st.outcomes.push_back(outcome);
      if (auto next = st.dispatcher.on_terminal(leg))
        self->send(pool, dt_admit_atom::value, *next);
    },
  };
}

} // namespace

// Dispatcher part of S12.41.
TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "dispatcher: a running head with 32 legs queued, pool drained, gives 33 "
                  "terminal events one per turn with depth never above 1") {
  auto pool = track(sys.spawn(dt_pool));
  auto owner = track(sys.spawn(dt_owner, pool));
  run();
  auto& ost = state_of<dt_owner_state>(owner);
  auto& pst = state_of<dt_pool_state>(pool);
  REQUIRE(pst.running == std::vector<leg_id>{0});
  CHECK(ost.dispatcher.queued_behind(ordering_channel{"cache/mesh1", std::string{"sync"}})
        == 32);
  CHECK(ost.turns == 0);
  caf::anon_send(pool, dt_drain_atom::value);
  run();
  REQUIRE(ost.events.size() == 33);
  for (auto& kvp : ost.events)
    CHECK_MESSAGE(kvp.second == 1, "leg " << kvp.first);
  CHECK(ost.turns == 33);
  std::vector<leg_id> expected;
  for (leg_id i = 0; i < 33; ++i)
    expected.push_back(i);
  CHECK(ost.order == expected);
  CHECK(ost.outcomes.front() == "abandoned");
  CHECK(std::count(ost.outcomes.begin(), ost.outcomes.end(), "refused") == 32);
  CHECK(ost.dispatcher.max_depth() == 1);
  CHECK(ost.dispatcher.depth() == 0);
  CHECK(ost.dispatcher.channel_count() == 0);
}

TEST_CASE("dispatcher: legs named with their channel keep channel order, a queued leg that ends "
          "is skipped when its turn comes, and an emptied channel goes") {
  ordered_route_dispatcher d;
  auto ch = keyed("cache/a", "k");
  auto other = wide("cache/b");
  push_all(d, ch, {10, 11, 12, 13});
  CHECK(d.push(other, 20));
  CHECK(d.leg_count() == 5);
  CHECK(d.channel_count() == 2);
  CHECK(d.queued_behind(ch) == 3);
  CHECK(d.is_head(ch, 10));
  CHECK_FALSE(d.is_head(ch, 11));
  CHECK_FALSE(d.is_head(other, 10));
  // Nothing is kept per leg for the id way.
  CHECK_FALSE(d.contains(11));
  auto behind = [&](leg_id head) {
    std::vector<leg_id> out;
    d.for_each_behind(ch, head, [&](leg_id x) {
      out.push_back(x);
      return true;
    });
    return out;
  };
  CHECK(behind(10) == std::vector<leg_id>{11, 12, 13});
  // Leg 12 ends while queued (not next in line): it is skipped later.
  CHECK_FALSE(d.on_terminal(ch, 12));
  CHECK(d.queued_behind(ch) == 2);
  CHECK(behind(10) == std::vector<leg_id>{11, 13});
  // Not the head: nothing to visit.
  CHECK(behind(11).empty());
  CHECK(d.on_terminal(ch, 10) == leg_id{11});
  CHECK(d.on_terminal(ch, 11) == leg_id{13});
  CHECK(d.snapshot().deepest == 0);
  CHECK(d.on_terminal(ch, 13) == std::nullopt);
  CHECK(d.channel_count() == 1);
  CHECK_FALSE(d.head_of(ch));
  // A leg that is not on the channel changes nothing.
  CHECK(d.on_terminal(other, 99) == std::nullopt);
  CHECK(d.leg_count() == 1);
  CHECK(d.on_terminal(other, 20) == std::nullopt);
  CHECK(d.channel_count() == 0);
  CHECK(d.leg_count() == 0);
  CHECK(d.max_depth() == 1);
}

TEST_CASE("dispatcher: the next queued leg ending before the head pops from the queue at once") {
  ordered_route_dispatcher d;
  auto ch = wide("cache/a");
  push_all(d, ch, {1, 2, 3});
  CHECK_FALSE(d.on_terminal(ch, 2));
  CHECK_FALSE(d.on_terminal(ch, 3));
  CHECK(d.queued_behind(ch) == 0);
  CHECK(d.on_terminal(ch, 1) == std::nullopt);
  CHECK(d.channel_count() == 0);
}

TEST_CASE("dispatcher: a leg that is not queued on the channel named, or ended already, changes "
          "nothing") {
  ordered_route_dispatcher d;
  auto ch = wide("cache/a");
  push_all(d, ch, {1, 2, 3, 4});
  CHECK(d.on_terminal(ch, 99) == std::nullopt);
  CHECK(d.queued_behind(ch) == 3);
  CHECK(d.on_terminal(ch, 3) == std::nullopt);
  CHECK(d.on_terminal(ch, 3) == std::nullopt);
  CHECK(d.queued_behind(ch) == 2);
  CHECK(d.leg_count() == 3);
  CHECK(d.on_terminal(ch, 1) == leg_id{2});
  CHECK(d.on_terminal(ch, 2) == leg_id{4});
  CHECK(d.on_terminal(ch, 4) == std::nullopt);
  CHECK(d.channel_count() == 0);
  CHECK(d.leg_count() == 0);
}
