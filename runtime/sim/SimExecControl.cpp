// The interpreter's control class: the SimCode pseudo-ops of structured control flow over the
// exec-mask stack (SimProgram.h), and mutable variables.
#include <fmt/format.h>

#include "runtime/sim/SimLanes.h"
#include "runtime/sim/SimLaunch.h"

namespace monogen::runtime {

using namespace simlanes;

SimLaunch::Status SimLaunch::visitControl(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  const uint64_t exec = w.exec;
  uint64_t* const ms = reinterpret_cast<uint64_t*>(fr + prog_.maskBase) + 2 * in.depth;  // save, else
  switch (in.code) {
    case kSimIfBegin: {
      uint64_t c = 0;
      FOR_LANES(exec, l) if (fr[in.opd[0] + l]) c |= 1ull << l;
      ms[0] = exec;
      ms[1] = exec & ~c;
      w.exec = c;
      w.pc = c ? w.pc + 1 : in.target;
      return kContinue;
    }
    case kSimElse:
      w.exec = ms[1];
      w.pc = w.exec ? w.pc + 1 : in.target;
      return kContinue;
    case kSimEndIf:
    case kSimLoopEnd:
      w.exec = ms[0];
      ++w.pc;
      return kContinue;
    case kSimForInit:
      ms[0] = exec;
      FOR_LANES(exec, l) st<int32_t>(fr + in.res + 4 * l, ld<int32_t>(fr + in.opd[0] + 4 * l));
      ++w.pc;
      return kContinue;
    case kSimForCheck: {
      uint64_t keep = 0;
      FOR_LANES(exec, l) {
        const int32_t iv = ld<int32_t>(fr + in.opd[0] + 4 * l), hi = ld<int32_t>(fr + in.opd[1] + 4 * l),
                      stp = ld<int32_t>(fr + in.opd[2] + 4 * l);
        if (stp > 0 ? iv < hi : iv > hi) keep |= 1ull << l;
      }
      w.exec = keep;
      w.pc = keep ? w.pc + 1 : in.target;
      return kContinue;
    }
    case kSimForStep:
      FOR_LANES(exec, l) {
        const uint32_t iv = ld<uint32_t>(fr + in.opd[0] + 4 * l), stp = ld<uint32_t>(fr + in.opd[1] + 4 * l);
        st<uint32_t>(fr + in.res + 4 * l, iv + stp);
      }
      w.pc = in.target;
      return kContinue;
    case kSimLoopBegin:
      ms[0] = exec;
      ++w.pc;
      return kContinue;
    case kSimWhileCheck: {
      uint64_t keep = 0;
      FOR_LANES(exec, l) if (fr[in.opd[0] + l]) keep |= 1ull << l;
      w.exec = keep;
      w.pc = keep ? w.pc + 1 : in.target;
      return kContinue;
    }
    case kSimJump:
      w.pc = in.target;
      return kContinue;
    default: cannotRun(w, in);
  }
}

SimLaunch::Status SimLaunch::visitVariable(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  if (in.code == static_cast<uint16_t>(ir::OpCode::VarLoad)) {
    const int n = in.rt.bytes();
    FOR_LANES(w.exec, l) copyN(fr + in.res + n * l, fr + in.var + n * l, n);
  } else {
    const int n = in.t0.bytes();
    FOR_LANES(w.exec, l) copyN(fr + in.var + n * l, fr + in.opd[0] + n * l, n);
  }
  ++w.pc;
  return kContinue;
}

void SimLaunch::visitStructured(SimWave& w, const SimInst& in) { cannotRun(w, in); }

void SimLaunch::cannotRun(const SimWave& w, const SimInst& in) const {
  fail(w, in, -1, fmt::format("the Sim device cannot run opcode {}", in.code));
}

}  // namespace monogen::runtime
