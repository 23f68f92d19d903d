#include "tools/NumericFlag.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace monogen::tools {

namespace {

constexpr size_t kShown = 32;  // a value longer than this is cut in messages

std::string shown(std::string_view text) {
  if (text.size() <= kShown) return fmt::format("'{}'", text);
  return fmt::format("'{}...' ({} characters)", text.substr(0, kShown), text.size());
}

template <class T>
std::string rangeText(T lo, T hi) {
  return fmt::format("{} in {} .. {}", std::is_integral_v<T> ? "an integer" : "a number", lo, hi);
}

}  // namespace

template <class T>
std::optional<T> parseNumeric(std::string_view text, T lo, T hi, std::string* why) {
  std::string_view t = text;
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  if (!t.empty() && t.front() == '+' && t.size() > 1 && t[1] != '-' && t[1] != '+') t.remove_prefix(1);
  T v{};
  std::from_chars_result r{};
  if constexpr (std::is_integral_v<T>) r = std::from_chars(t.data(), t.data() + t.size(), v, 10);
  else r = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::general);
  const bool whole = r.ptr == t.data() + t.size();
  std::string problem;
  if (t.empty()) problem = "is empty: expected " + rangeText(lo, hi);
  else if (r.ec == std::errc::result_out_of_range && whole) problem = "is out of range: expected " + rangeText(lo, hi);
  else if (r.ec != std::errc() || !whole) problem = "is not " + rangeText(lo, hi);
  else if constexpr (!std::is_integral_v<T>) {
    if (!std::isfinite(v)) problem = "is not a finite number: expected " + rangeText(lo, hi);
  }
  if (problem.empty() && (v < lo || v > hi)) problem = "is out of range: expected " + rangeText(lo, hi);
  if (problem.empty()) return v;
  if (why) *why = shown(text) + " " + problem;
  return std::nullopt;
}

template <class T>
CLI::Validator numeric(T lo, T hi) {
  const std::string desc = fmt::format("in [{} .. {}]", lo, hi);
  return CLI::Validator(
      [lo, hi](std::string& value) -> std::string {
        std::string why;
        const std::optional<T> v = parseNumeric<T>(value, lo, hi, &why);
        if (!v) return why;
        value = fmt::format("{}", *v);  // shortest round-trip form: CLI11 reads back exactly *v
        return {};
      },
      desc);
}

template std::optional<int> parseNumeric<int>(std::string_view, int, int, std::string*);
template std::optional<int64_t> parseNumeric<int64_t>(std::string_view, int64_t, int64_t, std::string*);
template std::optional<uint64_t> parseNumeric<uint64_t>(std::string_view, uint64_t, uint64_t, std::string*);
template std::optional<double> parseNumeric<double>(std::string_view, double, double, std::string*);
template CLI::Validator numeric<int>(int, int);
template CLI::Validator numeric<int64_t>(int64_t, int64_t);
template CLI::Validator numeric<uint64_t>(uint64_t, uint64_t);
template CLI::Validator numeric<double>(double, double);

}  // namespace monogen::tools
