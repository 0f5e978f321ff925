#include "cafmesh/actors/membership_table.hpp"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

namespace cafmesh {

// -- vocabulary -----------------------------------------------------------------------------

const char* to_string(table_status x) {
  switch (x) {
    case table_status::ok: return "ok";
    case table_status::conflict: return "conflict";
    case table_status::not_found: return "not_found";
    case table_status::unavailable: return "unavailable";
    case table_status::malformed: return "malformed";
  }
  return "table_status(?)";
}

const table_row* table_snapshot::find(const silo_address& s) const {
  for (const auto& r : rows)
    if (r.entry.silo == s)
      return &r;
  return nullptr;
}

membership_snapshot table_snapshot::view() const {
  membership_snapshot out;
  out.version = version;
  out.rows.reserve(rows.size());
  for (const auto& r : rows)
    out.upsert(r.entry);
  return out;
}

table_watch::~table_watch() = default;

membership_table::~membership_table() = default;

bool membership_table::may_block() const {
  return true;
}

// -- in-process provider --------------------------------------------------------------------

/// The callbacks of the live watches, shared with their registrations so that a watch
/// outliving its table (or the reverse) stays safe.
struct in_process_membership_table::watchers {
  std::mutex mtx;
  uint64_t next_id = 1;
  std::map<uint64_t, change_callback> callbacks;
};

class in_process_membership_table::registration final : public table_watch {
public:
  registration(std::shared_ptr<watchers> ws, uint64_t id) : ws_(std::move(ws)), id_(id) {
    // nop
  }

  ~registration() override {
    std::lock_guard<std::mutex> guard{ws_->mtx};
    ws_->callbacks.erase(id_);
  }

private:
  std::shared_ptr<watchers> ws_;
  uint64_t id_;
};

in_process_membership_table::in_process_membership_table()
  : watchers_(std::make_shared<watchers>()) {
  // nop
}

in_process_membership_table::~in_process_membership_table() = default;

table_outcome in_process_membership_table::read_all(table_snapshot& out) {
  std::lock_guard<std::mutex> guard{mtx_};
  table_snapshot result;
  result.version = version_;
  result.rows.reserve(rows_.size());
  for (const auto& kvp : rows_)
    result.rows.push_back(kvp.second);
  out = std::move(result);
  return table_outcome::success();
}

table_outcome in_process_membership_table::insert_row(const table_row& row,
                                                      uint64_t table_version) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto key = row.entry.silo.to_string();
    if (table_version != version_)
      return table_outcome::failure(table_status::conflict, "the table is at version "
                                                              + std::to_string(version_) + ", not "
                                                              + std::to_string(table_version));
    if (rows_.count(key) != 0)
      return table_outcome::failure(table_status::conflict, key + " already has a row");
    auto stored = row;
    stored.i_am_alive_ms = 0;
    stored.row_version = next_row_version_++;
    rows_.emplace(std::move(key), std::move(stored));
    ++version_;
  }
  notify();
  return table_outcome::success();
}

table_outcome in_process_membership_table::update_row(const table_row& row,
                                                      uint64_t table_version) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto key = row.entry.silo.to_string();
    auto i = rows_.find(key);
    if (i == rows_.end())
      return table_outcome::failure(table_status::not_found, key + " has no row");
    if (table_version != version_)
      return table_outcome::failure(table_status::conflict, "the table is at version "
                                                              + std::to_string(version_) + ", not "
                                                              + std::to_string(table_version));
    if (row.row_version != i->second.row_version)
      return table_outcome::failure(table_status::conflict,
                                    "the row of " + key + " is at version "
                                      + std::to_string(i->second.row_version) + ", not "
                                      + std::to_string(row.row_version));
    auto alive = i->second.i_am_alive_ms;
    i->second = row;
    i->second.i_am_alive_ms = alive;
    i->second.row_version = next_row_version_++;
    ++version_;
  }
  notify();
  return table_outcome::success();
}

table_outcome in_process_membership_table::update_i_am_alive(const silo_address& silo,
                                                             int64_t at_ms) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = rows_.find(silo.to_string());
  if (i == rows_.end())
    return table_outcome::failure(table_status::not_found, silo.to_string() + " has no row");
  i->second.i_am_alive_ms = at_ms;
  return table_outcome::success();
}

table_outcome in_process_membership_table::cleanup_dead(int64_t before_ms, size_t& removed) {
  removed = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto i = rows_.begin(); i != rows_.end();) {
      const auto& r = i->second;
      if (r.entry.status == silo_status::dead && r.start_time_ms < before_ms) {
        i = rows_.erase(i);
        ++removed;
      } else {
        ++i;
      }
    }
  }
  if (removed > 0)
    notify();
  return table_outcome::success();
}

std::unique_ptr<table_watch> in_process_membership_table::watch(change_callback on_change) {
  std::lock_guard<std::mutex> guard{watchers_->mtx};
  auto id = watchers_->next_id++;
  watchers_->callbacks.emplace(id, std::move(on_change));
  return std::make_unique<registration>(watchers_, id);
}

bool in_process_membership_table::may_block() const {
  return false;
}

