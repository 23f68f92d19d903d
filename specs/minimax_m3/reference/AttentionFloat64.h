// The MiniMax-M3 attention launch in double precision with straightforward math, unrounded past
// the inputs (bf16 rows and norms, the E4M3 weights times their scales, the caches' bytes times
// their scales, the bf16 cos/sin): a tolerance check of the bit-exact reference
// (docs/attention.md, "Float64 check").
#pragma once
#include <vector>

#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/AttentionReference.h"

namespace monogen::specs::minimax_m3 {

struct AttentionFloat64Rank {
  std::vector<double> q;      // [S, qHeads, headDim] after norm + RoPE
  std::vector<double> attn;   // [S, qHeads x headDim]
  /// per (row, local KV head): whether the double scores select the reference's blocks, and
  /// the margin: the smallest selected scored block's score minus the largest unselected one
  /// (+inf when nothing is ranked by score).
  std::vector<bool> sameSelection;
  std::vector<double> margin;
  std::vector<double> scoreScale;  // the largest |score| of the scored blocks (0: none scored)
};
struct AttentionFloat64Result {
  std::vector<double> rstd;  // [S]
  std::vector<AttentionFloat64Rank> ranks;
};

/// `ref`'s selections are the blocks attended (so the values compare on the same keys); the
/// double selection is reported beside them. Padded rows stay 0.
AttentionFloat64Result attentionFloat64(const ModelConfig& cfg, const AttentionLaunch& in, const AttentionResult& ref);

}  // namespace monogen::specs::minimax_m3
