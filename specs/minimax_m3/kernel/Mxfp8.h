// The MXFP8 quant as kernel IR: a block of 32 values -> one E8M0 scale and 32 OCP E4M3 bytes,
// the layer's A8W4 MoE publishing xn and the mids (docs/reference-numerics.md, "MXFP8").
#pragma once
#include <vector>

#include "ir/Builder.h"

namespace monogen::specs::minimax_m3 {

/// The E8M0 code of a block from its amax (f32, >= +0, not NaN): 2^(code - 127) = ceil_pow2(amax / 448),
/// at least 2^-126 when amax > 0; 0 when amax is 0; 255 when amax is Inf. Integer ops only.
ir::Val mxfp8ScaleCode(ir::Builder& b, ir::Val amax);
/// The f32 an element is multiplied by before the E4M3 conversion: 2^(127 - code), 0 for code 255.
ir::Val mxfp8InvScale(ir::Builder& b, ir::Val code);
/// One element's E4M3 byte (i32, 0..255): RNE of x * inv, saturating to +-448, NaN -> 0x7f.
ir::Val mxfp8Encode(ir::Builder& b, ir::Val x, ir::Val inv);
/// amax of f32 values: maxNum over |x| from +0 (a NaN element is skipped; all NaN gives 0).
ir::Val mxfp8Amax(ir::Builder& b, const std::vector<ir::Val>& xs);

/// A lane's `mfma_scale` A operand quantized: `a` <8 x i32> (byte e = element e) and its scale word.
struct Mxfp8Operand {
  ir::Val a, scale;
};
/// Quantizes a wave's 16 x 128 A tile, every lane active: xs are the lane's 32 f32 (or bf16) values
/// in ir/Mfma.h's A layout (element e: row l % 16, K = 64 (e / 16) + 16 (l / 16) + e % 16); each
/// 32-K block of a row gets its own scale, and the scale word is the one lane 16 t + i must hold.
Mxfp8Operand mxfp8QuantizeA(ir::Builder& b, const std::vector<ir::Val>& xs);

}  // namespace monogen::specs::minimax_m3
