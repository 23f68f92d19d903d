// The public entry points: lower -> O3 -> AMDGPU codegen -> lld -> metadata read-back -> limits.
// Each compile owns its LLVMContext and TargetMachine, so compiles may run on several threads
// (only the lld step is serialized). LLVM errors reported through diagnostics become
// CodegenErrors naming the variant.
#include <fmt/format.h>

#include <chrono>

#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/Internal.h"
#include "ir/Error.h"

namespace monogen::codegen {

namespace {

/// An LLVMContext whose error diagnostics are collected instead of aborting the process.
struct Session {
  llvm::LLVMContext ctx;
  std::string errors;
  std::string where;
  std::unique_ptr<llvm::TargetMachine> tm;

  explicit Session(const ir::Plan& plan) : where(plan.key.variantName()) {
    ctx.setDiagnosticHandlerCallBack(
        [](const llvm::DiagnosticInfo* di, void* self) {
          if (di->getSeverity() != llvm::DS_Error) return;
          auto* s = static_cast<Session*>(self);
          llvm::raw_string_ostream os(s->errors);
          if (!s->errors.empty()) os << "; ";
          llvm::DiagnosticPrinterRawOStream dp(os);
          di->print(dp);
        },
        this);
    tm = detail::makeTargetMachine(where);
  }
  void check(const char* phase) const {
    if (!errors.empty()) throw CodegenError(where, fmt::format("LLVM {} failed: {}", phase, errors));
  }
};

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

std::string llvmIr(const ir::Plan& plan, bool optimized) {
  Session s(plan);
  auto m = detail::lower(plan, s.ctx, *s.tm);
  if (optimized) detail::optimize(*m, *s.tm);
  s.check(optimized ? "optimization" : "lowering");
  return detail::printModule(*m);
}

std::string isaText(const ir::Plan& plan) {
  detail::checkPlan(plan);
  Session s(plan);
  auto m = detail::lower(plan, s.ctx, *s.tm);
  detail::optimize(*m, *s.tm);
  std::string isa = detail::emitAssembly(*m, *s.tm, s.where);
  s.check("codegen");
  return isa;
}

CodeObject compile(const ir::Plan& plan) {
  detail::checkPlan(plan);
  CodeObject co;
  Session s(plan);
  auto t = Clock::now();
  auto m = detail::lower(plan, s.ctx, *s.tm);
  co.times.lower = since(t);
  t = Clock::now();
  detail::optimize(*m, *s.tm);
  s.check("optimization");
  co.times.optimize = since(t);
  t = Clock::now();
  std::vector<uint8_t> object = detail::emitObject(*m, *s.tm, s.where);
  s.check("codegen");
  co.times.codegen = since(t);
  t = Clock::now();
  co.bytes = detail::link(object, s.where);
  co.times.link = since(t);
  co.info = readMetadata(co.bytes);
  if (co.info.kernelSymbol != kernelSymbol(plan))
    throw CodegenError(s.where, fmt::format("the code object's kernel is '{}', expected '{}'", co.info.kernelSymbol,
                                            kernelSymbol(plan)));
  checkLimits(co.info, plan);
  return co;
}

}  // namespace monogen::codegen
