// The verifier: structural checks on a Plan and its kernel IR before anything is lowered or run.
#pragma once
#include <string>
#include <vector>

#include "ir/Plan.h"

namespace monogen::ir {

/// Checks the Plan:
///  - every waited flag array has exactly one publishing stage, which publishes each pair once
///    per launch (peer arrays: counted over every rank);
///  - no wait cycle between stages, program order included (a CTA runs its stages in order, so
///    a wait on a later stage's flag can deadlock);
///  - pools fit in LDS and only declared aliases overlap; regions fit their buffers and do not
///    overlap; every stage's tasks are placed on the grid and its body is in the kernel once.
/// And the kernel IR: operand types and dominance, barriers only in CTA-uniform control flow,
/// and no byte offset into a tensor of 2 GiB or more computed in arithmetic that can wrap
/// (ir/OffsetRanges.h).
/// Throws IrError naming the variant and the stage/flag/pool/op at the first problem.
void verify(const Plan& plan);

/// All problems found, one message each (verify() throws the first).
std::vector<std::string> verifyAll(const Plan& plan);

}  // namespace monogen::ir
