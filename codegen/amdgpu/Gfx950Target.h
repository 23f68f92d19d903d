// gfx950 (MI350X / MI355X) behind the target seam: its intrinsics, its memory-model code
// sequences (AMDGPUUsage, GFX942 rows) and its MFMA shapes.
#pragma once
#include "codegen/TargetInfo.h"

namespace monogen::codegen::amdgpu {

/// The one gfx950 TargetInfo (stateless).
const TargetInfo& gfx950();

}  // namespace monogen::codegen::amdgpu
