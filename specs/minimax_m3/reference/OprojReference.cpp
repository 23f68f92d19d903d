#include "specs/minimax_m3/reference/OprojReference.h"

#include <fmt/format.h>

#include <cmath>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "runtime/Gfx950RunNumerics.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

namespace monogen::specs::minimax_m3 {

namespace num = ir::num;

TokenScale tokenScale(const uint16_t* x, int64_t k, RefNumerics n) {
  TokenScale s;
  for (int64_t i = 0; i < k; ++i) s.amax = num::maxNum(s.amax, std::fabs(num::bf16ToF32(x[i])));
  s.scale = s.amax * kFp8InvMax;
  const float r = n == RefNumerics::Gfx950Run ? runtime::gfx950run::rcp(s.scale) : num::rcp(s.scale);
  s.inv = s.amax == 0.0f ? 0.0f : r;
  return s;
}

uint8_t quantElem(uint16_t x, float inv) {
  return static_cast<uint8_t>(num::f32ToFp8E4m3(num::bf16ToF32(x) * inv));
}

QuantRows quantizeRows(const uint16_t* x, int rows, int64_t k, RefNumerics n) {
  QuantRows q;
  q.q.resize(static_cast<size_t>(rows * k));
  q.xScale.resize(static_cast<size_t>(rows));
  for (int m = 0; m < rows; ++m) {
    const TokenScale s = tokenScale(x + m * k, k, n);
    q.xScale[m] = s.scale;
    for (int64_t i = 0; i < k; ++i) q.q[m * k + i] = quantElem(x[m * k + i], s.inv);
  }
  return q;
}

std::vector<uint16_t> oprojPartial(const QuantRows& q, const uint8_t* w, const float* wScale, int rows, int64_t k,
                                   int hidden) {
  if (k % (32 * kOprojKParts) != 0 || hidden % 16 != 0)
    throw InputError("o_proj reference",
                     fmt::format("K = {}, hidden = {}: expected K a multiple of {} and hidden of 16", k,
                                 32 * kOprojKParts, hidden));
  std::vector<uint16_t> out(static_cast<size_t>(rows) * hidden);
  const int64_t partK = k / kOprojKParts;
  float code[256];  // e4m3fn decoded once: the same values, 256 decodes instead of two a product
  for (int c = 0; c < 256; ++c) code[c] = num::fp8E4m3ToF32(static_cast<uint8_t>(c));
  std::vector<float> x(q.q.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = code[q.q[i]];
  std::vector<float> wRow(static_cast<size_t>(k));
  for (int n = 0; n < hidden; ++n) {
    for (int64_t i = 0; i < k; ++i) wRow[i] = code[w[shuffledOffset16x16(n, i, k)]];
    for (int m = 0; m < rows; ++m) {
      const float* xm = x.data() + m * k;
      float acc = 0.0f;
      for (int p = 0; p < kOprojKParts; ++p) {
        float part = 0.0f;
        for (int64_t i = p * partK; i < (p + 1) * partK; ++i) {
          const float prod = wRow[i] * xm[i];  // exact
          part = part + prod;
        }
        acc = p == 0 ? part : acc + part;
      }
      const float y = (acc * q.xScale[m]) * wScale[n];
      out[static_cast<size_t>(m) * hidden + n] = num::f32ToBf16(y);
    }
  }
  return out;
}

}  // namespace monogen::specs::minimax_m3
