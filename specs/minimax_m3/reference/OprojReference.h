// The native reference of o_proj inside the launch (seed 000, issue 12): AITER-semantics per-token
// FP8 quant of the attention rows, then the rowwise-FP8 GEMM on the o_proj weight, in exactly the
// push stage's order (StageOproj.cpp), giving the bf16 partial push sends.
//
// Numerics (the spec; the stage follows it op for op):
//  - quant, one token row x[0 .. K) (bf16, widened exactly):
//      amax  = max over k of |x[k]|, IR Max (maxNum: a NaN element is skipped; max is exact, so
//              any order gives the same amax);
//      scale = amax * f32(1/448)            (a multiply, not a divide: AITER's);
//      inv   = amax == 0 ? 0 : rcp(scale)   (the IR's Rcp: correctly rounded 1 / scale; under
//              RefNumerics::Gfx950Run gfx950-run's v_rcp_f32, which flushes subnormals);
//      q[k]  = F32ToFp8(x[k] * inv)          (one f32 multiply, then RNE to OCP e4m3fn saturating
//              at +-448: the clamp to +-448 and the rounding at once; NaN -> 0x7f).
//    Behaviour at the edges: an all-zero row has inv 0 and q 0; amax = +Inf (an Inf element)
//    gives scale Inf, inv 0, finite elements q = 0 and the Inf elements NaN (Inf * 0); a NaN
//    element gives q = NaN (0x7f) and does not count in amax. x_scale[m] = scale.
//  - GEMM, channel n (a weight row, e4m3fn codes, (16,16)-shuffled as AITER holds it) and token m:
//    K is cut into kOprojKParts parts of K / 4 (K % 128 == 0); part p's f32 accumulator starts at
//    +0 and adds f32(w[n][k] * q[m][k]) (exact products) for k ascending over the part (the
//    waves' chains of v_mfma_f32_16x16x32_fp8_fp8, ir/Mfma.h's model); then
//      acc = ((part0 + part1) + part2) + part3,   out = bf16(RNE((acc * x_scale[m]) * w_scale[n])).
// SGLang's smallm_fp8_gemm (.hip source not in the index we could search) may cut K and order its
// sums differently; bit equality with it is unchecked.
#pragma once
#include <cstdint>
#include <vector>

#include "specs/minimax_m3/kernel/OprojShape.h"

namespace monogen::specs::minimax_m3 {

/// One token's quant constants (see the header comment).
struct TokenScale {
  float amax = 0, scale = 0, inv = 0;
};
/// The quant of one row: amax, scale and inv of x (bf16 bits, K of them).
TokenScale tokenScale(const uint16_t* x, int64_t k);
/// One element's fp8 code: F32ToFp8(bf16(x) * inv).
uint8_t quantElem(uint16_t x, float inv);

/// The quantized rows of one rank: q [S][K] e4m3fn codes, xScale [S].
struct QuantRows {
  std::vector<uint8_t> q;
  std::vector<float> xScale;
};
QuantRows quantizeRows(const uint16_t* x, int rows, int64_t k);

/// The o_proj partial, bf16 bits [S][hidden]: q (quantizeRows), w e4m3fn [hidden][K]
/// (16,16)-shuffled, wScale f32 [hidden]. Throws InputError unless K % 128 == 0, hidden % 16 == 0.
std::vector<uint16_t> oprojPartial(const QuantRows& q, const uint8_t* wShuffled, const float* wScale, int rows,
                                   int64_t k, int hidden);

}  // namespace monogen::specs::minimax_m3
