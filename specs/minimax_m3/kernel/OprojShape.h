// o_proj in the launch (input=attn): the constants its push stage and its reference
// (OprojReference.h) share.
#pragma once

namespace monogen::specs::minimax_m3 {

/// K parts of the o_proj GEMM (the push CTA's waves: 2 channel tiles x 4 K parts = 8 waves).
inline constexpr int kOprojKParts = 4;
/// f32(1 / 448), the quant's scale factor (AITER multiplies amax by it).
inline constexpr float kFp8InvMax = 1.0f / 448.0f;

}  // namespace monogen::specs::minimax_m3
