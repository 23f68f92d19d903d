// The LLVM side of a compile: the target's TargetMachine, the IR pipeline (a short function
// pipeline fit to the lowered IR, or LLVM's O3; docs/codegen.md says why the short one is enough),
// and AMDGPU codegen into memory (a relocatable object, or the ISA as assembly text).
#include <cstdlib>
#include <mutex>

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassTimingInfo.h>
#include <llvm/Pass.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/StandardInstrumentations.h>
#include <llvm/Support/Allocator.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/StringSaver.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/LICM.h>
#include <llvm/Transforms/Scalar/LoopPassManager.h>
#include <llvm/Transforms/Scalar/LoopRotation.h>
#include <llvm/Transforms/Scalar/SCCP.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>

#include "codegen/Internal.h"
#include "codegen/TargetInfo.h"
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
    // LLVM's own options for measuring a compile (e.g. "-time-passes"): docs/codegen.md.
    if (const char* env = std::getenv("MONOGEN_LLVM_ARGS"); env && *env) {
      static llvm::BumpPtrAllocator alloc;
      static llvm::StringSaver saver(alloc);
      llvm::SmallVector<const char*, 8> argv{"monogen"};
      llvm::cl::TokenizeGNUCommandLine(env, saver, argv);
      llvm::cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data(), "MONOGEN_LLVM_ARGS");
    }
  });
}
}  // namespace

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const TargetInfo& tg, const std::string& where) {
  initAmdgpu();
  const llvm::Triple triple(tg.triple());
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) throw CodegenError(where, "no AMDGPU target in this LLVM: " + err);
  llvm::TargetOptions opts;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, tg.cpu(), tg.features(), opts, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw CodegenError(where, std::string("cannot create a TargetMachine for ") + tg.triple() + " " + tg.cpu());
  return tm;
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm, Pipeline p) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassInstrumentationCallbacks pic;
  llvm::StandardInstrumentations si(m.getContext(), /*DebugLogging=*/false);
  si.registerCallbacks(pic, &mam);  // -time-passes and the other MONOGEN_LLVM_ARGS instruments
  llvm::PassBuilder pb(&tm, llvm::PipelineTuningOptions(), std::nullopt, &pic);  // + the AMDGPU callbacks
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  switch (p) {
    case Pipeline::O3: mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3); break;
    case Pipeline::Fast: {
      // function(sroa, early-cse<memssa>, instcombine, simplifycfg, loop(loop-rotate),
      //          loop-mssa(licm), sccp, instcombine, simplifycfg), amdgpu-attributor
      llvm::FunctionPassManager fpm;
      fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
      fpm.addPass(llvm::EarlyCSEPass(/*UseMemorySSA=*/true));
      fpm.addPass(llvm::InstCombinePass());
      fpm.addPass(llvm::SimplifyCFGPass());
      fpm.addPass(llvm::createFunctionToLoopPassAdaptor(llvm::LoopRotatePass(), /*UseMemorySSA=*/false));
      fpm.addPass(llvm::createFunctionToLoopPassAdaptor(llvm::LICMPass(llvm::LICMOptions()), /*UseMemorySSA=*/true));
      fpm.addPass(llvm::SCCPPass());
      fpm.addPass(llvm::InstCombinePass());
      fpm.addPass(llvm::SimplifyCFGPass());
      mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
      // What O3 gets from the AMDGPU target's callbacks and the ISA needs: the attributor's
      // "amdgpu-agpr-alloc"="0" (no AGPRs are reserved, so none hold VGPR values) and the
      // amdgpu-no-* implicit inputs (fewer SGPRs set up). Not in LLVM's public headers: by name.
      if (llvm::Error e = pb.parsePassPipeline(mpm, "amdgpu-attributor"))
        throw CodegenError("the IR pipeline", "no amdgpu-attributor pass in this LLVM: " + llvm::toString(std::move(e)));
      break;
    }
  }
  mpm.run(m, mam);
  if (llvm::TimePassesIsEnabled) si.getTimePasses().print();
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
  if (llvm::TimePassesIsEnabled) llvm::reportAndResetTimings();
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
