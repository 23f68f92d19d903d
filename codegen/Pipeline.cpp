// The LLVM side of a compile: the gfx950 TargetMachine, the new-PM O3 pipeline, and AMDGPU
// codegen into memory (a relocatable object, or the ISA as assembly text).
#include <mutex>

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/Internal.h"
#include "ir/Error.h"

namespace monogen::codegen::detail {

namespace {
void initAmdgpu() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUAsmParser();  // the stage-argument barrier is an (empty) inline asm
  });
}
}  // namespace

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const std::string& where) {
  initAmdgpu();
  const llvm::Triple triple(kTriple);
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) throw CodegenError(where, "no AMDGPU target in this LLVM: " + err);
  llvm::TargetOptions opts;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, kCpu, kFeatures, opts, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw CodegenError(where, std::string("cannot create a TargetMachine for ") + kTriple + " " + kCpu);
  return tm;
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm, Pipeline p) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);  // registers the AMDGPU pass callbacks
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

namespace {
llvm::SmallVector<char, 0> emit(llvm::Module& m, llvm::TargetMachine& tm, llvm::CodeGenFileType type,
                                const std::string& where) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    throw CodegenError(where, "the AMDGPU target cannot emit this file type");
  pm.run(m);
  return buf;
}
}  // namespace

std::vector<uint8_t> emitObject(llvm::Module& m, llvm::TargetMachine& tm, const std::string& where) {
  auto buf = emit(m, tm, llvm::CodeGenFileType::ObjectFile, where);
  return std::vector<uint8_t>(buf.begin(), buf.end());
}

std::string emitAssembly(llvm::Module& m, llvm::TargetMachine& tm, const std::string& where) {
  auto buf = emit(m, tm, llvm::CodeGenFileType::AssemblyFile, where);
  return std::string(buf.begin(), buf.end());
}

std::string printModule(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

}  // namespace monogen::codegen::detail
