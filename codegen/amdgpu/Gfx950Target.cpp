#include "codegen/amdgpu/Gfx950Target.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/Module.h>

namespace monogen::codegen::amdgpu {

namespace {

using ir::MemOrder;
using ir::MemScope;
namespace I = llvm::Intrinsic;

/// The MFMA shapes gfx950 has, with their intrinsic. gfx950 reads fp8 operands as OCP e4m3fn.
struct MfmaIntrinsic {
  ir::MfmaKind kind;
  llvm::Intrinsic::ID id;
};
constexpr MfmaIntrinsic kMfmas[] = {
    {ir::MfmaKind::F32_16x16x32_BF16, I::amdgcn_mfma_f32_16x16x32_bf16},
    {ir::MfmaKind::F32_16x16x4_F32, I::amdgcn_mfma_f32_16x16x4f32},
    {ir::MfmaKind::F32_16x16x32_FP8, I::amdgcn_mfma_f32_16x16x32_fp8_fp8},
};

constexpr int kLog2Wave = 6;  // wave64

llvm::Value* intrinsic(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Type*> tys,
                       llvm::ArrayRef<llvm::Value*> args) {
  return b.CreateIntrinsic(id, tys, args);
}

class Gfx950Target final : public TargetInfo {
 public:
  const char* triple() const override { return "amdgcn-amd-amdhsa"; }
  const char* cpu() const override { return "gfx950"; }
  const char* features() const override { return "+sramecc,-xnack"; }
  std::string targetId() const override { return "gfx950:sramecc+:xnack-"; }
  AddressSpaces addressSpaces() const override { return {.global = 1, .lds = 3, .constant = 4, .priv = 5}; }

  void configureModule(llvm::Module& m) const override {
    m.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", 500);  // v5: ROCm 6 and 7 load it
  }
  void configureKernel(llvm::Function& f, int threads) const override {
    f.setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
    f.addFnAttr("amdgpu-flat-work-group-size", std::to_string(threads) + "," + std::to_string(threads));
    f.addFnAttr("uniform-work-group-size", "true");
    f.addFnAttr("denormal-fp-math-f32", "ieee,ieee");  // keeps f32 subnormals: e8m0 0 is 2^-127
    f.addFnAttr(llvm::Attribute::NoUnwind);
  }

  llvm::Value* threadId(Builder& b) const override { return intrinsic(b, I::amdgcn_workitem_id_x, {}, {}); }
  llvm::Value* blockId(Builder& b) const override { return intrinsic(b, I::amdgcn_workgroup_id_x, {}, {}); }
  llvm::Value* laneId(Builder& b) const override {
    llvm::Value* lo = intrinsic(b, I::amdgcn_mbcnt_lo, {}, {b.getInt32(~0u), b.getInt32(0)});
    return intrinsic(b, I::amdgcn_mbcnt_hi, {}, {b.getInt32(~0u), lo});
  }
  llvm::Value* waveId(Builder& b) const override {
    llvm::Value* w = b.CreateLShr(threadId(b), b.getInt32(kLog2Wave));
    return intrinsic(b, I::amdgcn_readfirstlane, {b.getInt32Ty()}, {w});
  }
  llvm::Value* stageKernargPtr(Builder& b, const std::string& stageName) const override {
    llvm::Type* cp = llvm::PointerType::get(b.getContext(), addressSpaces().constant);
    llvm::Value* kp = intrinsic(b, I::amdgcn_kernarg_segment_ptr, {}, {});
    auto* asmTy = llvm::FunctionType::get(cp, {cp}, false);
    auto* opaque = llvm::InlineAsm::get(asmTy, "; stage " + stageName + " arguments $0", "=s,0", /*hasSideEffects=*/true);
    return b.CreateCall(asmTy, opaque, {kp}, "stage.args");
  }
  llvm::Value* stageBlockId(Builder& b, const std::string& stageName) const override {
    auto* asmTy = llvm::FunctionType::get(b.getInt32Ty(), {b.getInt32Ty()}, false);
    auto* opaque = llvm::InlineAsm::get(asmTy, "; stage " + stageName + " block $0", "=s,0", /*hasSideEffects=*/true);
    return b.CreateCall(asmTy, opaque, {blockId(b)}, "stage.block");
  }

