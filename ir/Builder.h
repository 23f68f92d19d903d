// The C++ builder DSL for kernel IR. C++ is the meta-language: a C++ `for` unrolls and a C++
// `if` specializes; if_/for_/while_ build control flow that stays in the kernel.
//
//   Builder b(plan.kernel);
//   Val t = b.tid();
//   b.if_(t < 16, [&] { b.store(p, t * 2); });
#pragma once
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "ir/Op.h"

namespace monogen::ir {

class Builder;

/// A value being built: an SSA value plus its builder, so C++ operators can make ops.
struct Val {
  Value v;
  Builder* b = nullptr;
  const Type& type() const;
};

/// Builds a Function's body. Each method checks its operand types and throws IrError naming
/// the op on a mismatch.
class Builder {
 public:
  explicit Builder(Function& fn);

  Function& fn() { return fn_; }
  Val wrap(Value v) { return Val{v, this}; }

  // --- values ---
  Val constInt(Type t, int64_t v);
  Val i1(bool v) { return constInt(Type::i1(), v); }
  Val i32(int64_t v) { return constInt(Type::i32(), v); }
  Val i64(int64_t v) { return constInt(Type::i64(), v); }
  Val f32(double v);
  Val bf16(double v);
  Val tid();
  Val lane();
  Val wave();
  Val block();
  /// The CTA's index again, read in the current stage (imm 1: codegen lowers it per stage, so
  /// what is computed from it is neither CSE'd with nor live into another stage).
  Val stageBlock();
  /// Kernel argument `index` of type `t` (pointer args: Type::ptr(Global)).
  Val arg(int index, Type t, const std::string& name);

  // --- arithmetic ---
  Val binary(OpCode op, Val a, Val b);
  Val cmp(CmpPred p, Val a, Val b);
  Val select(Val c, Val a, Val b);
  Val min(Val a, Val b) { return binary(OpCode::Min, a, b); }
  Val max(Val a, Val b) { return binary(OpCode::Max, a, b); }
  Val umin(Val a, Val b) { return binary(OpCode::UMin, a, b); }
  Val umax(Val a, Val b) { return binary(OpCode::UMax, a, b); }
  Val udiv(Val a, Val b) { return binary(OpCode::UDiv, a, b); }
  Val urem(Val a, Val b) { return binary(OpCode::URem, a, b); }
  Val lshr(Val a, Val b) { return binary(OpCode::LShr, a, b); }
  Val fma(Val a, Val b, Val c);
  Val isNan(Val a) { return cmp(CmpPred::Uno, a, a); }

  // --- conversions ---
  Val bitcast(Val a, Type t);
  Val trunc(Val a, Type t);
  Val zext(Val a, Type t);
  Val sext(Val a, Type t);
  Val siToFp(Val a);
  Val uiToFp(Val a);
  Val fpToSi(Val a, Type t);
  Val bf16ToF32(Val a);
  Val f32ToBf16(Val a);
  Val fp4ToF32(Val code, Val scale);
  /// The 8 fp4 codes of an i32 (low nibble first), each bf16(e2m1(code) * scale): one A16W4 MFMA operand.
  Val fp4x8ToBf16x8(Val word, Val scale);
  Val e8m0ToF32(Val code);
  Val fp8ToF32(Val code);
  Val f32ToFp8(Val a);
  /// Two f32ToFp8 codes in one i32: a's in byte 0, b's in byte 1, the high half zero.
  Val f32x2ToFp8x2(Val a, Val b);
  /// bf16 bits in the low half of an i32 -> f32.
  Val bf16BitsToF32(Val bits);
  /// f32 -> bf16 RNE -> back to f32 (the value a bf16 rounding point leaves).
  Val roundBf16(Val a) { return bf16ToF32(f32ToBf16(a)); }

  // --- math ---
  Val unary(OpCode op, Val a);
  Val exp2(Val a) { return unary(OpCode::Exp2, a); }
  Val rcp(Val a) { return unary(OpCode::Rcp, a); }
  Val rsq(Val a) { return unary(OpCode::Rsq, a); }
  Val sqrt(Val a) { return unary(OpCode::Sqrt, a); }

  // --- vectors ---
  Val extract(Val v, int i);
  Val insert(Val v, Val s, int i);
  Val splat(Val s, int lanes);
  /// lo's elements, then hi's (same element type, at most 16 in all).
  Val concat(Val lo, Val hi);

  // --- pointers and memory ---
  Val ptrAdd(Val p, Val byteOffset);
  Val ptrAdd(Val p, int64_t byteOffset);
  Val ptrToInt(Val p);
  Val intToPtr(Val i, AddrSpace s);
  Val load(Type t, Val p, MemOrder o = MemOrder::Plain, MemScope s = MemScope::Agent);
  void store(Val p, Val v, MemOrder o = MemOrder::Plain, MemScope s = MemScope::Agent);
  Val atomicRmw(RmwOp r, Val p, Val v, MemOrder o = MemOrder::Relaxed, MemScope s = MemScope::Agent);
  Val cmpXchg(Val p, Val expected, Val desired, MemOrder o = MemOrder::AcqRel,
              MemScope s = MemScope::Agent);
  void fence(MemOrder o, MemScope s);
  void barrier();

