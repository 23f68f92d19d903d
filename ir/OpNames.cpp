// Printed names of the attribute enums (an op's name is its record in ir/Ops.def).
#include "ir/Op.h"

namespace monogen::ir {

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

}  // namespace monogen::ir
