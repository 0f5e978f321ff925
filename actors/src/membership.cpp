#include "cafmesh/actors/membership.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "membership_detail.hpp"

namespace cafmesh {

// -- statuses -----------------------------------------------------------------------

std::string to_string(silo_status x) {
  switch (x) {
    case silo_status::joining: return "Joining";
    case silo_status::active: return "Active";
    case silo_status::shutting_down: return "ShuttingDown";
    case silo_status::stopping: return "Stopping";
    case silo_status::dead: return "Dead";
  }
  return "silo_status(" + std::to_string(static_cast<int>(x)) + ")";
}

bool is_terminating(silo_status x) {
  return x == silo_status::shutting_down || x == silo_status::stopping || x == silo_status::dead;
}

bool is_allowed_transition(silo_status from, silo_status to) {
  using s = silo_status;
  switch (from) {
    case s::joining: return to == s::active || to == s::dead;
    case s::active: return to == s::shutting_down || to == s::stopping;
    case s::shutting_down: return to == s::stopping || to == s::dead;
    case s::stopping: return to == s::dead;
    case s::dead: return false;
  }
  return false;
}

std::string to_string(placement_strategy x) {
  switch (x) {
    case placement_strategy::stateless_worker: return "stateless_worker";
    case placement_strategy::prefer_local: return "prefer_local";
    case placement_strategy::random: return "random";
  }
  return "placement_strategy(" + std::to_string(static_cast<int>(x)) + ")";
}

// -- rows and snapshots ---------------------------------------------------------------

const grain_type_info* membership_row::find_type(const std::string& type) const {
  for (const auto& t : manifest)
    if (t.type == type)
      return &t;
  return nullptr;
}

const membership_row* membership_snapshot::find(const silo_address& s) const {
  for (const auto& r : rows)
    if (r.silo == s)
      return &r;
  return nullptr;
}

membership_row* membership_snapshot::find(const silo_address& s) {
  for (auto& r : rows)
    if (r.silo == s)
      return &r;
  return nullptr;
}

bool membership_snapshot::departed(const silo_address& s) const {
  for (const auto& r : rows) {
    if (r.silo == s && r.status == silo_status::dead)
      return true;
    if (r.silo.same_endpoint(s) && r.silo.generation > s.generation)
      return true;
  }
  return false;
}

silo_status membership_snapshot::status_of(const silo_address& s) const {
  if (auto r = find(s))
    return r->status;
  return departed(s) ? silo_status::dead : silo_status::joining;
}

bool membership_snapshot::is_active(const silo_address& s) const {
  auto r = find(s);
  return r != nullptr && r->status == silo_status::active;
}

std::vector<silo_address> membership_snapshot::active_set() const {
  std::vector<silo_address> out;
  for (const auto& r : rows)
    if (r.status == silo_status::active)
      out.push_back(r.silo);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<silo_address> membership_snapshot::gateways() const {
  std::vector<silo_address> out;
  for (const auto& r : rows)
    if (r.status == silo_status::active && r.gateway)
      out.push_back(r.silo);
  std::sort(out.begin(), out.end());
  return out;
}

void membership_snapshot::upsert(membership_row r) {
  if (auto existing = find(r.silo)) {
    *existing = std::move(r);
    return;
  }
  auto pos
    = std::lower_bound(rows.begin(), rows.end(), r.silo,
                       [](const membership_row& x, const silo_address& s) { return x.silo < s; });
  rows.insert(pos, std::move(r));
}

std::string membership_snapshot::render() const {
  std::string out = "v" + std::to_string(version);
  for (const auto& r : rows) {
    out += "\n" + r.silo.to_string() + " " + to_string(r.status);
    if (r.gateway)
      out += " gateway";
  }
  return out;
}

namespace {

using membership_detail::refused;

// -- oracle ---------------------------------------------------------------------------

struct oracle_state {
  membership_oracle_config cfg;
  network_watch_actor net; ///< the sim_network, whose trace records every snapshot
  membership_snapshot snap;
  std::vector<caf::actor> subscribers;
  membership_detail::silence_tracker silences;
  log::logger log;
  static const char* name;
};

const char* oracle_state::name = "cafmesh.membership_oracle";

/// The oracle's full interface: the protocol and its own failure-detector check.
using oracle_impl
  = membership_oracle_actor::extend<caf::reacts_to<mb_check_atom, silo_address, uint64_t>>;

using oracle_actor = oracle_impl::stateful_base<oracle_state>;

void publish(oracle_actor* self) {
  auto& st = self->state;
  ++st.snap.version;
  st.snap.table = st.cfg.table;
  if (st.net) {
    std::string line = "membership v" + std::to_string(st.snap.version) + ":";
    for (const auto& r : st.snap.rows)
      line += " " + r.silo.to_string() + "=" + to_string(r.status);
    self->send(st.net, sim_note_atom::value, std::move(line));
  }
  for (auto& sub : st.subscribers)
    membership_detail::tell(self, sub, mb_snapshot_atom::value, st.snap);
}

/// Applies one transition; answers an error if refused. `changed` tells if a snapshot
/// was published.
caf::error transition(oracle_actor* self, const silo_address& s, silo_status to) {
  auto& st = self->state;
  auto row = st.snap.find(s);
  if (row == nullptr)
    return refused(mesh_errc::not_found, "membership has no row for " + s.to_string());
  if (row->status == to)
    return caf::error{};
  if (!is_allowed_transition(row->status, to))
    return refused(mesh_errc::invalid_operation, "membership transition " + to_string(row->status)
                                                   + " -> " + to_string(to) + " of " + s.to_string()
                                                   + " refused");
  st.log.info(s.to_string() + ": " + to_string(row->status) + " -> " + to_string(to));
  row->status = to;
  publish(self);
  return caf::error{};
}

caf::error declare_dead(oracle_actor* self, const silo_address& s) {
  auto row = self->state.snap.find(s);
  if (row == nullptr)
    return refused(mesh_errc::not_found, "membership has no row for " + s.to_string());
  if (row->status == silo_status::active)
    if (auto err = transition(self, s, silo_status::stopping))
      return err;
  return transition(self, s, silo_status::dead);
}

oracle_impl::behavior_type membership_oracle(oracle_actor* self, membership_oracle_config cfg,
                                             network_watch_actor net) {
  self->state.cfg = cfg;
  self->state.net = net;
  self->state.log = log::get("membership");
  if (net)
    self->send(net, sim_watch_atom::value, caf::actor_cast<caf::actor>(self));
  self->set_down_handler(
    [=](caf::down_msg& dm) { membership_detail::forget(self->state.subscribers, dm); });
  return {
    [=](mb_join_atom, membership_row& row) -> caf::result<uint64_t> {
      auto& st = self->state;
      std::vector<silo_address> superseded;
      uint64_t newest = 0;
      bool seen = false;
      for (const auto& r : st.snap.rows) {
        if (!r.silo.same_endpoint(row.silo))
          continue;
        seen = true;
        newest = std::max(newest, r.silo.generation);
        if (r.status != silo_status::dead)
          superseded.push_back(r.silo);
      }
      // A status other than Joining: the silo registers its row again after the table was
      // reset (docs/behaviour/membership.md#when-the-development-tables-process-restarts).
      bool again = row.status != silo_status::joining;
      if (again) {
        if (seen && newest > row.silo.generation)
          return refused(mesh_errc::invalid_operation,
                         "registration of " + row.silo.to_string() + " refused: generation "
                           + std::to_string(newest) + " of its endpoint joined since");
        if (auto existing = st.snap.find(row.silo)) {
          if (existing->status == silo_status::dead && row.status != silo_status::dead)
            return refused(mesh_errc::invalid_operation,
                           "registration of " + row.silo.to_string() + " refused: it is Dead");
          // Registered already (its earlier registration, or a status it published since):
          // a later status still applies, an earlier one changes nothing.
          if (existing->status != row.status && is_allowed_transition(existing->status, row.status))
            if (auto err = transition(self, row.silo, row.status))
              return err;
          return st.snap.version;
        }
      }
      if (seen && newest >= row.silo.generation)
        return refused(mesh_errc::invalid_operation,
                       "join of " + row.silo.to_string() + " refused: generation "
                         + std::to_string(newest) + " already joined");
      if (again)
        st.log.info(row.silo.to_string() + " registers again as " + to_string(row.status));
      else
        st.log.info(row.silo.to_string() + " joins");
      // A restart supersedes its predecessor: Dead in the snapshot that adds the new row.
      for (auto& old : superseded) {
        auto r = st.snap.find(old);
        st.log.info(old.to_string() + ": " + to_string(r->status) + " -> Dead (superseded)");
        r->status = silo_status::dead;
      }
      st.snap.upsert(std::move(row));
      publish(self);
      return st.snap.version;
    },
    [=](mb_status_atom, const silo_address& s, silo_status to) -> caf::result<uint64_t> {
      if (auto err = transition(self, s, to))
        return err;
      return self->state.snap.version;
    },
    [=](mb_dead_atom, const silo_address& s) -> caf::result<uint64_t> {
      if (auto err = declare_dead(self, s))
        return err;
      return self->state.snap.version;
    },
    [=](mb_subscribe_atom, const caf::actor& sub) {
      self->state.subscribers.push_back(sub);
      self->monitor(sub);
      if (self->state.snap.version > 0)
        membership_detail::tell(self, sub, mb_snapshot_atom::value, self->state.snap);
    },
    [=](mb_get_atom) { return self->state.snap; },
    [=](sim_watch_atom, const silo_address& s, bool alive) {
      // A silence that starts is checked once the detection delay has passed.
      if (auto e = self->state.silences.report(s, alive))
        self->delayed_send(self, std::chrono::milliseconds(self->state.cfg.failure_detection_ms),
                           mb_check_atom::value, s, e);
    },
    [=](mb_check_atom, const silo_address& s, uint64_t e) {
      auto& st = self->state;
      if (!st.silences.lasts(s, e))
        return;
      auto row = st.snap.find(s);
      if (row == nullptr || row->status == silo_status::dead)
        return;
      st.log.warning(s.to_string() + " silent for " + std::to_string(st.cfg.failure_detection_ms)
                     + " ms: declared Dead");
      declare_dead(self, s);
    },
  };
}

// -- agent ----------------------------------------------------------------------------

struct agent_state {
  silo_address self_addr;
  membership_oracle_actor oracle;
  membership_snapshot view;
  caf::optional<silo_status> local_status; ///< set locally, not yet seen in a snapshot
  std::vector<caf::actor> subscribers;
  uint64_t stale_ignored = 0;
  bool leaving = false;          ///< this silo published a leaving status itself
  uint64_t declared_version = 0; ///< the view that showed it declared Dead (0: none)
  std::vector<caf::actor> declared_watchers;
  // -- a reset table (docs/behaviour/membership.md#when-the-development-tables-process-restarts)
  membership_snapshot table_snap;      ///< the latest snapshot of the table the view follows
  uint64_t offset = 0;                 ///< view.version = offset + table_snap.version
  std::vector<membership_row> carried; ///< rows of an earlier table this one lacks yet
  uint64_t carry_epoch = 0;            ///< tells the current carry bound from earlier ones
  caf::timespan carry_bound = default_carry_bound;
  /// The row this silo joined with (manifest, gateway flag), once its join was answered.
  caf::optional<membership_row> own_row;
  bool reset_pending = false; ///< the table was reset and does not show this silo's row yet
  bool rejoining = false;     ///< a re-registration awaits its answer
  bool rejoin_timer = false;  ///< an `mb_rejoin_atom` retry is scheduled
  uint64_t resets = 0;
  // -- bounded joins (docs/behaviour/membership.md#a-join-that-cannot-reach-the-table)
  membership_join_bound join;
  /// A join (`row` set) or reach (`row` empty) that has not reached the table yet.
  struct bounded_op {
    caf::typed_response_promise<uint64_t> rp;
    caf::optional<membership_row> row;
    caf::actor_clock::time_point deadline; ///< unused without a bound
    caf::error last;                       ///< the last refusal as unreachable, if any
  };
  std::map<uint64_t, bounded_op> ops;
  uint64_t next_op = 0;
  /// A bounded join gave up and none succeeded: this silo has no row to publish a status
  /// in, so a status it publishes (the Dead of its stop) is answered at once.
  caf::error join_gave_up;
  log::logger log;
  static const char* name;
};

const char* agent_state::name = "cafmesh.membership_agent";

/// The agent's full interface: the protocol and its own timers.
using agent_impl = membership_agent_actor::extend<caf::reacts_to<mb_carry_atom, uint64_t>,
                                                  caf::reacts_to<mb_rejoin_atom>,
                                                  caf::reacts_to<mb_retry_atom, uint64_t>>;

using agent_actor = agent_impl::stateful_base<agent_state>;

/// Rank of a status along the transition order, to tell if a snapshot caught up with a
/// locally applied status.
int rank(silo_status s) {
  switch (s) {
    case silo_status::joining: return 0;
    case silo_status::active: return 1;
    case silo_status::shutting_down: return 2;
    case silo_status::stopping: return 3;
    case silo_status::dead: return 4;
  }
  return 0;
}

void patch_local(agent_actor* self) {
  auto& st = self->state;
  if (!st.local_status)
    return;
  auto row = st.view.find(st.self_addr);
  if (row == nullptr)
    return;
  if (rank(row->status) >= rank(*st.local_status))
    st.local_status = caf::none; // the cluster caught up
  else
    row->status = *st.local_status;
}

void fan_out(agent_actor* self) {
  for (auto& sub : self->state.subscribers)
    membership_detail::tell(self, sub, mb_snapshot_atom::value, self->state.view);
}

/// Tells the watchers, once, that the cluster declared this silo Dead.
void check_declared(agent_actor* self) {
  auto& st = self->state;
  if (st.leaving || st.declared_version != 0 || !st.view.departed(st.self_addr))
    return;
  st.declared_version = st.view.version;
  st.log.warning("membership v" + std::to_string(st.view.version)
                 + " shows this silo Dead although it did not leave");
  for (auto& w : st.declared_watchers)
    membership_detail::tell(self, w, mb_declared_atom::value, st.declared_version);
}

/// Rebuilds the view from the table's latest snapshot and the carried rows: a carried row
/// is dropped once the table has a row of its endpoint.
void rebuild(agent_actor* self) {
  auto& st = self->state;
  auto view = st.table_snap;
  view.version = st.offset + st.table_snap.version;
  auto known = [&](const silo_address& s) {
    for (const auto& r : st.table_snap.rows)
      if (r.silo.same_endpoint(s))
        return true;
    return false;
  };
  st.carried.erase(std::remove_if(st.carried.begin(), st.carried.end(),
                                  [&](const membership_row& r) { return known(r.silo); }),
                   st.carried.end());
  for (const auto& r : st.carried)
    view.upsert(r);
  st.view = std::move(view);
}

void maybe_rejoin(agent_actor* self);

/// Registers this silo's row again with status `to` (a reset table lacks it).
void rejoin(agent_actor* self, silo_status to) {
  auto& st = self->state;
  auto row = *st.own_row;
  row.status = to;
  st.rejoining = true;
  auto table = st.table_snap.table;
  self->request(st.oracle, caf::infinite, mb_join_atom::value, row)
    .then(
      [=](uint64_t) {
        auto& st = self->state;
        st.rejoining = false;
        st.log.info("registered again as " + to_string(to) + " in membership table "
                    + std::to_string(table));
      },
      [=](caf::error& e) {
        auto& st = self->state;
        st.rejoining = false;
        st.log.warning("registering again in membership table " + std::to_string(table)
                       + " failed: " + to_fault(e).text + "; trying again in 1000 ms");
        if (!st.rejoin_timer) {
          st.rejoin_timer = true;
          self->delayed_send(self, std::chrono::seconds(1), mb_rejoin_atom::value);
        }
      });
}

/// The status this silo registers with after a reset: its own in the view (carried), or the
/// one it set locally.
caf::optional<silo_status> own_status(agent_actor* self) {
  auto& st = self->state;
  if (st.local_status)
    return st.local_status;
  if (auto r = st.view.find(st.self_addr))
    return r->status;
  return caf::none;
}

/// A silo that joined and whose row the reset table lacks registers it again
/// (docs/behaviour/membership.md#when-the-development-tables-process-restarts).
void maybe_rejoin(agent_actor* self) {
  auto& st = self->state;
  if (!st.reset_pending || !st.own_row)
    return;
  if (st.table_snap.find(st.self_addr) != nullptr) {
    st.reset_pending = false;
    return;
  }
  if (st.rejoining || st.table_snap.departed(st.self_addr))
    return;
  auto to = own_status(self);
  if (!to)
    return;
  rejoin(self, *to);
}

/// Applies a snapshot of the oracle's table; a newer table's starts over
/// (docs/behaviour/membership.md#when-the-development-tables-process-restarts).
void apply(agent_actor* self, membership_snapshot snap) {
  auto& st = self->state;
  if (st.view.version > 0 && snap.table != st.table_snap.table) {
    auto old_table = st.table_snap.table;
    st.carried.clear();
    for (const auto& r : st.view.rows) {
      bool superseded = false;
      for (const auto& n : snap.rows)
        superseded = superseded || n.silo.same_endpoint(r.silo);
      if (r.status != silo_status::dead && !superseded)
        st.carried.push_back(r);
    }
    st.offset = st.view.version;
    st.reset_pending = static_cast<bool>(st.own_row);
    ++st.resets;
    st.log.warning("membership table reset (table " + std::to_string(old_table) + " -> "
                   + std::to_string(snap.table) + " at v" + std::to_string(snap.version)
                   + "): carrying " + std::to_string(st.carried.size())
                   + " row(s) until their silos register again (at most "
                   + std::to_string(
                     std::chrono::duration_cast<std::chrono::milliseconds>(st.carry_bound).count())
                   + " ms)");
    if (!st.carried.empty())
      self->delayed_send(self, st.carry_bound, mb_carry_atom::value, ++st.carry_epoch);
  }
  st.table_snap = std::move(snap);
  rebuild(self);
}

// -- bounded joins ----------------------------------------------------------------------

bool bounded(const agent_state& st) {
  return st.join.bound > caf::timespan{0};
}

/// True for what the oracle relay and the table oracle answer while their table is out of
/// reach: try again.
bool unreachable(const caf::error& e) {
  return to_fault(e).code == mesh_errc::departed_silo;
}

void attempt(agent_actor* self, uint64_t id);

/// The bound passed: the join or reach `id` fails with `join_bound_text`.
void give_up(agent_actor* self, uint64_t id) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end())
    return;
  auto op = std::move(i->second);
  st.ops.erase(i);
  fault f{mesh_errc::departed_silo, join_bound_text(st.join)};
  if (op.last)
    f.causes.push_back(to_fault(op.last));
  st.log.error(f.text);
  if (op.row && !st.own_row)
    st.join_gave_up
      = to_error(fault{mesh_errc::departed_silo,
                       "this silo never joined: " + f.text + "; no row to publish a status in"});
  op.rp.deliver(to_error(f));
}

/// The oracle answered `id` with `e`: a refusal as unreachable is tried again after
/// `join.retry` (at most until the deadline), a timeout is the bound, anything else fails it.
void attempt_failed(agent_actor* self, uint64_t id, caf::error e) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end())
    return;
  if (e == caf::sec::request_timeout && bounded(st)) {
    give_up(self, id);
    return;
  }
  if (!unreachable(e)) {
    auto rp = i->second.rp;
    st.ops.erase(i);
    rp.deliver(std::move(e));
    return;
  }
  auto wait = st.join.retry;
  if (bounded(st)) {
    auto left = i->second.deadline - self->clock().now();
    if (left <= caf::timespan{0}) {
      i->second.last = std::move(e);
      give_up(self, id);
      return;
    }
    wait = std::min<caf::timespan>(wait, left);
  }
  st.log.warning(
    "membership table " + st.join.table + " not reached: " + to_fault(e).text + "; trying again in "
    + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()) + " ms");
  i->second.last = std::move(e);
  self->delayed_send(self, wait, mb_retry_atom::value, id);
}