  llvm::Value* readFirstLane(Builder& b, llvm::Value* x) const override {
    return intrinsic(b, I::amdgcn_readfirstlane, {x->getType()}, {x});
  }
  llvm::Value* ballot(Builder& b, llvm::Value* pred) const override {
    return intrinsic(b, I::amdgcn_ballot, {b.getInt64Ty()}, {pred});
  }
  /// ds_bpermute addresses lane (addr / 4) % 64.
  llvm::Value* shuffleSelector(Builder& b, llvm::Value* srcLane) const override {
    return b.CreateShl(b.CreateAnd(srcLane, 63), 2);
  }
  llvm::Value* shuffleDword(Builder& b, llvm::Value* selector, llvm::Value* dword) const override {
    return intrinsic(b, I::amdgcn_ds_bpermute, {}, {selector, dword});
  }
  bool hasMfma(ir::MfmaKind k) const override { return mfmaId(k) != I::not_intrinsic; }
  llvm::Value* mfma(Builder& b, ir::MfmaKind k, llvm::Value* a, llvm::Value* bm, llvm::Value* acc) const override {
    const llvm::Intrinsic::ID id = mfmaId(k);
    if (id == I::not_intrinsic) return nullptr;
    // cbsz 0, abid 0, blgp 0: no broadcast, no B-lane permutation.
    return intrinsic(b, id, {}, {a, bm, acc, b.getInt32(0), b.getInt32(0), b.getInt32(0)});
  }

  llvm::Value* mfmaScale(Builder& b, llvm::Value* a, llvm::Value* bm, llvm::Value* acc, llvm::Value* scaleA,
                         llvm::Value* scaleB) const override {
    // cbsz 0 (A E4M3), blgp 4 (B E2M1), op_sel 0: each scale is byte 0 of its lane's word.
    return intrinsic(b, I::amdgcn_mfma_scale_f32_16x16x128_f8f6f4, {a->getType(), bm->getType()},
                     {a, bm, acc, b.getInt32(0), b.getInt32(4), b.getInt32(0), scaleA, b.getInt32(0), scaleB});
  }

  llvm::Value* rcp(Builder& b, llvm::Value* x) const override {
    return intrinsic(b, I::amdgcn_rcp, {b.getFloatTy()}, {x});
  }
  llvm::Value* rsq(Builder& b, llvm::Value* x) const override {
    return intrinsic(b, I::amdgcn_rsq, {b.getFloatTy()}, {x});
  }
  llvm::Value* realtime(Builder& b) const override { return intrinsic(b, I::amdgcn_s_memrealtime, {}, {}); }
  void sleep(Builder& b, int64_t units) const override {
    intrinsic(b, I::amdgcn_s_sleep, {}, {b.getInt32(static_cast<uint32_t>(units))});
  }

  /// Four v_cvt_scalef32_pk_bf16_fp4, byte k of the word to elements 2k, 2k + 1; exact for the
  /// scales E8m0ToF32 yields (powers of two, 2^-127, NaN): see docs/codegen.md.
  llvm::Value* fp4x8ToBf16x8E8m0(Builder& b, llvm::Value* word, llvm::Value* scale) const override {
    llvm::Value* pairs[4];
    for (int byte = 0; byte < 4; ++byte)
      pairs[byte] = intrinsic(b, I::amdgcn_cvt_scalef32_pk_bf16_fp4, {}, {word, scale, b.getInt32(byte)});
    llvm::Value* lo = b.CreateShuffleVector(pairs[0], pairs[1], llvm::ArrayRef<int>{0, 1, 2, 3});
    llvm::Value* hi = b.CreateShuffleVector(pairs[2], pairs[3], llvm::ArrayRef<int>{0, 1, 2, 3});
    return b.CreateShuffleVector(lo, hi, llvm::ArrayRef<int>{0, 1, 2, 3, 4, 5, 6, 7});
  }
  /// v_cvt_pk_fp8_f32 (RNE; byte 0 kept) of the operand clamped to [-448, 448] by NaN-keeping
  /// minimum / maximum; a NaN code loses its sign after, as in f32x2ToFp8x2: no lane mask.
  llvm::Value* f32ToFp8(Builder& b, llvm::Value* x) const override {
    llvm::Value* c = fp8Clamp(b, x);
    llvm::Value* old = llvm::PoisonValue::get(b.getInt32Ty());
    llvm::Value* pk = intrinsic(b, I::amdgcn_cvt_pk_fp8_f32, {}, {c, c, old, b.getFalse()});
    return fp8NanSignOff(b, b.CreateAnd(pk, 0xff), 0x7f);
  }
  /// One v_cvt_pk_fp8_f32 (RNE; bits 16 .. 31 masked off) of both operands clamped to [-448, 448] by
  /// NaN-keeping minimum / maximum; a NaN code (0x7f, 0xff) loses its sign after: no lane masks.
  llvm::Value* f32x2ToFp8x2(Builder& b, llvm::Value* x, llvm::Value* y) const override {
    llvm::Value* old = llvm::PoisonValue::get(b.getInt32Ty());
    llvm::Value* pk = intrinsic(b, I::amdgcn_cvt_pk_fp8_f32, {}, {fp8Clamp(b, x), fp8Clamp(b, y), old, b.getFalse()});
    return fp8NanSignOff(b, b.CreateAnd(pk, 0xffff), 0x7f7f);
  }
  /// x clamped to [-448, 448] by llvm.maximum / llvm.minimum (v_maximum3_f32, v_minimum3_f32): a NaN stays NaN.
  static llvm::Value* fp8Clamp(Builder& b, llvm::Value* x) {
    llvm::Type* f = b.getFloatTy();
    llvm::Value* c = intrinsic(b, I::maximum, {f}, {x, llvm::ConstantFP::get(f, -448.0)});
    return intrinsic(b, I::minimum, {f}, {c, llvm::ConstantFP::get(f, 448.0)});
  }
  /// Bytes of `w` under `low7` whose low seven bits are all set (an e4m3fn NaN) become 0x7f.
  static llvm::Value* fp8NanSignOff(Builder& b, llvm::Value* w, uint32_t low7) {
    llvm::Value* carry = b.CreateAnd(b.CreateAdd(b.CreateAnd(w, low7), b.getInt32(low7 / 0x7f)), low7 << 1 & ~low7);
    return b.CreateAnd(w, b.CreateNot(carry));
  }
  /// v_cvt_f32_fp8 of byte 0, its NaNs selected to 0x7fc00000 after: independent of the
  /// instruction's NaN sign and payload.
  llvm::Value* fp8ToF32(Builder& b, llvm::Value* code) const override {
    llvm::Value* f = intrinsic(b, I::amdgcn_cvt_f32_fp8, {}, {code, b.getInt32(0)});
    llvm::Value* nan = b.CreateICmpEQ(b.CreateAnd(code, 0x7f), b.getInt32(0x7f));
    return b.CreateSelect(nan, llvm::ConstantFP::get(b.getFloatTy(), llvm::APFloat::getQNaN(llvm::APFloat::IEEEsingle())), f);
  }

