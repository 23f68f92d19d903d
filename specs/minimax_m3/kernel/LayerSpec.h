// The MiniMax-M3 one-launch decoder layer as a Plan (spec minimax_m3.layer, the `layer` launch):
// the attention launch's stages, then the FFN launch's (o_proj reading the attention rows this
// launch writes, after each row's ARDY), then the FFN's finish stages, in one kernel a rank.
#pragma once
#include "ir/Plan.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"

namespace monogen::specs::minimax_m3 {

/// The layer's names for the attention launch's arguments where the two launches differ: its
/// scratch is `attn_scratch`, its new residual (res_out) is the FFN's residual in (`res_in`).
/// Every other shared name (attn, err, slots, wait_ticks) is one argument; its `tag` is the FFN's.
inline constexpr const char* kLayerAttnScratch = "attn_scratch";
/// The prefix of the attention launch's regions, flags and LDS pool in the layer's Plan.
inline constexpr const char* kLayerAttnPrefix = "attn_";

/// Builds the layer launch of key on cfg (LayerVariant::make checks the key).
ir::Plan buildLayerPlan(const ModelConfig& cfg, const ir::Key& key);
ir::Plan buildLayerPlan(const LayerVariant& v);

}  // namespace monogen::specs::minimax_m3
