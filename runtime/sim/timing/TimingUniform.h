// Which flat instructions compute a wave-uniform value (the same in every active lane), as the
// compiler's divergence analysis finds it: their integer ops issue on the SALU, not the VALU.
#pragma once
#include <vector>

#include "runtime/sim/SimProgram.h"

namespace monogen::runtime::timing {

/// Per flat instruction: true if its result is wave-uniform. An op is uniform if its operands are
/// and it does not vary by lane (WaveId, ReadFirstLane and Ballot are uniform a wave); a variable is
/// uniform if every store to it is, outside any divergent if or loop.
std::vector<bool> uniformResults(const SimProgram& prog);

}  // namespace monogen::runtime::timing
