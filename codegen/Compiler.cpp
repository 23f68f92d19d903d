// The public entry points: lower -> IR pipeline -> AMDGPU codegen -> lld -> metadata -> limits.
// Each compile owns its LLVMContext and TargetMachine (only lld is serialized); LLVM's error
// diagnostics become CodegenErrors naming the variant.
#include <fmt/format.h>

#include <time.h>

#include <chrono>

#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/Internal.h"
#include "codegen/TargetInfo.h"
#include "ir/Error.h"

namespace monogen::codegen {

namespace {

/// An LLVMContext whose error diagnostics are collected instead of aborting the process.
struct Session {
  llvm::LLVMContext ctx;
  std::string errors;
  std::string where;
  const TargetInfo& target;
  std::unique_ptr<llvm::TargetMachine> tm;

  explicit Session(const ir::Plan& plan)
      : where(plan.key.variantName()), target(targetInfoFor(plan.target(), where)) {
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
    tm = detail::makeTargetMachine(target, where);
  }
  void check(const char* phase) const {
    if (!errors.empty()) throw CodegenError(where, fmt::format("LLVM {} failed: {}", phase, errors));
  }
};

using Clock = std::chrono::steady_clock;

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Times consecutive phases: each lap() charges the time since the previous one to a field.
struct PhaseClock {
  CompileTimes& out;
  Clock::time_point wall = Clock::now();
  double cpu = threadCpuSeconds();
  void lap(double PhaseTimes::*phase) {
    const Clock::time_point w = Clock::now();
    const double c = threadCpuSeconds();
    out.wall.*phase += std::chrono::duration<double>(w - wall).count();
    out.cpu.*phase += c - cpu;
    wall = w;
    cpu = c;
  }
};

}  // namespace

const char* pipelineName(Pipeline p) {
  switch (p) {
    case Pipeline::Fast: return "fast";
    case Pipeline::O3: return "O3";
  }
  return "?";
}

std::string llvmIr(const ir::Plan& plan, bool optimized, const CompileOptions& opts) {
  Session s(plan);
  auto m = detail::lower(plan, s.target, s.ctx, *s.tm);
  if (optimized) detail::optimize(*m, *s.tm, opts.pipeline);
  s.check(optimized ? "optimization" : "lowering");
  return detail::printModule(*m);
}

std::string isaText(const ir::Plan& plan, const CompileOptions& opts) {
  detail::checkPlan(plan);
  Session s(plan);
  auto m = detail::lower(plan, s.target, s.ctx, *s.tm);
  detail::optimize(*m, *s.tm, opts.pipeline);
  std::string isa = detail::emitAssembly(*m, *s.tm, s.where);
  s.check("codegen");
  return isa;
}

CodeObject compile(const ir::Plan& plan, const CompileOptions& opts) {
  detail::checkPlan(plan);
  CodeObject co;
  PhaseClock clock{co.times};  // the TargetMachine's creation counts to the lowering
  Session s(plan);
  auto m = detail::lower(plan, s.target, s.ctx, *s.tm);
  clock.lap(&PhaseTimes::lower);
  detail::optimize(*m, *s.tm, opts.pipeline);
  s.check("optimization");
  clock.lap(&PhaseTimes::optimize);
  std::vector<uint8_t> object = detail::emitObject(*m, *s.tm, s.where);
  s.check("codegen");
  clock.lap(&PhaseTimes::codegen);
  co.bytes = detail::link(object, s.where);
  clock.lap(&PhaseTimes::link);
  co.info = readMetadata(co.bytes);
  if (co.info.kernelSymbol != kernelSymbol(plan))
    throw CodegenError(s.where, fmt::format("the code object's kernel is '{}', expected '{}'", co.info.kernelSymbol,
                                            kernelSymbol(plan)));
  if (opts.checkLimits) checkLimits(co.info, plan, co.bytes.size());
  clock.lap(&PhaseTimes::metadata);
  return co;
}

}  // namespace monogen::codegen
