// The MiniMax-M3 FFN launch as a Plan: arguments, regions, flags, pools, stages and the kernel
// body, for one Key (S, TP) on a ModelConfig.
#pragma once
#include "ir/Plan.h"
#include "runtime/Launch.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

struct FfnVariant;

inline constexpr const char* kSpecId = "minimax_m3.ffn";
// v2: the default variant reads s13 / s2 e8m0_shuffle'd (v1 read them row-major; the scales knob).
// v3: the default variant takes the attention rows, o_proj in the launch (v2 took the o_proj
// partial, now the key's "input=part"; the input knob).
inline constexpr int kSpecVersion = 3;

/// The key's parameters, in this order: decode rows S and tensor-parallel size TP.
inline constexpr const char* kParamRows = "S";
inline constexpr const char* kParamTp = "TP";
/// S and TP of a key of this spec (IrError naming the key when one is absent or text).
int rowsOf(const ir::Key& key);
int tpOf(const ir::Key& key);

/// Builds the launch of key (S = rowsOf(key), TP = tpOf(key)) on cfg. key.config must be empty (it is
/// set to cfg.canonical()) or equal cfg.canonical(). Throws InputError naming the variant on a
/// wrong spec id or version, parameters other than (S, TP), config text, S, TP or drop-mark CTA.
ir::Plan buildPlan(const ModelConfig& cfg, const ir::Key& key);
/// The same, for a variant already made and checked.
ir::Plan buildPlan(const FfnVariant& v);

/// The layouts s13 and s2 declare when held in `scales` (WeightContract.h); argLayouts
/// (Generate.h) gives a Plan's.
runtime::ArgLayouts scaleArgLayouts(ScaleLayout scales);

/// A key for (S, TP) on cfg with these knobs (by default every knob at its default).
ir::Key makeKey(const ModelConfig& cfg, int rows, int tp, const FfnKnobs& knobs = {});

}  // namespace monogen::specs::minimax_m3
