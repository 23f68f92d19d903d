// One variant of the MiniMax-M3 FFN launch, made and checked once: the config, the key, its
// knobs parsed and its layout. Everything the plan builder and the stages read comes from it.
#pragma once
#include "ir/Plan.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

struct FfnVariant {
  ModelConfig cfg;
  ir::Key key;  // key.config is cfg.canonical()
  FfnKnobs knobs;
  Layout layout;  // its tiling is layout.tiling

  /// Checks key against cfg once: spec id and version, config text, knobs, S, TP and drop-mark
  /// CTA. Throws InputError naming the variant.
  static FfnVariant make(const ModelConfig& cfg, const ir::Key& key);
};

}  // namespace monogen::specs::minimax_m3
