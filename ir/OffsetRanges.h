// Offset ranges: no byte offset into a kernel tensor is computed in integer arithmetic that can
// wrap, given the Plan's tensor sizes.
//
// An interval analysis over the kernel IR's integers: constants are exact; thread, lane, wave and
// block ids range over the Plan's grid; a for loop's induction variable over its bounds; a
// mutable variable over every value stored to it (to a fixed point, widened when it does not
// settle); loads, waits and scalar arguments are anything their type holds. An add, sub, mul or
// shl whose exact result can leave its type's range "can wrap", and so can whatever is computed
// from it.
//
// A wrapped i32 offset is harmless into a tensor under 2 GiB (the sum is right modulo 2^32 and
// the in-bounds result fits in i32; the devices bounds-check it). Into a tensor of 2 GiB or more
// it addresses the wrong memory, as an expert's i32 byte offset into TP 1's 2.4 GB w13 did. So a
// pointer into such a tensor (an argument and every ptr_add chain from it) must take offsets
// that cannot wrap: an index sign-extended to i64 before it is scaled.
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
