// One variant of the MiniMax-M3 one-launch decoder layer (spec minimax_m3.layer), made and checked
// once: the key (S, TP, the attention knobs), the attention launch's variant with the layer's row
// flags (ARDY) and the FFN launch's default variant (o_proj in the launch), on one config, their
// stages moved to the serving stack's bases (LayerPlacement).
#pragma once
#include <cstdint>

#include "ir/Plan.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/kernel/FfnVariant.h"
#include "specs/minimax_m3/kernel/LayerPlacement.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/kernel/MoeQuant.h"

namespace monogen::specs::minimax_m3 {

inline constexpr const char* kLayerSpecId = "minimax_m3.layer";
inline constexpr int kLayerSpecVersion = 1;
/// The layer's own wait site: push (o_proj) waits for ARDY of every row (the error word: site |
/// rank << 8 | token << 16, the row as token).
inline constexpr int32_t kSiteLayerArdy = kSiteAttnLast + 1;

struct LayerVariant {
  ModelConfig cfg;
  ir::Key key;  // key.config is cfg.attentionCanonical()
  AttentionKnobs knobs;
  /// The placement's knobs the key carries: ",ag_rs_from=N" when it is not the default (the
  /// all-reduces are reduce-scatter + all-gather from S = N).
  LayerPlacementKnobs placementKnobs;
  /// The experts' numerics, the layer's own knob "moe=" (a16w4, the default; a8w4 runs the
  /// narrow A8W4 up and down stages).
  MoeQuant moe = MoeQuant::A16w4;
  AttentionVariant attention;  // S > 1: ardyOffset set (attn_merge publishes ARDY); S = 1: no merge task
  FfnVariant ffn;              // layerFfnKnobs(key): o_proj reads `attn`; its key carries moe=
  /// The serving stack's placement of (S, TP): attn_split, attn_merge, push (and reduce), router,
  /// up and down run from its bases; every stage keeps its own task count.
  LayerPlacement placement;

  /// Checks key against cfg once (spec id and version, parameters S and TP, config text, knobs,
  /// and both launches' checks); InputError naming the variant.
  static LayerVariant make(const ModelConfig& cfg, const ir::Key& key);
};

/// The FFN knobs of a layer key's FFN variant: the defaults, with the key's moe=; InputError
/// naming the key on bad layer knobs.
FfnKnobs layerFfnKnobs(const ir::Key& key);

/// A key of the layer launch for (S, TP) on cfg: the attention's knobs, then moe= unless a16w4,
/// then ag_rs_from= unless the placement's default.
ir::Key makeLayerKey(const ModelConfig& cfg, int rows, int tp, const AttentionKnobs& knobs = {},
                     const LayerPlacementKnobs& placement = {}, MoeQuant moe = MoeQuant::A16w4);

}  // namespace monogen::specs::minimax_m3
