#include "specs/minimax_m3/reference/AttentionNumerics.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <vector>

#include "ir/Numerics.h"
#include "runtime/Gfx950RunNumerics.h"
#include "specs/minimax_m3/reference/MoeReference.h"

namespace monogen::specs::minimax_m3 {

namespace num = ir::num;

uint8_t e4m3Saturating(float x) {
  if (std::isnan(x)) return 0x7f;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const float a = std::fabs(x);
  if (a >= 448.0f) return sign | 0x7e;
  if (a < 0.015625f) {  // below 2^-6: subnormal codes m 2^-9 (m = 8 is 2^-6, code 8)
    const float m = std::nearbyint(a * 512.0f);  // exact scaling, RNE (the default rounding mode)
    return static_cast<uint8_t>(sign | static_cast<int>(m));
  }
  uint32_t b = std::bit_cast<uint32_t>(a);
  b += 0x7ffffu + ((b >> 20) & 1u);  // RNE to 3 mantissa bits (a carry moves the exponent)
  const int e = static_cast<int>(b >> 23) - 127 + 7;
  const int code = (e << 3) | static_cast<int>((b >> 20) & 7u);
  return static_cast<uint8_t>(sign | std::min(code, 0x7e));
}

uint8_t e4m3(float x) {
  if (std::isinf(x) || std::fabs(x) > 464.0f) return std::signbit(x) ? 0xff : 0x7f;
  return e4m3Saturating(x);
}

const std::array<float, 256> kE4m3Values = [] {
  std::array<float, 256> v{};
  for (int c = 0; c < 256; ++c) v[c] = num::fp8E4m3ToF32(static_cast<uint32_t>(c));
  return v;
}();

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
