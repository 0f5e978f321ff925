#include "rig.hpp"

#include <chrono>
#include <deque>
#include <thread>
#include <utility>

#include "cafmesh/routing/node_path_resolver.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/io_pool.hpp"
#include "cafmesh/routing/router_core.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"

namespace cafmesh::bench {

using namespace cafmesh::routing;

envelope make_proto(address target) {
  envelope d;
  d.id = "bench-1";
  d.sender = address{"portal", "bench", {}};
  d.target = std::move(target);
  d.payload_type = "bench.ping";
  d.payload_json = R"({"n":1})";
  return d;
}

proto_list protos_of(std::vector<envelope> xs) {
  return std::make_shared<const std::vector<envelope>>(std::move(xs));
}

caf::behavior bench_sink(caf::event_based_actor*, progress* p) {
  return {
    [=](hb_in_atom, const envelope&) { p->bump(); },
  };
}

caf::behavior bench_driver(caf::stateful_actor<driver_state>* self, progress* answers) {
  // Owned by the behavior; the response handlers use the raw pointer (no ownership cycle;
  // they never run after the actor quit).
  auto send_one_owner = std::make_shared<std::function<void()>>();
  auto send_one = send_one_owner.get();
  *send_one = [=] {
    auto& st = self->state;
    --st.remaining;
    auto& protos = *st.protos;
    const auto& proto = protos[st.next++ % protos.size()];
    self->request(st.rs, caf::infinite, rs_deliver_atom::value, proto)
      .then(
        [=](const envelope& answer) {
          if (answer.state != delivery_state::forwarded)
            answers->bad.fetch_add(1);
          answers->bump();
          if (self->state.remaining > 0)
            (*send_one)();
        },
        [=](caf::error&) {
          answers->bad.fetch_add(1);
          answers->bump();
          if (self->state.remaining > 0)
            (*send_one)();
        });
  };
  return {
    [=, keep = send_one_owner](bn_raw_atom, const caf::actor& dst, uint64_t n,
                               const envelope& proto) {
      for (uint64_t i = 0; i < n; ++i)
        self->send(dst, hb_in_atom::value, proto);
    },
    [=](bn_post_atom, const caf::actor& rs, uint64_t n, const proto_list& protos,
        uint64_t offset) {
      auto& list = *protos;
      for (uint64_t i = 0; i < n; ++i)
        self->send(rs, rs_post_atom::value, list[(offset + i) % list.size()]);
    },
    [=](bn_req_atom, const routing_service_actor& rs, uint64_t n, const proto_list& protos,
        uint64_t offset) {
      auto& st = self->state;
      st.rs = rs;
      st.protos = protos;
      st.next = offset;
      st.remaining = n;
      for (uint64_t i = 0; i < request_window && st.remaining > 0; ++i)
        (*send_one)();
    },
  };
}

std::pair<double, double> raw_one_way_batch(caf::actor& drv, caf::actor& snk, progress& sunk,
                                            uint64_t n, const envelope& proto) {
  sunk.arm(n);
  auto t0 = clock_type::now();
  auto c0 = process_cpu_s();
  caf::anon_send(drv, bn_raw_atom::value, snk, n, proto);
  sunk.wait();
  return {seconds_since(t0), process_cpu_s() - c0};
}

namespace {

struct grains_state {
  std::deque<std::pair<grain_port_reply, envelope>> held;
  static inline const char* name = "bench.grains";
};

/// The fake grain port (see `grain_answer`).
grain_port_actor::behavior_type
fake_grains(grain_port_actor::stateful_pointer<grains_state> self, core_rig* rig,
            std::function<grain_answer(const grain_id&)> answer) {
  // The release message is not in the port's interface: it arrives as a default-handled
  // message (typed actors in CAF 0.17 take unexpected messages through the default handler).
  self->set_default_handler([=](caf::scheduled_actor*,
                                caf::message_view& xs) -> caf::result<caf::message> {
    auto msg = xs.copy_content_to_message();
    uint64_t n = 0;
    if (msg.match_elements<bn_release_atom, uint64_t>())
      n = msg.get_as<uint64_t>(1);
    auto& held = self->state.held;
    uint64_t done = 0;
    while (done < n && !held.empty()) {
      auto [promise, d] = std::move(held.front());
      held.pop_front();
      d.state = delivery_state::processed;
      promise.deliver(std::move(d));
      ++done;
    }
    if (done > 0)
      rig->answered.bump(done);
    if (done > 0) {
      rig->last_release_ns.store(clock_type::now().time_since_epoch().count());
      rig->released.bump(done);
    }
    return caf::message{};
  });
  return {
    [=](gp_call_atom, uint64_t call, const grain_id& g, envelope& d, caf::timespan) {
      rig->grain_calls.bump();
      auto what = answer ? answer(g) : grain_answer::at_once;
      if (what == grain_answer::never)
        return;
      grain_port_reply reply{self, call};
      if (what == grain_answer::on_release) {
        self->state.held.emplace_back(reply, std::move(d));
        return;
      }
      d.state = delivery_state::processed;
      reply.deliver(std::move(d));
      rig->answered.bump();
    },
    [](gp_invalidate_atom, const grain_id&) {},
    [](gp_inval_silo_atom, const silo_address&) {},
    [](gp_act_error_atom, const grain_id&) -> std::string { return {}; },
  };
}

path_resolver_actor::behavior_type node_resolver(path_resolver_actor::pointer,
                                                 bool cacheable) {
  return {
    [=](pr_resolve_atom, const std::string& path) {
      resolve_result r;
      if (auto prefix = routing::node_prefix_of("node", path)) {
        r.found = true;
        r.node_prefix = std::move(*prefix);
        r.cacheable = cacheable;
      }
      return r;
    },
  };
}

} // namespace

core_rig::core_rig(caf::actor_system& sys, rig_options opts) : sys_(sys) {
  silo_address silo{"127.0.0.1", 11111, 1};
  config::mesh_config cfg;
  cfg.routing.max_in_flight = opts.max_in_flight;
  gauge_ = spawn_routing_quiescence(sys, {silo.to_string()});
  pool_ = spawn_io_pool(sys, io_pool_options::from(cfg.pool, silo.to_string()));
  grains_ = sys.spawn(fake_grains, this, opts.answer);
  resolver_ = sys.spawn(node_resolver, opts.cacheable);
  auto co = router_core_options::from(cfg, silo);
  co.gauge = gauge_;
  co.pool = pool_;
  co.grains = grains_;
  co.resolver = resolver_;
  rc_ = spawn_router_core(sys, co);
  auto ro = routing_service_options::from(cfg);
  ro.role = config::process_role::silo_host;
  ro.process_name = "bench";
  ro.core = rc_;
  rs_ = spawn_routing_service(sys, ro);
  caf::anon_send(rc_, rc_locals_atom::value, caf::actor_cast<local_route_port_actor>(rs_));
  drv_ = sys.spawn(bench_driver, &answers);
  self_ = std::make_unique<caf::scoped_actor>(sys);
}

std::vector<caf::actor> core_rig::actors() const {
  return {caf::actor_cast<caf::actor>(drv_),     caf::actor_cast<caf::actor>(rs_),
          caf::actor_cast<caf::actor>(rc_),      caf::actor_cast<caf::actor>(grains_),
          caf::actor_cast<caf::actor>(resolver_), caf::actor_cast<caf::actor>(pool_),
          caf::actor_cast<caf::actor>(gauge_)};
}

core_rig::~core_rig() {
  for (auto& h : actors())
    caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
  self_.reset();
}

bool core_rig::deliver(uint64_t n, const proto_list& protos, uint64_t offset,
                       double timeout_s) {
  answers.arm(n);
  start_deliver(n, protos, offset);
  return answers.wait(timeout_s);
}

void core_rig::start_deliver(uint64_t n, const proto_list& protos, uint64_t offset) {
  caf::anon_send(drv_, bn_req_atom::value, rs_, n, protos, offset);
}

void core_rig::post(uint64_t n, const proto_list& protos, uint64_t offset) {
  caf::anon_send(drv_, bn_post_atom::value, caf::actor_cast<caf::actor>(rs_), n, protos,
                 offset);
}

router_core_stats core_rig::stats(bool urgent) {
  router_core_stats out;
  auto on_stats = [&](router_core_stats& x) { out = std::move(x); };
  auto on_error = [&](caf::error&) {};
  if (urgent)
    (*self_)->request<caf::message_priority::high>(rc_, caf::infinite, rc_stats_atom::value)
      .receive(on_stats, on_error);
  else
    (*self_)->request(rc_, caf::infinite, rc_stats_atom::value).receive(on_stats, on_error);
  return out;
}

bool core_rig::wait_landed(uint64_t goal, uint64_t answered_goal, double timeout_s) {
  auto t0 = clock_type::now();
  if (!answered.wait_for_count(answered_goal, timeout_s))
    return false;
  // The port answers at the priority of the call (grain_port_reply): a first ask in CAF's
  // urgent queue comes after every urgent answer already queued, a second one in the normal
  // queue after every normal one. One alone is not enough: CAF 0.17 serves its urgent and
  // normal queues by weighted round robin, so a normal ask overtakes part of a large urgent
  // backlog, and an urgent ask overtakes normal answers.
  for (int ask = 0;; ++ask) {
    stats_checks.fetch_add(1);
    auto st = stats(ask == 0);
    if (st.landed >= goal)
      return true;
    if (st.terminal_events > st.landed || seconds_since(t0) > timeout_s)
      return false;
    if (ask > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

bool core_rig::wait_drained(uint64_t answered_goal, double timeout_s) {
  if (!answered.wait_for_count(answered_goal, timeout_s))
    return false;
  bool ok = true;
  auto on_error = [&](caf::error&) { ok = false; };
  (*self_)->request(rc_, caf::infinite, rc_sync_atom::value)
    .receive([](caf::ok_atom) {}, on_error);
  (*self_)->request<caf::message_priority::high>(rc_, caf::infinite, rc_sync_atom::value)
    .receive([](caf::ok_atom) {}, on_error);
  return ok;
}

void core_rig::release(uint64_t n) {
  caf::anon_send(caf::actor_cast<caf::actor>(grains_), bn_release_atom::value, n);
}

} // namespace cafmesh::bench
