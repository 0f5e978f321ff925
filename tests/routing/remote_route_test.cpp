// The router core's cached route to a pod-hub grain activation of another silo (SPEC §14 B3 extended,
// docs/delivery-costs.md#the-remote-frame-path): learnt from the answer of a leg's attempt
// through placement (the landing silo and the activation's tag it carries), used by the next
// attempts at that grain as calls by id through the silo's message centre, and dropped where
// the direct route to a local activation is.

#include "router_fakes.hpp"

#include <deque>

#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/remote_call.hpp"
#include "cafmesh/routing/entry_atoms.hpp"

using namespace cafmesh::testing::router_bed;
using cafmesh::testing::fixture;

namespace {

/// The message centre as the router core sees it: records every call by id and answers it
/// at once with the delivery processed, or with the next scripted fault; with `hold` it
/// keeps the calls unanswered.
struct centre_fake_state {
  std::vector<remote_call_item> calls;
  std::deque<fault> faults;
  bool hold = false;
};

caf::behavior centre_fake(caf::stateful_actor<centre_fake_state>* self) {
  return {
    [=](mc_calls_atom, std::vector<remote_call_item>& xs) {
      auto& s = self->state;
      std::vector<ct_result_item> out;
      for (auto& x : xs) {
        s.calls.push_back(x);
        if (s.hold)
          continue;
        ct_result_item r;
        r.id = x.call.id;
        if (!s.faults.empty()) {
          r.failure = to_error(s.faults.front());
          s.faults.pop_front();
        } else {
          auto e = x.call.payload.get_as<envelope>(1);
          e.state = delivery_state::processed;
          r.reply = caf::make_message(std::move(e));
        }
        out.push_back(std::move(r));
      }
      if (!out.empty())
        self->send(caf::actor_cast<caf::actor>(self->current_sender()),
                   ct_results_atom::value, std::move(out));
    },
  };
}

const silo_address silo_b{"10.0.0.2", 11111, 1};

/// The answer of an attempt through placement that landed on activation `tag` of `silo_b`.
answer landed_on_b(uint32_t tag) {
  auto a = answer::ok();
  a.props["landed_at"] = json_quote(silo_b.to_string());
  a.props["landed_activation"] = json_quote(activation_tag{tag}.hex());
  return a;
}

/// A bed whose core has the fake centre, and a route learnt for `podhub/cache/acme` to
/// activation 2a of `silo_b` by leg `d1`.
struct remote_bed {
  fixture& fx;
  bed b;
  caf::actor centre;

  explicit remote_bed(fixture& f) : fx(f), b(f) {
    centre = fx.track(fx.sys.spawn(centre_fake));
    b.centre = centre;
    b.start();
    b.script("podhub/cache/acme", {landed_on_b(0x2a)});
    one("d1");
  }

  centre_fake_state& c() { return fixture::state_of<centre_fake_state>(centre); }

  /// Routes delivery `id` to `cache/acme` (a stream-routed address: a pod-hub leg) and runs until the core is idle.
  void one(const std::string& id) {
    b.route(bed::make(id, "cache/acme"));
    fx.run();
  }

  /// A membership view in which the core's silo is Active and `silo_b` has `st`.
  membership_snapshot view(uint64_t version, silo_status st) {
    membership_snapshot v;
    v.version = version;
    membership_row own;
    own.silo = b.silo;
    own.status = silo_status::active;
    membership_row other;
    other.silo = silo_b;
    other.status = st;
    v.rows = {own, other};
    return v;
  }
};

} // namespace

TEST_CASE_FIXTURE(fixture, "remote route: learnt from placement's answer, the next attempts go through the message centre by id to the same activation, with the attempt's bound as time-to-live") {
  remote_bed r(*this);
  CHECK(r.b.grain().attempts.size() == 1);
  CHECK(r.c().calls.empty());
  r.one("d2");
  r.one("d3");
  CHECK(r.b.grain().attempts.size() == 1);
  REQUIRE(r.c().calls.size() == 2);
  for (auto& x : r.c().calls) {
    CHECK(x.dst == silo_b);
    CHECK(x.call.grain.to_string() == "podhub/cache/acme");
    CHECK(x.call.tag.value == 0x2au);
    CHECK(x.ttl_ms == r.b.grain().attempts[0].within_ms);
    REQUIRE(x.call.payload.match_elements<hg_deliver_atom, envelope, silo_address, bool>());
    CHECK(x.call.payload.get_as<silo_address>(2) == r.b.silo);
  }
  CHECK(r.c().calls[0].call.payload.get_as<envelope>(1).id == "d2");
  CHECK(r.b.stats().landed == 3);
  CHECK(r.b.gauge_count() == 0);
  // An answer without the activation's tag (a silo that does not stamp it) teaches nothing.
  r.b.script("podhub/cache/beta", {answer::ok()});
  r.b.route(bed::make("e1", "cache/beta"));
  r.b.route(bed::make("e2", "cache/beta"));
  run();
  CHECK(r.b.grain().attempts.size() == 3);
  CHECK(r.c().calls.size() == 2);
}

