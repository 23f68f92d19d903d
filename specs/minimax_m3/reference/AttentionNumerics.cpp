#include "specs/minimax_m3/reference/AttentionNumerics.h"

#include <array>
#include <cmath>
#include <vector>

#include "ir/Numerics.h"
#include "runtime/Gfx950RunNumerics.h"
#include "specs/minimax_m3/reference/MoeReference.h"

namespace monogen::specs::minimax_m3 {

namespace num = ir::num;

namespace {
struct E4m3Tables {
  std::array<float, 256> value{};
  std::array<float, 127> positive{};  // codes 0 .. 0x7e, ascending
  E4m3Tables() {
    for (int c = 0; c < 256; ++c) value[c] = num::fp8E4m3ToF32(static_cast<uint32_t>(c));
    for (int c = 0; c <= 0x7e; ++c) positive[c] = value[c];
  }
};
const E4m3Tables& tables() {
  static const E4m3Tables t;
  return t;
}
}  // namespace

uint8_t e4m3Saturating(float x) {
  if (std::isnan(x)) return 0x7f;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const float a = std::fabs(x);
  if (a >= 448.0f) return sign | 0x7e;
  const auto& p = tables().positive;
  int lo = 0, hi = 0x7e;  // p[lo] <= a < p[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (p[mid] <= a ? lo : hi) = mid;
  }
  const float dl = a - p[lo], dh = p[hi] - a;  // exact: neighbours of a share its binade or less
  int c = dl < dh ? lo : dh < dl ? hi : ((lo & 1) == 0 ? lo : hi);
  return static_cast<uint8_t>(sign | c);
}

uint8_t e4m3(float x) {
  if (std::isinf(x) || std::fabs(x) > 464.0f) return std::signbit(x) ? 0xff : 0x7f;
  return e4m3Saturating(x);
}

float e4m3Value(uint8_t b) { return tables().value[b]; }

float butterflySum(const float* v, int n) {
  std::vector<float> a(v, v + n);
  for (int off = n / 2; off >= 1; off /= 2) {
    std::vector<float> b(a.size());
    for (int i = 0; i < n; ++i) b[i] = a[i] + a[i ^ off];
    a.swap(b);
  }
  return a[0];
}

float attnExp2(float x, RefNumerics n) { return moeExp2(x, n); }

float attnRcp(float x, RefNumerics n) {
  return n == RefNumerics::Gfx950Run ? runtime::gfx950run::rcp(x) : num::rcp(x);
}

float attnRsq(float x) { return num::rsq(x); }

}  // namespace monogen::specs::minimax_m3
