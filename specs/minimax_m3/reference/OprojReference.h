// The native reference of o_proj inside the MiniMax-M3 launch: AITER's per-token FP8 quant of
// the attention rows, then the rowwise-FP8 GEMM in the push stage's order, giving the bf16
// partial push sends (numerics: docs/reference-numerics.md, "o_proj").
#pragma once
#include <cstdint>
#include <vector>

#include "specs/minimax_m3/kernel/OprojShape.h"
#include "specs/minimax_m3/reference/RefNumerics.h"

namespace monogen::specs::minimax_m3 {

/// One token's quant constants: amax (maxNum of |x|), scale = amax * f32(1/448),
/// inv = amax == 0 ? 0 : rcp(scale) (the IR's Rcp, or gfx950-run's under Gfx950Run).
struct TokenScale {
  float amax = 0, scale = 0, inv = 0;
};
/// The quant of one row: amax, scale and inv of x (bf16 bits, K of them).
TokenScale tokenScale(const uint16_t* x, int64_t k, RefNumerics n = RefNumerics::Ir);
/// One element's fp8 code: F32ToFp8(bf16(x) * inv).
uint8_t quantElem(uint16_t x, float inv);

/// The quantized rows of one rank: q [S][K] e4m3fn codes, xScale [S].
struct QuantRows {
  std::vector<uint8_t> q;
  std::vector<float> xScale;
};
QuantRows quantizeRows(const uint16_t* x, int rows, int64_t k, RefNumerics n = RefNumerics::Ir);

/// The o_proj partial, bf16 bits [S][hidden]: q (quantizeRows), w e4m3fn [hidden][K]
/// (16,16)-shuffled, wScale f32 [hidden]. Throws InputError unless K % 128 == 0, hidden % 16 == 0.
std::vector<uint16_t> oprojPartial(const QuantRows& q, const uint8_t* wShuffled, const float* wScale, int rows,
                                   int64_t k, int hidden);

}  // namespace monogen::specs::minimax_m3
