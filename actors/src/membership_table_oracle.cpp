#include "cafmesh/actors/membership_table_oracle.hpp"

#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "membership_detail.hpp"

namespace cafmesh {

namespace {

using membership_detail::refused;

/// `(mt_refresh_atom)`: the table's watch reported a change; read it again.
using mt_refresh_atom = caf::atom_constant<caf::atom("mtrefresh")>;
/// `(mt_alive_atom)`: time for the joined silo's IAmAlive heartbeat.
using mt_alive_atom = caf::atom_constant<caf::atom("mtalive")>;

int64_t wall_clock_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

caf::error unreachable(const table_outcome& res) {
  return refused(mesh_errc::departed_silo, "the membership table cannot be reached: " + res.detail);
}

struct table_oracle_state {
  std::shared_ptr<membership_table> table;
  membership_table_oracle_config cfg;
  std::unique_ptr<table_watch> watch;
  membership_snapshot view; ///< the last view sent to subscribers
  std::vector<caf::actor> subscribers;
  caf::optional<silo_address> joined; ///< this process's silo, once it joined
  membership_detail::silence_tracker suspicions;
  log::logger log;
  static const char* name;
};

const char* table_oracle_state::name = "cafmesh.membership_table_oracle";

/// The table oracle's full interface: the oracle protocol, the table watch's refresh, the
/// heartbeat timer and the suspicion check.
using table_oracle_impl
  = membership_oracle_actor::extend<caf::reacts_to<mt_refresh_atom>, caf::reacts_to<mt_alive_atom>,
                                    caf::reacts_to<mb_check_atom, silo_address, uint64_t>>;

using oracle_actor = table_oracle_impl::stateful_base<table_oracle_state>;

/// Reads the table and sends its view to every subscriber if it is newer than the last.
void refresh(oracle_actor* self) {
  auto& st = self->state;
  table_snapshot t;
  auto res = st.table->read_all(t);
  if (!res.ok()) {
    st.log.warning("membership table read failed (" + std::string{to_string(res.status)}
                   + "): " + res.detail + "; keeping view v" + std::to_string(st.view.version));
    return;
  }
  if (t.version <= st.view.version)
    return;
  st.view = t.view();
  for (auto& sub : st.subscribers)
    membership_detail::tell(self, sub, mb_snapshot_atom::value, st.view);
}

/// One compare-and-set write decided on a fresh read: `decide` returns the row to write
/// (and whether to insert it) or an error, or "no change" as an empty optional with no
/// error. Retries on conflict. Answers the table version after the write.
/// While the table answers `unavailable` (an etcd election takes about a second), the
/// write is decided again on a fresh read every 100 ms until `unavailable_budget_ms` has
/// passed: a write whose fate was unknown is then seen applied, or made again.
template <class Decide>
caf::result<uint64_t> write_with_retry(oracle_actor* self, Decide decide) {
  auto& st = self->state;
  auto deadline = std::chrono::steady_clock::now()
                  + std::chrono::milliseconds(st.cfg.unavailable_budget_ms);
  auto wait_or_give_up = [&] {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return true;
  };
  table_outcome last;
  for (int64_t attempt = 0; attempt < st.cfg.max_write_attempts;) {
    table_snapshot t;
    auto res = st.table->read_all(t);
    if (!res.ok()) {
      if (res.status == table_status::unavailable && wait_or_give_up())
        continue;
      return unreachable(res);
    }
    caf::error err;
    bool insert = false;
    caf::optional<table_row> row = decide(t, insert, err);
    if (err)
      return err;
    if (!row) {
      refresh(self);
      return t.version;
    }
    res = insert ? st.table->insert_row(*row, t.version) : st.table->update_row(*row, t.version);
    if (res.ok()) {
      refresh(self);
      return t.version + 1;
    }
    if (res.status == table_status::unavailable && wait_or_give_up())
      continue;
    if (res.status != table_status::conflict)
      return unreachable(res);
    last = std::move(res);
    ++attempt;
  }
  return refused(mesh_errc::directory_unstable,
                 "membership table write lost " + std::to_string(st.cfg.max_write_attempts)
                   + " compare-and-set races in a row: " + last.detail);
}

/// The row of `s` in `t` moved to `to`, or an error if the transition is not allowed.
caf::optional<table_row> transitioned(const table_snapshot& t, const silo_address& s,
                                      silo_status to, caf::error& err) {
  const auto* row = t.find(s);
  if (row == nullptr) {
    err = refused(mesh_errc::not_found, "membership has no row for " + s.to_string());
    return caf::none;
  }
  if (row->entry.status == to)
    return caf::none;
  if (!is_allowed_transition(row->entry.status, to)) {
    err = refused(mesh_errc::invalid_operation,
                  "membership transition " + to_string(row->entry.status) + " -> " + to_string(to)
                    + " of " + s.to_string() + " refused");
    return caf::none;
  }
  auto out = *row;
  out.entry.status = to;
  return out;
}

caf::result<uint64_t> transition(oracle_actor* self, const silo_address& s, silo_status to) {
  self->state.log.info(s.to_string() + ": -> " + to_string(to));
  return write_with_retry(self, [&](const table_snapshot& t, bool&, caf::error& err) {
    return transitioned(t, s, to, err);
  });
}

caf::result<uint64_t> join(oracle_actor* self, membership_row row) {
  auto& st = self->state;
  row.status = silo_status::joining;
  auto start_ms = wall_clock_ms();
  st.log.info(row.silo.to_string() + " joins");
  // Each round writes one row: a superseded predecessor's Dead, or at last the insert.
  bool inserted = false;
  // An insert this join tried: if the table then shows the row with this join's start time,
  // that insert was applied although its answer was lost (an etcd call that timed out after
  // etcd applied it) and the join is done, not refused as "already joined".
  bool tried_insert = false;
  for (;;) {
    auto res = write_with_retry(
      self,
      [&](const table_snapshot& t, bool& insert, caf::error& err) -> caf::optional<table_row> {
        inserted = false;
        for (const auto& r : t.rows) {
          if (!r.entry.silo.same_endpoint(row.silo))
            continue;
          if (tried_insert && r.entry.silo == row.silo && r.start_time_ms == start_ms) {
            st.log.info("join of " + row.silo.to_string()
                        + ": the insert whose answer was lost was applied");
            inserted = true;
            return caf::none;
          }
          if (r.entry.silo.generation >= row.silo.generation) {
            err = refused(mesh_errc::invalid_operation,
                          "join of " + row.silo.to_string() + " refused: generation "
                            + std::to_string(r.entry.silo.generation) + " already joined");
            return caf::none;
          }
          if (r.entry.status != silo_status::dead) {
            st.log.info(r.entry.silo.to_string() + ": " + to_string(r.entry.status)
                        + " -> Dead (superseded)");
            auto dead = r;
            dead.entry.status = silo_status::dead;
            return dead;
          }
        }
        insert = true;
        inserted = true;
        tried_insert = true;
        table_row fresh;
        fresh.entry = row;
        fresh.start_time_ms = start_ms;
        return fresh;
      });
    if (res.flag == caf::rt_error || inserted)
      return res;
  }
}

caf::result<uint64_t> declare_dead(oracle_actor* self, const silo_address& s) {
  table_snapshot t;
  auto res = self->state.table->read_all(t);
  if (!res.ok())
    return unreachable(res);
  const auto* row = t.find(s);
  if (row == nullptr)
    return refused(mesh_errc::not_found, "membership has no row for " + s.to_string());
  if (row->entry.status == silo_status::active) {
    auto step = transition(self, s, silo_status::stopping);
    if (step.flag == caf::rt_error)
      return step;
  }
  return transition(self, s, silo_status::dead);
}

void vote(oracle_actor* self, const silo_address& suspect) {
  auto& st = self->state;
  if (!st.joined)
    return;
  auto voter = *st.joined;
  bool declared = false;
  bool voter_active = true;
  bool gone = false; ///< no row, or Dead already: nothing to vote on
  auto started = std::chrono::steady_clock::now();
  auto res = write_with_retry(
    self, [&](const table_snapshot& t, bool&, caf::error&) -> caf::optional<table_row> {
      const auto* row = t.find(suspect);
      gone = row == nullptr || row->entry.status == silo_status::dead;
      if (gone)
        return caf::none;
      auto d = vote_suspicion(t, suspect, voter, wall_clock_ms(), st.cfg.vote_expiry_ms);
      declared = d.declare_dead;
      voter_active = d.voter_active;
      if (!voter_active)
        return caf::none;
      return d.row;
    });
  if (!voter_active) {
    st.log.warning("no vote against " + suspect.to_string() + ": this silo (" + voter.to_string()
                   + ") is not Active in the membership table");
    return;
  }
  if (res.flag == caf::rt_error) {
    st.log.warning("vote against " + suspect.to_string()
                   + " not written: " + to_fault(res.err).render());
    return;
  }
  if (gone) {
    st.log.info(suspect.to_string() + " suspected for " + std::to_string(st.cfg.detection_ms)
                + " ms: no vote, it is Dead already");
    return;
  }
  // How long the table took (on etcd: a read and a transaction, then the view's read): the
  // part of the Dead declaration's delay that is not the detection bound
  // (docs/behaviour/membership.md#the-failure-detection-bound).
  auto took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count();
  auto written = " (written in " + std::to_string(took_ms) + " ms)";
  if (declared)
    st.log.warning(suspect.to_string() + " suspected for " + std::to_string(st.cfg.detection_ms)
                   + " ms: this vote declared it Dead" + written);
  else
    st.log.info(suspect.to_string() + " suspected for " + std::to_string(st.cfg.detection_ms)
                + " ms: voted" + written);
}

table_oracle_impl::behavior_type table_oracle(oracle_actor* self,
                                              std::shared_ptr<membership_table> table,
                                              membership_table_oracle_config cfg) {
  auto& st = self->state;
  st.table = std::move(table);
  st.cfg = cfg;
  st.log = log::get("membership");
  // The watch's thread must not keep this actor alive: a weak handle.
  auto weak = caf::actor_cast<caf::weak_actor_ptr>(self);
  st.watch = st.table->watch([weak] {
    if (auto strong = weak.lock())
      caf::anon_send(caf::actor_cast<caf::actor>(strong), mt_refresh_atom::value);
  });
  refresh(self);
  self->set_down_handler(
    [=](caf::down_msg& dm) { membership_detail::forget(self->state.subscribers, dm); });
  return {
    [=](mb_join_atom, membership_row& row) -> caf::result<uint64_t> {
      auto silo = row.silo;
      auto res = join(self, std::move(row));
      if (res.flag != caf::rt_error && !self->state.joined) {
        self->state.joined = silo;
        self->send(self, mt_alive_atom::value);
      }
      return res;
    },
    [=](mb_status_atom, const silo_address& s, silo_status to) -> caf::result<uint64_t> {
      return transition(self, s, to);
    },
    [=](mb_dead_atom, const silo_address& s) -> caf::result<uint64_t> {
      return declare_dead(self, s);
    },
    [=](mb_subscribe_atom, const caf::actor& sub) {
      self->state.subscribers.push_back(sub);
      self->monitor(sub);
      if (self->state.view.version > 0)
        membership_detail::tell(self, sub, mb_snapshot_atom::value, self->state.view);
    },
    [=](mb_get_atom) { return self->state.view; },
    [=](mt_refresh_atom) { refresh(self); },
    [=](mt_alive_atom) {
      auto& st = self->state;
      if (!st.joined)
        return;
      auto res = st.table->update_i_am_alive(*st.joined, wall_clock_ms());
      if (!res.ok() && res.status != table_status::not_found)
        st.log.warning("IAmAlive of " + st.joined->to_string() + " not written: " + res.detail);
      self->delayed_send(self, std::chrono::milliseconds(st.cfg.i_am_alive_interval_ms),
                         mt_alive_atom::value);
    },
    [=](sim_watch_atom, const silo_address& s, bool alive) {
      // A suspicion that starts becomes a vote if it lasts the detection delay.
      if (auto e = self->state.suspicions.report(s, alive))
        self->delayed_send(self, std::chrono::milliseconds(self->state.cfg.detection_ms),
                           mb_check_atom::value, s, e);
    },
    [=](mb_check_atom, const silo_address& s, uint64_t e) {
      if (self->state.suspicions.lasts(s, e))
        vote(self, s);
    },
  };
}

} // namespace

membership_oracle_actor spawn_membership_table_oracle(caf::actor_system& sys,
                                                      std::shared_ptr<membership_table> table,
                                                      membership_table_oracle_config cfg) {
  if (table->may_block())
    return sys.spawn<caf::detached>(table_oracle, std::move(table), cfg);
  return sys.spawn(table_oracle, std::move(table), cfg);
}

} // namespace cafmesh
