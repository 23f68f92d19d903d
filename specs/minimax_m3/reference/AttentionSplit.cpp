#include "specs/minimax_m3/reference/AttentionSplit.h"

#include <algorithm>
#include <cmath>

#include "ir/Numerics.h"
#include "specs/minimax_m3/kernel/OprojShape.h"
#include "specs/minimax_m3/reference/AttentionNumerics.h"

namespace monogen::specs::minimax_m3 {

namespace num = ir::num;

namespace {
constexpr int kWaves = 8, kKeysPerWave = kSplitKeys / kWaves;  // 32: 2 page-16s a wave
}

SplitPartial attentionSplit(const uint16_t* q, int G, const GatheredKeys& keys, int t, const SplitRule& rule,
                            float smScale, RefNumerics numerics) {
  const int D = keys.headDim, n = keys.n;
  int begin, end, first, last;
  if (rule.spans) {
    const int span = (n + kAttnSplits - 1) / kAttnSplits;
    begin = t * span;
    end = std::min(begin + span, n);
    first = begin / kSplitKeys;
    last = begin < end ? (end + kSplitKeys - 1) / kSplitKeys : first;
  } else {
    begin = t * kSplitKeys;
    end = n;
    first = t;
    last = t + 1;
  }
  const bool online = rule.spans;
  const bool atom = rule.mode == CacheMode::Atom;
  std::vector<uint8_t> q8(static_cast<size_t>(G) * D);
  for (size_t i = 0; i < q8.size(); ++i) q8[i] = e4m3(num::bf16ToF32(q[i]));
  std::vector<float> runM(G, kAttnMasked), runL(G, 0.0f), runO(static_cast<size_t>(G) * D, 0.0f);
  std::vector<float> sc(static_cast<size_t>(G) * kSplitKeys), p(sc.size());
  std::vector<uint8_t> p8(sc.size());
  std::vector<bool> valid(kSplitKeys);
  for (int tile = first; tile < last; ++tile) {
    const int key0 = tile * kSplitKeys;
    for (int i = 0; i < kSplitKeys; ++i) valid[i] = key0 + i >= begin && key0 + i < end;
    // scores: (sm x k scale) x the E4M3 dot, channels ascending (exact products)
    for (int h = 0; h < G; ++h)
      for (int i = 0; i < kSplitKeys; ++i) {
        float s = kAttnMasked;
        if (valid[i]) {
          const int key = key0 + i;
          float c = 0.0f;
          for (int d = 0; d < D; ++d) {
            const float prod = e4m3Value(q8[h * D + d]) * e4m3Value(keys.k[static_cast<size_t>(key) * D + d]);
            c = c + prod;
          }
          s = (smScale * keys.kScale[key]) * c;
        }
        sc[h * kSplitKeys + i] = s;
      }
    float vmax = 0.0f;  // atom: the tile's largest per-token V scale
    for (int i = 0; i < kSplitKeys; ++i) vmax = num::maxNum(vmax, valid[i] ? keys.vScale[key0 + i] : 0.0f);
    const float fscale = 448.0f * attnRcp(vmax + 1e-8f, numerics);
    const float pscale = atom ? vmax * kFp8InvMax : keys.vScale.empty() ? 1.0f : keys.vScale[0];
    for (int h = 0; h < G; ++h) {
      float m = kAttnMasked;
      bool seen = false;
      for (int i = 0; i < kSplitKeys; ++i) {
        m = seen ? num::maxNum(m, sc[h * kSplitKeys + i]) : sc[h * kSplitKeys + i];
        seen = true;
      }
      if (online) m = num::maxNum(m, runM[h]);
      // P, its E4M3 bytes, and l: a lane's 2 keys, a 16-lane butterfly a wave, waves in order
      float lsum = 0.0f;
      for (int w = 0; w < kWaves; ++w) {
        float lanes[16];
        for (int l = 0; l < 16; ++l) {
          float ls = 0.0f;
          for (int j = 0; j < 2; ++j) {
            const int i = w * kKeysPerWave + j * kPage16 + l;
            float pj = attnExp2((sc[h * kSplitKeys + i] - m) * kAttnLog2e, numerics);
            ls = ls + pj;
            if (atom) pj = ((valid[i] ? keys.vScale[key0 + i] : 0.0f) * fscale) * pj;
            p8[h * kSplitKeys + i] = e4m3(pj);
          }
          lanes[l] = ls;
        }
        const float ws = butterflySum(lanes, 16);
        lsum = w == 0 ? ws : lsum + ws;
      }
      // PV: a wave's 32 keys ascending from 0 (V outside [begin, end) masked to 0), waves in order
      const float factor = attnExp2((runM[h] - m) * kAttnLog2e, numerics);
      for (int d = 0; d < D; ++d) {
        float acc = 0.0f;
        for (int w = 0; w < kWaves; ++w) {
          float cw = 0.0f;
          for (int kk = 0; kk < kKeysPerWave; ++kk) {
            const int i = w * kKeysPerWave + kk;
            const float pv = e4m3Value(p8[h * kSplitKeys + i]);
            if (pv == 0.0f && !valid[i]) continue;  // +-0 x 0: adds nothing (cw is never -0)
            const float v = valid[i] ? e4m3Value(keys.v[static_cast<size_t>(key0 + i) * D + d]) : 0.0f;
            if (pv == 0.0f && std::isfinite(v)) continue;
            const float prod = pv * v;
            cw = cw + prod;
          }
          acc = w == 0 ? cw : acc + cw;
        }
        float value = pscale * acc;
        if (online) {
          const float scaled = runO[h * D + d] * factor;
          value = scaled + value;
        }
        runO[h * D + d] = value;
      }
      if (online) {
        const float scaledL = factor * runL[h];
        lsum = scaledL + lsum;
      }
      runL[h] = lsum;
      runM[h] = m;
    }
  }
  SplitPartial out;
  out.o.resize(runO.size());
  out.m = runM;
  out.l = runL;
  for (int h = 0; h < G; ++h) {
    const float invL = 1.0f / (runL[h] > 0.0f ? runL[h] : 1.0f);
    for (int d = 0; d < D; ++d) out.o[h * D + d] = num::f32ToBf16(runO[h * D + d] * invL);
  }
  return out;
}

std::vector<uint16_t> mergeSplits(const std::vector<SplitPartial>& parts, int G, int D, RefNumerics numerics) {
  std::vector<uint16_t> out(static_cast<size_t>(G) * D);
  const int S = static_cast<int>(parts.size());
  for (int h = 0; h < G; ++h) {
    float gm = parts[0].m[h];
    for (int i = 1; i < S; ++i) gm = num::maxNum(gm, parts[i].m[h]);
    std::vector<float> sl(S);
    for (int i = 0; i < S; ++i) sl[i] = parts[i].l[h] * attnExp2((parts[i].m[h] - gm) * kAttnLog2e, numerics);
    float gs = sl[0];
    for (int i = 1; i < S; ++i) gs = gs + sl[i];
    gs = gs > 0.0f ? gs : 1.0f;
    for (int d = 0; d < D; ++d) {
      float av = 0.0f;
      for (int i = 0; i < S; ++i) {
        const float wi = sl[i] / gs;
        const float term = wi * num::bf16ToF32(parts[i].o[h * D + d]);
        av = av + term;
      }
      out[h * D + d] = num::f32ToBf16(av);
    }
  }
  return out;
}

}  // namespace monogen::specs::minimax_m3
