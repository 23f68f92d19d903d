// The MiniMax-M3 attention launch as a Plan (spec minimax_m3.attention, the `attention` launch):
// arguments, scratch, LDS and stages, one rank's kernel for one key (S, TP, cache mode, layer).
// Its stages so far: attn_norm, attn_heads; the GEMV, indexer, split and merge are to follow.
#pragma once
#include "ir/Plan.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"

namespace monogen::specs::minimax_m3 {

/// Builds the attention launch of key on cfg (AttentionVariant::make checks the key).
ir::Plan buildAttentionPlan(const ModelConfig& cfg, const ir::Key& key);
ir::Plan buildAttentionPlan(const AttentionVariant& v);

}  // namespace monogen::specs::minimax_m3