void in_process_membership_table::notify() {
  std::vector<change_callback> callbacks;
  {
    std::lock_guard<std::mutex> guard{watchers_->mtx};
    for (const auto& kvp : watchers_->callbacks)
      callbacks.push_back(kvp.second);
  }
  for (auto& f : callbacks)
    f();
}

// -- rows as text ---------------------------------------------------------------------------

namespace {

using json = nlohmann::json;

json address_to_json(const silo_address& s) {
  return {{"host", s.host}, {"port", s.port}, {"generation", s.generation}};
}

silo_address address_from_json(const json& j) {
  silo_address s;
  s.host = j.at("host").get<std::string>();
  auto port = j.at("port").get<int64_t>();
  if (port < 0 || port > 65535)
    throw std::out_of_range("port " + std::to_string(port) + " is not in 0..65535");
  s.port = static_cast<uint16_t>(port);
  s.generation = j.at("generation").get<uint64_t>();
  return s;
}

silo_status status_from_text(const std::string& text) {
  for (auto s : {silo_status::joining, silo_status::active, silo_status::shutting_down,
                 silo_status::stopping, silo_status::dead})
    if (to_string(s) == text)
      return s;
  throw std::invalid_argument("unknown status \"" + text + "\"");
}

placement_strategy strategy_from_text(const std::string& text) {
  for (auto s : {placement_strategy::stateless_worker, placement_strategy::prefer_local,
                 placement_strategy::random})
    if (to_string(s) == text)
      return s;
  throw std::invalid_argument("unknown placement strategy \"" + text + "\"");
}

} // namespace

std::string row_to_json(const table_row& row) {
  json manifest = json::array();
  for (const auto& t : row.entry.manifest)
    manifest.push_back({{"type", t.type},
                        {"strategy", to_string(t.strategy)},
                        {"interface_version", t.interface_version}});
  json votes = json::array();
  for (const auto& v : row.suspicions)
    votes.push_back({{"by", address_to_json(v.by)}, {"at_ms", v.at_ms}});
  json j = {{"silo", address_to_json(row.entry.silo)},
            {"status", to_string(row.entry.status)},
            {"gateway", row.entry.gateway},
            {"start_time_ms", row.start_time_ms},
            {"manifest", std::move(manifest)},
            {"suspicions", std::move(votes)}};
  return j.dump();
}

table_outcome row_from_json(const std::string& text, table_row& out) {
  try {
    auto j = json::parse(text);
    table_row row;
    row.entry.silo = address_from_json(j.at("silo"));
    row.entry.status = status_from_text(j.at("status").get<std::string>());
    row.entry.gateway = j.at("gateway").get<bool>();
    row.start_time_ms = j.at("start_time_ms").get<int64_t>();
    for (const auto& t : j.at("manifest")) {
      grain_type_info info;
      info.type = t.at("type").get<std::string>();
      info.strategy = strategy_from_text(t.at("strategy").get<std::string>());
      auto version = t.at("interface_version").get<int64_t>();
      if (version < 0 || version > 0xffffffffLL)
        throw std::out_of_range("interface version " + std::to_string(version)
                                + " does not fit 32 bits");
      info.interface_version = static_cast<uint32_t>(version);
      row.entry.manifest.push_back(std::move(info));
    }
    for (const auto& v : j.at("suspicions"))
      row.suspicions.push_back({address_from_json(v.at("by")), v.at("at_ms").get<int64_t>()});
    out = std::move(row);
    return table_outcome::success();
  } catch (const std::exception& e) {
    return table_outcome::failure(table_status::malformed,
                                  std::string{"unreadable membership row: "} + e.what());
  }
}

// -- failure detection ----------------------------------------------------------------------

size_t votes_to_declare_dead(size_t active) {
  return std::max<size_t>(1, std::min<size_t>(2, (active + 1) / 2));
}

suspicion_decision vote_suspicion(const table_snapshot& table, const silo_address& suspect,
                                  const silo_address& voter, int64_t now_ms,
                                  int64_t vote_expiry_ms) {
  suspicion_decision result;
  const auto* row = table.find(suspect);
  if (row == nullptr)
    return result;
  result.row = *row;
  if (row->entry.status == silo_status::dead)
    return result;
  auto is_active = [&](const silo_address& s) {
    const auto* r = table.find(s);
    return r != nullptr && r->entry.status == silo_status::active;
  };
  if (!is_active(voter)) {
    result.voter_active = false;
    return result;
  }
  auto& votes = result.row.suspicions;
  votes.erase(std::remove_if(votes.begin(), votes.end(),
                             [&](const suspicion_vote& v) {
                               return v.by == voter || now_ms - v.at_ms > vote_expiry_ms
                                      || !is_active(v.by);
                             }),
              votes.end());
  votes.push_back({voter, now_ms});
  size_t active = 0;
  for (const auto& r : table.rows)
    if (r.entry.status == silo_status::active)
      ++active;
  if (votes.size() >= votes_to_declare_dead(active)) {
    result.declare_dead = true;
    result.row.entry.status = silo_status::dead;
  }
  return result;
}

} // namespace cafmesh
