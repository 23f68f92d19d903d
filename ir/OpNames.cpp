// Printed names of opcodes and attribute enums.
#include "ir/Op.h"

namespace monogen::ir {

const char* opName(OpCode c) {
  switch (c) {
    case OpCode::ConstInt: return "const";
    case OpCode::ConstFloat: return "constf";
    case OpCode::ThreadId: return "thread_id";
    case OpCode::LaneId: return "lane_id";
    case OpCode::WaveId: return "wave_id";
    case OpCode::BlockId: return "block_id";
    case OpCode::Arg: return "arg";
    case OpCode::Add: return "add";
    case OpCode::Sub: return "sub";
    case OpCode::Mul: return "mul";
    case OpCode::Div: return "div";
    case OpCode::Rem: return "rem";
    case OpCode::UDiv: return "udiv";
    case OpCode::URem: return "urem";
    case OpCode::And: return "and";
    case OpCode::Or: return "or";
    case OpCode::Xor: return "xor";
    case OpCode::Shl: return "shl";
    case OpCode::LShr: return "lshr";
    case OpCode::AShr: return "ashr";
    case OpCode::Min: return "min";
    case OpCode::Max: return "max";
    case OpCode::UMin: return "umin";
    case OpCode::UMax: return "umax";
    case OpCode::Fma: return "fma";
    case OpCode::Cmp: return "cmp";
    case OpCode::Select: return "select";
    case OpCode::Bitcast: return "bitcast";
    case OpCode::Trunc: return "trunc";
    case OpCode::ZExt: return "zext";
    case OpCode::SExt: return "sext";
    case OpCode::SIToFP: return "sitofp";
    case OpCode::UIToFP: return "uitofp";
    case OpCode::FPToSI: return "fptosi";
    case OpCode::BF16ToF32: return "bf16_to_f32";
    case OpCode::F32ToBF16: return "f32_to_bf16";
    case OpCode::Fp4ToF32: return "fp4_to_f32";
    case OpCode::Fp4x8ToBF16x8: return "fp4x8_to_bf16x8";
    case OpCode::E8m0ToF32: return "e8m0_to_f32";
    case OpCode::Fp8ToF32: return "fp8_to_f32";
    case OpCode::F32ToFp8: return "f32_to_fp8";
    case OpCode::Exp2: return "exp2";
    case OpCode::Rcp: return "rcp";
    case OpCode::Rsq: return "rsq";
    case OpCode::Sqrt: return "sqrt";
    case OpCode::Extract: return "extract";
    case OpCode::Insert: return "insert";
    case OpCode::Splat: return "splat";
    case OpCode::PtrAdd: return "ptr_add";
    case OpCode::PtrToInt: return "ptr_to_int";
    case OpCode::IntToPtr: return "int_to_ptr";
    case OpCode::Load: return "load";
    case OpCode::Store: return "store";
    case OpCode::AtomicRmw: return "atomic_rmw";
    case OpCode::CmpXchg: return "cmpxchg";
    case OpCode::Fence: return "fence";
    case OpCode::Barrier: return "barrier";
    case OpCode::Shuffle: return "shuffle";
    case OpCode::Ballot: return "ballot";
    case OpCode::Popcount: return "popcount";
    case OpCode::ReadFirstLane: return "readfirstlane";
    case OpCode::Mfma: return "mfma";
    case OpCode::Publish: return "publish";
    case OpCode::Wait: return "wait";
    case OpCode::Realtime: return "realtime";
    case OpCode::Sleep: return "sleep";
    case OpCode::VarLoad: return "var_load";
    case OpCode::VarStore: return "var_store";
    case OpCode::If: return "if";
    case OpCode::For: return "for";
    case OpCode::While: return "while";
    case OpCode::StageScope: return "stage";
  }
  return "?";
}

const char* cmpPredName(CmpPred p) {
  static const char* n[] = {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt",
                            "uge", "oeq", "one", "olt", "ole", "ogt", "oge", "uno", "ord"};
  return n[static_cast<int>(p)];
}
const char* rmwOpName(RmwOp r) {
  static const char* n[] = {"add", "or", "and", "xor", "max", "min", "umax", "umin", "xchg"};
  return n[static_cast<int>(r)];
}
const char* memOrderName(MemOrder o) {
  static const char* n[] = {"plain", "relaxed", "acquire", "release", "acq_rel", "seq_cst"};
  return n[static_cast<int>(o)];
}
const char* memScopeName(MemScope s) {
  static const char* n[] = {"workgroup", "agent", "system"};
  return n[static_cast<int>(s)];
}
const char* mfmaKindName(MfmaKind k) {
  switch (k) {
    case MfmaKind::None: return "none";
    case MfmaKind::F32_16x16x32_BF16: return "f32_16x16x32_bf16";
    case MfmaKind::F32_16x16x4_F32: return "f32_16x16x4_f32";
    case MfmaKind::F32_16x16x32_FP8: return "f32_16x16x32_fp8_fp8";
  }
  return "?";
}

bool isBlocking(OpCode c) { return c == OpCode::Barrier || c == OpCode::Wait || c == OpCode::Sleep; }

bool touchesMemory(OpCode c) {
  switch (c) {
    case OpCode::Load: case OpCode::Store: case OpCode::AtomicRmw: case OpCode::CmpXchg:
    case OpCode::Publish: case OpCode::Wait:
      return true;
    default:
      return false;
  }
}

}  // namespace monogen::ir
