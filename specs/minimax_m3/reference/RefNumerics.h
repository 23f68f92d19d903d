// Whose numerics the MiniMax-M3 reference models (docs/reference-numerics.md).
#pragma once

namespace monogen::specs::minimax_m3 {

/// Ir: the IR's declared models (what the Sim device computes). Gfx950Run: the gfx950-run
/// executor's declared differences (runtime/Gfx950RunNumerics.h): exp2, tiny quotients, f32 MFMA.
enum class RefNumerics { Ir, Gfx950Run };

}  // namespace monogen::specs::minimax_m3