  /// AMDGPUUsage's all-address-space scopes: "workgroup", "agent", and system (no name).
  llvm::SyncScope::ID syncScope(llvm::LLVMContext& ctx, MemScope s) const override {
    switch (s) {
      case MemScope::Workgroup: return ctx.getOrInsertSyncScopeID("workgroup");
      case MemScope::Agent: return ctx.getOrInsertSyncScopeID("agent");
      case MemScope::System: return llvm::SyncScope::System;
    }
    return llvm::SyncScope::System;
  }
  void fence(Builder& b, MemOrder o, MemScope s) const override {
    b.CreateFence(llvmOrdering(o), syncScope(b.getContext(), s));
    if (writesBack(o, s)) waitForWriteback(b);
  }
  /// A release at agent or system scope becomes fence release + the writeback wait + the
  /// access without its release half (Release -> Relaxed, AcqRel -> Acquire; SeqCst stays).
  MemOrder releaseBefore(Builder& b, MemOrder o, MemScope s) const override {
    if (!writesBack(o, s)) return o;
    b.CreateFence(llvm::AtomicOrdering::Release, syncScope(b.getContext(), s));
    waitForWriteback(b);
    return o == MemOrder::Release ? MemOrder::Relaxed : o == MemOrder::AcqRel ? MemOrder::Acquire : o;
  }
  void barrier(Builder& b) const override {
    b.CreateFence(llvm::AtomicOrdering::Release, syncScope(b.getContext(), MemScope::Workgroup));
    intrinsic(b, I::amdgcn_s_barrier, {}, {});
    b.CreateFence(llvm::AtomicOrdering::Acquire, syncScope(b.getContext(), MemScope::Workgroup));
  }

 private:
  static llvm::Intrinsic::ID mfmaId(ir::MfmaKind k) {
    for (const MfmaIntrinsic& m : kMfmas)
      if (m.kind == k) return m.id;
    return I::not_intrinsic;
  }
  /// Releases past the CTA write L2 back (buffer_wbl2 with the scope's bits).
  static bool writesBack(MemOrder o, MemScope s) {
    return s != MemScope::Workgroup && (o == MemOrder::Release || o == MemOrder::AcqRel || o == MemOrder::SeqCst);
  }
  /// `s_waitcnt vmcnt(0)` after buffer_wbl2, which LLVM 22.1 drops (llvm/llvm-project#178316,
  /// fixed in LLVM 23); a memory clobber, so nothing moves across it. Remove with LLVM 23.
  static void waitForWriteback(Builder& b) {
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), false);
    b.CreateCall(fty, llvm::InlineAsm::get(fty, "s_waitcnt vmcnt(0)", "~{memory}", /*hasSideEffects=*/true));
  }
};

}  // namespace

const TargetInfo& gfx950() {
  static const Gfx950Target t;
  return t;
}

}  // namespace monogen::codegen::amdgpu
