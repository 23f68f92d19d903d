// The compiled kernel's ISA instructions per IR op (codegen::attributeIsa, converted by the CLI):
// with it, the timing model charges an ALU op's issue by its attributed instructions, not its class.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace monogen::runtime::timing {

/// In codegen::IsaClass's order.
enum IsaKind : uint8_t { kIsaSalu, kIsaSmem, kIsaValu, kIsaTrans, kIsaCvt, kIsaMfmaBf16, kIsaMfmaFp8, kIsaMfmaF32,
                         kIsaMfma, kIsaVmem, kIsaLds, kIsaBranch, kIsaWaitcnt, kIsaOther, kIsaKinds };

struct IsaCounts {
  /// Index: the op's 1-based preorder number (SimInst::opNum); 0: instructions with no owner op.
  std::vector<std::array<int32_t, kIsaKinds>> byOp;
  /// byOp split by the compiled code's loop depth: byDepth[op][d], the op's instructions d loops
  /// enclose. An instruction at a depth below its op's IR loop depth was hoisted out of the loops
  /// between: it issues once an iteration of its enclosing loop, not once an execution of the op.
  /// Empty: every instruction at its op's own depth.
  std::vector<std::vector<std::array<int32_t, kIsaKinds>>> byDepth;
  int32_t total(size_t op) const {
    int32_t n = 0;
    if (op < byOp.size())
      for (int32_t c : byOp[op]) n += c;
    return n;
  }
};

}  // namespace monogen::runtime::timing
