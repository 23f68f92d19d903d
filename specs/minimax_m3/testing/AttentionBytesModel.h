// The minimum global-memory bytes one rank's attention launch must read for a given launch: the
// floor `monogen bench --launch attention` holds the Sim device's byte counters against. What is
// counted, tensor by tensor, and what is not: docs/attention.md, "The bytes floor".
#pragma once

#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/BytesModel.h"

namespace monogen::specs::minimax_m3 {

/// Rank `rank`'s minimum for the launch `in`, whose reference `ref` gives the selections (the
/// K / V keys a sparse layer attends): each byte the launch needs from before it started, once.
MinimumBytes attentionMinimumBytes(const ModelConfig& cfg, const AttentionLaunch& in, const AttentionResult& ref,
                                   int rank);

}  // namespace monogen::specs::minimax_m3
