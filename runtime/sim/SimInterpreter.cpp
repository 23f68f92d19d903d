// SimLaunch::step: the interpreter's dispatch of one flat instruction to its op class's visit
// (SimExec<Class>.cpp), exhaustive over ir::OpCode.
#include "runtime/sim/SimLaunch.h"

#include <fmt/format.h>

#include "runtime/sim/timing/TimingModel.h"

namespace monogen::runtime {

SimLaunch::Status SimLaunch::step(SimWave& w) {
  const SimInst& in = prog_.insts[w.pc];
  if (timing_) [[unlikely]]  // a resumed Wait was charged when it began
    if (!w.inWait && !timing_->issue(waveIndex(w), w.pc, timedHorizon_)) return kYield;
  if (in.code >= kSimIfBegin) return visitControl(w, in);
  using ir::OpCode;
  switch (static_cast<OpCode>(in.code)) {
    case OpCode::ConstInt: case OpCode::ConstFloat: case OpCode::ThreadId: case OpCode::LaneId:
    case OpCode::WaveId: case OpCode::BlockId: case OpCode::Arg: return visitValue(w, in);
    case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::And: case OpCode::Or: case OpCode::Xor:
    case OpCode::Shl: case OpCode::LShr: case OpCode::AShr: case OpCode::Min: case OpCode::Max:
    case OpCode::UMin: case OpCode::UMax: case OpCode::Fma: return visitArith(w, in);
    case OpCode::Div: case OpCode::Rem: case OpCode::UDiv: case OpCode::URem: return visitDivide(w, in);
    case OpCode::Cmp: case OpCode::Select: return visitSelect(w, in);
    case OpCode::Extract: case OpCode::Insert: case OpCode::Splat:
    case OpCode::PtrAdd: return visitVector(w, in);
    case OpCode::Bitcast: case OpCode::PtrToInt: case OpCode::IntToPtr: case OpCode::Trunc: case OpCode::ZExt:
    case OpCode::SExt: case OpCode::SIToFP: case OpCode::UIToFP: case OpCode::FPToSI: case OpCode::BF16ToF32:
    case OpCode::F32ToBF16: case OpCode::Fp4ToF32: case OpCode::Fp4x8ToBF16x8: case OpCode::E8m0ToF32:
    case OpCode::Fp8ToF32: case OpCode::F32ToFp8: case OpCode::F32x2ToFp8x2: return visitConvert(w, in);
    case OpCode::Exp2: case OpCode::Rcp: case OpCode::Rsq: case OpCode::Sqrt:
    case OpCode::Abs: return visitMath(w, in);
    case OpCode::Load: case OpCode::Store: case OpCode::AtomicRmw: case OpCode::CmpXchg:
    case OpCode::Fence: return visitMemory(w, in);
    case OpCode::Barrier: case OpCode::Publish: case OpCode::Wait: case OpCode::Realtime:
    case OpCode::Sleep: return visitSync(w, in);
    case OpCode::Shuffle: case OpCode::Ballot: case OpCode::Popcount: case OpCode::ReadFirstLane: case OpCode::CtaUniform:
    case OpCode::Mfma: case OpCode::MfmaScale: return visitWaveOp(w, in);
    case OpCode::VarLoad: case OpCode::VarStore: return visitVariable(w, in);
    case OpCode::If: case OpCode::For: case OpCode::While: case OpCode::StageScope: visitStructured(w, in);
  }
  fail(w, in, -1, fmt::format("the Sim device cannot run opcode {}", in.code));
}

}  // namespace monogen::runtime
