// The stages of the MiniMax-M3 FFN kernel, one function a stage (one file each). A stage
// function emits one task's body; Spec.cpp runs it in the stage's task loop.
#pragma once
#include <vector>

#include "ir/Builder.h"
#include "specs/minimax_m3/KernelContext.h"

namespace monogen::specs::minimax_m3 {

/// push: pairs 16 task .. of this rank's o_proj partial to every rank's ATTN.
void stagePush(KernelContext& c, ir::Val task);
/// reduce: the ranks' pairs 16 task .. in rank order + residual -> res_out, SRES, SSQ.
void stageReduce(KernelContext& c, ir::Val task);

/// The finish stages' control arguments (StageFinish.cpp): epoch, handshake, inject, and the
/// trace buffer when key.trace (its stage count is set by addFinishStages).
std::vector<ir::KernelArg> finishArgs(const Layout& L, const ir::Key& key);
/// mark (every CTA), epoch (CTA 0), handshake (CTA 0, the step's last launch): appends the three
/// stages to the Plan and emits them. The last step of buildPlan: it also sets the trace's stage
/// count, so every stage must be in the Plan before it.
void addFinishStages(KernelContext& c, ir::Plan& plan);

}  // namespace monogen::specs::minimax_m3
