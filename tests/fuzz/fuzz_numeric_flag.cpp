// libFuzzer target: parseNumeric and the numeric() CLI11 check, the one parser behind every
// numeric flag of monogen (tools/NumericFlag.h). The first byte picks the type and range; the
// rest is the value's text. An accepted value must lie in its range, be finite, read back the
// same from the text the check rewrites it to, and agree with the check; a refusal's message
// must stay short (never the whole value). Anything else, a crash or a sanitizer report, is a bug.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "tools/NumericFlag.h"

using namespace monogen::tools;

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& text) {
  std::fprintf(stderr, "fuzz_numeric_flag: %s (text of %zu bytes: '%.64s')\n", what.c_str(), text.size(), text.c_str());
  std::abort();
}

template <class T>
void check(const std::string& text, T lo, T hi) {
  std::string why;
  const std::optional<T> v = parseNumeric<T>(text, lo, hi, &why);
  std::string rewritten = text;
  const std::string err = numeric<T>(lo, hi)(rewritten);
  if (!v) {
    if (why.empty()) fail("a refusal without a message", text);
    if (why.size() > 160) fail("a refusal of " + std::to_string(why.size()) + " characters: " + why.substr(0, 80), text);
    if (err.empty()) fail("numeric() accepted what parseNumeric refused", text);
    return;
  }
  if (!err.empty()) fail("numeric() refused what parseNumeric accepted: " + err, text);
  if (*v < lo || *v > hi) fail("a value out of its range", text);
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(*v)) fail("a value that is not finite", text);
  const std::optional<T> again = parseNumeric<T>(rewritten, lo, hi, nullptr);
  if (!again) fail("the rewritten text '" + rewritten + "' does not parse", text);
  bool same = *again == *v;
  if constexpr (std::is_floating_point_v<T>) same = std::bit_cast<uint64_t>(*again) == std::bit_cast<uint64_t>(*v);
  if (!same) fail("the rewritten text '" + rewritten + "' reads back another value", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0: check<int>(text, 1, 16); break;                                                   // --rows
    case 1: check<int>(text, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()); break;
    case 2: check<int64_t>(text, 1, std::numeric_limits<int64_t>::max()); break;              // --wait-ticks
    case 3: check<uint64_t>(text, 0, std::numeric_limits<uint64_t>::max()); break;            // --seed
    case 4: check<double>(text, 0.001, 3600.0); break;                                        // --wait-seconds
    default: check<double>(text, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max()); break;
  }
  return 0;
}
