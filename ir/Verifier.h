// The verifier: structural checks on a Plan and its kernel IR before anything is lowered or run.
#pragma once
#include <string>
#include <vector>

#include "ir/Plan.h"

namespace monogen::ir {

/// Checks the Plan (flags: one publisher, no wait cycles; pools, regions and task placement) and
/// its kernel IR (types, dominance, uniform barriers, offsets that cannot wrap; docs/codegen.md).
/// Throws IrError naming the variant and the stage/flag/pool/op at the first problem.
void verify(const Plan& plan);

/// All problems found, one message each (verify() throws the first).
std::vector<std::string> verifyAll(const Plan& plan);

}  // namespace monogen::ir
