#include "codegen/TargetInfo.h"

#include "codegen/amdgpu/Gfx950Target.h"
#include "support/Error.h"

namespace monogen::codegen {

llvm::AtomicOrdering llvmOrdering(ir::MemOrder o, bool rmw) {
  switch (o) {
    case ir::MemOrder::Plain: return rmw ? llvm::AtomicOrdering::Monotonic : llvm::AtomicOrdering::NotAtomic;
    case ir::MemOrder::Relaxed: return llvm::AtomicOrdering::Monotonic;
    case ir::MemOrder::Acquire: return llvm::AtomicOrdering::Acquire;
    case ir::MemOrder::Release: return llvm::AtomicOrdering::Release;
    case ir::MemOrder::AcqRel: return llvm::AtomicOrdering::AcquireRelease;
    case ir::MemOrder::SeqCst: return llvm::AtomicOrdering::SequentiallyConsistent;
  }
  return llvm::AtomicOrdering::SequentiallyConsistent;
}

const TargetInfo& targetInfoFor(const ir::Target& t, const std::string& where) {
  if (t.arch == amdgpu::gfx950().cpu()) return amdgpu::gfx950();
  throw CodegenError(where, "no code generator for arch '" + t.arch + "' (this one builds gfx950)");
}

}  // namespace monogen::codegen
