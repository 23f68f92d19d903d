// One expert of the layer's A8W4 MoE (LAYER-FRAMEWORKS.md §3): MXFP8 xn times MXFP4 w13 on the
// scaled MFMA's numerics (ir::mfma::runScaled), SwiGLU, the mid re-quantized to MXFP8, times w2.
#pragma once
#include <cstdint>
#include <vector>

#include "specs/minimax_m3/reference/RefNumerics.h"

namespace monogen::specs::minimax_m3 {

/// An MXFP4 matrix [rows][cols] (cols % 32 == 0): codes [rows][cols / 2] e2m1 pairs (the even
/// column in the low nibble), scales [rows][cols / 32] E8M0.
struct Mxfp4Rows {
  int rows = 0, cols = 0;
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
};

/// The expert's values for each token row: gate, up [rows][I] (f32 dots), mid [rows][I] (bf16 bits),
/// down [rows][hidden] (f32 dots), out [rows][hidden] = f32(down * weight[row]).
struct A8w4Expert {
  std::vector<float> gate, up, down, out;
  std::vector<uint16_t> mid;
};

/// x [rows][k] (rows <= 16, k == w.cols) quantized to MXFP8 per 32, times every row of w: out
/// [rows][w.rows], each a chain of 16x16x128 scaled MFMAs over K ascending from +0 (ir::mfma::
/// runScaled); a K past k (k % 128 != 0) is a zero E4M3 times a zero E2M1.
std::vector<float> a8w4Gemm(const float* x, int rows, const Mxfp4Rows& w);

/// xn bf16 [rows][hidden] (rows <= 16; hidden, I % 32 == 0); w13 [2 I][hidden] (gate rows, then up
/// rows); w2 [hidden][I]. gate / up = a8w4Gemm(xn, w13); mid = bf16(swigluOai(gate, up, limit,
/// alpha, n)); down = a8w4Gemm(f32(mid), w2).
A8w4Expert moeReferenceA8w4(const uint16_t* xn, const float* weight, int rows, const Mxfp4Rows& w13,
                            const Mxfp4Rows& w2, float limit, float alpha, RefNumerics n = RefNumerics::Ir);

}  // namespace monogen::specs::minimax_m3
