// One stage of the MiniMax-M3 attention launch as one record, defined next to its body (the
// attention launch's StageDef): where its tasks run, its flags, its doc, its code, its reference.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/Plan.h"
#include "specs/minimax_m3/kernel/AttentionContext.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"

namespace monogen::specs::minimax_m3 {

struct AttentionStageDef {
  Placement (*placement)(const AttentionLaunchLayout&);
  std::vector<ir::FlagUse> (*waits)(const AttentionLaunchLayout&);
  std::vector<ir::FlagUse> (*publishes)(const AttentionLaunchLayout&);
  std::string (*doc)(const AttentionLaunchLayout&);
  void (*body)(AttentionContext&);  // the stage's code, its task loop included
  const char* reference;            // the host reference function(s) it must match bit for bit

  /// The stage's Plan record at this layout.
  ir::Stage record(const AttentionLaunchLayout& L) const;
};

/// The attention launch's stages in Plan and code order (AttentionStages.cpp).
const std::vector<const AttentionStageDef*>& attentionStages();

/// Row t's 8 splits of each local query head merged on this CTA (attn_merge's task, and the layer's
/// o_proj at S = 1): waits for the row's SRDY, weights in LDS at `lds` (8 x q heads x 8 bytes, two
/// syncs), then out(cell, bf16) for every cell of the row (0 for a padded row); no sync after.
void mergeAttentionRow(AttentionContext& c, ir::Val t, ir::Val lds, const std::function<void(ir::Val, ir::Val)>& out);

/// The writers' E4M3 conversion in the IR (AttentionNumerics.h, e4m3): F32ToFp8, but |x| > 464
/// and +-Inf give NaN (0x7f, 0xff by sign). An i32 code.
ir::Val e4m3Writer(ir::Builder& b, ir::Val x);

}  // namespace monogen::specs::minimax_m3
