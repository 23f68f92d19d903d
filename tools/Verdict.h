// The verdict line `monogen sim` and `monogen check` print for one run against the reference.
#pragma once
#include <optional>
#include <string>

#include "specs/minimax_m3/testing/SimHarness.h"

namespace monogen::tools {

/// "bit-exact", "MISMATCH: ..." (the first differing element) or "INVALID: ..." (an error word
/// is set: no output of the launch is a result, whatever its bits).
std::string verdictOf(const specs::minimax_m3::SimRun& run, const std::optional<specs::minimax_m3::Mismatch>& m);

}  // namespace monogen::tools