/// One attempt of the join or reach `id`: its request is bounded by what is left of the bound.
void attempt(agent_actor* self, uint64_t id) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end())
    return;
  caf::duration timeout = caf::infinite;
  if (bounded(st)) {
    auto left = i->second.deadline - self->clock().now();
    if (left <= caf::timespan{0}) {
      give_up(self, id);
      return;
    }
    timeout = caf::duration{left};
  }
  auto failed = [=](caf::error& e) { attempt_failed(self, id, std::move(e)); };
  auto done = [=](uint64_t v) {
    auto& st = self->state;
    auto j = st.ops.find(id);
    if (j == st.ops.end())
      return;
    auto op = std::move(j->second);
    st.ops.erase(j);
    if (op.row)
      st.own_row = *op.row;
    op.rp.deliver(v);
  };
  if (i->second.row)
    self->request(st.oracle, timeout, mb_join_atom::value, *i->second.row).then(done, failed);
  else
    self->request(st.oracle, timeout, mb_get_atom::value)
      .then([=](const membership_snapshot& snap) { done(snap.version); }, failed);
}

/// Starts a bounded join (`row`) or reach (no row).
caf::typed_response_promise<uint64_t> start_bounded(agent_actor* self,
                                                    caf::optional<membership_row> row) {
  auto& st = self->state;
  auto id = ++st.next_op;
  auto& op = st.ops[id];
  op.rp = self->make_response_promise<uint64_t>();
  op.row = std::move(row);
  if (bounded(st))
    op.deadline = self->clock().now() + st.join.bound;
  auto rp = op.rp;
  attempt(self, id);
  return rp;
}

