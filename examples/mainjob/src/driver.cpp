#include "cafmesh/mainjob/driver.hpp"

#include <algorithm>
#include <limits>

#include "cafmesh/routing/classify.hpp"

namespace cafmesh::mainjob {

mesh_port::~mesh_port() {
  // nop
}

bool mesh_port::observes_success(const planned_delivery&) const {
  return true;
}

bool mesh_port::kill_silo(const std::string&) {
  return false;
}

bool mesh_port::signal_silo_again(const std::string&) {
  return false;
}

namespace {

/// How long the ledger keeps a terminated delivery's record: the scenario's
/// `routing.outcome_dedup_window_ms`, within which the senders' outcome trackers still
/// attribute a later outcome to its delivery (outcome_tracker.hpp); beyond it they do not
/// either. docs/operations.md#memory
int64_t ledger_retain_ms(const scenario& s) {
  auto loaded = process_config(s, config::process_role::silo_host, "demo");
  return loaded.ok ? loaded.value.routing.outcome_dedup_window_ms
                   : config::routing_section{}.outcome_dedup_window_ms;
}

/// How many records the ledger keeps at once at the scenario's paced rate: the window, or the
/// whole run when it is shorter, and 30 s more of deliveries in flight (a request's deadline),
/// at most 2^21. docs/operations.md#memory
size_t ledger_expected_records(const scenario& s, int64_t retain_ms) {
  auto kept_s = std::min<int64_t>(retain_ms / 1000, s.duration_s) + 30;
  return static_cast<size_t>(std::min<int64_t>(s.rate_per_s * kept_s, int64_t{1} << 21));
}

} // namespace

demo_driver::demo_driver(const scenario& s, mesh_port& mesh, std::string mode,
                         std::string id_prefix)
  : demo_driver(s, mesh, std::move(mode),
                source_type{traffic_generator{s, std::move(id_prefix)}}) {
  // nop
}

demo_driver::demo_driver(const scenario& s, mesh_port& mesh, std::string mode,
                         trace_replay trace)
  : demo_driver(s, mesh, std::move(mode), source_type{std::move(trace)}) {
  // nop
}

demo_driver::demo_driver(const scenario& s, mesh_port& mesh, std::string mode,
                         source_type source)
  : s_(s),
    mesh_(mesh),
    mode_(std::move(mode)),
    source_(std::move(source)),
    ledger_(ledger_retain_ms(s)),
    step_(s.roll.order.empty() ? roll_step::done : roll_step::wait_stop),
    roll_due_ms_(s.roll.first_stop_at_ms) {
  for (size_t i = 0; i < s.faults.size(); ++i) {
    auto& f = s.faults[i];
    fault_steps_.push_back({f.at_ms, {i, true}});
    if (f.kind == "stall")
      fault_steps_.push_back({f.at_ms + f.for_ms, {i, false}});
    else if (f.kind == "kill" && f.restart_after_ms)
      fault_steps_.push_back({f.at_ms + *f.restart_after_ms, {i, false}});
  }
  for (auto& st : s.roll.steps) {
    step_state x;
    x.due_ms = st.at_ms;
    steps_.push_back(x);
  }
  std::stable_sort(fault_steps_.begin(), fault_steps_.end(),
                   [](auto& x, auto& y) { return x.first < y.first; });
  // Sized once, so that the table does not double its buckets while the window fills.
  ledger_.reserve(ledger_expected_records(s, ledger_.retain_ms()));
}

std::optional<int64_t> demo_driver::next_due_ms() const {
  return std::visit([](auto& x) { return x.next_due_ms(); }, source_);
}

std::vector<planned_delivery> demo_driver::take_due(int64_t now_ms) {
  return std::visit([&](auto& x) { return x.take_due(now_ms); }, source_);
}

std::vector<planned_delivery> demo_driver::on_outcome(const planned_delivery& d,
                                                      const observed_outcome& o,
                                                      int64_t now_ms) {
  return std::visit([&](auto& x) { return x.on_outcome(d, o, now_ms); }, source_);
}

const owner_streams& demo_driver::streams() const {
  return std::visit([](auto& x) -> const owner_streams& { return x.streams(); }, source_);
}

traffic_counters demo_driver::counters() const {
  auto c = std::visit([](auto& x) { return x.counters(); }, source_);
  c.withheld_frames = withheld_frames_;
  c.withheld_heartbeats = withheld_heartbeats_;
  c.withheld_requests = withheld_requests_;
  c.withheld_frames_carried = withheld_frames_carried_;
  return c;
}

void demo_driver::submit(planned_delivery d, int64_t now_ms) {
  ledger_.accept(d.accepted(now_ms));
  if (!mesh_.observes_success(d))
    unobservable_.insert(d.id);
  mesh_.submit(d);
  auto id = d.id;
  open_.emplace(std::move(id), std::move(d));
}

namespace {

/// A Full that repairs a frame NACKed `shutting_down` or `unavailable` (a roll's repair),
/// not one after an overload refusal or one standing for a frame shed during a back-off.
bool is_repair(const planned_delivery& d) {
  return d.attempt > 0 && d.overload_attempt == 0;
}

} // namespace

void demo_driver::defer(planned_delivery d) {
  if (d.kind == delivery_kind::frame && d.frame) {
    std::pair<std::string, std::string> key{d.target, d.stream};
    if (!owed_full_.insert(key).second) {
      ++withheld_frames_;
      if (is_repair(d))
        ++owed_carries_[key]; // its content rides on the owed Full
      return;
    }
    if (is_repair(d))
      overload_owed_.erase(key);
    else
      overload_owed_.insert(key);
  }
  auto t = d.t_ms;
  deferred_.emplace(t, std::move(d));
}

void demo_driver::offer(planned_delivery d, int64_t now_ms) {
  auto b = backoff_until_.find(d.sender);
  bool backing_off = b != backoff_until_.end() && b->second > now_ms;
  if (d.kind == delivery_kind::frame && d.frame) {
    if (owed_full_.count({d.target, d.stream}) > 0) {
      ++withheld_frames_; // the owed Full carries the stream as it is when it leaves
      // A frame its sender sheds while backing off after an overload refusal, or folded
      // into a Full owed after one, is not carried, even though that Full brings the
      // stream's state; one folded into a repair Full outside a back-off is, once that
      // Full lands (like a re-send).
      if (!backing_off && overload_owed_.count({d.target, d.stream}) == 0)
        ++owed_carries_[{d.target, d.stream}];
      return;
    }
    if (backing_off) {
      ++withheld_frames_;
      d.t_ms = b->second;
      defer(std::move(d)); // becomes the owed Full (its id was never offered)
      return;
    }
  } else if (backing_off) {
    if (d.kind == delivery_kind::request) {
      ++withheld_requests_;
      d.t_ms = b->second;
      defer(std::move(d));
    } else {
      ++withheld_heartbeats_;
    }
    return;
  }
  submit(std::move(d), now_ms);
}

void demo_driver::advance(int64_t now_ms) {
  for (auto& d : take_due(now_ms))
    offer(std::move(d), now_ms);
  while (!deferred_.empty() && deferred_.begin()->first <= now_ms) {
    auto d = std::move(deferred_.begin()->second);
    deferred_.erase(deferred_.begin());
    if (d.kind == delivery_kind::frame && d.frame) {
      owed_full_.erase({d.target, d.stream});
      overload_owed_.erase({d.target, d.stream});
      auto b = backoff_until_.find(d.sender);
      if (b != backoff_until_.end() && b->second > now_ms) {
        d.t_ms = b->second; // its sender backs off again: the Full waits for the end
        defer(std::move(d));
        continue;
      }
      // A fresh Full carries the stream as it is when it leaves, not when it was NACKed;
      // one whose receiver's mirror already equals the stream (version and state) is not sent.
      auto full = streams().full(d.sender, d.stream);
      auto m = mirrors_.find({d.target, d.stream});
      auto carries = owed_carries_.find({d.target, d.stream});
      uint64_t carried = 0;
      if (carries != owed_carries_.end()) {
        carried = carries->second;
        owed_carries_.erase(carries);
      }
      if (m != mirrors_.end() && m->second.second.version() == full.version
          && m->second.second.state() == full.state) {
        ++fulls_superseded_;
        // The receiver already has what this Full and the frames it carries would bring;
        // a repair Full stands for a NACKed frame, which counts as carried as well (a Full
        // that stands for a frame shed during a back-off does not).
        withheld_frames_carried_ += carried + (is_repair(d) ? 1 : 0);
        continue;
      }
      if (carried > 0)
        full_carries_[d.id] = carried;
      d.frame = std::move(full);
    }
    d.t_ms = now_ms;
    if (d.kind == delivery_kind::frame)
      submit(std::move(d), now_ms);
    else
      offer(std::move(d), now_ms);
  }
  // Faults and roll steps run in the order of their due times, also when the driver comes
  // late (a fault due before a stop is injected before it, one due after it after it).
  auto faults_until = [&](int64_t until_ms) {
    while (fault_pos_ < fault_steps_.size() && fault_steps_[fault_pos_].first <= until_ms)
      inject_next_fault(now_ms);
  };
  if (auto r = next_roll_due_ms(); r && *r <= now_ms)
    faults_until(*r);
  else
    faults_until(now_ms);
  roll_advance(now_ms);
  steps_advance(now_ms);
  faults_until(now_ms);
}

void demo_driver::inject_next_fault(int64_t now_ms) {
  auto [index, begin] = fault_steps_[fault_pos_++].second;
  auto& f = s_.faults[index];
  fault_mark mark{f.kind, f.silo, now_ms, true};
  if (f.kind == "kill") {
    if (!begin) {
      mark.kind = "restart";
      mesh_.restart_silo(f.silo);
    } else if (!mesh_.kill_silo(f.silo)) {
      mark.injected = false;
      ++faults_not_injected_;
    }
  } else if (f.kind == "second_signal") {
    if (!mesh_.signal_silo_again(f.silo)) {
      mark.injected = false;
      ++faults_not_injected_;
    }
  } else if (begin) {
    mesh_.stall_silo(f.silo, f.detected);
  } else {
    mark.kind = "unstall";
    mesh_.unstall_silo(f.silo);
  }
  fault_marks_.push_back(std::move(mark));
}

size_t demo_driver::begin_stop(const std::string& name, int64_t now_ms) {
  silo_stop_record rec;
  rec.name = name;
  rec.generation_before = generation_[name];
  rec.stop_started_ms = now_ms;
  stops_.push_back(rec);
  mesh_.stop_silo(name);
  return stops_.size() - 1;
}

void demo_driver::steps_advance(int64_t now_ms) {
  for (size_t i = 0; i < steps_.size(); ++i) {
    auto& x = steps_[i];
    if (x.due_ms > now_ms)
      continue;
    auto& name = s_.roll.steps[i].silo;
    if (x.step == roll_step::wait_stop) {
      x.status = roll_status{name, generation_[name], roll_phase::stopping, std::nullopt};
      x.step = roll_step::stopping;
      x.record = begin_stop(name, now_ms);
    } else if (x.step == roll_step::wait_restart) {
      x.status.phase = roll_phase::starting;
      x.status.stage.reset();
      x.step = roll_step::starting;
      mesh_.restart_silo(name);
    }
  }
}

void demo_driver::roll_advance(int64_t now_ms) {
  if (roll_due_ms_ > now_ms)
    return;
  switch (step_) {
    case roll_step::wait_stop:
    case roll_step::wait_next: {
      auto& name = s_.roll.order[roll_index_];
      roll_status_ = roll_status{name, generation_[name], roll_phase::stopping, std::nullopt};
      step_ = roll_step::stopping;
      begin_stop(name, now_ms);
      break;
    }
    case roll_step::wait_restart: {
      auto& name = s_.roll.order[roll_index_];
      roll_status_->phase = roll_phase::starting;
      roll_status_->stage.reset();
      step_ = roll_step::starting;
      mesh_.restart_silo(name);
      break;
    }
    default:
      break;
  }
}

std::optional<int64_t> demo_driver::next_wakeup_ms() const {
  std::optional<int64_t> out = next_due_ms();
  auto consider = [&](int64_t t) { out = out ? std::min(*out, t) : t; };
  if (fault_pos_ < fault_steps_.size())
    consider(fault_steps_[fault_pos_].first);
  if (!deferred_.empty())
    consider(deferred_.begin()->first);
  if (auto r = next_roll_due_ms())
    consider(*r);
  return out;
}

std::optional<int64_t> demo_driver::next_roll_due_ms() const {
  std::optional<int64_t> out;
  auto consider = [&](int64_t t) { out = out ? std::min(*out, t) : t; };
  if (step_ == roll_step::wait_stop || step_ == roll_step::wait_restart
      || step_ == roll_step::wait_next)
    consider(roll_due_ms_);
  for (auto& x : steps_)
    if (x.step == roll_step::wait_stop || x.step == roll_step::wait_restart)
      consider(x.due_ms);
  return out;
}

void demo_driver::terminal(const std::string& id, const observed_outcome& o, int64_t t_ms) {
  auto i = open_.find(id);
  if (i == open_.end())
    return; // a second outcome: the ledger counts it, nobody reacts twice
  auto d = std::move(i->second);
  open_.erase(i);
  unobservable_.erase(id);
  if (auto c = full_carries_.find(id); c != full_carries_.end()) {
    // A Full that lands carried its withheld frames; one that does not passes them on to
    // the next Full to the same receiver and stream, if a reaction sends one.
    if (o.kind == outcome_kind::landed)
      withheld_frames_carried_ += c->second;
    else
      owed_carries_[{d.target, d.stream}] += c->second;
    full_carries_.erase(c);
  }
  if (o.overloaded) {
    // The sender backs off for the refusal's hint (docs/behaviour/admission-control.md).
    auto until = t_ms + o.retry_after_ms.value_or(overload_default_retry_after_ms);
    auto& b = backoff_until_[d.sender];
    b = std::max(b, until);
  }
  for (auto& next : on_outcome(d, o, t_ms)) {
    if (next.t_ms > t_ms || next.kind == delivery_kind::frame)
      defer(std::move(next));
    else
      submit(std::move(next), t_ms);
  }
}

void demo_driver::count_in_stop() {
  auto out = [](roll_step x) {
    return x == roll_step::stopping || x == roll_step::wait_restart
           || x == roll_step::starting;
  };
  if (out(step_) && !stops_.empty())
    ++stops_.back().landed_while_out;
  for (auto& x : steps_)
    if (out(x.step))
      ++stops_[x.record].landed_while_out;
}

void demo_driver::on_landed(const std::string& id, int64_t t_ms) {
  ledger_.landed(id, t_ms);
  if (open_.count(id) > 0 && open_.at(id).kind != delivery_kind::request)
    count_in_stop();
  auto i = open_.find(id);
  if (i == open_.end())
    return;
  auto& d = i->second;
  if (d.kind == delivery_kind::frame && d.frame) {
    auto key = std::make_pair(d.target, d.stream);
    auto m = mirrors_.find(key);
    if (m == mirrors_.end())
      m = mirrors_
            .emplace(key, std::make_pair(d.sender,
                                         routing::delta_mirror{d.target + " " + d.stream}))
            .first;
    auto& mirror = m->second.second;
    if (mirror.on_frame(*d.frame) == routing::frame_outcome::stale_dropped)
      ledger_.stale_dropped(d.target, d.stream, d.frame->version, t_ms);
    mirror.take_requests(); // see the file comment
  }
  if (d.kind != delivery_kind::request)
    terminal(id, {outcome_kind::landed, routing::verdict::failed}, t_ms);
}

void demo_driver::on_response(const std::string& id, int64_t t_ms) {
  ledger_.response(id, t_ms);
  if (open_.count(id) > 0)
    count_in_stop();
  terminal(id, {outcome_kind::response, routing::verdict::failed}, t_ms);
}

void demo_driver::on_nack(const std::string& id, routing::verdict v, const std::string& text,
                          int64_t t_ms) {
  ledger_.nack(id, v, text, t_ms);
  terminal(id, overload_refusal(outcome_kind::nack, v, text), t_ms);
}

void demo_driver::on_deadline(const std::string& id, int64_t t_ms) {
  ledger_.deadline(id, t_ms);
  terminal(id, {outcome_kind::deadline, routing::verdict::failed}, t_ms);
}

void demo_driver::on_suppressed_failure(const std::string& id, routing::verdict v,
                                        const std::string& text, int64_t t_ms) {
  ledger_.suppressed_failure(id, v, text, t_ms);
  terminal(id, overload_refusal(outcome_kind::suppressed_failure, v, text), t_ms);
}

void demo_driver::on_duplicate_dropped(const std::string& id, int64_t t_ms) {
  ledger_.duplicate_dropped(id, t_ms);
}

void demo_driver::on_hub_event(const std::string& kind, const std::string& id,
                               routing::verdict v, const std::string& text,
                               bool answer_suppressed, int64_t t_ms) {
  static const std::string response_suffix = "-response";
  if (id.size() >= response_suffix.size()
      && id.compare(id.size() - response_suffix.size(), response_suffix.size(), response_suffix)
           == 0)
    return;
  if (kind == "received")
    on_landed(id, t_ms);
  else if (kind == "response")
    on_response(id, t_ms);
  else if (kind == "nack")
    on_nack(id, v, text, t_ms);
  else if (kind == "deadline")
    on_deadline(id, t_ms);
  else if (kind == "duplicate")
    on_duplicate_dropped(id, t_ms);
  else if (kind == "suppressed")
    on_suppressed_failure(id, v, text, t_ms);
  else if (kind == "entry_failed") {
    // An entry that refuses before accepting because a bound is reached answers verdict
    // `unavailable` with "overloaded" in its text; when the hub passes the refusal on
    // without its verdict, the text says which refusal it was.
    auto vv = v != routing::verdict::failed ? v
              : text.find("overloaded") != std::string::npos ? routing::verdict::unavailable
                                                             : routing::text_rule(text);
    if (answer_suppressed)
      on_suppressed_failure(id, vv, text, t_ms);
    else
      on_nack(id, vv, text, t_ms);
  }
}

void demo_driver::on_silo(const silo_event& e, int64_t t_ms) {
  generation_[e.silo] = std::max(generation_[e.silo], e.generation);
  for (size_t i = 0; i < steps_.size(); ++i) {
    auto& x = steps_[i];
    if (s_.roll.steps[i].silo != e.silo)
      continue;
    if (x.step == roll_step::stopping) {
      x.status.stage = e.stage;
      if (e.phase == roll_phase::stopped) {
        auto& rec = stops_[x.record];
        rec.stop_duration_ms = t_ms - rec.stop_started_ms;
        rec.quiescence_hold_ms = e.quiescence_hold_ms;
        x.status.phase = roll_phase::stopped;
        x.step = roll_step::wait_restart;
        x.due_ms = t_ms + s_.roll.steps[i].restart_delay_ms;
      }
    } else if (x.step == roll_step::starting) {
      x.status.stage = e.stage;
      if (e.phase == roll_phase::active
          && e.generation > stops_[x.record].generation_before) {
        stops_[x.record].generation_after = e.generation;
        stops_[x.record].active_again_ms = t_ms;
        x.step = roll_step::done;
      }
    }
  }
  if (step_ == roll_step::done || step_ == roll_step::wait_stop || !roll_status_
      || e.silo != s_.roll.order[roll_index_])
    return;
  if (step_ == roll_step::stopping) {
    roll_status_->stage = e.stage;
    if (e.phase == roll_phase::stopped) {
      auto& rec = stops_.back();
      rec.stop_duration_ms = t_ms - rec.stop_started_ms;
      rec.quiescence_hold_ms = e.quiescence_hold_ms;
      roll_status_->phase = roll_phase::stopped;
      step_ = roll_step::wait_restart;
      roll_due_ms_ = t_ms + s_.roll.restart_delay_ms;
    }
  } else if (step_ == roll_step::starting) {
    roll_status_->stage = e.stage;
    if (e.phase == roll_phase::active && e.generation > stops_.back().generation_before) {
      stops_.back().generation_after = e.generation;
      stops_.back().active_again_ms = t_ms;
      if (++roll_index_ < s_.roll.order.size()) {
        step_ = roll_step::wait_next;
        roll_due_ms_ = t_ms + s_.roll.interval_ms;
      } else {
        step_ = roll_step::done;
      }
      roll_status_.reset();
    }
  }
}

bool demo_driver::traffic_done() const {
  return !next_due_ms() && deferred_.empty() && step_ == roll_step::done
         && fault_pos_ == fault_steps_.size()
         && std::all_of(steps_.begin(), steps_.end(),
                        [](const step_state& x) { return x.step == roll_step::done; });
}

bool demo_driver::quiescent() const {
  return traffic_done() && ledger_.in_flight() == unobservable_.size();
}

void demo_driver::mark_unconfirmed(int64_t now_ms) {
  auto ids = std::move(unobservable_);
  unobservable_.clear();
  for (auto& id : ids) {
    ledger_.unconfirmed(id, now_ms);
    open_.erase(id);
  }
}

progress_sample demo_driver::progress(int64_t now_ms) {
  meter_.add(now_ms, ledger_.landed_count());
  progress_sample p;
  p.elapsed_ms = now_ms;
  p.rate_per_s = meter_.per_second();
  p.in_flight = ledger_.in_flight();
  p.delivered = ledger_.landed_count();
  p.nacked = ledger_.nacked_counts();
  p.roll = roll_status_;
  if (!p.roll)
    for (auto& x : steps_)
      if (x.step != roll_step::wait_stop && x.step != roll_step::done) {
        p.roll = x.status;
        break;
      }
  return p;
}

uint64_t demo_driver::mirrors_diverged() const {
  uint64_t n = 0;
  for (auto& [key, entry] : mirrors_) {
    auto& [owner, m] = entry;
    auto& stream = key.second;
    if (m.version() != streams().version(owner, stream)
        || m.state() != streams().state(owner, stream))
      ++n;
  }
  return n;
}

report demo_driver::finish() {
  report_input in;
  in.scenario_name = s_.name;
  in.seed = s_.seed;
  in.duration_s = s_.duration_s;
  in.rate_per_s = s_.rate_per_s;
  in.mode = mode_;
  in.ledger = ledger_.summarize();
  in.traffic = counters();
  in.silos = stops_;
  in.expect = s_.expect;
  // A replay steps a stream's clock per trace line, so two targets of one stream each see
  // every other version: their mirrors cannot end equal to the owner (not measured).
  if (std::holds_alternative<traffic_generator>(source_))
    in.mirrors_diverged = mirrors_diverged();
  in.entries = entries_;
  in.faults_not_injected = faults_not_injected_;
  in.faults = fault_marks_;
  in.series = build_timeline(ledger_, s_.duration_s);
  in.has_faults_to_inject = std::any_of(s_.faults.begin(), s_.faults.end(), [](auto& f) {
    return f.kind == "kill" || f.kind == "second_signal";
  });
  return make_report(std::move(in));
}

} // namespace cafmesh::mainjob
