// The target seam: what the target-independent lowering (Lowering.cpp) asks of the machine.
// One implementation per target (codegen/amdgpu/Gfx950Target.h); the lowering never names an
// intrinsic, a sync scope or a code sequence itself.
#pragma once
#include <string>

#include <llvm/IR/IRBuilder.h>

#include "ir/Op.h"
#include "ir/Plan.h"

namespace monogen::codegen {

/// The LLVM address spaces of the target's memories.
struct AddressSpaces {
  unsigned global, lds, constant, priv;
};

/// LLVM's ordering for `o`; a Plain read-modify-write is Monotonic (it is still atomic).
llvm::AtomicOrdering llvmOrdering(ir::MemOrder o, bool rmw = false);

class TargetInfo {
 public:
  using Builder = llvm::IRBuilder<>;
  virtual ~TargetInfo() = default;

  // --- the code object ---
  virtual const char* triple() const = 0;
  virtual const char* cpu() const = 0;
  /// LLVM's feature string, e.g. "+sramecc,-xnack".
  virtual const char* features() const = 0;
  /// The target id code objects carry and Plans name, e.g. "gfx950:sramecc+:xnack-".
  virtual std::string targetId() const = 0;
  virtual AddressSpaces addressSpaces() const = 0;
  /// The module flags every kernel module carries.
  virtual void configureModule(llvm::Module& m) const = 0;
  /// Makes `f` the kernel entry for CTAs of exactly `threads` threads.
  virtual void configureKernel(llvm::Function& f, int threads) const = 0;

  // --- where a lane is (i32 each) ---
  virtual llvm::Value* threadId(Builder& b) const = 0;
  virtual llvm::Value* blockId(Builder& b) const = 0;
  virtual llvm::Value* laneId(Builder& b) const = 0;
  /// The wave's index in the CTA, uniform (a scalar register).
  virtual llvm::Value* waveId(Builder& b) const = 0;
  /// The kernarg segment pointer behind an opaque asm naming the stage, so a stage's argument
  /// loads stay in that stage (LLVM cannot hoist or CSE them across stages).
  virtual llvm::Value* stageKernargPtr(Builder& b, const std::string& stageName) const = 0;
  /// The CTA's index behind an opaque asm naming the stage: what a stage computes from it (its
  /// first task from a base) is not CSE'd with another stage's, nor live across stages.
  virtual llvm::Value* stageBlockId(Builder& b, const std::string& stageName) const = 0;

  // --- wave ops ---
  /// Lane 0's (the first active lane's) value of an i32 or i64.
  virtual llvm::Value* readFirstLane(Builder& b, llvm::Value* x) const = 0;
  /// The i1 `pred` of every lane as an i64 mask.
  virtual llvm::Value* ballot(Builder& b, llvm::Value* pred) const = 0;
  /// The per-lane selector `shuffleDword` takes for source lane `srcLane` (taken modulo the wave).
  virtual llvm::Value* shuffleSelector(Builder& b, llvm::Value* srcLane) const = 0;
  /// The i32 `dword` of the lane `selector` names.
  virtual llvm::Value* shuffleDword(Builder& b, llvm::Value* selector, llvm::Value* dword) const = 0;
  virtual bool hasMfma(ir::MfmaKind k) const = 0;
  /// acc + a x b in shape `k`; nullptr when the target has no such MFMA.
  virtual llvm::Value* mfma(Builder& b, ir::MfmaKind k, llvm::Value* a, llvm::Value* bm, llvm::Value* acc) const = 0;
  /// acc + the block-scaled E4M3 a x E2M1 b, 16x16x128 (ir/Mfma.h); nullptr when the target has none.
  virtual llvm::Value* mfmaScale(Builder& b, llvm::Value* a, llvm::Value* bm, llvm::Value* acc, llvm::Value* scaleA,
                                 llvm::Value* scaleB) const = 0;

  // --- math and time ---
  virtual llvm::Value* rcp(Builder& b, llvm::Value* x) const = 0;  // f32
  virtual llvm::Value* rsq(Builder& b, llvm::Value* x) const = 0;  // f32
  /// A constant-rate i64 clock (ir::Target::clockHz).
  virtual llvm::Value* realtime(Builder& b) const = 0;
  virtual void sleep(Builder& b, int64_t units) const = 0;

  // --- native conversions, equal to ir/Numerics.h where used: nullptr when there is none ---
  /// fp4x8 -> bf16x8 when `scale` is an E8m0ToF32 result.
  virtual llvm::Value* fp4x8ToBf16x8E8m0(Builder& b, llvm::Value* word, llvm::Value* scale) const = 0;
  /// f32 -> OCP e4m3fn in an i32 (RNE, saturating to +-448, NaN -> 0x7f).
  virtual llvm::Value* f32ToFp8(Builder& b, llvm::Value* x) const = 0;
  /// Two f32s -> their f32ToFp8 codes in bytes 0 and 1 of an i32, bits 16 .. 31 zero.
  virtual llvm::Value* f32x2ToFp8x2(Builder& b, llvm::Value* x, llvm::Value* y) const = 0;
  /// An i32's low byte as OCP e4m3fn -> f32 (exact; 0x7f / 0xff the quiet NaN 0x7fc00000).
  virtual llvm::Value* fp8ToF32(Builder& b, llvm::Value* code) const = 0;

  // --- the memory model (docs/codegen.md, "The gfx950 sequences") ---
  virtual llvm::SyncScope::ID syncScope(llvm::LLVMContext& ctx, ir::MemScope s) const = 0;
  /// A fence of order `o` (acquire, release, acq_rel or seq_cst) at scope `s`.
  virtual void fence(Builder& b, ir::MemOrder o, ir::MemScope s) const = 0;
  /// Emits what an atomic access of order `o` at `s` needs before it, and returns the order
  /// left for the access itself.
  virtual ir::MemOrder releaseBefore(Builder& b, ir::MemOrder o, ir::MemScope s) const = 0;
  /// The CTA barrier: the CTA's memory operations before it are visible to every lane after it.
  virtual void barrier(Builder& b) const = 0;
};

/// The TargetInfo for `t`; throws CodegenError at `where` when codegen has none for it.
const TargetInfo& targetInfoFor(const ir::Target& t, const std::string& where);

}  // namespace monogen::codegen
