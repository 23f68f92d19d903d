// ISA instructions per IR op: a compile whose debug lines are the ops' preorder numbers, its
// .debug_line read back with LLVM's DWARF library and its .text decoded with the AMDGPU
// disassembler; each instruction counts, by class, to the op of the line-table row covering it.
#include <fmt/format.h>

#include <algorithm>
#include <mutex>

#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCDisassembler/MCDisassembler.h>
#include <llvm/MC/MCInst.h>
#include <llvm/MC/MCInstrInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/Internal.h"
#include "codegen/TargetInfo.h"
#include "ir/Error.h"

extern "C" void LLVMInitializeAMDGPUDisassembler();

namespace monogen::codegen {

namespace {

bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

/// The relocatable object of one compile with `opts`.
std::vector<uint8_t> relocatable(const ir::Plan& plan, const CompileOptions& opts, const TargetInfo*& target) {
  detail::checkPlan(plan);
  const std::string where = plan.key.variantName();
  llvm::LLVMContext ctx;
  target = &targetInfoFor(plan.target(), where);
  auto tm = detail::makeTargetMachine(*target, where);
  auto m = detail::lower(plan, *target, ctx, *tm, opts.attributeOps);
  detail::optimize(*m, *tm, opts.pipeline);
  return detail::emitObject(*m, *tm, where);
}

std::unique_ptr<llvm::object::ObjectFile> openObject(const std::vector<uint8_t>& obj, const std::string& where) {
  auto o = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(
      llvm::StringRef(reinterpret_cast<const char*>(obj.data()), obj.size()), "monogen.o"));
  if (!o) throw CodegenError(where, "cannot read the relocatable object: " + llvm::toString(o.takeError()));
  return std::move(*o);
}

llvm::object::SectionRef textSection(const llvm::object::ObjectFile& o, const std::string& where) {
  for (const llvm::object::SectionRef& s : o.sections())
    if (s.isText()) return s;
  throw CodegenError(where, "the relocatable object has no .text section");
}

std::vector<uint8_t> sectionBytes(const llvm::object::SectionRef& s, const std::string& where) {
  auto c = s.getContents();
  if (!c) throw CodegenError(where, "cannot read .text: " + llvm::toString(c.takeError()));
  return std::vector<uint8_t>(c->begin(), c->end());
}

}  // namespace

const char* isaClassName(IsaClass c) {
  switch (c) {
    case IsaClass::Salu: return "salu";
    case IsaClass::Smem: return "smem";
    case IsaClass::Valu: return "valu";
    case IsaClass::Trans: return "trans";
    case IsaClass::Cvt: return "cvt";
    case IsaClass::MfmaBf16: return "mfma_bf16";
    case IsaClass::MfmaFp8: return "mfma_fp8";
    case IsaClass::MfmaF32: return "mfma_f32";
    case IsaClass::Mfma: return "mfma_other";
    case IsaClass::Vmem: return "vmem";
    case IsaClass::Lds: return "lds";
    case IsaClass::Branch: return "branch";
    case IsaClass::Waitcnt: return "waitcnt";
    case IsaClass::Other: return "other";
  }
  return "?";
}

IsaClass isaClassOf(const std::string& n) {
  if (starts(n, "S_WAITCNT")) return IsaClass::Waitcnt;
  if (starts(n, "S_BRANCH") || starts(n, "S_CBRANCH") || starts(n, "S_SETPC") || starts(n, "S_ENDPGM"))
    return IsaClass::Branch;
  if (starts(n, "S_LOAD") || starts(n, "S_BUFFER_LOAD") || starts(n, "S_STORE") || starts(n, "S_MEMREALTIME") ||
      starts(n, "S_MEMTIME") || starts(n, "S_DCACHE"))
    return IsaClass::Smem;
  if (starts(n, "S_NOP") || starts(n, "S_SLEEP") || starts(n, "S_BARRIER") || starts(n, "S_SETPRIO") ||
      starts(n, "S_CODE_END") || starts(n, "S_TRAP") || starts(n, "S_SETHALT"))
    return IsaClass::Other;
  if (starts(n, "S_")) return IsaClass::Salu;
  if (starts(n, "V_MFMA") || starts(n, "V_SMFMAC")) {
    if (n.find("BF16") != std::string::npos) return IsaClass::MfmaBf16;
    if (n.find("FP8") != std::string::npos || n.find("F8F6F4") != std::string::npos) return IsaClass::MfmaFp8;
    if (n.find("X4F32") != std::string::npos || n.find("X2F32") != std::string::npos ||
        n.find("X1F32") != std::string::npos || n.find("X4_F32") != std::string::npos)
      return IsaClass::MfmaF32;
    return IsaClass::Mfma;
  }
  for (const char* t : {"V_EXP_", "V_LOG_", "V_RCP_", "V_RSQ_", "V_SQRT_", "V_SIN_", "V_COS_"})
    if (starts(n, t)) return IsaClass::Trans;
  if (starts(n, "V_CVT")) return IsaClass::Cvt;
  if (starts(n, "V_")) return IsaClass::Valu;
  if (starts(n, "GLOBAL_") || starts(n, "BUFFER_") || starts(n, "FLAT_") || starts(n, "SCRATCH_"))
    return IsaClass::Vmem;
  if (starts(n, "DS_")) return IsaClass::Lds;
  return IsaClass::Other;
}

