// A stable text form of Plans and kernel IR: the main IR dump. The same Plan prints the same
// text on every run and platform.
#pragma once
#include <string>

#include "ir/Plan.h"

namespace monogen::ir {

/// The Plan (key, target, grid, args, regions, flags, pools, stages), without the kernel body.
std::string printPlan(const Plan& plan);
/// The kernel IR of a Plan, one op a line, regions indented. Stage scopes print their names.
std::string printKernel(const Plan& plan);
/// A function alone (stage scopes print their indices).
std::string printFunction(const Function& fn);

}  // namespace monogen::ir
