// costClassOf: an exhaustive switch over ir::OpCode (no default: runtime/sim builds with
// -Werror=switch), so a new op must be given a cost class.
#include "runtime/sim/timing/TimingCost.h"

#include <unordered_map>

namespace monogen::runtime::timing {

CostClass costClassOf(uint16_t code) {
  if (code >= kSimIfBegin) return CostClass::Salu;  // exec-mask and branch pseudo-ops
  using ir::OpCode;
  switch (static_cast<OpCode>(code)) {
    case OpCode::ConstInt: case OpCode::ConstFloat: case OpCode::WaveId: case OpCode::BlockId: case OpCode::Arg:
    case OpCode::Extract: case OpCode::Insert: case OpCode::Splat: case OpCode::Bitcast: case OpCode::PtrToInt:
    case OpCode::IntToPtr: case OpCode::Trunc: case OpCode::ZExt: case OpCode::VarLoad: case OpCode::VarStore:
      return CostClass::Free;
    case OpCode::ThreadId: case OpCode::LaneId: case OpCode::Add: case OpCode::Sub: case OpCode::Mul:
    case OpCode::And: case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::LShr: case OpCode::AShr:
    case OpCode::Min: case OpCode::Max: case OpCode::UMin: case OpCode::UMax: case OpCode::Fma: case OpCode::Cmp:
    case OpCode::Select: case OpCode::PtrAdd: case OpCode::SExt: case OpCode::Abs: case OpCode::Shuffle:
    case OpCode::Ballot: case OpCode::Popcount: case OpCode::ReadFirstLane: case OpCode::CtaUniform:
    case OpCode::BF16ToF32:
      return CostClass::Valu;
    case OpCode::Div: case OpCode::Rem: case OpCode::UDiv: case OpCode::URem: return CostClass::Divide;
    case OpCode::SIToFP: case OpCode::UIToFP: case OpCode::FPToSI: case OpCode::F32ToBF16: case OpCode::Fp4ToF32:
    case OpCode::Fp4x8ToBF16x8: case OpCode::E8m0ToF32: case OpCode::Fp8ToF32: case OpCode::F32ToFp8:
    case OpCode::F32x2ToFp8x2:
      return CostClass::Convert;
    case OpCode::Exp2: case OpCode::Rcp: case OpCode::Rsq: case OpCode::Sqrt: return CostClass::Trans;
    case OpCode::Load: case OpCode::Store: case OpCode::AtomicRmw: case OpCode::CmpXchg: return CostClass::Memory;
    case OpCode::Fence: return CostClass::Fence;
    case OpCode::Barrier: return CostClass::Barrier;
    case OpCode::Publish: return CostClass::Publish;
    case OpCode::Wait: return CostClass::Wait;
    case OpCode::Sleep: return CostClass::Sleep;
    case OpCode::Realtime: return CostClass::Realtime;
    case OpCode::Mfma: case OpCode::MfmaScale: return CostClass::Mfma;
    case OpCode::If: case OpCode::For: case OpCode::While: case OpCode::StageScope:
      return CostClass::Salu;  // flattened away before the model sees them
  }
  return CostClass::Valu;
}

}  // namespace monogen::runtime::timing

namespace monogen::runtime::timing {

std::vector<int> constantDivisions(const SimProgram& prog) {
  std::vector<int> r(prog.insts.size(), 0);
  std::unordered_map<uint32_t, int64_t> consts;  // slot -> the ConstInt it holds at this point
  for (size_t pc = 0; pc < prog.insts.size(); ++pc) {
    const SimInst& in = prog.insts[pc];
    if (in.code >= kSimIfBegin) {
      if (in.res != kSimNoSlot) consts.erase(in.res);
      continue;
    }
    const auto code = static_cast<ir::OpCode>(in.code);
    if (code == ir::OpCode::Div || code == ir::OpCode::Rem || code == ir::OpCode::UDiv || code == ir::OpCode::URem) {
      auto it = consts.find(in.opd[1]);
      if (it != consts.end() && it->second > 0) r[pc] = (it->second & (it->second - 1)) == 0 ? 1 : 4;
    }
    if (in.res == kSimNoSlot) continue;
    if (code == ir::OpCode::ConstInt) consts[in.res] = in.op->attrs.imm;
    else consts.erase(in.res);
  }
  return r;
}

}  // namespace monogen::runtime::timing