std::vector<uint8_t> textBytes(const ir::Plan& plan, const CompileOptions& opts) {
  const TargetInfo* target = nullptr;
  const std::vector<uint8_t> obj = relocatable(plan, opts, target);
  const std::string where = plan.key.variantName();
  auto o = openObject(obj, where);
  return sectionBytes(textSection(*o, where), where);
}

IsaAttribution attributeIsa(const ir::Plan& plan, CompileOptions opts) {
  opts.attributeOps = true;
  const std::string where = plan.key.variantName();
  const TargetInfo* target = nullptr;
  const std::vector<uint8_t> obj = relocatable(plan, opts, target);
  auto o = openObject(obj, where);
  const llvm::object::SectionRef text = textSection(*o, where);
  IsaAttribution r;
  r.text = sectionBytes(text, where);

  // The line table: (address, op) rows of the kernel's one sequence, in address order.
  auto dwarf = llvm::DWARFContext::create(*o);
  std::vector<std::pair<uint64_t, uint32_t>> rows;
  for (const auto& cu : dwarf->compile_units())
    if (const llvm::DWARFDebugLine::LineTable* lt = dwarf->getLineTableForUnit(cu.get()))
      for (const llvm::DWARFDebugLine::Row& row : lt->Rows)
        rows.emplace_back(row.Address.Address, row.EndSequence ? 0u : row.Line);
  if (rows.empty()) throw CodegenError(where, "the attributed compile has no .debug_line rows");
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  uint32_t maxLine = 0;
  for (const auto& [a, line] : rows) maxLine = std::max(maxLine, line);
  r.byOp.assign(maxLine + 1, {});

  // The disassembler over the same target.
  static std::once_flag once;
  std::call_once(once, [] { LLVMInitializeAMDGPUDisassembler(); });
  auto tm = detail::makeTargetMachine(*target, where);
  const llvm::Target& t = tm->getTarget();
  const llvm::Triple& triple = tm->getTargetTriple();
  llvm::MCContext mc(triple, tm->getMCAsmInfo(), tm->getMCRegisterInfo(), tm->getMCSubtargetInfo());
  std::unique_ptr<llvm::MCDisassembler> dis(t.createMCDisassembler(*tm->getMCSubtargetInfo(), mc));
  if (!dis) throw CodegenError(where, "no AMDGPU disassembler");
  const llvm::MCInstrInfo& mii = *tm->getMCInstrInfo();
  const llvm::ArrayRef<uint8_t> bytes(r.text);
  uint64_t end = rows.back().first;  // past the sequence's end: padding, not the kernel's
  end = std::min<uint64_t>(end, bytes.size());
  for (uint64_t pc = 0; pc < end;) {
    llvm::MCInst inst;
    uint64_t size = 0;
    if (dis->getInstruction(inst, size, bytes.slice(pc), pc, llvm::nulls()) != llvm::MCDisassembler::Success ||
        size == 0)
      throw CodegenError(where, fmt::format("cannot decode the instruction at .text+{:#x}", pc));
    auto it = std::upper_bound(rows.begin(), rows.end(), pc,
                               [](uint64_t a, const std::pair<uint64_t, uint32_t>& row) { return a < row.first; });
    const uint32_t op = it == rows.begin() ? 0 : std::prev(it)->second;
    ++r.byOp[op][static_cast<int>(isaClassOf(mii.getName(inst.getOpcode()).str()))];
    ++r.instructions;
    pc += size;
  }
  return r;
}

}  // namespace monogen::codegen
