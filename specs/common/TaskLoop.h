// A stage's task loop over the grid, spec-independent.
#pragma once
#include <cstdint>
#include <functional>

#include "ir/Builder.h"

namespace monogen::specs {

/// The tasks of a stage placed from CTA `base` this CTA runs: t = (block - base + blocks) %
/// blocks; t < tasks; t += blocks. The bounds are CTA-uniform, so the body may hold barriers.
void forEachTask(ir::Builder& b, ir::Val block, int64_t base, int64_t tasks, int blocks,
                 const std::function<void(ir::Val task)>& body);

}  // namespace monogen::specs
