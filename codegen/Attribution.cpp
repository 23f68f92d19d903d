// ISA instructions per IR op: a compile whose debug lines are the ops' preorder numbers, its
// .debug_line read back with LLVM's DWARF library and its .text decoded with the AMDGPU
// disassembler; each instruction counts, by class, to the op of the line-table row covering it.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCDisassembler/MCDisassembler.h>
#include <llvm/MC/MCInst.h>
#include <llvm/MC/MCInstrAnalysis.h>
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


/// One decoded instruction: its address, owner op, class, and its control flow.
struct DecodedInst {
  uint64_t pc = 0;
  uint32_t op = 0;
  IsaClass cls = IsaClass::Other;
  bool falls = true;     // execution may continue at the next instruction
  bool ends = false;     // it ends its basic block
  int64_t target = -1;   // a branch's target address
};

/// Per instruction, how many natural loops of the code's control-flow graph enclose it: basic
/// blocks, dominators (the iterative data-flow solution), a back edge u -> h where h dominates u,
/// h's loop the blocks that reach u without passing h. Blocks the entry does not reach: depth 0.
std::vector<int> loopDepths(const std::vector<DecodedInst>& code) {
  const size_t n = code.size();
  std::vector<int> depth(n, 0);
  if (n == 0) return depth;
  std::map<uint64_t, size_t> at;  // address -> instruction index
  for (size_t i = 0; i < n; ++i) at[code[i].pc] = i;
  std::vector<bool> leader(n, false);
  leader[0] = true;
  for (size_t i = 0; i < n; ++i) {
    if (code[i].target >= 0)
      if (auto it = at.find(static_cast<uint64_t>(code[i].target)); it != at.end()) leader[it->second] = true;
    if (code[i].ends && i + 1 < n) leader[i + 1] = true;
  }
  std::vector<size_t> blockOf(n), first;
  for (size_t i = 0; i < n; ++i) {
    if (leader[i]) first.push_back(i);
    blockOf[i] = first.size() - 1;
  }
  const size_t nb = first.size();
  std::vector<std::vector<size_t>> succ(nb), pred(nb);
  for (size_t b = 0; b < nb; ++b) {
    const size_t last = (b + 1 < nb ? first[b + 1] : n) - 1;
    const DecodedInst& d = code[last];
    if (d.target >= 0)
      if (auto it = at.find(static_cast<uint64_t>(d.target)); it != at.end()) succ[b].push_back(blockOf[it->second]);
    if (d.falls && b + 1 < nb) succ[b].push_back(b + 1);
    for (size_t s : succ[b]) pred[s].push_back(b);
  }
  // Dominators: dom[b] the blocks dominating b (bit sets), iterated to the fixed point.
  std::vector<bool> reached(nb, false);
  std::vector<size_t> stack{0};
  reached[0] = true;
  while (!stack.empty()) {
    const size_t b = stack.back();
    stack.pop_back();
    for (size_t s : succ[b])
      if (!reached[s]) reached[s] = true, stack.push_back(s);
  }
  std::vector<std::vector<bool>> dom(nb, std::vector<bool>(nb, true));
  dom[0].assign(nb, false);
  dom[0][0] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = 1; b < nb; ++b) {
      if (!reached[b]) continue;
      std::vector<bool> d(nb, true);
      bool any = false;
      for (size_t p : pred[b])
        if (reached[p]) {
          any = true;
          for (size_t k = 0; k < nb; ++k) d[k] = d[k] && dom[p][k];
        }
      if (!any) d.assign(nb, false);
      d[b] = true;
      if (d != dom[b]) dom[b] = std::move(d), changed = true;
    }
  }
  // Natural loops, merged by header; a block's depth is the number of headers whose loop holds it.
  std::map<size_t, std::vector<bool>> loops;
  for (size_t u = 0; u < nb; ++u)
    for (size_t h : succ[u])
      if (reached[u] && dom[u][h]) {
        std::vector<bool>& in = loops.try_emplace(h, std::vector<bool>(nb, false)).first->second;
        in[h] = true;
        std::vector<size_t> work;
        if (!in[u]) in[u] = true, work.push_back(u);
        while (!work.empty()) {
          const size_t x = work.back();
          work.pop_back();
          for (size_t p : pred[x])
            if (!in[p] && reached[p]) in[p] = true, work.push_back(p);
        }
      }
  std::vector<int> blockDepth(nb, 0);
  for (const auto& [h, in] : loops)
    for (size_t b = 0; b < nb; ++b) blockDepth[b] += in[b] ? 1 : 0;
  for (size_t i = 0; i < n; ++i) depth[i] = blockDepth[blockOf[i]];
  return depth;
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
  std::unique_ptr<llvm::MCInstrAnalysis> mia(t.createMCInstrAnalysis(&mii));
  if (!mia) throw CodegenError(where, "no AMDGPU instruction analysis");
  const llvm::ArrayRef<uint8_t> bytes(r.text);
  uint64_t end = rows.back().first;  // past the sequence's end: padding, not the kernel's
  end = std::min<uint64_t>(end, bytes.size());
  std::vector<DecodedInst> code;
  for (uint64_t pc = 0; pc < end;) {
    llvm::MCInst inst;
    uint64_t size = 0;
    if (dis->getInstruction(inst, size, bytes.slice(pc), pc, llvm::nulls()) != llvm::MCDisassembler::Success ||
        size == 0)
      throw CodegenError(where, fmt::format("cannot decode the instruction at .text+{:#x}", pc));
    auto it = std::upper_bound(rows.begin(), rows.end(), pc,
                               [](uint64_t a, const std::pair<uint64_t, uint32_t>& row) { return a < row.first; });
    DecodedInst d;
    d.pc = pc;
    d.op = it == rows.begin() ? 0 : std::prev(it)->second;
    d.cls = isaClassOf(mii.getName(inst.getOpcode()).str());
    const llvm::MCInstrDesc& desc = mii.get(inst.getOpcode());
    d.falls = !desc.isBarrier() && !desc.isReturn();
    uint64_t target = 0;
    if (desc.isBranch() && mia->evaluateBranch(inst, pc, size, target)) d.target = static_cast<int64_t>(target);
    d.ends = desc.isBranch() || desc.isReturn() || desc.isBarrier() || desc.isTerminator();
    code.push_back(d);
    pc += size;
  }
  const std::vector<int> depth = loopDepths(code);
  r.byDepth.assign(r.byOp.size(), {});
  for (size_t i = 0; i < code.size(); ++i) {
    const int k = static_cast<int>(code[i].cls);
    ++r.byOp[code[i].op][k];
    auto& v = r.byDepth[code[i].op];
    if (v.size() <= static_cast<size_t>(depth[i])) v.resize(depth[i] + 1, {});
    ++v[depth[i]][k];
  }
  r.instructions = static_cast<int64_t>(code.size());
  return r;
}

}  // namespace monogen::codegen
