// A CTA's barrier and its block-wide f32 sum, spec-independent.
#pragma once
#include "ir/Builder.h"
#include "specs/common/SyncHooks.h"

namespace monogen::specs {

/// The CTA's barrier. drain: every thread's earlier stores are released at agent scope first, so
/// a flag published after it covers the whole CTA's stores.
void ctaSync(ir::Builder& b, bool drain, SyncHooks& hooks);

/// A wave's 64 lanes summed in butterfly order (blockSum's per-wave step); every lane gets the sum.
ir::Val waveSum(ir::Builder& b, ir::Val v);

/// v (f32) summed over the CTA: each wave's butterfly (32 .. 1), then 0 + wave_0 + ... in order
/// through `red` (LDS, f32 [waves]). Every thread gets the sum. CTA-uniform flow only.
ir::Val blockSum(ir::Builder& b, ir::Val v, ir::Val lane, ir::Val wave, ir::Val red, int waves, SyncHooks& hooks);

}  // namespace monogen::specs
