#include "cafmesh/actors/etcd_membership_table.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include <curl/curl.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

namespace cafmesh {

namespace {

using json = nlohmann::json;

// -- etcd's JSON encoding ---------------------------------------------------------------------

/// Keys and values travel base64-encoded (standard alphabet, padded).
std::string b64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  auto n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                           reinterpret_cast<const unsigned char*>(bytes.data()),
                           static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

/// Decodes `text`; false if it is not base64.
bool unb64(const std::string& text, std::string& out) {
  if (text.size() % 4 != 0)
    return false;
  std::string bytes(3 * (text.size() / 4), '\0');
  auto n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(bytes.data()),
                           reinterpret_cast<const unsigned char*>(text.data()),
                           static_cast<int>(text.size()));
  if (n < 0)
    return false;
  size_t padding = 0;
  if (!text.empty() && text.back() == '=')
    padding = text.size() >= 2 && text[text.size() - 2] == '=' ? 2 : 1;
  bytes.resize(static_cast<size_t>(n) - padding);
  out = std::move(bytes);
  return true;
}

/// The end of the key range of every key that starts with `prefix`: the prefix with its
/// last byte incremented (etcd's `range_end` convention).
std::string range_end_of(std::string prefix) {
  while (!prefix.empty()) {
    auto& last = prefix.back();
    if (static_cast<unsigned char>(last) < 0xff) {
      ++last;
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

/// etcd renders 64-bit integers as JSON strings and omits zero values.
uint64_t u64_field(const json& j, const char* name) {
  auto i = j.find(name);
  if (i == j.end())
    return 0;
  if (i->is_string())
    return std::stoull(i->get<std::string>());
  return i->get<uint64_t>();
}

bool bool_field(const json& j, const char* name) {
  auto i = j.find(name);
  return i != j.end() && i->is_boolean() && i->get<bool>();
}

json compare_value(const std::string& key, const std::string& value) {
  return {{"key", b64(key)}, {"target", "VALUE"}, {"result", "EQUAL"}, {"value", b64(value)}};
}

json compare_absent(const std::string& key) {
  return {{"key", b64(key)}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}};
}

json compare_present(const std::string& key) {
  return {{"key", b64(key)}, {"target", "CREATE"}, {"result", "GREATER"}, {"create_revision", "0"}};
}

json compare_mod(const std::string& key, uint64_t revision) {
  return {{"key", b64(key)},
          {"target", "MOD"},
          {"result", "EQUAL"},
          {"mod_revision", std::to_string(revision)}};
}

json put(const std::string& key, const std::string& value) {
  return {{"request_put", {{"key", b64(key)}, {"value", b64(value)}}}};
}

json delete_key(const std::string& key) {
  return {{"request_delete_range", {{"key", b64(key)}}}};
}

json range_key(const std::string& key) {
  return {{"request_range", {{"key", b64(key)}}}};
}

// -- HTTP -----------------------------------------------------------------------------------

size_t append_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

void init_curl_once() {
  static std::once_flag flag;
  std::call_once(flag, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

} // namespace

// -- the table ------------------------------------------------------------------------------

struct etcd_membership_table::impl {
  etcd_table_options opts;
  std::atomic<uint64_t> calls{0};
  /// The endpoint that answered last; calls start there.
  std::atomic<size_t> preferred{0};

  explicit impl(etcd_table_options options) : opts(std::move(options)) { init_curl_once(); }

  std::string key(const std::string& suffix) const { return opts.prefix + suffix; }
  std::string version_key() const { return key("version"); }
  std::string row_key(const silo_address& s) const { return key("row/" + s.to_string()); }
  std::string alive_key(const silo_address& s) const { return key("alive/" + s.to_string()); }

  /// POSTs `body` to `path` on one endpoint after the other; `out` is the JSON answer.
  table_outcome call(const char* path, const json& body, json& out) {
    if (opts.endpoints.empty())
      return table_outcome::failure(table_status::unavailable, "no etcd endpoint configured");
    auto text = body.dump();
    std::string errors;
    auto n = opts.endpoints.size();
    auto first = preferred.load() % n;
    for (size_t k = 0; k < n; ++k) {
      auto idx = (first + k) % n;
      const auto& endpoint = opts.endpoints[idx];
      std::string response;
      long code = 0;
      auto err = post(endpoint + path, text, response, code);
      ++calls;
      if (!err.empty()) {
        errors += (errors.empty() ? "" : "; ") + endpoint + ": " + err;
        continue;
      }
      if (code >= 500) {
        // This member cannot serve now (no leader, an election, a timeout): the next may.
        errors += (errors.empty() ? "" : "; ") + endpoint + ": HTTP " + std::to_string(code) + " "
                  + response;
        continue;
      }
      if (code != 200) {
        // etcd refused the request itself: its answer is the same on every member.
        return table_outcome::failure(table_status::malformed, endpoint + path + " answered HTTP "
                                                                 + std::to_string(code) + ": "
                                                                 + response);
      }
      try {
        out = json::parse(response);
      } catch (const std::exception& e) {
        return table_outcome::failure(table_status::malformed,
                                      endpoint + path + " answered no JSON: " + e.what());
      }
      preferred = idx;
      return table_outcome::success();
    }
    return table_outcome::failure(table_status::unavailable,
                                  "no etcd endpoint answered (" + errors + ")");
  }

  /// One blocking POST; an empty result means an HTTP answer arrived.
  std::string post(const std::string& url, const std::string& body, std::string& response,
                   long& code) {
    std::unique_ptr<CURL, void (*)(CURL*)> h{curl_easy_init(), curl_easy_cleanup};
    if (!h)
      return "curl_easy_init failed";
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    curl_easy_setopt(h.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h.get(), CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(opts.request_timeout_ms));
    curl_easy_setopt(h.get(), CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(opts.request_timeout_ms));
    curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &response);
    auto rc = curl_easy_perform(h.get());
    curl_slist_free_all(headers);
    if (rc != CURLE_OK)
      return curl_easy_strerror(rc);
    curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &code);
    return {};
  }

  /// Runs a transaction; `succeeded` tells whether its comparisons held.
  table_outcome txn(const json& compare, const json& success, const json& failure, bool& succeeded,
                    json& answer) {
    json body = {{"compare", compare}, {"success", success}};
    if (!failure.empty())
      body["failure"] = failure;
    auto res = call("/v3/kv/txn", body, answer);
    if (res.ok())
      succeeded = bool_field(answer, "succeeded");
    return res;
  }

  table_outcome write_row(const table_row& row, uint64_t table_version, bool insert) {
    auto rkey = row_key(row.entry.silo);
    auto vkey = version_key();
    json compare = json::array();
    compare.push_back(table_version == 0 ? compare_absent(vkey)
                                         : compare_value(vkey, std::to_string(table_version)));
    if (insert) {
      compare.push_back(compare_absent(rkey));
    } else {
      compare.push_back(compare_present(rkey)); // an absent key's mod_revision is 0 too
      compare.push_back(compare_mod(rkey, row.row_version));
    }
    json success
      = json::array({put(vkey, std::to_string(table_version + 1)), put(rkey, row_to_json(row))});
    json failure = insert ? json::array() : json::array({range_key(rkey)});
    bool succeeded = false;
    json answer;
    auto res = txn(compare, success, failure, succeeded, answer);
    if (!res.ok())
      return res;
    if (succeeded)
      return table_outcome::success();
    if (!insert) {
      // The failure branch read the row: absent means there is nothing to update.
      const auto& responses = answer.value("responses", json::array());
      bool present = false;
      if (!responses.empty()) {
        const auto& range = responses.at(0).value("response_range", json::object());
        present = !range.value("kvs", json::array()).empty();
      }
      if (!present)
        return table_outcome::failure(table_status::not_found,
                                      row.entry.silo.to_string() + " has no row");
    }
    return table_outcome::failure(table_status::conflict,
                                  "the table left version " + std::to_string(table_version)
                                    + " or the row of " + row.entry.silo.to_string()
                                    + " changed since it was read");
  }

  table_outcome read_all(table_snapshot& out, uint64_t* revision = nullptr) {
    json answer;
    auto res = call("/v3/kv/range",
                    {{"key", b64(opts.prefix)}, {"range_end", b64(range_end_of(opts.prefix))}},
                    answer);
    if (!res.ok())
      return res;
    try {
      table_snapshot result;
      std::map<std::string, int64_t> alive;
      for (const auto& kv : answer.value("kvs", json::array())) {
        std::string k, v;
        if (!unb64(kv.at("key").get<std::string>(), k)
            || !unb64(kv.value("value", std::string{}), v))
          return table_outcome::failure(table_status::malformed, "a key or value is no base64");
        auto suffix = k.substr(opts.prefix.size());
        if (suffix == "version") {
          result.version = std::stoull(v);
        } else if (suffix.rfind("row/", 0) == 0) {
          table_row row;
          auto parsed = row_from_json(v, row);
          if (!parsed.ok())
            return table_outcome::failure(table_status::malformed, k + ": " + parsed.detail);
          row.row_version = u64_field(kv, "mod_revision");
          result.rows.push_back(std::move(row));
        } else if (suffix.rfind("alive/", 0) == 0) {
          alive.emplace(suffix.substr(6), std::stoll(v));
        }
        // Other keys under the prefix belong to nobody we know: ignored.
      }
      std::sort(result.rows.begin(), result.rows.end(),
                [](const table_row& x, const table_row& y) { return x.entry.silo < y.entry.silo; });
      for (auto& row : result.rows) {
        auto i = alive.find(row.entry.silo.to_string());
        if (i != alive.end())
          row.i_am_alive_ms = i->second;
      }
      if (revision != nullptr)
        *revision = u64_field(answer.value("header", json::object()), "revision");
      out = std::move(result);
      return table_outcome::success();
    } catch (const std::exception& e) {
      return table_outcome::failure(table_status::malformed,
                                    std::string{"unreadable table: "} + e.what());
    }
  }
};

// -- the watch ------------------------------------------------------------------------------

/// One thread that keeps a watch stream on the rows open, from one endpoint after the
/// other, resuming from the last revision it saw.
class etcd_membership_table::watch_stream final : public table_watch {
public:
  watch_stream(std::shared_ptr<etcd_membership_table::impl> table,
               membership_table::change_callback on_change, uint64_t from_revision)
    : table_(std::move(table)), on_change_(std::move(on_change)), next_(from_revision) {
    multi_ = curl_multi_init();
    thread_ = std::thread{[this] { run(); }};
  }

  ~watch_stream() override {
    stop_ = true;
    curl_multi_wakeup(multi_);
    thread_.join();
    curl_multi_cleanup(multi_);
  }

  /// Waits until the first stream confirmed the watch (or `timeout` passed).
  /// A watch not confirmed by then notifies once it is: changes in between may be missed.
  bool wait_created(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> guard{mtx_};
    if (cv_.wait_for(guard, timeout, [this] { return created_; }))
      return true;
    missed_ = true;
    return false;
  }

private:
  static size_t on_data(char* data, size_t size, size_t count, void* user) {
    static_cast<watch_stream*>(user)->feed(data, size * count);
    return size * count;
  }

  /// Splits the stream into its newline-separated JSON messages.
  void feed(const char* data, size_t n) {
    buffer_.append(data, n);
    size_t pos;
    while ((pos = buffer_.find('\n')) != std::string::npos) {
      auto line = buffer_.substr(0, pos);
      buffer_.erase(0, pos + 1);
      if (!line.empty())
        handle(line);
    }
  }

  void mark_missed() {
    std::lock_guard<std::mutex> guard{mtx_};
    missed_ = true;
  }

  void handle(const std::string& line) {
    json msg;
    try {
      msg = json::parse(line);
    } catch (const std::exception&) {
      return; // not a message: the stream is re-opened when it ends
    }
    const auto& result = msg.value("result", json::object());
    if (bool_field(result, "canceled")) {
      // Compacted past our revision, or cancelled by the server: start over from now,
      // and tell the reader to read again.
      next_ = 0;
      mark_missed();
      return;
    }
    if (bool_field(result, "created")) {
      auto header_rev = u64_field(result.value("header", json::object()), "revision");
      if (next_ == 0)
        next_ = header_rev + 1;
      failed_in_round_ = 0;
      bool notify = false;
      {
        std::lock_guard<std::mutex> guard{mtx_};
        notify = missed_;
        missed_ = false;
        created_ = true;
      }
      cv_.notify_all();
      if (notify)
        on_change_(); // a re-opened stream: changes in between may have been missed
    }
    const auto& events = result.value("events", json::array());
    if (!events.empty()) {
      for (const auto& ev : events) {
        auto rev = u64_field(ev.value("kv", json::object()), "mod_revision");
        if (rev >= next_)
          next_ = rev + 1;
      }
      on_change_();
    }
  }

  void run() {
    const auto& opts = table_->opts;
    auto rows_prefix = opts.prefix + "row/";
    size_t idx = table_->preferred.load();
    while (!stop_) {
      if (opts.endpoints.empty())
        return;
      const auto& endpoint = opts.endpoints[idx % opts.endpoints.size()];
      json create = {{"key", b64(rows_prefix)}, {"range_end", b64(range_end_of(rows_prefix))}};
      if (next_ > 0)
        create["start_revision"] = std::to_string(next_);
      auto body = json{{"create_request", create}}.dump();
      buffer_.clear();
      stream(endpoint + "/v3/watch", body);
      ++table_->calls;
      if (stop_)
        return;
      mark_missed();
      ++idx;
      // The next endpoint at once; after a whole round of failed ones a pause (a stop wakes
      // it at once).
      if (++failed_in_round_ >= opts.endpoints.size()) {
        failed_in_round_ = 0;
        curl_multi_poll(multi_, nullptr, 0, static_cast<int>(opts.watch_retry_ms), nullptr);
      }
    }
  }

  /// Runs one watch stream until it ends or the watch stops.
  void stream(const std::string& url, const std::string& body) {
    CURL* h = curl_easy_init();
    if (h == nullptr)
      return;
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(table_->opts.request_timeout_ms));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, this);
    curl_multi_add_handle(multi_, h);
    int running = 1;
    while (!stop_ && running > 0) {
      if (curl_multi_perform(multi_, &running) != CURLM_OK)
        break;
      if (running > 0)
        curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
    }
    curl_multi_remove_handle(multi_, h);
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
  }