  // --- wave ops ---
  Val shuffle(Val v, Val srcLane);
  Val ballot(Val c);
  Val popcount(Val v);
  Val readFirstLane(Val v);
  /// v, stated to be the same in every lane of the CTA (a count read from LDS after a barrier): the
  /// verifier takes it as uniform (a loop holding barriers may end on it); the Sim checks the claim.
  Val ctaUniform(Val v);
  Val mfma(MfmaKind k, Val a, Val b, Val acc);
  /// The block-scaled 16x16x128 MFMA: E4M3 a, E2M1 b, an E8M0 scale a lane (ir/Mfma.h).
  Val mfmaScale(Val a, Val b, Val acc, Val scaleA, Val scaleB);
  /// v combined across the lanes (lane ^ m) for each mask in order: v = combine(v, v of lane ^ m).
  Val butterfly(Val v, std::initializer_list<int> masks, OpCode combine = OpCode::Add);
  Val butterfly(Val v, std::span<const int> masks, OpCode combine = OpCode::Add);

  // --- sync ---
  void publish(Val pair, Val value, Val tag, MemOrder o = MemOrder::Release,
               MemScope s = MemScope::Agent);
  Val wait(Val pair, Val tag, Val bound, Val errWord, Val errCode, int site,
           MemOrder o = MemOrder::Acquire, MemScope s = MemScope::Agent);

  // --- time ---
  Val realtime();
  void sleep(int amount);

  // --- mutable variables ---
  Var var(Type t, const std::string& name);
  Var var(Val init, const std::string& name);
  Val get(Var v);
  void set(Var v, Val value);

  // --- structured control flow ---
  void if_(Val c, const std::function<void()>& then, const std::function<void()>& otherwise = {});
  void for_(Val lo, Val hi, Val step, const std::function<void(Val)>& body);
  void while_(const std::function<Val()>& cond, const std::function<void()>& body);
  void stage(int index, const std::function<void()>& body);

  /// Give v a name in the printed IR.
  Val named(Val v, const std::string& name);

  /// Literal of a's type (int or float).
  Val like(Val a, double v);

 private:
  Value newValue(Type t);
  /// Appends an op with a result, typed by its record's rule (`given` for ResultRule::Given);
  /// throws IrError when the operand count is not the record's.
  Val emit(OpCode code, std::vector<Value> operands, Attrs attrs = {}, Type given = {});
  /// Appends an op without a result, checking its operand and region counts against the record.
  void emitVoid(OpCode code, std::vector<Value> operands, Attrs attrs = {},
                std::vector<Region> regions = {});
  void checkShape(OpCode code, size_t operands, size_t regions) const;
  Type resultType(OpCode code, const std::vector<Value>& operands, Type given) const;
  Region buildRegion(const std::function<void()>& body);
  [[noreturn]] void fail(OpCode op, const std::string& what) const;
  void expect(bool ok, OpCode op, const std::string& what) const;

  Function& fn_;
  std::vector<Region*> stack_;
};

// C++ operators build ops; an int or double operand becomes a literal of the other's type.
Val operator+(Val a, Val b);
Val operator-(Val a, Val b);
Val operator*(Val a, Val b);
Val operator/(Val a, Val b);
Val operator%(Val a, Val b);
Val operator&(Val a, Val b);
Val operator|(Val a, Val b);
Val operator^(Val a, Val b);
Val operator<<(Val a, Val b);
Val operator>>(Val a, Val b);  // arithmetic for ints
Val operator<(Val a, Val b);   // signed / ordered
Val operator<=(Val a, Val b);
Val operator>(Val a, Val b);
Val operator>=(Val a, Val b);
Val operator==(Val a, Val b);
Val operator!=(Val a, Val b);
Val operator!(Val a);          // i1 not
Val operator-(Val a);

#define MONOGEN_VAL_LITERAL_OPS(op)                                  \
  inline Val operator op(Val a, double c) { return a op a.b->like(a, c); } \
  inline Val operator op(double c, Val a) { return a.b->like(a, c) op a; }
MONOGEN_VAL_LITERAL_OPS(+)
MONOGEN_VAL_LITERAL_OPS(-)
MONOGEN_VAL_LITERAL_OPS(*)
MONOGEN_VAL_LITERAL_OPS(/)
MONOGEN_VAL_LITERAL_OPS(%)
MONOGEN_VAL_LITERAL_OPS(&)
MONOGEN_VAL_LITERAL_OPS(|)
MONOGEN_VAL_LITERAL_OPS(^)
MONOGEN_VAL_LITERAL_OPS(<<)
MONOGEN_VAL_LITERAL_OPS(>>)
MONOGEN_VAL_LITERAL_OPS(<)
MONOGEN_VAL_LITERAL_OPS(<=)
MONOGEN_VAL_LITERAL_OPS(>)
MONOGEN_VAL_LITERAL_OPS(>=)
MONOGEN_VAL_LITERAL_OPS(==)
MONOGEN_VAL_LITERAL_OPS(!=)
#undef MONOGEN_VAL_LITERAL_OPS

}  // namespace monogen::ir
