#include "cafmesh/config/json_rules.hpp"
#include "cafmesh/config/text.hpp"

#include "cafmesh/config/json_preview.hpp"

#include <algorithm>

namespace cafmesh::config::json_rules {

namespace {

constexpr size_t shown_max_chars = 60;

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (auto& name : names)
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

using cafmesh::config::edit_distance;

} // namespace

std::string escape(const std::string& token) {
  std::string out;
  for (char c : token)
    out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

/// The compact JSON of a found value, cut to `shown_max_chars` characters.
std::string shown(const json& v) {
  return cafmesh::config::json_preview(v, shown_max_chars);
}

void refuse(error_list& errs, const std::string& ptr, const std::string& what,
            const std::string& got) {
  errs.push_back(ptr + ": expected " + what + ", got " + got);
}

void refuse_unknown(error_list& errs, const std::string& ptr, const std::string& name,
                    const std::vector<std::string>& known) {
  const std::string* best = nullptr;
  size_t best_distance = 3;
  for (auto& candidate : known) {
    auto d = edit_distance(name, candidate);
    if (d < best_distance) {
      best = &candidate;
      best_distance = d;
    }
  }
  if (best != nullptr)
    errs.push_back(ptr + ": unknown key, did you mean \"" + *best + "\"?");
  else
    errs.push_back(ptr + ": unknown key, known keys: " + joined(known));
}

bool in_range(const json& v, int64_t min, int64_t max) {
  if (v.is_number_unsigned())
    return v.get<uint64_t>() <= static_cast<uint64_t>(max)
           && v.get<uint64_t>() >= static_cast<uint64_t>(std::max<int64_t>(min, 0));
  return v.is_number_integer() && v.get<int64_t>() >= min && v.get<int64_t>() <= max;
}

std::string integer_what(int64_t min, int64_t max) {
  if (max == int64_max)
    return "an integer >= " + std::to_string(min);
  return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

bool read_integer(const json& v, const std::string& ptr, int64_t min, int64_t max, int64_t& out,
                  error_list& errs) {
  if (!in_range(v, min, max)) {
    refuse(errs, ptr, integer_what(min, max), shown(v));
    return false;
  }
  out = v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
  return true;
}

bool read_string(const json& v, const std::string& ptr, bool non_empty, std::string& out,
                 error_list& errs) {
  if (!v.is_string() || (non_empty && v.get_ref<const std::string&>().empty())) {
    refuse(errs, ptr, non_empty ? "a non-empty string" : "a string", shown(v));
    return false;
  }
  out = v.get<std::string>();
  return true;
}

bool duplicate_finder::operator()(int depth, json::parse_event_t event, json& parsed) {
  using ev = json::parse_event_t;
  auto d = static_cast<size_t>(depth);
  switch (event) {
    case ev::object_start:
    case ev::array_start:
      frames_.resize(d);
      element_begins(d);
      frames_.push_back({event == ev::object_start, {}, -1, {}});
      break;
    case ev::object_end:
    case ev::array_end: frames_.resize(d); break;
    case ev::value: element_begins(d); break;
    case ev::key:
      if (!frames_.empty()) {
        auto& top = frames_.back();
        top.key = parsed.get<std::string>();
        if (!top.keys.insert(top.key).second)
          found_->insert(pointer());
      }
      break;
  }
  return true;
}

void duplicate_finder::element_begins(size_t depth) {
  if (depth >= 1 && depth <= frames_.size() && !frames_[depth - 1].object)
    ++frames_[depth - 1].index;
}

std::string duplicate_finder::pointer() const {
  std::string out;
  for (auto& f : frames_)
    out += "/" + (f.object ? escape(f.key) : std::to_string(f.index));
  return out;
}

bool parse_json(const std::string& text, const std::string& ptr, json& doc,
                std::set<std::string>& duplicates, error_list& errs) {
  try {
    doc = json::parse(text, duplicate_finder{duplicates});
    return true;
  } catch (const json::parse_error& e) {
    // e.what(): "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    std::string what = e.what();
    refuse(errs, ptr, "valid JSON", "a " + what.substr(what.find("parse error")));
    return false;
  } catch (const json::out_of_range& e) {
    // A number no double holds (`1e999`), valid JSON grammar: e.what() is
    // "[json.exception.out_of_range.406] number overflow parsing '1e999'".
    std::string what = e.what();
    refuse(errs, ptr, "JSON numbers within the range of a double",
           what.substr(what.find("] ") + 2));
    return false;
  }
}

bool read_object(const json& v, const std::string& ptr, const std::vector<field>& fields,
                 const std::set<std::string>& duplicates, error_list& errs) {
  if (!v.is_object()) {
    refuse(errs, ptr, "an object", shown(v));
    return false;
  }
  std::vector<std::string> known;
  for (auto& f : fields)
    known.push_back(f.name);
  for (auto& [key, value] : v.items()) {
    auto key_ptr = ptr + "/" + escape(key);
    if (duplicates.count(key_ptr) > 0)
      errs.push_back(key_ptr + ": duplicate key");
    auto i = std::find_if(fields.begin(), fields.end(),
                          [&](const field& f) { return f.name == key; });
    if (i == fields.end())
      refuse_unknown(errs, key_ptr, key, known);
    else
      i->read(value, key_ptr);
  }
  for (auto& f : fields)
    if (f.required && !v.contains(f.name))
      refuse(errs, ptr + "/" + escape(f.name), f.what, "nothing");
  return true;
}

} // namespace cafmesh::config::json_rules
