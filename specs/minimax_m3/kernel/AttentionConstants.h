// The MiniMax-M3 attention's numeric constants, shared by the kernel's stages and the reference
// (docs/attention.md, "Numerics"): the exp2 factor, the masked score and the indexer's scale.
#pragma once
#include <cmath>

namespace monogen::specs::minimax_m3 {

/// f32(log2 e) = 0x3fb8aa3b, the exp2 argument's factor.
inline constexpr float kAttnLog2e = 1.44269504088896340736f;
/// The masked score (ATOM's finite -3.4e38: exp2 of (masked - max) is 0, never NaN).
inline constexpr float kAttnMasked = -3.4e38f;

/// The indexer's score scale: f32(f32(dim^-0.5) x f32(log2 e)).
inline float indexScoreScale(int indexDim) {
  const float sm = static_cast<float>(1.0 / std::sqrt(static_cast<double>(indexDim)));
  return sm * kAttnLog2e;
}

}  // namespace monogen::specs::minimax_m3
