// Internal interfaces between the codegen files (not part of the public API in Compiler.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "codegen/Compiler.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
}  // namespace llvm

namespace monogen::codegen {
class TargetInfo;
}  // namespace monogen::codegen

namespace monogen::codegen::detail {

/// Lowering.cpp: the Plan's kernel IR as one kernel in a fresh module (data layout and triple
/// taken from `tm`). Throws CodegenError naming the variant (and op) on what it cannot lower.
/// `attributeOps`: each instruction's debug line is its IR op's preorder number (Attribution.cpp).
std::unique_ptr<llvm::Module> lower(const ir::Plan& plan, const TargetInfo& target, llvm::LLVMContext& ctx,
                                    llvm::TargetMachine& tm, bool attributeOps = false);

/// Pipeline.cpp: the target's TargetMachine (the AMDGPU target is initialized once per process).
std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const TargetInfo& target, const std::string& where);
/// Pipeline.cpp: the optimization pipeline `p` over the module.
void optimize(llvm::Module& m, llvm::TargetMachine& tm, Pipeline p);
/// Pipeline.cpp: AMDGPU codegen into memory: a relocatable object, or assembly text.
std::vector<uint8_t> emitObject(llvm::Module& m, llvm::TargetMachine& tm, const std::string& where);
std::string emitAssembly(llvm::Module& m, llvm::TargetMachine& tm, const std::string& where);
/// Pipeline.cpp: the module as text.
std::string printModule(const llvm::Module& m);

/// Link.cpp: `ld.lld -shared` on one relocatable object, in-process (serialized by a mutex).
std::vector<uint8_t> link(const std::vector<uint8_t>& object, const std::string& where);

/// A "kernel symbol"-safe form of a variant name: [A-Za-z0-9_] only.
std::string sanitize(const std::string& name);

}  // namespace monogen::codegen::detail

namespace monogen::codegen::detail {
/// Limits.cpp: VGPR + AGPR a wave uses, as counted against the unified register budget.
int unifiedRegisters(const CodeObjectInfo& info);
/// Limits.cpp: throws CodegenError naming the variant when the Plan is not for the target codegen
/// builds (gfx950:sramecc+:xnack-), its CTA size is not a whole number of waves up to the maximum, or its LDS is over the target's.
void checkPlan(const ir::Plan& plan);
}  // namespace monogen::codegen::detail
