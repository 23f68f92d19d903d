// ISA attribution (codegen::attributeIsa): the opt-in debug lines leave the instruction stream
// as it is, and every instruction of the FFN launch's code is counted once.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "codegen/Compiler.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/Spec.h"

using namespace monogen;
namespace mm = monogen::specs::minimax_m3;

namespace {
ir::Plan reducedPlan() {
  const mm::ModelConfig cfg = mm::ModelConfig::reduced();
  return mm::verifiedPlan(cfg, mm::makeKey(cfg, 8, 4));
}
}  // namespace

TEST_CASE("attributed compiles emit the same instruction stream", "[codegen][attribution]") {
  const ir::Plan p = reducedPlan();
  const std::vector<uint8_t> plain = codegen::textBytes(p);
  const codegen::IsaAttribution a = codegen::attributeIsa(p);
  REQUIRE(!plain.empty());
  CHECK(a.text == plain);

  int64_t counted = 0, owned = 0, mfma = 0;
  for (size_t op = 0; op < a.byOp.size(); ++op)
    for (int c = 0; c < codegen::kIsaClasses; ++c) {
      counted += a.byOp[op][c];
      if (op) owned += a.byOp[op][c];
      if (static_cast<codegen::IsaClass>(c) == codegen::IsaClass::MfmaBf16) mfma += a.byOp[op][c];
    }
  CHECK(counted == a.instructions);
  // Most instructions have an owner (the rest: the prologue, line-0 code LLVM made up).
  CHECK(owned > a.instructions * 3 / 4);
  CHECK(mfma > 0);
  WARN(fmt::format("{} instructions, {} with an owner op, {} bf16 MFMAs", a.instructions, owned, mfma));
}

TEST_CASE("attributed instructions split by the compiled code's loop depth", "[codegen][attribution]") {
  const codegen::IsaAttribution a = codegen::attributeIsa(reducedPlan());
  REQUIRE(a.byDepth.size() == a.byOp.size());
  int maxDepth = 0;
  int64_t mfmaOutside = 0, mfmaInside = 0;
  for (size_t op = 0; op < a.byOp.size(); ++op) {
    std::array<int32_t, codegen::kIsaClasses> sum{};
    for (size_t d = 0; d < a.byDepth[op].size(); ++d)
      for (int c = 0; c < codegen::kIsaClasses; ++c) {
        sum[c] += a.byDepth[op][d][c];
        if (a.byDepth[op][d][c]) maxDepth = std::max(maxDepth, static_cast<int>(d));
      }
    CHECK(sum == a.byOp[op]);
    const int mfma = static_cast<int>(codegen::IsaClass::MfmaBf16);
    for (size_t d = 0; d < a.byDepth[op].size(); ++d) (d ? mfmaInside : mfmaOutside) += a.byDepth[op][d][mfma];
  }
  // down's task, slot and K-step loops nest three deep; up's and down's GEMVs run in task loops
  CHECK(maxDepth >= 3);
  CHECK(mfmaOutside == 0);
  CHECK(mfmaInside > 0);
}

TEST_CASE("instruction classes by opcode name", "[codegen][attribution]") {
  using codegen::IsaClass;
  CHECK(codegen::isaClassOf("V_MFMA_F32_16X16X32_BF16_vi") == IsaClass::MfmaBf16);
  CHECK(codegen::isaClassOf("V_MFMA_F32_16X16X32_FP8_FP8_vi") == IsaClass::MfmaFp8);
  CHECK(codegen::isaClassOf("S_WAITCNT_gfx6_gfx7") == IsaClass::Waitcnt);
  CHECK(codegen::isaClassOf("S_CBRANCH_SCC1") == IsaClass::Branch);
  CHECK(codegen::isaClassOf("S_LOAD_DWORDX2_IMM_vi") == IsaClass::Smem);
  CHECK(codegen::isaClassOf("S_ADD_U32_vi") == IsaClass::Salu);
  CHECK(codegen::isaClassOf("V_EXP_F32_e32_vi") == IsaClass::Trans);
  CHECK(codegen::isaClassOf("V_CVT_SCALEF32_PK_BF16_FP4_vi") == IsaClass::Cvt);
  CHECK(codegen::isaClassOf("V_ADD_U32_e32_vi") == IsaClass::Valu);
  CHECK(codegen::isaClassOf("GLOBAL_LOAD_DWORDX4_vi") == IsaClass::Vmem);
  CHECK(codegen::isaClassOf("DS_READ_B128_vi") == IsaClass::Lds);
}
