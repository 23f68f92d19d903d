// Offset ranges: an interval analysis over the kernel IR's integers proving that no byte offset
// into a tensor of 2 GiB or more is computed in arithmetic that can wrap (an i32 index must be
// sign-extended to i64 before it is scaled). Smaller tensors are left to the bounds checks.
#pragma once
#include <string>
#include <vector>

#include "ir/Plan.h"

namespace monogen::ir {

/// One message per ptr_add into a tensor of 2^31 bytes or more whose offset can wrap, naming
/// the ptr_add (stage, op number), the tensor and its size, and the op where wrapping can
/// begin with its range. Op numbers count as the verifier's do. Empty when every offset holds.
std::vector<std::string> offsetRangeProblems(const Plan& plan);

}  // namespace monogen::ir
