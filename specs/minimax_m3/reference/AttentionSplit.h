// The MiniMax-M3 block-sparse attention's reference: one row's attention over its gathered keys
// for one KV head's query heads, split 8 ways (atom: one 256-key tile a split; vllm and full
// layers: ceil(n / 8) keys a split over its 256-key tiles, online softmax), and the splits'
// merge to bf16 rows (docs/attention.md, "Sparse attention").
#pragma once
#include <cstdint>
#include <vector>

#include "specs/minimax_m3/kernel/AttentionLayout.h"
#include "specs/minimax_m3/reference/RefNumerics.h"

namespace monogen::specs::minimax_m3 {

/// One row's keys for one KV head, in the order attended (the sparse key index): E4M3 K and V
/// [n][headDim] and each key's K / V scale (the scalar, in vllm mode).
struct GatheredKeys {
  int n = 0, headDim = 0;
  std::vector<uint8_t> k, v;
  std::vector<float> kScale, vScale;
};

/// One split's result for G query heads: o / l as bf16 [G][headDim], and the f32 m, l [G].
struct SplitPartial {
  std::vector<uint16_t> o;
  std::vector<float> m, l;
};

/// How the splits cut the keys: tiles (atom sparse layers: split t = tile t, keys < n valid) or
/// spans (vllm, and full layers in either mode: [t s, min(t s + s, n)), s = ceil(n / 8), online
/// softmax across the span's tiles); P scaled as the mode says.
struct SplitRule {
  CacheMode mode = CacheMode::Vllm;
  bool spans = true;  // false: atom's tile-a-split
};

/// Split t of G query heads q (bf16 [G][headDim]) over keys: scores sm (k scale) (q8 . k8),
/// P = exp2((s - m) log2 e) to E4M3 (atom: times v scale x 448 / (vmax + 1e-8)), PV x the V
/// scale (atom: vmax / 448), sums in the waves' orders.
SplitPartial attentionSplit(const uint16_t* q, int G, const GatheredKeys& keys, int t, const SplitRule& rule,
                            float smScale, RefNumerics n = RefNumerics::Ir);

/// The splits merged per head: w_i = l_i exp2((m_i - max m) log2 e) / sum, o = sum w_i o_i
/// (i ascending, from 0) -> bf16 [G][headDim].
std::vector<uint16_t> mergeSplits(const std::vector<SplitPartial>& parts, int G, int headDim,
                                  RefNumerics n = RefNumerics::Ir);

}  // namespace monogen::specs::minimax_m3
