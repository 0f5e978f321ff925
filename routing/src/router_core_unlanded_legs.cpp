#include "router_core_state.hpp"

#include <algorithm>

#include "cafmesh/routing/nack_codec.hpp"

namespace cafmesh::routing::router_core_detail {

// A stop letting go of legs that will not land (docs/behaviour/quiescence.md).

uint64_t stop_nack(pointer self, leg_rec& leg, bool direct) {
  auto& s = self->state;
  if (is_failed_and_nacked(leg.env))
    return 0; // its sender was answered already; the slot goes with the leg
  auto target = leg.env.target.to_string();
  leg.slot_owned = false;
  if (is_continuation(leg.env) && leg.env.payload_type != delivery_failure_payload_type) {
    // A response that will not land: the one waiting for it is its request's sender (its
    // target here), not the hub that answered, which goes with this silo. The NACK answers
    // the request: failed, its outcome unknown (its handler ran). docs/behaviour/quiescence.md
    envelope request;
    request.id = *leg.env.request_id;
    request.sender = leg.env.target;
    request.target = leg.env.sender;
    request.access_context = leg.env.access_context;
    return post_nack(self, request, verdict::failed,
                     "silo " + s.silo_name + " stopped before the response of "
                       + leg.env.sender.to_string() + " to request " + request.id
                       + " left it; the request's outcome is unknown",
                     false, caf::none, leg.id, false, direct);
  }
  auto v = leg.in_flight ? verdict::failed : verdict::shutting_down;
  auto text = leg.in_flight ? "silo " + s.silo_name + " stopped while the delivery to " + target
                                + " was in flight; its outcome is unknown"
                            : "silo " + s.silo_name + " stopped before the delivery to " + target
                                + " was attempted";
  return via_entry_client(
    self, post_nack(self, routed_env(self, leg), v, text, false, caf::none, leg.id, false, direct),
    leg);
}

void arm_release_bound(pointer self) {
  auto& s = self->state;
  if (s.release_gen != 0)
    return;
  s.release_gen = ++s.release_gen_seq;
  self->delayed_send(self, ms(std::max<int64_t>(0, s.opts.release_bound_ms)),
                     rc_release_atom::value, s.release_gen);
}

void release_bound_passed(pointer self) {
  auto& s = self->state;
  std::vector<std::string> ids;
  std::vector<uint64_t> jobs;
  for (auto& kv : s.nacks) {
    ids.push_back(kv.second.delivery_id);
    jobs.push_back(kv.first);
  }
  auto unsent = static_cast<uint64_t>(ids.size());
  if (unsent > 0) {
    s.stats.nacks_unsent += unsent;
    s.log.error(std::to_string(unsent) + " NACK(s) could not leave silo " + s.silo_name + " within "
                + routing::render_budget(s.opts.release_bound_ms)
                + " of its stop: " + routing::render_delivery_ids(ids, unsent));
  }
  s.release_gen = 0; // nack_done below must not answer the waiters yet
  for (auto id : jobs)
    nack_done(self, id);
  answer_release(self);
}

std::vector<std::string> end_unlanded_legs(pointer self, const std::string& why) {
  auto& s = self->state;
  std::vector<std::string> residual;
  std::vector<std::string> earlier_nacks;
  for (auto& kv : s.nacks)
    earlier_nacks.push_back(kv.second.delivery_id);
  std::vector<uint64_t> ids;
  for (auto [id, leg] : legs_in_order(s))
    if (!leg->finished && leg->latch_open)
      ids.push_back(id);
  uint64_t before = 0;
  uint64_t in_flight = 0;
  for (auto id : ids) {
    auto& leg = s.legs.at(id);
    (leg.in_flight ? in_flight : before) += 1;
    residual.push_back(leg.env.id);
    stop_nack(self, leg, false);
    finish_leg(self, leg, leg_outcome::nacked);
    ++s.stats.ended_by_release;
  }
  if (!ids.empty())
    s.log.warning("router core: " + why + ": ended " + std::to_string(ids.size())
                  + " leg(s) that had not landed, each with one NACK (" + std::to_string(before)
                  + " before the delivery was attempted, " + std::to_string(in_flight)
                  + " in flight)");
  residual.insert(residual.end(), earlier_nacks.begin(), earlier_nacks.end());
  return residual;
}

} // namespace cafmesh::routing::router_core_detail
