#include "specs/minimax_m3/reference/AttentionPre.h"

#include <fmt/format.h>

#include <cmath>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "specs/minimax_m3/kernel/WeightContract.h"
#include "specs/minimax_m3/reference/AttentionNumerics.h"

namespace monogen::specs::minimax_m3 {

namespace num = ir::num;

float inputSumSquares(const float* acc, int hidden) {
  if (hidden % 256 != 0 || hidden / 256 > 32)
    throw InputError("attention reference", fmt::format("hidden = {}: expected a multiple of 256, at most 8192",
                                                        hidden));
  const int warps = hidden / 256;
  float warpSum[32] = {};
  for (int w = 0; w < warps; ++w) {
    float pack[32];
    for (int l = 0; l < 32; ++l) {
      const float* v = acc + (32 * w + l) * 8;
      float a = 0.0f;
      for (int e = 0; e < 8; ++e) a = std::fma(v[e], v[e], a);
      pack[l] = a;
    }
    warpSum[w] = butterflySum(pack, 32);
  }
  return butterflySum(warpSum, 32);
}

NormedRow normRow(const uint16_t* x, const uint16_t* res, const uint16_t* gIn, int hidden, float eps) {
  NormedRow r;
  std::vector<float> acc(static_cast<size_t>(hidden));
  r.h.resize(acc.size());
  for (int i = 0; i < hidden; ++i) {
    acc[i] = num::bf16ToF32(x[i]) + num::bf16ToF32(res[i]);
    r.h[i] = num::f32ToBf16(acc[i]);
  }
  const float ss = inputSumSquares(acc.data(), hidden);
  r.rstd = attnRsq(ss / static_cast<float>(hidden) + eps);
  std::vector<float> n(acc.size());
  float amax = 0.0f;
  for (int i = 0; i < hidden; ++i) {
    n[i] = (acc[i] * r.rstd) * (num::bf16ToF32(gIn[i]) + 1.0f);
    amax = num::maxNum(amax, std::fabs(n[i]));
  }
  r.xScale = amax == 0.0f ? 1.0f : amax / 448.0f;
  r.x8.resize(acc.size());
  for (int i = 0; i < hidden; ++i) r.x8[i] = e4m3(n[i] / r.xScale);
  return r;
}

std::vector<float> decodeQkvWeights(const uint8_t* w, int rows, int hidden) {
  std::vector<float> out(static_cast<size_t>(rows) * hidden);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < hidden; ++k) out[static_cast<size_t>(r) * hidden + k] = e4m3Value(w[shuffledOffset16x16(r, k, hidden)]);
  return out;
}

uint16_t qkvRow(const float* wRow, const std::vector<uint8_t>& x8, float xScale, float wScale, int hidden) {
  const int chunksPerWave = hidden / 64 / 8;
  float x[8192];
  for (int k = 0; k < hidden; ++k) x[k] = e4m3Value(x8[k]);
  float tot = 0.0f;
  for (int wave = 0; wave < 8; ++wave) {
    float c = 0.0f;
    for (int cc = 0; cc < chunksPerWave; ++cc) {
      const int kc = wave * chunksPerWave + cc;
      for (int h = 0; h < 2; ++h)
        for (int g = 0; g < 4; ++g)
          for (int e = 0; e < 8; ++e) {
            const int k = 64 * kc + 16 * g + 8 * h + e;
            const float prod = wRow[k] * x[k];  // exact: E4M3 x E4M3
            c = c + prod;
          }
    }
    tot = tot + c;
  }
  return num::f32ToBf16((tot * xScale) * wScale);
}

std::vector<float> headNormRope(const uint16_t* e16, const uint16_t* g, int D, float eps, const uint16_t* cs,
                                int rotary) {
  std::vector<float> e(static_cast<size_t>(D)), n(e.size()), out(e.size());
  for (int d = 0; d < D; ++d) e[d] = num::bf16ToF32(e16[d]);
  float lanes[64] = {};
  const int nLanes = D / 4;
  for (int l = 0; l < nLanes; ++l) {
    float ss = 0.0f;
    for (int j = 0; j < 4; ++j) {
      const float sq = e[4 * l + j] * e[4 * l + j];
      ss = ss + sq;
    }
    lanes[l] = ss;
  }
  const float ss = butterflySum(lanes, nLanes <= 32 ? 32 : 64);
  const float rr = attnRsq(ss / static_cast<float>(D) + eps);
  for (int d = 0; d < D; ++d) n[d] = (e[d] * rr) * (num::bf16ToF32(g[d]) + 1.0f);
  const int half = rotary / 2;
  for (int d = 0; d < D; ++d) {
    if (d >= rotary) {
      out[d] = n[d];
      continue;
    }
    const bool first = d < half;
    const float p = n[first ? d + half : d - half];
    const float c = num::bf16ToF32(cs[d % half]), s = num::bf16ToF32(cs[half + d % half]);
    const float ps = p * s;
    out[d] = std::fma(n[d], c, first ? -ps : ps);
  }
  return out;
}

float tokenKvScale(float amax) { return amax > 0.0f ? amax / 448.0f : 1.0f; }

uint16_t indexQueryValue(float x, CacheMode mode) {
  const uint16_t b = num::f32ToBf16(x);
  if (mode == CacheMode::Atom) return b;
  return num::f32ToBf16(e4m3Value(e4m3(num::bf16ToF32(b))));
}

}  // namespace monogen::specs::minimax_m3