TEST_CASE_FIXTURE(fixture, "remote route: a call over it that fails drops it, and the retry and the next legs take placement's way") {
  remote_bed r(*this);
  fault gone{mesh_errc::activation_deactivated, "activation 0000002a of podhub/cache/acme is gone"};
  r.c().faults.push_back(gone);
  r.one("d2");
  REQUIRE(run_until([&] { return r.b.stats().landed == 2; }, std::chrono::minutes(1)));
  CHECK(r.c().calls.size() == 1);
  CHECK(r.b.grain().attempts.size() == 2); // the retry
  CHECK(r.b.grain().attempts[1].env.id == "d2");
  r.one("d3");
  CHECK(r.c().calls.size() == 1);
  CHECK(r.b.grain().attempts.size() == 3);
  CHECK(r.b.stats().landed == 3);
  CHECK(r.b.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "remote route: dropped when its silo is no longer Active in membership (leaving, Dead), kept while it is") {
  silo_status st = silo_status::shutting_down;
  SUBCASE("shutting down") { st = silo_status::shutting_down; }
  SUBCASE("stopping") { st = silo_status::stopping; }
  SUBCASE("dead") { st = silo_status::dead; }
  remote_bed r(*this);
  caf::anon_send(r.b.rc, mb_snapshot_atom::value, r.view(5, silo_status::active));
  r.one("d2");
  CHECK(r.c().calls.size() == 1);
  CHECK(r.b.grain().attempts.size() == 1);
  caf::anon_send(r.b.rc, mb_snapshot_atom::value, r.view(6, st));
  r.one("d3");
  CHECK(r.c().calls.size() == 1);
  CHECK(r.b.grain().attempts.size() == 2);
  CHECK(r.b.stats().landed == 3);
}

TEST_CASE_FIXTURE(fixture, "remote route: dropped when the retry policy names its silo departed") {
  remote_bed r(*this);
  // A leg to another grain fails with the departure of the route's silo.
  fault dep{mesh_errc::departed_silo, "silo " + silo_b.to_string() + " has departed"};
  dep.silo = silo_b;
  r.b.script("podhub/cache/beta", {answer::err(dep)});
  r.b.route(bed::make("e1", "cache/beta"));
  REQUIRE(run_until([&] { return r.b.stats().landed == 2; }, std::chrono::minutes(1)));
  REQUIRE(r.b.grain().inval_silos.size() == 1);
  CHECK(r.b.grain().inval_silos[0] == silo_b);
  auto before = r.b.grain().attempts.size();
  r.one("d2");
  CHECK(r.c().calls.empty());
  CHECK(r.b.grain().attempts.size() == before + 1);
}

TEST_CASE_FIXTURE(fixture, "remote route: dropped when the own silo stops") {
  remote_bed r(*this);
  REQUIRE(ask<caf::ok_atom>(*this, r.b.rc, lifecycle::host_stopping_atom::value)
          == caf::ok_atom::value);
  r.one("d2");
  CHECK(r.c().calls.empty());
  CHECK(r.b.grain().attempts.size() == 2);
  CHECK(r.b.stats().landed == 2);
}

TEST_CASE_FIXTURE(fixture, "remote route: when the message centre goes down the calls it held fail as to an actor that is gone, and the route goes") {
  remote_bed r(*this);
  r.c().hold = true;
  r.one("d2");
  REQUIRE(r.c().calls.size() == 1);
  CHECK(r.b.stats().landed == 1);
  caf::anon_send_exit(r.centre, caf::exit_reason::kill);
  // The held call fails (request_receiver_down, resendable): its retry and the next leg take
  // placement's way.
  REQUIRE(run_until([&] { return r.b.stats().landed == 2; }, std::chrono::minutes(1)));
  CHECK(r.b.grain().attempts.size() == 2);
  CHECK(r.b.grain().attempts[1].env.id == "d2");
  r.one("d3");
  CHECK(r.b.grain().attempts.size() == 3);
  CHECK(r.b.stats().landed == 3);
  CHECK(r.b.gauge_count() == 0);
}