  std::shared_ptr<etcd_membership_table::impl> table_;
  membership_table::change_callback on_change_;
  uint64_t next_;       ///< the revision the next stream starts at (0: from now)
  bool missed_ = false; ///< guarded by mtx_: notify when the next stream is created
  std::string buffer_;
  size_t failed_in_round_ = 0; ///< streams ended in a row without a confirmed watch
  std::atomic<bool> stop_{false};
  CURLM* multi_ = nullptr;
  std::mutex mtx_;
  std::condition_variable cv_;
  bool created_ = false;
  std::thread thread_;
};

etcd_membership_table::etcd_membership_table(etcd_table_options options)
  : impl_(std::make_shared<impl>(std::move(options))) {
  // nop
}

etcd_membership_table::~etcd_membership_table() = default;

uint64_t etcd_membership_table::calls() const {
  return impl_->calls.load();
}

table_outcome etcd_membership_table::read_all(table_snapshot& out) {
  return impl_->read_all(out);
}

table_outcome etcd_membership_table::insert_row(const table_row& row, uint64_t table_version) {
  return impl_->write_row(row, table_version, true);
}

table_outcome etcd_membership_table::update_row(const table_row& row, uint64_t table_version) {
  return impl_->write_row(row, table_version, false);
}

table_outcome etcd_membership_table::update_i_am_alive(const silo_address& silo, int64_t at_ms) {
  bool succeeded = false;
  json answer;
  auto res = impl_->txn(json::array({compare_present(impl_->row_key(silo))}),
                        json::array({put(impl_->alive_key(silo), std::to_string(at_ms))}),
                        json::array(), succeeded, answer);
  if (!res.ok())
    return res;
  if (!succeeded)
    return table_outcome::failure(table_status::not_found, silo.to_string() + " has no row");
  return table_outcome::success();
}

table_outcome etcd_membership_table::cleanup_dead(int64_t before_ms, size_t& removed) {
  removed = 0;
  table_snapshot table;
  auto res = impl_->read_all(table);
  if (!res.ok())
    return res;
  for (const auto& row : table.rows) {
    if (row.entry.status != silo_status::dead || row.start_time_ms >= before_ms)
      continue;
    auto rkey = impl_->row_key(row.entry.silo);
    bool succeeded = false;
    json answer;
    res = impl_->txn(json::array({compare_mod(rkey, row.row_version)}),
                     json::array({delete_key(rkey), delete_key(impl_->alive_key(row.entry.silo))}),
                     json::array(), succeeded, answer);
    if (!res.ok())
      return res;
    if (succeeded)
      ++removed;
  }
  return table_outcome::success();
}

std::unique_ptr<table_watch> etcd_membership_table::watch(change_callback on_change) {
  auto w = std::make_unique<watch_stream>(impl_, std::move(on_change), 0);
  // Every change after this returns reaches the callback: wait for the stream to be
  // confirmed (bounded; a watch not confirmed yet notifies once it is).
  w->wait_created(std::chrono::milliseconds{impl_->opts.request_timeout_ms});
  return w;
}

} // namespace cafmesh
