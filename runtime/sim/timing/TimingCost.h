// The cost class of each IR op under the gfx950 timing model: which SIMD pipe it issues on, how
// many machine instructions it is, and its result latency (TimingModel.cpp charges them).
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/sim/SimProgram.h"

namespace monogen::runtime::timing {

enum class CostClass : uint8_t {
  Free,       // a register view or a wave-uniform value already in SGPRs: no instruction
  Salu,       // scalar ALU and branches (the flattened control flow)
  Valu,
  Trans,      // v_exp, v_rcp, v_rsq, v_sqrt
  Convert,    // casts and the float formats
  Divide,     // integer division's VALU sequence
  Mfma,       // by attrs.mfma; MfmaScale by its operand formats
  Memory,     // Load, Store, AtomicRmw, CmpXchg: by address space (LDS, global, peer)
  Fence,
  Barrier,
  Publish,
  Wait,
  Sleep,
  Realtime,
};

/// The cost class of flat instruction code `code` (an ir::OpCode or a SimCode pseudo-op).
CostClass costClassOf(uint16_t code);

/// Per flat instruction: for a Div/Rem/UDiv/URem by a constant, the instructions the compiler turns
/// it into (a power of two: 1, a shift or mask; else 4, a multiply-high and shifts); 0 otherwise
/// (a full division sequence).
std::vector<int> constantDivisions(const SimProgram& prog);

}  // namespace monogen::runtime::timing
