/// @file
/// P4 (examples/bench/README.md): how long a graceful stop holds beyond the landing of its slowest
/// leg. K node legs of the co-hosted rig wait on their grain calls; the quiescence participant (the
/// silo's stage-Active observer, docs/behaviour/quiescence.md#the-participant-at-stage-active) is
/// asked to stop its stage gracefully, and the fake grain port answers the K calls spread evenly
/// over the next D ms in 100 steps (K/100 answers every D/100 ms), the last at D. The figure is the
/// time from the fake port's last answer to the participant's answer of the stop (received by an
/// actor that stamps it): the legs' landing in the router core, the gauge's release and the
/// participant.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "rig.hpp"

#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/actors/whole_ms.hpp"
#include "cafmesh/lifecycle/quiescence_participant.hpp"

namespace cafmesh::bench {

using namespace cafmesh::routing;

namespace {

using bn_go_atom = caf::atom_constant<caf::atom("bngo")>;

int64_t now_ns() {
  return clock_type::now().time_since_epoch().count();
}

/// Asks `participant` to stop stage Active gracefully on `bn_go`; stamps the answer.
caf::behavior stop_asker(caf::event_based_actor* self,
                         lifecycle::lifecycle_observer_actor participant,
                         std::atomic<int64_t>* answered_ns, progress* done) {
  return {
    [=](bn_go_atom) {
      self->request(participant, caf::infinite, lifecycle::stop_stage_atom::value,
                    lifecycle::stages::active, true)
        .then(
          [=](caf::ok_atom) {
            answered_ns->store(now_ns());
            done->bump();
          },
          [=](caf::error&) {
            answered_ns->store(-1);
            done->bump();
          });
    },
  };
}

} // namespace

rows run_stop(const options& opt, caf::actor_system& sys) {
  const std::vector<uint64_t> ks{1, 100, 10000};
  const int64_t delay_ms = opt.quick ? 100 : 200;
  const int reps = opt.quick ? 2 : 5;
  rows out;
  for (auto k : ks) {
    std::vector<double> beyond_ms, hold_ms, core_ms;
    bool ok = true;
    std::string why;
    for (int r = 0; r < reps && ok; ++r) {
      rig_options ro;
      ro.answer = [](const grain_id&) { return grain_answer::on_release; };
      core_rig rig{sys, ro};
      std::atomic<int64_t> participant_hold_ms{-1};
      lifecycle::quiescence_participant_options po;
      po.silo_name = "bench";
      po.on_hold_ended = [&](caf::timespan hold) {
        participant_hold_ms.store(whole_ms(hold));
      };
      auto participant = lifecycle::spawn_quiescence_participant(sys, rig.gauge(), po);
      std::atomic<int64_t> answered_ns{0};
      progress done;
      auto asker = sys.spawn(stop_asker, participant, &answered_ns, &done);
      auto legs = protos_of({make_proto(address{"node", "Org/Bench", {}})});
      if (!rig.deliver(k, legs) || !rig.grain_calls.wait_for_count(k, 120)) {
        ok = false;
        why = "legs did not reach the grain port";
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        auto t_stop = clock_type::now();
        caf::anon_send(asker, bn_go_atom::value);
        uint64_t steps = std::min<uint64_t>(k, 100);
        uint64_t sent = 0;
        for (uint64_t j = 1; j <= steps; ++j) {
          std::this_thread::sleep_until(t_stop + std::chrono::microseconds(
                                                   delay_ms * 1000 * static_cast<int64_t>(j)
                                                   / static_cast<int64_t>(steps)));
          auto upto = k * j / steps;
          rig.release(upto - sent);
          sent = upto;
        }
        // When the router core counts every leg landed (polled: an upper bound by one poll).
        int64_t core_landed_ns = 0;
        for (auto t0 = clock_type::now(); seconds_since(t0) < 30;) {
          if (rig.stats().landed >= k) {
            core_landed_ns = now_ns();
            break;
          }
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        if (!done.wait_for_count(1, 60) || answered_ns.load() <= 0
            || !rig.released.wait_for_count(k, 10)) {
          ok = false;
          why = "the stop was not answered ok";
        } else {
          auto t_stop_ns = t_stop.time_since_epoch().count();
          beyond_ms.push_back((answered_ns.load() - rig.last_release_ns.load()) / 1e6);
          hold_ms.push_back((answered_ns.load() - t_stop_ns) / 1e6);
          core_ms.push_back((answered_ns.load() - core_landed_ns) / 1e6);
          if (hold_ms.back() < static_cast<double>(delay_ms)) {
            ok = false;
            why = "the stop did not hold until the legs landed (held "
                  + std::to_string(hold_ms.back()) + " ms)";
          }
        }
      }
      caf::anon_send_exit(asker, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(participant, caf::exit_reason::user_shutdown);
    }
    auto id = "P4 K=" + std::to_string(k);
    if (!ok || beyond_ms.empty()) {
      out.push_back(failed_row(id, "stop hold beyond the slowest leg", why));
      continue;
    }
    auto worst = *std::max_element(beyond_ms.begin(), beyond_ms.end());
    auto r = make_row(id, "stop hold beyond the slowest leg's landing (worst rep)", worst,
                      "ms", 1, false);
    char buf[240];
    std::snprintf(buf, sizeof buf, "legs land over %lld ms; beyond last grain answer: median "
                                   "%.3f, max %.3f ms (%d reps); beyond core's last landing "
                                   "(polled) median %.3f ms; hold median %.1f ms",
                  static_cast<long long>(delay_ms), median(beyond_ms), worst, reps,
                  median(core_ms), median(hold_ms));
    r.detail = buf;
    r.data = {{"k", k}, {"delay_ms", delay_ms}, {"beyond_ms", beyond_ms}, {"hold_ms", hold_ms},
              {"beyond_core_landed_ms", core_ms}};
    out.push_back(std::move(r));
    std::fprintf(stderr, "  K=%llu: %s\n", static_cast<unsigned long long>(k), buf);
  }
  return out;
}

} // namespace cafmesh::bench