agent_impl::behavior_type membership_agent(agent_actor* self, silo_address self_addr,
                                           membership_oracle_actor oracle,
                                           caf::timespan carry_bound, membership_join_bound join) {
  auto& st = self->state;
  st.self_addr = self_addr;
  st.oracle = oracle;
  st.carry_bound = carry_bound;
  st.join = std::move(join);
  st.log = log::get("membership").with_context(self_addr.to_string());
  self->send(oracle, mb_subscribe_atom::value, caf::actor_cast<caf::actor>(self));
  self->set_down_handler(
    [=](caf::down_msg& dm) { membership_detail::forget(self->state.subscribers, dm); });
  return {
    [=](mb_snapshot_atom, membership_snapshot& snap) {
      auto& st = self->state;
      bool newer_table = snap.table > st.table_snap.table || st.view.version == 0;
      if (snap.table < st.table_snap.table
          || (!newer_table && snap.version <= st.table_snap.version)) {
        ++st.stale_ignored;
        return;
      }
      apply(self, std::move(snap));
      patch_local(self);
      fan_out(self);
      check_declared(self);
      maybe_rejoin(self);
    },
    [=](mb_carry_atom, uint64_t epoch) {
      auto& st = self->state;
      if (epoch != st.carry_epoch || st.carried.empty())
        return;
      std::string names;
      for (const auto& r : st.carried)
        names += (names.empty() ? "" : ", ") + r.silo.to_string();
      st.log.warning(
        "membership: " + names + " did not register again in table "
        + std::to_string(st.table_snap.table) + " within "
        + std::to_string(
          std::chrono::duration_cast<std::chrono::milliseconds>(st.carry_bound).count())
        + " ms: no longer carried");
      st.carried.clear();
      ++st.offset; // the view changes: a new version
      rebuild(self);
      patch_local(self);
      fan_out(self);
      check_declared(self);
    },
    [=](mb_rejoin_atom) {
      self->state.rejoin_timer = false;
      maybe_rejoin(self);
    },
    [=](mb_declared_atom, const caf::actor& watcher) {
      auto& st = self->state;
      st.declared_watchers.push_back(watcher);
      if (st.declared_version != 0)
        membership_detail::tell(self, watcher, mb_declared_atom::value, st.declared_version);
    },
    [=](mb_subscribe_atom, const caf::actor& sub) {
      self->state.subscribers.push_back(sub);
      self->monitor(sub);
      if (self->state.view.version > 0)
        membership_detail::tell(self, sub, mb_snapshot_atom::value, self->state.view);
    },
    [=](mb_join_atom, std::vector<grain_type_info>& manifest,
        bool gateway) -> caf::typed_response_promise<uint64_t> {
      membership_row row;
      row.silo = self->state.self_addr;
      row.status = silo_status::joining;
      row.manifest = std::move(manifest);
      row.gateway = gateway;
      return start_bounded(self, std::move(row));
    },
    [=](mb_reach_atom) -> caf::typed_response_promise<uint64_t> {
      return start_bounded(self, caf::none);
    },
    [=](mb_retry_atom, uint64_t id) { attempt(self, id); },
    [=](mb_status_atom, silo_status to) -> caf::typed_response_promise<uint64_t> {
      auto& st = self->state;
      auto rp = self->make_response_promise<uint64_t>();
      if (st.join_gave_up && !st.own_row) {
        // Its join gave up (docs/behaviour/membership.md#a-join-that-cannot-reach-the-table):
        // the table has no row of this silo, and waiting for it again would only hold the
        // stop of a start that failed.
        rp.deliver(st.join_gave_up);
        return rp;
      }
      if (is_terminating(to))
        st.leaving = true;
      if (to == silo_status::shutting_down || to == silo_status::stopping) {
        // docs/behaviour/membership.md#leaving: apply locally before publishing.
        auto row = st.view.find(st.self_addr);
        if (row != nullptr && is_allowed_transition(row->status, to)) {
          row->status = to;
          st.local_status = to;
          fan_out(self);
        }
      }
      if (st.reset_pending && st.own_row && st.table_snap.find(st.self_addr) == nullptr) {
        // The reset table lacks this silo's row: register it with the new status
        // (docs/behaviour/membership.md#when-the-development-tables-process-restarts).
        auto row = *st.own_row;
        row.status = to;
        self->request(st.oracle, caf::infinite, mb_join_atom::value, std::move(row))
          .then([=](uint64_t v) mutable { rp.deliver(v); },
                [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      }
      self->request(st.oracle, caf::infinite, mb_status_atom::value, st.self_addr, to)
        .then([=](uint64_t v) mutable { rp.deliver(v); },
              [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    },
    [=](mb_get_atom) { return self->state.view; },
  };
}

} // namespace

membership_oracle_actor spawn_membership_oracle(caf::actor_system& sys,
                                                membership_oracle_config cfg,
                                                const network_watch_actor& net) {
  return sys.spawn(membership_oracle, cfg, net);
}

std::string join_bound_text(const membership_join_bound& b) {
  auto ms = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(b.bound).count());
  std::string grouped;
  for (size_t i = 0; i < ms.size(); ++i) {
    if (i > 0 && (ms.size() - i) % 3 == 0)
      grouped += ',';
    grouped += ms[i];
  }
  return "membership: could not reach the membership table " + b.table + " for " + grouped
         + " ms (membership.max_join_time_ms); " + b.remedy;
}

membership_agent_actor spawn_membership_agent(caf::actor_system& sys, const silo_address& self_addr,
                                              const membership_oracle_actor& oracle,
                                              caf::timespan carry_bound,
                                              membership_join_bound join) {
  return caf::actor_cast<membership_agent_actor>(
    sys.spawn(membership_agent, self_addr, oracle, carry_bound, std::move(join)));
}

} // namespace cafmesh
