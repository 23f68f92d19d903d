// The stages of the MiniMax-M3 FFN kernel, one function a stage (one file each). A stage
// function emits one task's body; Spec.cpp runs it in the stage's task loop.
#pragma once
#include "ir/Builder.h"
#include "specs/minimax_m3/KernelContext.h"

namespace monogen::specs::minimax_m3 {

/// push: pairs 16 task .. of this rank's o_proj partial to every rank's ATTN.
void stagePush(KernelContext& c, ir::Val task);
/// reduce: the ranks' pairs 16 task .. in rank order + residual -> res_out, SRES, SSQ.
void stageReduce(KernelContext& c, ir::Val task);

}  // namespace monogen::specs::minimax_m3
