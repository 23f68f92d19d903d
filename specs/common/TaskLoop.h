// A stage's task loop over the grid, spec-independent.
#pragma once
#include <cstdint>
#include <functional>

#include "ir/Builder.h"

namespace monogen::specs {

/// The CTA's first task of a stage placed from CTA `base`: (block - base + blocks) % blocks.
ir::Val firstTask(ir::Builder& b, ir::Val block, int64_t base, int blocks);
/// As firstTask; from a base other than 0 computed from the stage's own block id (Builder::stageBlock,
/// lowered per stage: TargetInfo::stageBlockId) and an unsigned remainder, so stages that
/// share a base do not share the value across the stages between them (SGPR pressure in the
/// layer launch). From base 0, firstTask's IR.
ir::Val stageFirstTask(ir::Builder& b, ir::Val block, int64_t base, int blocks);

/// The tasks of a stage placed from CTA `base` this CTA runs: t = (block - base + blocks) %
/// blocks; t < tasks; t += blocks. The bounds are CTA-uniform, so the body may hold barriers.
void forEachTask(ir::Builder& b, ir::Val block, int64_t base, int64_t tasks, int blocks,
                 const std::function<void(ir::Val task)>& body, bool stageBlock = false);

}  // namespace monogen::specs
