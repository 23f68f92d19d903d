// SimProgram: a kernel's structured IR flattened once per run into a SIMT program the Sim
// device's waves step through. Control flow becomes pseudo-instructions over an exec-mask stack
// (If/Else/EndIf, For and While loops whose lanes leave independently); every SSA value gets a
// register slot of type.bytes() per lane, and slots are reused once a value's live range ends
// (linear scan; a value live across a loop's back edge stays live for the whole loop).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/Plan.h"

namespace monogen::runtime {

/// Flat opcodes: every ir::OpCode (but If/For/While/StageScope), plus the control pseudo-ops.
enum SimCode : uint16_t {
  kSimIfBegin = 1000,  ///< opd0 cond. save[d] = exec; else[d] = exec & ~cond; exec &= cond; empty -> target (Else).
  kSimElse,            ///< exec = else[d]; empty -> target (EndIf).
  kSimEndIf,           ///< exec = save[d].
  kSimForInit,         ///< opd0 lo; res (the induction var) = lo; save[d] = exec.
  kSimForCheck,        ///< opd0 iv, opd1 hi, opd2 step: lanes leave unless (step > 0 ? iv < hi : iv > hi); none left -> target.
  kSimForStep,         ///< opd0 iv, opd1 step: iv += step; jump to target (ForCheck).
  kSimLoopBegin,       ///< While: save[d] = exec.
  kSimWhileCheck,      ///< opd0 the cond yield: exec &= cond; none left -> target (LoopEnd).
  kSimJump,            ///< jump to target.
  kSimLoopEnd,         ///< exec = save[d].
};

constexpr uint32_t kSimNoSlot = 0xffffffffu;

/// One flat instruction. Slots are byte offsets into a wave's frame; a value of B bytes a lane
/// occupies 64 * B bytes there, lane l at slot + l * B.
struct SimInst {
  uint16_t code = 0;         // ir::OpCode or SimCode
  uint8_t nopd = 0;
  int16_t stage = -1;        // Plan stage index of the enclosing StageScope, -1 if none
  ir::Type rt;               // result type
  ir::Type t0, t1;           // types of operands 0 and 1
  uint32_t res = kSimNoSlot; // result slot
  uint32_t opd[5] = {kSimNoSlot, kSimNoSlot, kSimNoSlot, kSimNoSlot, kSimNoSlot};
  int32_t target = -1;       // jump target (pc)
  int32_t depth = 0;         // mask-stack index of a control pseudo-op
  int32_t opNum = 0;         // the op's 1-based preorder number in the function, as the verifier counts
  uint32_t var = kSimNoSlot; // VarLoad/VarStore: the variable's slot
  const ir::Op* op = nullptr;
};

/// The flat program and its frame layout.
struct SimProgram {
  std::vector<SimInst> insts;
  uint32_t valueBytes = 0;   // register slots
  uint32_t varBase = 0, varBytes = 0;
  uint32_t maskBase = 0;     // 2 * maxDepth u64: save[d] at maskBase + 16 d, else[d] at + 8
  int maxDepth = 0;
  uint32_t frameBytes = 0;   // all of it, a multiple of 64
  int32_t maxArgIndex = -1;  // largest Arg index any op reads
  int32_t maxArgOpNum = -1;

  /// Flattens plan.kernel. Throws SimError on IR it cannot run (a use with no definition...).
  static SimProgram compile(const ir::Plan& plan);
};

}  // namespace monogen::runtime
