// A JSON value as short text for an error message, safe on hostile input.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace monogen::runtime {

/// `j` as short text: nested arrays and objects as [...] and {...}, cut to about 80 characters.
/// nlohmann's dump() recurses once a nesting level, and a hostile file can nest a value a
/// hundred thousand deep in 200 KB: dumping it whole overflowed the stack (safetensors headers,
/// config.json fields).
inline std::string jsonBrief(const nlohmann::json& j) {
  auto flat = [](const nlohmann::json& v) {
    return v.is_array() ? std::string("[...]") : v.is_object() ? std::string("{...}") : v.dump();
  };
  std::string s;
  if (j.is_array()) {
    s = "[";
    for (size_t i = 0; i < j.size() && s.size() < 80; ++i) s += (i ? ", " : "") + flat(j[i]);
    s += "]";
  } else {
    s = flat(j);
  }
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

}  // namespace monogen::runtime
