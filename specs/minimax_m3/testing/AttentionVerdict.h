// The attention launch's verdict on a run against its native reference: the line `monogen sim
// --launch attention` prints, and the layer launch's check of its attention outputs.
#pragma once
#include <string>

#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionSim.h"

namespace monogen::specs::minimax_m3 {

/// "bit-exact", "INVALID: rank R: error word ..." or "MISMATCH: <the first output that differs>"
/// for a run of the launch `in` against its reference.
std::string attentionVerdict(const AttentionLaunch& in, const AttentionResult& ref, const AttentionSimRun& run,
                             const ModelConfig& cfg);
/// The first of rank r's outputs `got` that is not the reference's ("k_cache.r1[42]"), or "" (the
/// check of one rank's process; its error word is the caller's to judge).
std::string attentionRankMismatch(const AttentionLaunch& in, const AttentionResult& ref, const AttentionSimRank& got,
                                  int r, const ModelConfig& cfg);

}  // namespace monogen::specs::minimax_m3
