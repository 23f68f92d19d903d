// The MiniMax-M3 attention reference, before the attention: the residual add and input RMSNorm
// in the serving stack's sum order, the per-token FP8 quant, the fused w_qkv GEMV, the per-head
// Gemma norms with partial NeoX RoPE, and the E4M3 cache writers (docs/attention.md).
#pragma once
#include <cstdint>
#include <vector>

#include "specs/minimax_m3/kernel/AttentionLayout.h"
#include "specs/minimax_m3/reference/RefNumerics.h"

namespace monogen::specs::minimax_m3 {

/// One row's residual add, norm and quant: acc = f32(x) + f32(res) (h = bf16(acc), the new
/// residual); rstd = rsq(ss / hidden + eps) with ss in the fused all-reduce's order (8-element
/// fma packs, 32-pack butterflies, then a butterfly of the pack groups); n = (acc rstd)(1 + g);
/// xScale = amax(n) == 0 ? 1 : amax / 448; x8 = E4M3(n / xScale).
struct NormedRow {
  std::vector<uint16_t> h;  // bf16 [hidden]
  float rstd = 0, xScale = 1;
  std::vector<uint8_t> x8;  // E4M3 [hidden]
};
NormedRow normRow(const uint16_t* x, const uint16_t* res, const uint16_t* gIn, int hidden, float eps);
/// The sum of squares of acc [hidden] in that order (hidden a multiple of 256, at most 8192).
float inputSumSquares(const float* acc, int hidden);

/// The (16,16)-shuffled E4M3 w [rows, hidden] decoded to row-major f32 (exact).
std::vector<float> decodeQkvWeights(const uint8_t* wShuffled, int rows, int hidden);
/// One w_qkv row's output: bf16((dot x xScale) x wScale), dot of the decoded row wRow [hidden]
/// and x8 in the GEMV's order: per wave w of 8 its 64-K chunks w hidden/512 .., each as two
/// 32-K MFMAs (K 64 kc + 16 g + 8 h + e: h outer, then g, then e), then 0 + wave_0 + .. + wave_7.
uint16_t qkvRow(const float* wRow, const std::vector<uint8_t>& x8, float xScale, float wScale, int hidden);

/// One head's Gemma RMSNorm (4 channels a lane, butterfly over the lanes, rsq(ss / D + eps),
/// (x rstd)(1 + g)) and partial NeoX RoPE on channels 0 .. rotary-1 (fma(x, cos, -+ partner sin)),
/// from the bf16 GEMV outputs e [D] -> f32 [D] (unrounded). cosSin: the position's bf16 row
/// [rotary] (cos at 0 .. rotary/2-1, sin after).
std::vector<float> headNormRope(const uint16_t* e, const uint16_t* g, int D, float eps, const uint16_t* cosSin,
                                int rotary);

/// A per-token scale: amax == 0 ? 1 : amax / 448 (the writers' K / V scales).
float tokenKvScale(float amax);
/// The index q as the scorer sees it: bf16(x) (atom), or bf16(x) through E4M3 at scale 1 and
/// back (vllm: unit-FP8 index q).
uint16_t indexQueryValue(float x, CacheMode mode);

}  // namespace monogen::specs::minimax_m3
