// Kernel IR -> LLVM IR, target-independent: one kernel per Plan, parameters in Plan::args order.
// What is the machine's is asked of a TargetInfo (codegen/TargetInfo.h); what LLVM leaves
// undefined is defined as the Sim device does (docs/codegen.md).
#include <fmt/format.h>

#include <cctype>

#include <llvm/ADT/APFloat.h>
#include <llvm/ADT/APInt.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DIBuilder.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/Internal.h"
#include "codegen/TargetInfo.h"
#include "ir/Error.h"

namespace monogen::codegen {

std::string detail::sanitize(const std::string& name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return s;
}

std::string kernelSymbol(const ir::Plan& plan) { return "monogen_" + detail::sanitize(plan.key.variantName()); }

namespace {

using ir::AddrSpace;
using ir::MemOrder;
using ir::MemScope;
using ir::OpCode;
using ir::Scalar;

class Lowerer {
 public:
  Lowerer(const ir::Plan& plan, const TargetInfo& target, llvm::LLVMContext& ctx, llvm::Module& m, bool attribute)
      : plan_(plan), fn_(plan.kernel), tg_(target), as_(target.addressSpaces()), ctx_(ctx), m_(m), b_(ctx),
        where_(plan.key.variantName()), attribute_(attribute) {}

  void run() {
    buildSignature();
    std::unique_ptr<llvm::DIBuilder> dib;
    if (attribute_) dib = attributeOps();
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", f_);
    b_.SetInsertPoint(entry);
    vals_.assign(fn_.values.size(), nullptr);
    for (size_t i = 0; i < fn_.vars.size(); ++i) {
      const ir::VarInfo& vi = fn_.vars[i];
      vars_.push_back(b_.CreateAlloca(ty(vi.type, "var " + vi.name), as_.priv, nullptr,
                                      vi.name.empty() ? fmt::format("var{}", i) : "var." + detail::sanitize(vi.name)));
    }
    region(fn_.body);
    b_.CreateRetVoid();
    if (dib) dib->finalize();
  }

 private:
  // --- errors ---
  [[noreturn]] void fail(const std::string& what) const { throw CodegenError(where_, what); }
  [[noreturn]] void fail(const ir::Op& op, const std::string& what) const {
    throw CodegenError(fmt::format("{}, op {} (%{})", where_, ir::opName(op.code), op.result.id), what);
  }

  // --- types ---
  llvm::Type* scalarTy(Scalar s, AddrSpace sp, const std::string& what) const {
    switch (s) {
      case Scalar::I1: return b_.getInt1Ty();
      case Scalar::I8: return b_.getInt8Ty();
      case Scalar::I16: return b_.getInt16Ty();
      case Scalar::I32: return b_.getInt32Ty();
      case Scalar::I64: return b_.getInt64Ty();
      case Scalar::F32: return b_.getFloatTy();
      case Scalar::BF16: return b_.getBFloatTy();
      case Scalar::Ptr:
        switch (sp) {
          case AddrSpace::Global:
          case AddrSpace::Peer: return llvm::PointerType::get(ctx_, as_.global);
          case AddrSpace::Lds: return llvm::PointerType::get(ctx_, as_.lds);
          case AddrSpace::None: break;
        }
        fail(what + ": a pointer without an address space");
    }
    fail(what + ": unknown scalar type");
  }
  llvm::Type* ty(const ir::Type& t, const std::string& what = "value") const {
    llvm::Type* e = scalarTy(t.scalar, t.space, what);
    return t.lanes > 1 ? llvm::FixedVectorType::get(e, t.lanes) : e;
  }
  /// The type a value has in memory: i1 takes a byte.
  llvm::Type* memTy(const ir::Type& t) const {
    if (t.scalar != Scalar::I1) return ty(t);
    return t.lanes > 1 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(b_.getInt8Ty(), t.lanes))
                       : b_.getInt8Ty();
  }
  int totalBits(const ir::Type& t) const { return t.elemBits() * t.lanes; }

  /// The value's bits as one integer (pointers by ptrtoint, everything else by bitcast).
  llvm::Value* toBits(llvm::Value* v, const ir::Type& t) {
    llvm::Type* it = b_.getIntNTy(totalBits(t));
    if (t.isPtr()) {
      if (t.isVector()) fail("vectors of pointers cannot be reinterpreted");
      return b_.CreatePtrToInt(v, it);
    }
    return v->getType() == it ? v : b_.CreateBitCast(v, it);
  }
  llvm::Value* fromBits(llvm::Value* bits, const ir::Type& t) {
    llvm::Type* target = ty(t);
    if (t.isPtr()) return b_.CreateIntToPtr(bits, target);
    return bits->getType() == target ? bits : b_.CreateBitCast(bits, target);
  }

  // --- memory model ---
  llvm::SyncScope::ID scope(MemScope sc) const { return tg_.syncScope(ctx_, sc); }

  static llvm::Align naturalAlign(int bytes) {
    int a = 1;
    while (a < 16 && bytes % (a * 2) == 0) a *= 2;
    return llvm::Align(a);
  }

