// The MXFP8 quant of the layer's A8W4 MoE (xn and the mids), written from its rule
// (docs/reference-numerics.md, "MXFP8"): 32 values -> one E8M0 scale and 32 OCP E4M3 bytes.
#pragma once
#include <cstddef>
#include <cstdint>

namespace monogen::specs::minimax_m3 {

inline constexpr int kMxfp8Block = 32;

/// One quantized block: E8M0 scale code (2^(scale - 127)) and the E4M3 bytes.
struct Mxfp8Block {
  uint8_t scale = 0;
  uint8_t codes[kMxfp8Block] = {};
};

/// The scale of a block with this amax (>= 0, not NaN): 0 for amax 0, 255 for Inf, else the
/// smallest code c >= 1 with amax <= 448 * 2^(c - 127).
uint8_t mxfp8ScaleOf(float amax);
/// y rounded to OCP e4m3fn: nearest, ties to the even code; +-448 beyond; NaN -> 0x7f.
uint8_t e4m3RoundNearestEven(double y);
/// Quantizes 32 values: amax over the non-NaN |x|; each x * 2^(127 - scale) exactly (x * 0 for
/// scale 255), then e4m3RoundNearestEven.
Mxfp8Block mxfp8QuantizeBlock(const float* x);
/// n values (n % 32 == 0): codes[n] and scales[n / 32].
void mxfp8Quantize(const float* x, size_t n, uint8_t* codes, uint8_t* scales);
/// An element's value in double: e4m3(code) * 2^(scale - 127); NaN for code 0x7f / 0xff or scale 255.
double mxfp8Dequant(uint8_t code, uint8_t scale);

}  // namespace monogen::specs::minimax_m3
