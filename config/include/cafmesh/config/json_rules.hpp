#pragma once

/// @file
/// Rules for strict JSON validation shared by the configuration loader
/// (examples/config/README.md#keys) and the main job's scenario and trace readers: every problem is
/// one line `{pointer}: {what}` with an RFC 6901 JSON pointer, in document order. The texts:
/// - `{ptr}: expected {what}, got {found}` (`{found}`: compact JSON cut to 60 characters
///   ending in `...`, or `nothing` for a missing required key);
/// - `{ptr}: unknown key, did you mean "{known}"?` (at most two edits away), else
///   `{ptr}: unknown key, known keys: {k1}, {k2}, ...`;
/// - `{ptr}: duplicate key`.

#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cafmesh::config::json_rules {

using json = nlohmann::ordered_json;
using error_list = std::vector<std::string>;

constexpr int64_t int64_max = std::numeric_limits<int64_t>::max();

/// One RFC 6901 reference token: `~` -> `~0`, `/` -> `~1`.
std::string escape(const std::string& token);

/// The compact JSON of a found value, cut to 60 characters.
std::string shown(const json& v);

/// Appends `{ptr}: expected {what}, got {got}`.
void refuse(error_list& errs, const std::string& ptr, const std::string& what,
            const std::string& got);

/// Appends the unknown-key line for `name` at `ptr` given the `known` keys of that level.
void refuse_unknown(error_list& errs, const std::string& ptr, const std::string& name,
                    const std::vector<std::string>& known);

/// True for an integer (signed or unsigned JSON number without fraction) in [min, max].
bool in_range(const json& v, int64_t min, int64_t max);

/// `an integer >= min` or `an integer from min to max`.
std::string integer_what(int64_t min, int64_t max);

/// Checks an integer in [min, max] at `ptr`; stores it into `out` when valid.
bool read_integer(const json& v, const std::string& ptr, int64_t min, int64_t max, int64_t& out,
                  error_list& errs);

/// Checks a string (non-empty if `non_empty`) at `ptr`; stores it into `out` when valid.
bool read_string(const json& v, const std::string& ptr, bool non_empty, std::string& out,
                 error_list& errs);

/// Parser callback recording the pointers of object keys given twice (nlohmann keeps the last
/// one silently). Objects inside arrays are tracked with their element index.
class duplicate_finder {
public:
  explicit duplicate_finder(std::set<std::string>& found) : found_(&found) {}

  bool operator()(int depth, json::parse_event_t event, json& parsed);

private:
  struct frame {
    bool object = true;
    std::string key;
    int64_t index = -1;
    std::set<std::string> keys;
  };

  void element_begins(size_t depth);
  std::string pointer() const;

  std::set<std::string>* found_;
  std::vector<frame> frames_;
};

/// Parses `text` into `doc`; a parse error becomes
/// `{ptr}: expected valid JSON, got a parse error at line L, column C: {parser text}`, a
/// number no double holds `{ptr}: expected JSON numbers within the range of a double, got
/// number overflow parsing '1e999'`.
bool parse_json(const std::string& text, const std::string& ptr, json& doc,
                std::set<std::string>& duplicates, error_list& errs);

/// One key of an object: `read` validates (and stores) the value found at `ptr`.
struct field {
  std::string name;
  bool required;
  std::string what; ///< described for a missing required key
  std::function<void(const json& v, const std::string& ptr)> read;
};

/// Reads an object at `ptr`: refuses a non-object, then handles its keys in document order
/// (duplicates, unknown keys, each known key's `read`), then reports missing required keys.
/// Answers false if `v` is not an object.
bool read_object(const json& v, const std::string& ptr, const std::vector<field>& fields,
                 const std::set<std::string>& duplicates, error_list& errs);

} // namespace cafmesh::config::json_rules