  // --- the kernel ---
  void buildSignature() {
    std::vector<llvm::Type*> params;
    for (const ir::KernelArg& a : plan_.args) {
      if (a.isPointer) {
        params.push_back(llvm::PointerType::get(ctx_, as_.global));
      } else {
        switch (a.elem) {
          case Scalar::I1: case Scalar::I8: params.push_back(b_.getInt8Ty()); break;
          case Scalar::Ptr: params.push_back(b_.getInt64Ty()); break;
          default: params.push_back(scalarTy(a.elem, AddrSpace::None, "argument " + a.name));
        }
      }
    }
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    f_ = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, kernelSymbol(plan_), m_);
    tg_.configureKernel(*f_, plan_.grid.threads);
    for (size_t i = 0; i < plan_.args.size(); ++i) {
      const ir::KernelArg& a = plan_.args[i];
      llvm::Argument* p = f_->getArg(static_cast<unsigned>(i));
      p->setName(detail::sanitize(a.name));
      p->addAttr(llvm::Attribute::NoUndef);
      if (a.isPointer) {
        if (a.align <= 0 || (a.align & (a.align - 1)) != 0)
          fail(fmt::format("argument '{}': alignment {} is not a power of two", a.name, a.align));
        p->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(a.align)));
      }
    }
  }

  llvm::GlobalVariable* lds(const ir::Op& op) {
    if (lds_) return lds_;
    if (plan_.ldsBytes <= 0) fail(op, "the kernel uses LDS but the Plan allocates none (ldsBytes = 0)");
    auto* at = llvm::ArrayType::get(b_.getInt8Ty(), static_cast<uint64_t>(plan_.ldsBytes));
    lds_ = new llvm::GlobalVariable(m_, at, false, llvm::GlobalValue::InternalLinkage, llvm::PoisonValue::get(at),
                                    "monogen.lds", nullptr, llvm::GlobalValue::NotThreadLocal, as_.lds);
    lds_->setAlignment(llvm::Align(16));
    return lds_;
  }

  llvm::Value* v(ir::Value x) const {
    if (!x || x.id >= vals_.size() || !vals_[x.id]) fail(fmt::format("value %{} is used before it is defined", x.id));
    return vals_[x.id];
  }
  const ir::Type& t(ir::Value x) const { return fn_.typeOf(x); }
  void def(const ir::Op& op, llvm::Value* r) {
    if (!op.result) return;
    const std::string& name = fn_.values[op.result.id].name;
    if (!name.empty() && !llvm::isa<llvm::Constant>(r) && r->getName().empty()) r->setName(detail::sanitize(name));
    vals_[op.result.id] = r;
  }

  void region(const ir::Region& r) {
    if (!sp_) {
      for (const ir::Op& op : r.ops) lowerOp(op);
      return;
    }
    const llvm::DebugLoc outer = b_.getCurrentDebugLocation();  // the enclosing op's, restored after
    for (const ir::Op& op : r.ops) {
      b_.SetCurrentDebugLocation(llvm::DILocation::get(ctx_, static_cast<unsigned>(opCounter_++), 0, sp_));
      lowerOp(op);
    }
    b_.SetCurrentDebugLocation(outer);
  }

  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Type*> tys, llvm::ArrayRef<llvm::Value*> args) {
    return b_.CreateIntrinsic(id, tys, args);
  }
  llvm::Value* i32c(int64_t x) { return b_.getInt32(static_cast<uint32_t>(x)); }
  llvm::Value* f32FromBits(llvm::Value* bits) { return b_.CreateBitCast(bits, b_.getFloatTy()); }

  /// One case per OpCode, no default: a new opcode does not compile (-Werror=switch) until lowered.
  void lowerOp(const ir::Op& op) {
    const auto& ops = op.operands;
    auto in = [&](size_t i) { return v(ops.at(i)); };
    const ir::Type rt = op.result ? t(op.result) : ir::Type{};
    llvm::Type* f32 = b_.getFloatTy();
    switch (op.code) {
      // --- values ---
      case OpCode::ConstInt: return def(op, constInt(op.attrs.imm, rt));
      case OpCode::ConstFloat: return def(op, constFloat(op.attrs.fimm, rt));
      case OpCode::ThreadId: return def(op, tg_.threadId(b_));
      case OpCode::LaneId: return def(op, tg_.laneId(b_));
      case OpCode::WaveId: return def(op, tg_.waveId(b_));
      case OpCode::BlockId:  // Builder::stageBlock in a stage: that stage's own copy (TargetInfo::stageBlockId)
        return def(op, op.attrs.imm == 1 && stageKernarg_ ? tg_.stageBlockId(b_, stageName_) : tg_.blockId(b_));
      case OpCode::Arg: return def(op, lowerArg(op, rt));
      // --- arithmetic ---
      case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
      case OpCode::UDiv: case OpCode::URem: case OpCode::And: case OpCode::Or: case OpCode::Xor:
      case OpCode::Shl: case OpCode::LShr: case OpCode::AShr: case OpCode::Min: case OpCode::Max:
      case OpCode::UMin: case OpCode::UMax:
        return def(op, binary(op, in(0), in(1), t(ops[0])));
      case OpCode::Fma: return def(op, intrinsic(llvm::Intrinsic::fma, {ty(rt)}, {in(0), in(1), in(2)}));
      case OpCode::Cmp: return def(op, compare(op, in(0), in(1)));
      case OpCode::Select: return def(op, b_.CreateSelect(in(0), in(1), in(2)));
      // --- conversions ---
      case OpCode::Bitcast: return def(op, t(ops[0]) == rt ? in(0) : fromBits(toBits(in(0), t(ops[0])), rt));
      case OpCode::Trunc: return def(op, b_.CreateTrunc(in(0), ty(rt)));
      case OpCode::ZExt: return def(op, b_.CreateZExt(in(0), ty(rt)));
      case OpCode::SExt: return def(op, b_.CreateSExt(in(0), ty(rt)));
      case OpCode::SIToFP: return def(op, b_.CreateSIToFP(in(0), ty(rt)));
      case OpCode::UIToFP: return def(op, b_.CreateUIToFP(in(0), ty(rt)));
      // Saturating (NaN -> 0) so out-of-range inputs are defined.
      case OpCode::FPToSI: return def(op, intrinsic(llvm::Intrinsic::fptosi_sat, {ty(rt), in(0)->getType()}, {in(0)}));
      case OpCode::BF16ToF32: return def(op, b_.CreateFPExt(in(0), ty(rt)));
      case OpCode::F32ToBF16: return def(op, b_.CreateFPTrunc(in(0), ty(rt)));  // RNE
      case OpCode::Fp4ToF32: return def(op, fp4ToF32(in(0), in(1)));
      case OpCode::Fp4x8ToBF16x8: return def(op, fp4x8ToBf16x8(ops[1], in(0), in(1)));
      case OpCode::E8m0ToF32: e8m0Results_.at(op.result.id) = true; return def(op, e8m0ToF32(in(0)));
      case OpCode::Fp8ToF32: return def(op, native(op, tg_.fp8ToF32(b_, in(0))));
      case OpCode::F32ToFp8: return def(op, native(op, tg_.f32ToFp8(b_, in(0))));
      case OpCode::F32x2ToFp8x2: return def(op, native(op, tg_.f32x2ToFp8x2(b_, in(0), in(1))));
      // --- math ---
      case OpCode::Exp2: return def(op, intrinsic(llvm::Intrinsic::exp2, {f32}, {in(0)}));
      case OpCode::Rcp: return def(op, tg_.rcp(b_, in(0)));
      case OpCode::Rsq: return def(op, tg_.rsq(b_, in(0)));
      case OpCode::Sqrt: return def(op, intrinsic(llvm::Intrinsic::sqrt, {f32}, {in(0)}));
      case OpCode::Abs: return def(op, intrinsic(llvm::Intrinsic::fabs, {f32}, {in(0)}));
      // --- vectors ---
      case OpCode::Extract: return def(op, b_.CreateExtractElement(in(0), static_cast<uint64_t>(op.attrs.imm)));
      case OpCode::Insert: return def(op, b_.CreateInsertElement(in(0), in(1), static_cast<uint64_t>(op.attrs.imm)));
      case OpCode::Splat: return def(op, b_.CreateVectorSplat(rt.lanes, in(0)));
      // --- pointers ---
      case OpCode::PtrAdd: return def(op, b_.CreateGEP(b_.getInt8Ty(), in(0), in(1)));
      case OpCode::PtrToInt: return def(op, ptrToInt(op, in(0), t(ops[0])));
      case OpCode::IntToPtr: return def(op, intToPtr(op, in(0), rt));
      // --- memory ---
      case OpCode::Load: return def(op, load(op, rt, in(0)));
      case OpCode::Store: return store(op, in(0), in(1), t(ops[1]));
      case OpCode::AtomicRmw: return def(op, atomicRmw(op, rt, in(0), in(1)));
      case OpCode::CmpXchg: return def(op, cmpXchg(op, rt, in(0), in(1), in(2)));
      case OpCode::Fence: return fence(op);
      case OpCode::Barrier: return tg_.barrier(b_);
      // --- wave ops ---
      case OpCode::Shuffle: return def(op, shuffle(op, in(0), t(ops[0]), in(1)));
      case OpCode::Ballot: return def(op, tg_.ballot(b_, in(0)));
      case OpCode::Popcount: return def(op, popcount(in(0)));
      case OpCode::ReadFirstLane: case OpCode::CtaUniform: return def(op, readFirstLane(in(0), t(ops[0])));
      case OpCode::Mfma: return def(op, native(op, tg_.mfma(b_, op.attrs.mfma, in(0), in(1), in(2))));
      case OpCode::MfmaScale: return def(op, native(op, tg_.mfmaScale(b_, in(0), in(1), in(2), in(3), in(4))));
      // --- sync: ir/Op.h says which scope each flag takes ---
      case OpCode::Publish: return publish(op, in(0), in(1), in(2));
      case OpCode::Wait: return def(op, wait(op));
      // --- time ---
      case OpCode::Realtime: return def(op, tg_.realtime(b_));
      case OpCode::Sleep: return tg_.sleep(b_, op.attrs.imm);
      // --- variables ---
      case OpCode::VarLoad: return def(op, b_.CreateLoad(var(op)->getAllocatedType(), var(op)));
      case OpCode::VarStore: b_.CreateStore(in(0), var(op)); return;
      // --- control flow ---
      case OpCode::If: return lowerIf(op, in(0));
      case OpCode::For: return lowerFor(op, in(0), in(1), in(2));
      case OpCode::While: return lowerWhile(op);
      case OpCode::StageScope: return lowerStage(op);
    }
    fail(op, "no lowering for this opcode");
  }

  /// A target's native path, or the op's error when the target has none.
  llvm::Value* native(const ir::Op& op, llvm::Value* r) {
    if (!r) fail(op, "the target has no lowering for this op");
    return r;
  }

  /// The immediate's low bits (an i1 is 0 or 1; 0xffffffff and -1 are the same i32).
  llvm::Value* constInt(int64_t imm, const ir::Type& rt) {
    const unsigned bits = static_cast<unsigned>(rt.elemBits());
    uint64_t u = static_cast<uint64_t>(imm);
    if (bits < 64) u &= (uint64_t{1} << bits) - 1;
    return llvm::ConstantInt::get(ty(rt), llvm::APInt(bits, u));
  }
  llvm::Value* constFloat(double fimm, const ir::Type& rt) {
    llvm::APFloat f(fimm);
    bool lost = false;
    f.convert(rt.scalar == Scalar::BF16 ? llvm::APFloat::BFloat() : llvm::APFloat::IEEEsingle(),
              llvm::APFloat::rmNearestTiesToEven, &lost);
    return llvm::ConstantFP::get(ctx_, f);
  }

  /// LDS pointers are byte offsets into the one LDS array: its address is subtracted / added.
  llvm::Value* ptrToInt(const ir::Op& op, llvm::Value* p, const ir::Type& pt) {
    if (pt.space != AddrSpace::Lds) return b_.CreatePtrToInt(p, b_.getInt64Ty());
    llvm::Value* base = b_.CreatePtrToInt(lds(op), b_.getInt32Ty());
    return b_.CreateSub(b_.CreatePtrToInt(p, b_.getInt32Ty()), base);
  }
  llvm::Value* intToPtr(const ir::Op& op, llvm::Value* x, const ir::Type& rt) {
    if (rt.space == AddrSpace::Lds) return b_.CreateGEP(b_.getInt8Ty(), lds(op), x);
    return b_.CreateIntToPtr(x, ty(rt));
  }

  llvm::Value* popcount(llvm::Value* x) {
    llvm::Value* c = intrinsic(llvm::Intrinsic::ctpop, {x->getType()}, {x});
    return b_.CreateZExtOrTrunc(c, b_.getInt32Ty());
  }

  llvm::AllocaInst* var(const ir::Op& op) {
    if (op.attrs.var < 0 || static_cast<size_t>(op.attrs.var) >= vars_.size()) fail(op, "unknown variable");
    return vars_[op.attrs.var];
  }

  /// A stage reads its arguments through its own kernarg pointer (TargetInfo::stageKernargPtr).
  /// Tracing is the spec's: its stages store realtime stamps themselves (KernelContext::stage).
  void lowerStage(const ir::Op& op) {
    if (op.regions.empty()) fail(op, "a stage has no region");
    const int si = op.attrs.stage;
    const std::string name =
        si >= 0 && static_cast<size_t>(si) < plan_.stages.size() ? detail::sanitize(plan_.stages[si].name) : "?";
    llvm::Value* outer = stageKernarg_;
    const std::string outerName = stageName_;
    stageKernarg_ = tg_.stageKernargPtr(b_, name);
    stageName_ = name;
    region(op.regions[0]);
    stageKernarg_ = outer;
    stageName_ = outerName;
  }

  /// Argument i read from the stage's kernarg pointer: an invariant, uniform load (an s_load).
  llvm::Value* loadStageArg(size_t i) {
    const ir::KernelArg& a = plan_.args[i];
    llvm::Type* at = f_->getArg(static_cast<unsigned>(i))->getType();
    const int off = kernargOffsets_.at(i);
    llvm::Value* addr = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), stageKernarg_, static_cast<uint64_t>(off));
    llvm::LoadInst* ld = b_.CreateAlignedLoad(at, addr, naturalAlign(off | a.kernargSize() | 8), a.name);
    ld->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx_, {}));
    ld->setMetadata(llvm::LLVMContext::MD_noundef, llvm::MDNode::get(ctx_, {}));
    if (a.isPointer) {
      auto* al = llvm::ConstantAsMetadata::get(b_.getInt64(static_cast<uint64_t>(a.align)));
      ld->setMetadata(llvm::LLVMContext::MD_align, llvm::MDNode::get(ctx_, {al}));
    }
    return ld;
  }

  llvm::Value* lowerArg(const ir::Op& op, const ir::Type& rt) {
    const int64_t i = op.attrs.imm;
    if (i < 0 || static_cast<size_t>(i) >= plan_.args.size())
      fail(op, fmt::format("argument index {} out of range (the Plan has {})", i, plan_.args.size()));
    llvm::Value* p = stageKernarg_ ? loadStageArg(static_cast<size_t>(i)) : f_->getArg(static_cast<unsigned>(i));
    llvm::Type* want = ty(rt);
    if (p->getType() == want) return p;
    if (p->getType()->isPointerTy() && want->isIntegerTy(64)) return b_.CreatePtrToInt(p, want);
    if (p->getType()->isIntegerTy(64) && rt.isPtr() && rt.space != AddrSpace::Lds) return b_.CreateIntToPtr(p, want);
    if (p->getType()->isIntegerTy() && want->isIntegerTy()) return b_.CreateZExtOrTrunc(p, want);
    fail(op, fmt::format("argument '{}' cannot be read as {}", plan_.args[i].name, rt.str()));
  }

  llvm::Value* binary(const ir::Op& op, llvm::Value* a, llvm::Value* c, const ir::Type& at) {
    const bool fp = at.isFloat();
    auto ints = [&] {
      if (fp) fail(op, "an integer op on " + at.str());
    };
    switch (op.code) {
      case OpCode::Add: return fp ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
      case OpCode::Sub: return fp ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
      case OpCode::Mul: return fp ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
      case OpCode::Div: return fp ? b_.CreateFDiv(a, c) : signedDivRem(a, c, false);
      case OpCode::Rem: ints(); return signedDivRem(a, c, true);
      case OpCode::UDiv: ints(); return b_.CreateUDiv(a, safeDivisor(c, nullptr));
      case OpCode::URem: ints(); return b_.CreateURem(a, safeDivisor(c, nullptr));
      case OpCode::And: ints(); return b_.CreateAnd(a, c);
      case OpCode::Or: ints(); return b_.CreateOr(a, c);
      case OpCode::Xor: ints(); return b_.CreateXor(a, c);
      // Shift amounts are taken modulo the bit width, as the Sim device does.
      case OpCode::Shl: ints(); return b_.CreateShl(a, shiftAmount(c, at));
      case OpCode::LShr: ints(); return b_.CreateLShr(a, shiftAmount(c, at));
      case OpCode::AShr: ints(); return b_.CreateAShr(a, shiftAmount(c, at));
      case OpCode::Min: return intrinsic(fp ? llvm::Intrinsic::minnum : llvm::Intrinsic::smin, {a->getType()}, {a, c});
      case OpCode::Max: return intrinsic(fp ? llvm::Intrinsic::maxnum : llvm::Intrinsic::smax, {a->getType()}, {a, c});
      case OpCode::UMin: ints(); return intrinsic(llvm::Intrinsic::umin, {a->getType()}, {a, c});
      case OpCode::UMax: ints(); return intrinsic(llvm::Intrinsic::umax, {a->getType()}, {a, c});
      default: fail(op, "not a binary op");
    }
  }
  /// Integer division without LLVM's undefined cases, as the Sim device defines them:
  /// x / -1 wraps (INT_MIN / -1 is INT_MIN) and x % -1 is 0. A zero divisor (an error on the
  /// Sim device) divides by 1 instead of being poison. Constant divisors fold the selects away.
  llvm::Value* safeDivisor(llvm::Value* c, llvm::Value* minusOne) {
    llvm::Type* t = c->getType();
    llvm::Value* bad = b_.CreateICmpEQ(c, llvm::Constant::getNullValue(t));
    if (minusOne) bad = b_.CreateOr(bad, minusOne);
    return b_.CreateSelect(bad, llvm::ConstantInt::get(t, 1), c);
  }
  llvm::Value* signedDivRem(llvm::Value* a, llvm::Value* c, bool rem) {
    llvm::Type* t = c->getType();
    llvm::Value* m1 = b_.CreateICmpEQ(c, llvm::Constant::getAllOnesValue(t));
    llvm::Value* d = safeDivisor(c, m1);
    if (rem) return b_.CreateSelect(m1, llvm::Constant::getNullValue(t), b_.CreateSRem(a, d));
    return b_.CreateSelect(m1, b_.CreateNeg(a), b_.CreateSDiv(a, d));
  }
  llvm::Value* shiftAmount(llvm::Value* c, const ir::Type& at) {
    return b_.CreateAnd(c, llvm::ConstantInt::get(c->getType(), at.elemBits() - 1));
  }

  llvm::Value* compare(const ir::Op& op, llvm::Value* a, llvm::Value* c) {
    using P = llvm::CmpInst::Predicate;
    switch (op.attrs.pred) {
      case ir::CmpPred::Eq: return b_.CreateICmp(P::ICMP_EQ, a, c);
      case ir::CmpPred::Ne: return b_.CreateICmp(P::ICMP_NE, a, c);
      case ir::CmpPred::Slt: return b_.CreateICmp(P::ICMP_SLT, a, c);
      case ir::CmpPred::Sle: return b_.CreateICmp(P::ICMP_SLE, a, c);
      case ir::CmpPred::Sgt: return b_.CreateICmp(P::ICMP_SGT, a, c);
      case ir::CmpPred::Sge: return b_.CreateICmp(P::ICMP_SGE, a, c);
      case ir::CmpPred::Ult: return b_.CreateICmp(P::ICMP_ULT, a, c);
      case ir::CmpPred::Ule: return b_.CreateICmp(P::ICMP_ULE, a, c);
      case ir::CmpPred::Ugt: return b_.CreateICmp(P::ICMP_UGT, a, c);
      case ir::CmpPred::Uge: return b_.CreateICmp(P::ICMP_UGE, a, c);
      case ir::CmpPred::Oeq: return b_.CreateFCmp(P::FCMP_OEQ, a, c);
      case ir::CmpPred::One: return b_.CreateFCmp(P::FCMP_ONE, a, c);
      case ir::CmpPred::Olt: return b_.CreateFCmp(P::FCMP_OLT, a, c);
      case ir::CmpPred::Ole: return b_.CreateFCmp(P::FCMP_OLE, a, c);
      case ir::CmpPred::Ogt: return b_.CreateFCmp(P::FCMP_OGT, a, c);
      case ir::CmpPred::Oge: return b_.CreateFCmp(P::FCMP_OGE, a, c);
      case ir::CmpPred::Uno: return b_.CreateFCmp(P::FCMP_UNO, a, c);
      case ir::CmpPred::Ord: return b_.CreateFCmp(P::FCMP_ORD, a, c);
    }
    fail(op, "unknown predicate");
  }

  // --- numerics: integer/float arithmetic equal to ir/Numerics.h bit for bit ---

  /// True when the IR value is an E8m0ToF32 result (the lowering visits defs before uses).
  bool isE8m0Scale(ir::Value x) const { return x.id < e8m0Results_.size() && e8m0Results_[x.id]; }

  /// fp4x8 -> bf16x8: the target's native path for an E8m0ToF32 scale, else each code as
  /// fp4ToF32, then RNE to bf16.
  llvm::Value* fp4x8ToBf16x8(ir::Value scaleValue, llvm::Value* word, llvm::Value* scale) {
    if (isE8m0Scale(scaleValue))
      if (llvm::Value* r = tg_.fp4x8ToBf16x8E8m0(b_, word, scale)) return r;
    llvm::Value* r = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getBFloatTy(), 8));
    for (int e = 0; e < 8; ++e) {
      llvm::Value* code = b_.CreateLShr(word, static_cast<uint64_t>(4 * e));
      r = b_.CreateInsertElement(r, b_.CreateFPTrunc(fp4ToF32(code, scale), b_.getBFloatTy()), static_cast<uint64_t>(e));
    }
    return r;
  }

  /// e2m1: magnitude m = code & 7 is 0, 0.5 (m = 1) or 2^(e-1) * (1 + man/2) with e = m >> 1,
  /// man = m & 1; built as f32 bits, signed by bit 3, then one f32 multiply by the scale.
  llvm::Value* fp4ToF32(llvm::Value* code, llvm::Value* scale) {
    llvm::Value* m = b_.CreateAnd(code, 7);
    llvm::Value* e = b_.CreateLShr(m, 1);
    llvm::Value* man = b_.CreateAnd(m, 1);
    llvm::Value* normal = b_.CreateOr(b_.CreateShl(b_.CreateAdd(e, i32c(126)), 23), b_.CreateShl(man, 22));
    llvm::Value* sub = b_.CreateSelect(b_.CreateICmpNE(man, i32c(0)), i32c(0x3f000000), i32c(0));
    llvm::Value* mag = b_.CreateSelect(b_.CreateICmpEQ(e, i32c(0)), sub, normal);
    llvm::Value* sign = b_.CreateShl(b_.CreateAnd(code, 8), 28);
    return b_.CreateFMul(f32FromBits(b_.CreateOr(mag, sign)), scale);
  }
  /// e8m0: 2^(e-127) as exponent bits; e = 0 is the subnormal 2^-127 (0x00400000), 255 NaN.
  llvm::Value* e8m0ToF32(llvm::Value* code) {
    llvm::Value* e = b_.CreateAnd(code, 0xff);
    llvm::Value* bits = b_.CreateShl(e, 23);
    bits = b_.CreateSelect(b_.CreateICmpEQ(e, i32c(0)), i32c(0x00400000), bits);
    bits = b_.CreateSelect(b_.CreateICmpEQ(e, i32c(255)), i32c(0x7fc00000), bits);
    return f32FromBits(bits);
  }
  // --- memory ---
  llvm::Value* load(const ir::Op& op, const ir::Type& rt, llvm::Value* p) {
    const int bytes = rt.bytes();
    llvm::Type* mt = memTy(rt);
    if (op.attrs.order == MemOrder::Plain) {
      llvm::Value* r = b_.CreateAlignedLoad(mt, p, naturalAlign(bytes));
      return rt.isBool() ? b_.CreateTrunc(r, ty(rt)) : r;
    }
    if (bytes > 8) fail(op, fmt::format("an atomic load of {} bytes (at most 8)", bytes));
    llvm::Type* it = b_.getIntNTy(bytes * 8);
    auto* ld = b_.CreateAlignedLoad(it, p, llvm::Align(bytes));
    ld->setAtomic(llvmOrdering(op.attrs.order), scope(op.attrs.scope));
    llvm::Value* r = ld;
    if (rt.isBool()) return b_.CreateTrunc(b_.CreateBitCast(r, mt), ty(rt));
    return fromBits(r, rt);
  }
  void store(const ir::Op& op, llvm::Value* p, llvm::Value* val, const ir::Type& vt) {
    const int bytes = vt.bytes();
    if (vt.isBool()) val = b_.CreateZExt(val, memTy(vt));
    if (op.attrs.order == MemOrder::Plain) {
      b_.CreateAlignedStore(val, p, naturalAlign(bytes));
      return;
    }
    if (bytes > 8) fail(op, fmt::format("an atomic store of {} bytes (at most 8)", bytes));
    llvm::Value* bits = vt.isBool() ? b_.CreateBitCast(val, b_.getIntNTy(bytes * 8)) : toBits(val, vt);
    const MemOrder o = tg_.releaseBefore(b_, op.attrs.order, op.attrs.scope);
    auto* st = b_.CreateAlignedStore(bits, p, llvm::Align(bytes));
    st->setAtomic(llvmOrdering(o), scope(op.attrs.scope));
  }
  static llvm::AtomicRMWInst::BinOp intRmw(ir::RmwOp r) {
    using B = llvm::AtomicRMWInst::BinOp;
    switch (r) {
      case ir::RmwOp::Add: return B::Add;
      case ir::RmwOp::Or: return B::Or;
      case ir::RmwOp::And: return B::And;
      case ir::RmwOp::Xor: return B::Xor;
      case ir::RmwOp::Max: return B::Max;
      case ir::RmwOp::Min: return B::Min;
      case ir::RmwOp::UMax: return B::UMax;
      case ir::RmwOp::UMin: return B::UMin;
      case ir::RmwOp::Xchg: return B::Xchg;
    }
    return B::BAD_BINOP;
  }
  llvm::Value* atomicRmw(const ir::Op& op, const ir::Type& rt, llvm::Value* p, llvm::Value* val) {
    if (rt.isFloat() && op.attrs.rmw != ir::RmwOp::Add) fail(op, "float atomics are add only");
    const llvm::AtomicRMWInst::BinOp bop = rt.isFloat() ? llvm::AtomicRMWInst::FAdd : intRmw(op.attrs.rmw);
    if (bop == llvm::AtomicRMWInst::BAD_BINOP) fail(op, "unknown rmw op");
    const MemOrder o = tg_.releaseBefore(b_, op.attrs.order, op.attrs.scope);
    return b_.CreateAtomicRMW(bop, p, val, llvm::MaybeAlign(rt.bytes()), llvmOrdering(o, true), scope(op.attrs.scope));
  }
  llvm::Value* cmpXchg(const ir::Op& op, const ir::Type& rt, llvm::Value* p, llvm::Value* expect, llvm::Value* val) {
    const MemOrder o = tg_.releaseBefore(b_, op.attrs.order, op.attrs.scope);
    auto* cx = b_.CreateAtomicCmpXchg(p, expect, val, llvm::MaybeAlign(rt.bytes()), llvmOrdering(o, true),
                                      failureOrdering(o), scope(op.attrs.scope));
    return b_.CreateExtractValue(cx, 0);
  }
  void fence(const ir::Op& op) {
    if (op.attrs.order == MemOrder::Plain || op.attrs.order == MemOrder::Relaxed)
      fail(op, "a fence needs acquire, release, acq_rel or seq_cst order");
    tg_.fence(b_, op.attrs.order, op.attrs.scope);
  }
  static llvm::AtomicOrdering failureOrdering(MemOrder o) {
    switch (o) {
      case MemOrder::Acquire: case MemOrder::AcqRel: return llvm::AtomicOrdering::Acquire;
      case MemOrder::SeqCst: return llvm::AtomicOrdering::SequentiallyConsistent;
      case MemOrder::Plain: case MemOrder::Relaxed: case MemOrder::Release: return llvm::AtomicOrdering::Monotonic;
    }
    return llvm::AtomicOrdering::Monotonic;
  }

  // --- wave ops ---
  /// The target moves one dword a lane; wider values go dword by dword, narrower ones are
  /// zero-extended to a dword and truncated back.
  llvm::Value* shuffle(const ir::Op& op, llvm::Value* val, const ir::Type& vt, llvm::Value* src) {
    const int bits = totalBits(vt);
    llvm::Value* sel = tg_.shuffleSelector(b_, src);
    llvm::Value* raw = toBits(val, vt);
    auto perm = [&](llvm::Value* dw) { return tg_.shuffleDword(b_, sel, dw); };
    if (bits <= 32) {
      llvm::Value* r = perm(b_.CreateZExt(raw, b_.getInt32Ty()));
      return fromBits(b_.CreateTrunc(r, b_.getIntNTy(bits)), vt);
    }
    if (bits % 32 != 0) fail(op, "shuffles move whole dwords; got " + vt.str());
    const int n = bits / 32;
    auto* vty = llvm::FixedVectorType::get(b_.getInt32Ty(), n);
    llvm::Value* dws = b_.CreateBitCast(raw, vty);
    llvm::Value* out = llvm::PoisonValue::get(vty);
    for (int i = 0; i < n; ++i) out = b_.CreateInsertElement(out, perm(b_.CreateExtractElement(dws, i)), i);
    return fromBits(b_.CreateBitCast(out, b_.getIntNTy(bits)), vt);
  }
  llvm::Value* readFirstLane(llvm::Value* val, const ir::Type& vt) {
    const int bits = totalBits(vt);
    llvm::Value* raw = toBits(val, vt);
    llvm::Type* wide = bits <= 32 ? b_.getInt32Ty() : b_.getInt64Ty();
    llvm::Value* r = tg_.readFirstLane(b_, b_.CreateZExt(raw, wide));
    return fromBits(b_.CreateTrunc(r, b_.getIntNTy(bits)), vt);
  }

  // --- sync ---
  /// One 8-byte store atomic of (value, tag) at the op's order and scope.
  void publish(const ir::Op& op, llvm::Value* pair, llvm::Value* value, llvm::Value* tag) {
    llvm::Value* lo = b_.CreateZExt(value, b_.getInt64Ty());
    llvm::Value* hi = b_.CreateShl(b_.CreateZExt(tag, b_.getInt64Ty()), 32);
    if (op.attrs.order != MemOrder::Release && op.attrs.order != MemOrder::Relaxed)
      fail(op, "publish order must be release or relaxed");
    const MemOrder o = tg_.releaseBefore(b_, op.attrs.order, op.attrs.scope);
    auto* st = b_.CreateAlignedStore(b_.CreateOr(lo, hi), pair, llvm::Align(8));
    st->setAtomic(llvmOrdering(o), scope(op.attrs.scope));
  }
  /// Polls the pair until its tag matches; past `bound` realtime ticks it records the error
  /// (first error wins: cmpxchg word 0 from 0 to the code; word 1 counts) and gives up.
  llvm::Value* wait(const ir::Op& op) {
    const auto& o = op.operands;
    llvm::Value* pair = v(o[0]);
    llvm::Value* tag = v(o[1]);
    llvm::Value* bound = v(o[2]);
    llvm::Value* err = v(o[3]);
    llvm::Value* code = v(o[4]);
    const llvm::SyncScope::ID ss = scope(op.attrs.scope);
    const llvm::SyncScope::ID errScope = scope(op.attrs.scope == MemScope::System ? MemScope::System : MemScope::Agent);
    auto* i64 = b_.getInt64Ty();

    llvm::Value* t0 = tg_.realtime(b_);
    llvm::BasicBlock* poll = llvm::BasicBlock::Create(ctx_, "wait.poll", f_);
    llvm::BasicBlock* check = llvm::BasicBlock::Create(ctx_, "wait.check", f_);
    llvm::BasicBlock* timeout = llvm::BasicBlock::Create(ctx_, "wait.timeout", f_);
    llvm::BasicBlock* sleep = llvm::BasicBlock::Create(ctx_, "wait.sleep", f_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "wait.done", f_);
    b_.CreateBr(poll);

    b_.SetInsertPoint(poll);
    auto* w = b_.CreateAlignedLoad(i64, pair, llvm::Align(8), "wait.word");
    w->setAtomic(llvm::AtomicOrdering::Monotonic, ss);
    llvm::Value* got = b_.CreateTrunc(b_.CreateLShr(w, 32), b_.getInt32Ty());
    b_.CreateCondBr(b_.CreateICmpEQ(got, tag), done, check);

    b_.SetInsertPoint(check);
    llvm::Value* now = tg_.realtime(b_);
    b_.CreateCondBr(b_.CreateICmpSGE(b_.CreateSub(now, t0), bound), timeout, sleep);

    b_.SetInsertPoint(timeout);
    b_.CreateAtomicCmpXchg(err, i32c(0), code, llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic,
                           llvm::AtomicOrdering::Monotonic, errScope);
    b_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, b_.CreateConstGEP1_32(b_.getInt8Ty(), err, 4), i32c(1),
                       llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic, errScope);
    b_.CreateBr(done);

    b_.SetInsertPoint(sleep);
    tg_.sleep(b_, 1);
    b_.CreateBr(poll);

    b_.SetInsertPoint(done);
    auto* word = b_.CreatePHI(i64, 2);
    word->addIncoming(w, poll);
    word->addIncoming(w, timeout);
    if (op.attrs.order == MemOrder::Acquire) tg_.fence(b_, MemOrder::Acquire, op.attrs.scope);
    else if (op.attrs.order != MemOrder::Relaxed) fail(op, "wait order must be acquire or relaxed");
    return b_.CreateTrunc(word, b_.getInt32Ty());
  }

  /// CompileOptions::attributeOps: a line-tables-only compile unit and the kernel's subprogram;
  /// region() then gives each op's instructions the line of its 1-based preorder number.
  std::unique_ptr<llvm::DIBuilder> attributeOps() {
    auto dib = std::make_unique<llvm::DIBuilder>(m_);
    llvm::DIFile* file = dib->createFile(f_->getName(), ".");
    dib->createCompileUnit(llvm::DISourceLanguageName(llvm::dwarf::DW_LANG_C), file, "monogen", true, "", 0, "",
                           llvm::DICompileUnit::LineTablesOnly);
    sp_ = dib->createFunction(file, f_->getName(), f_->getName(), file, 0,
                              dib->createSubroutineType(dib->getOrCreateTypeArray({})), 0, llvm::DINode::FlagZero,
                              llvm::DISubprogram::SPFlagDefinition);
    f_->setSubprogram(sp_);
    m_.addModuleFlag(llvm::Module::Warning, "Debug Info Version", llvm::DEBUG_METADATA_VERSION);
    m_.addModuleFlag(llvm::Module::Max, "Dwarf Version", 5);
    return dib;
  }

  // --- control flow ---
  void lowerIf(const ir::Op& op, llvm::Value* c) {
    if (op.regions.size() != 2) fail(op, "an if needs a then and an else region");
    auto* thenB = llvm::BasicBlock::Create(ctx_, "if.then", f_);
    auto* elseB = llvm::BasicBlock::Create(ctx_, "if.else", f_);
    auto* end = llvm::BasicBlock::Create(ctx_, "if.end", f_);
    b_.CreateCondBr(c, thenB, elseB);
    b_.SetInsertPoint(thenB);
    region(op.regions[0]);
    b_.CreateBr(end);
    b_.SetInsertPoint(elseB);
    region(op.regions[1]);
    b_.CreateBr(end);
    b_.SetInsertPoint(end);
  }
  void lowerFor(const ir::Op& op, llvm::Value* lo, llvm::Value* hi, llvm::Value* step) {
    if (op.regions.size() != 1 || op.regions[0].args.size() != 1) fail(op, "a for needs one body with one argument");
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, "for.head", f_);
    auto* body = llvm::BasicBlock::Create(ctx_, "for.body", f_);
    auto* end = llvm::BasicBlock::Create(ctx_, "for.end", f_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    auto* iv = b_.CreatePHI(b_.getInt32Ty(), 2, "i");
    iv->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, hi), body, end);
    b_.SetInsertPoint(body);
    vals_.at(op.regions[0].args[0].id) = iv;
    region(op.regions[0]);
    llvm::Value* next = b_.CreateAdd(iv, step, "i.next");
    iv->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(end);
  }
  void lowerWhile(const ir::Op& op) {
    if (op.regions.size() != 2 || !op.regions[0].yield) fail(op, "a while needs a condition (with yield) and a body");
    auto* head = llvm::BasicBlock::Create(ctx_, "while.cond", f_);
    auto* body = llvm::BasicBlock::Create(ctx_, "while.body", f_);
    auto* end = llvm::BasicBlock::Create(ctx_, "while.end", f_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    region(op.regions[0]);
    b_.CreateCondBr(v(op.regions[0].yield), body, end);
    b_.SetInsertPoint(body);
    region(op.regions[1]);
    b_.CreateBr(head);
    b_.SetInsertPoint(end);
  }

  const ir::Plan& plan_;
  const ir::Function& fn_;
  const TargetInfo& tg_;
  const AddressSpaces as_;
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  mutable llvm::IRBuilder<> b_;
  std::string where_;
  llvm::Function* f_ = nullptr;
  llvm::GlobalVariable* lds_ = nullptr;
  std::vector<llvm::Value*> vals_;
  std::vector<llvm::AllocaInst*> vars_;
  std::vector<bool> e8m0Results_ = std::vector<bool>(fn_.values.size(), false);  // by value id: an E8m0ToF32 result
  std::vector<int> kernargOffsets_ = plan_.kernargOffsets();
  std::string stageName_;                // the current stage's name (sanitized)
  llvm::Value* stageKernarg_ = nullptr;  // the current stage's kernarg pointer (opaqueKernargPtr)
  bool attribute_ = false;               // CompileOptions::attributeOps
  llvm::DISubprogram* sp_ = nullptr;     // attribute_: the kernel's subprogram
  int opCounter_ = 1;                    // 1-based preorder, as ir/Verifier and the Sim number ops
};

}  // namespace

std::unique_ptr<llvm::Module> detail::lower(const ir::Plan& plan, const TargetInfo& target, llvm::LLVMContext& ctx,
                                            llvm::TargetMachine& tm, bool attributeOps) {
  auto m = std::make_unique<llvm::Module>(kernelSymbol(plan), ctx);
  m->setTargetTriple(tm.getTargetTriple());
  m->setDataLayout(tm.createDataLayout());
  target.configureModule(*m);
  Lowerer(plan, target, ctx, *m, attributeOps).run();
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(*m, &os))
    throw CodegenError(plan.key.variantName(), "the lowered LLVM IR does not verify: " + msg);
  return m;
}

}  // namespace monogen::codegen
