// Numeric command-line values, checked one way for every flag: the whole text a decimal number
// of the flag's type, within the flag's range. No wrap, no saturation; NaN and infinities are
// refused; a refusal names the value (cut short) and the range, and CLI11 prefixes the flag.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace monogen::tools {

/// `text` as a T in [lo, hi] (T: int, int64_t, uint64_t or double), else nullopt with `why`
/// saying what was wrong: "'-1' is not an integer in 0 .. 18446744073709551615".
template <class T>
std::optional<T> parseNumeric(std::string_view text, T lo, T hi, std::string* why);

/// A CLI11 check for a numeric option (each value of a list one by one): parseNumeric, then the
/// value rewritten in plain decimal for CLI11's own conversion, which then cannot wrap or round.
template <class T>
CLI::Validator numeric(T lo, T hi);

}  // namespace monogen::tools
