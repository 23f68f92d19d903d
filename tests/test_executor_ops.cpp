// Every op's lowering against the executor: one kernel applies every IR op to edge-case and random
// operands on the Sim and on gfx950-run; results must agree bit for bit except where
// runtime/Gfx950RunNumerics.h declares a difference (docs/verification.md).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/Compiler.h"
#include "ir/Builder.h"
#include "ir/Mfma.h"
#include "ir/Numerics.h"
#include "runtime/Gfx950RunDevice.h"
#include "runtime/Gfx950RunNumerics.h"
#include "runtime/sim/SimDeviceAdapter.h"
#include "runtime/sim/SimRng.h"
#include "specs/minimax_m3/kernel/Mxfp8.h"
#include "specs/minimax_m3/reference/Mxfp8Reference.h"

using namespace monogen;
using namespace monogen::ir;
using runtime::Gfx950RunDevice;

namespace {

constexpr int kBlocks = 2, kThreads = 256, kLanes = kBlocks * kThreads;  // G: lanes of the grid
constexpr int32_t kArg32 = static_cast<int32_t>(0x80000001u);
constexpr int64_t kArg64 = 0x123456789abcdef0ll;

uint32_t fbits(float f) { return num::f32ToBits(f); }

// ------------------------------------------------------------------ operand pools (element bits)

std::vector<uint64_t> edgesF32() {
  std::vector<uint64_t> v = {
      0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x3f000000, 0x40000000, 0x40400000, 0xc0400000,
      0x3fc00000, 0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x00800000, 0x80800000, 0x00c00000,
      0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xff812345,
      0x7fc12345, 0x3f800001, 0x3f7fffff, 0x3eaaaaab, 0x42c80000, 0xd01502f9, 0x0da24260, 0x3f808000,
      0x3f818000, 0x3f80ffff, 0x3f80c000, 0x43e00000, 0x43e80000, 0x43f00000, 0x3b000000, 0x3a800000,
      0x3ac00000, 0x4b000000, 0x4f000000, 0xcf000000, 0x4effffff, 0x5f000000, 0xdf000000, 0x3fb8aa3b,
      0x42fdcccd, 0xc3150000, 0x43000000, 0xc3160000, 0x7e800000, 0x01000000, 0x3c000000, 0xc2fe0000};
  return v;
}
std::vector<uint64_t> edgesBf16() {
  std::vector<uint64_t> v = {0x0000, 0x8000, 0x3f80, 0xbf80, 0x3f00, 0x4000, 0x4040, 0x0001, 0x8001, 0x007f,
                             0x0080, 0x8080, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0xff85,
                             0x7fd3, 0x3f81, 0x3f7f, 0x3eab, 0x42c8, 0x4b00, 0x4f00, 0xcf00, 0x0100, 0x3c00};
  return v;
}
std::vector<uint64_t> edgesInt(int bits) {
  const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  const uint64_t sign = 1ull << (bits - 1);
  std::vector<uint64_t> v = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256,
                             0x5555555555555555ull, 0xaaaaaaaaaaaaaaaaull, 1000003, 0x10000, 0xffff,
                             0x100000000ull, 0xffffffffull};
  for (uint64_t x : {sign, sign - 1, sign + 1, mask, mask - 1, mask - 6, sign | 5}) v.push_back(x);
  for (auto& x : v) x &= mask;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}
/// Nonzero integers (divisors).
std::vector<uint64_t> nonzero(std::vector<uint64_t> v) {
  v.erase(std::remove(v.begin(), v.end(), 0ull), v.end());
  return v;
}
std::vector<uint64_t> range(uint64_t lo, uint64_t hi) {
  std::vector<uint64_t> v;
  for (uint64_t x = lo; x < hi; ++x) v.push_back(x);
  return v;
}
/// Every e8m0 scale as f32 bits (2^(e-127), e = 255 NaN), then odd f32 scales.
std::vector<uint64_t> scalesF32() {
  std::vector<uint64_t> v;
  for (uint32_t e = 0; e < 256; ++e) v.push_back(fbits(num::e8m0ToF32(e)));
  for (uint64_t x : {0x00000000ull, 0x80000000ull, 0x3fc00000ull, 0xbf400000ull, 0x7f800000ull, 0x00000001ull,
                     0x3eaaaaabull, 0x7f7fffffull})
    v.push_back(x);
  return v;
}
/// f32 midpoints between neighbouring fp8 e4m3 values and near them (RNE ties, both signs).
std::vector<uint64_t> fp8Ties() {
  std::vector<uint64_t> v;
  for (uint32_t c = 0; c < 0x7e; ++c) {
    const float lo = num::fp8E4m3ToF32(c), hi = num::fp8E4m3ToF32(c + 1), mid = (lo + hi) / 2;
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      v.push_back(fbits(f));
      v.push_back(fbits(-f));
    }
  }
  return v;
}

/// What random elements of a kind look like.
enum class Rand { Bits, F32Normal, Bf16Normal };

uint64_t randomElem(Rand r, int bits, uint64_t& st) {
  const uint64_t x = runtime::simSplitMix64(st);
  switch (r) {
    case Rand::Bits: return bits == 64 ? x : x & ((1ull << bits) - 1);
    case Rand::F32Normal: {  // sign, exponent 2^-24 .. 2^24, any mantissa
      const uint32_t e = 127 - 24 + static_cast<uint32_t>((x >> 32) % 49);
      return (x >> 63) << 31 | e << 23 | (x & 0x7fffff);
    }
    case Rand::Bf16Normal: {
      const uint32_t e = 127 - 24 + static_cast<uint32_t>((x >> 32) % 49);
      return (x >> 63) << 15 | e << 7 | (x & 0x7f);
    }
  }
  return 0;
}

// ------------------------------------------------------------------ the cases

/// One operand: its type, the edge pool its elements cross over, and its random kind.
struct Operand {
  Type type;
  std::vector<uint64_t> pool;
  Rand rand = Rand::Bits;
  bool nonzero = false;  // a divisor: random zeros become 1
};

/// What the IR leaves open in a result (ir/Op.h, "What the IR leaves open"), so either device may
/// give either: the NaN of float arithmetic and conversions (any NaN equals any NaN), and the
/// sign of a zero that Min/Max picks between +0 and -0. Nothing else is open.
enum class Open { Nothing, NanAny, NanAnyZeroSign };

/// An elementwise case: result = f(operands) in every lane, over `count` operand tuples
/// (the edge pools' cross product, capped, then random tuples up to a multiple of the grid).
/// `executor`, when set, is the declared executor model of one result element from the
/// operands' element bits (runtime/Gfx950RunNumerics.h); otherwise the executor must equal the Sim.
struct Elementwise {
  std::string name;
  std::string lowers;
  std::vector<Operand> operands;
  std::function<Val(Builder&, std::vector<Val>&)> f;
  std::function<uint64_t(const std::vector<uint64_t>&)> executor;
  int randomTuples = 1024;
  Open open = Open::Nothing;  // what the IR leaves open in its result (ir/Op.h)
  /// Declared: operands where the executor's result is not compared (runtime/Gfx950RunNumerics.h).
  std::function<bool(const std::vector<uint64_t>&)> skip = nullptr;
};

/// A case with its own kernel code: it gets the lane's grid index, its input and output
/// regions (a pointer each), and writes outBytes per lane at out + gid * outBytes.
struct Custom {
  std::string name;
  std::string lowers;
  int inBytes;   // per lane
  int outBytes;  // per lane
  std::function<void(Builder&, Val gid, Val in, Val out)> body;
  std::function<void(std::vector<uint8_t>& in, uint64_t& st)> fill;  // the input region (all lanes)
  /// Declared executor model: the expected executor output region from the input and the Sim's.
  std::function<void(const std::vector<uint8_t>& in, std::vector<uint8_t>& want)> executor;
  bool f32NanAny = false;  // the results are f32 words whose NaNs may differ (Open::NanAny)
};

Type vec(Type t, int n) { return Type::vec(t, n); }
Operand f32op() { return {Type::f32(), edgesF32(), Rand::F32Normal}; }
Operand bf16op(int lanes = 1) { return {vec(Type::bf16(), lanes), edgesBf16(), Rand::Bf16Normal}; }
Operand intop(Type t) { return {t, edgesInt(t.elemBits()), Rand::Bits}; }

using Ops = std::vector<Val>&;

// Each int type an integer op is tested at, and each float type.
const std::vector<Type>& intTypes() {
  static const std::vector<Type> t = {Type::i8(), Type::i16(), Type::i32(), Type::i64(), vec(Type::i32(), 4),
                                      vec(Type::i16(), 2)};
  return t;
}
const std::vector<Type>& floatTypes() {
  static const std::vector<Type> t = {Type::f32(), Type::bf16(), vec(Type::f32(), 2), vec(Type::bf16(), 8)};
  return t;
}
Operand opFor(Type t) {
  if (t.scalar == Scalar::F32) return {t, edgesF32(), Rand::F32Normal};
  if (t.scalar == Scalar::BF16) return {t, edgesBf16(), Rand::Bf16Normal};
  return {t, edgesInt(t.elemBits()), Rand::Bits};
}

uint64_t f32Model(float v) { return fbits(v); }
float asF32(uint64_t b) { return num::bitsToF32(static_cast<uint32_t>(b)); }

std::vector<Elementwise> elementwiseCases() {
  std::vector<Elementwise> cs;
  auto bin = [&](OpCode op, const char* name, Type t, const std::string& lowers, bool divisor = false) {
    Operand a = opFor(t), b = opFor(t);
    if (divisor) {
      b.pool = nonzero(b.pool);
      b.nonzero = true;
    }
    cs.push_back({fmt::format("{}.{}", name, t.str()), lowers, {a, b},
                  [op](Builder& bl, Ops o) { return bl.binary(op, o[0], o[1]); }, nullptr});
    if (t.isFloat()) cs.back().open = op == OpCode::Min || op == OpCode::Max ? Open::NanAnyZeroSign : Open::NanAny;
  };
  for (Type t : intTypes()) {
    bin(OpCode::Add, "add", t, "add -> v_add_u32 / v_add_co (i64: a carry pair)");
    bin(OpCode::Sub, "sub", t, "sub -> v_sub_u32 / v_sub_co");
    bin(OpCode::Mul, "mul", t, "mul -> v_mul_lo_u32 (i64: mul_hi + mad)");
    bin(OpCode::And, "and", t, "and -> v_and_b32");
    bin(OpCode::Or, "or", t, "or -> v_or_b32");
    bin(OpCode::Xor, "xor", t, "xor -> v_xor_b32");
    bin(OpCode::Shl, "shl", t, "shl, amount mod width -> v_lshlrev");
    bin(OpCode::LShr, "lshr", t, "lshr, amount mod width -> v_lshrrev");
    bin(OpCode::AShr, "ashr", t, "ashr, amount mod width -> v_ashrrev");
    bin(OpCode::Min, "min", t, "smin -> v_min_i32");
    bin(OpCode::Max, "max", t, "smax -> v_max_i32");
    bin(OpCode::UMin, "umin", t, "umin -> v_min_u32");
    bin(OpCode::UMax, "umax", t, "umax -> v_max_u32");
    bin(OpCode::Div, "div", t, "sdiv, x / -1 wraps -> an integer division sequence", true);
    bin(OpCode::Rem, "rem", t, "srem, x % -1 = 0 -> an integer division sequence", true);
    bin(OpCode::UDiv, "udiv", t, "udiv -> v_rcp_iflag_f32 + correction", true);
    bin(OpCode::URem, "urem", t, "urem -> v_rcp_iflag_f32 + correction", true);
  }
  for (Type t : floatTypes()) {
    bin(OpCode::Add, "add", t, "fadd -> v_add_f32 / v_pk_add_f32 (bf16: in f32, RNE back)");
    bin(OpCode::Sub, "sub", t, "fsub -> v_sub_f32");
    bin(OpCode::Mul, "mul", t, "fmul -> v_mul_f32 / v_pk_mul_f32");
    bin(OpCode::Min, "min", t, "minnum -> v_min_f32 (IEEE minNum)");
    bin(OpCode::Max, "max", t, "maxnum -> v_max_f32 (IEEE maxNum)");
    Operand a = opFor(t), b = opFor(t);
    const bool bf = t.scalar == Scalar::BF16;
    cs.push_back({fmt::format("div.{}", t.str()), "fdiv -> v_div_scale/v_rcp/v_fma/v_div_fmas/v_div_fixup_f32",
                  {a, b}, [](Builder& bl, Ops o) { return o[0] / o[1]; },
                  nullptr});
    cs.back().skip = [bf](const std::vector<uint64_t>& e) {  // declared: where v_div_scale_f32 rescales
      auto v = [bf](uint64_t x) { return bf ? num::bf16ToF32(static_cast<uint16_t>(x)) : asF32(x); };
      return runtime::gfx950run::divIsRescaled(v(e[0]), v(e[1]));
    };
    cs.back().open = Open::NanAny;
  }
  for (Type t : {Type::i1(), vec(Type::i1(), 4)}) {
    auto boolOp = [&](OpCode op, const char* name) {
      Operand a{vec(Type::i8(), t.lanes), range(0, 4)}, b = a;
      cs.push_back({fmt::format("{}.{}", name, t.str()), std::string(name) + " on i1 -> s_and/s_or/s_xor on lane masks",
                    {a, b}, [op, t](Builder& bl, Ops o) {
                      Val x = bl.trunc(o[0], t), y = bl.trunc(o[1], t);
                      return bl.zext(bl.binary(op, x, y), vec(Type::i8(), t.lanes));
                    }, nullptr});
    };
    boolOp(OpCode::And, "and");
    boolOp(OpCode::Or, "or");
    boolOp(OpCode::Xor, "xor");
  }
  cs.push_back({"fma.f32", "llvm.fma.f32 -> v_fma_f32", {f32op(), f32op(), f32op()},
                [](Builder& bl, Ops o) { return bl.fma(o[0], o[1], o[2]); }, nullptr, 2048, Open::NanAny});

  // Comparisons: every predicate of the type's kind, the i1 result widened to i32.
  const CmpPred intPreds[] = {CmpPred::Eq, CmpPred::Ne, CmpPred::Slt, CmpPred::Sle, CmpPred::Sgt,
                              CmpPred::Sge, CmpPred::Ult, CmpPred::Ule, CmpPred::Ugt, CmpPred::Uge};
  const CmpPred fltPreds[] = {CmpPred::Oeq, CmpPred::One, CmpPred::Olt, CmpPred::Ole,
                              CmpPred::Ogt, CmpPred::Oge, CmpPred::Uno, CmpPred::Ord};
  for (Type t : {Type::i8(), Type::i32(), Type::i64()})
    for (CmpPred p : intPreds)
      cs.push_back({fmt::format("cmp.{}.{}", cmpPredName(p), t.str()), "icmp -> v_cmp_*_{i,u}32/64 + v_cndmask",
                    {opFor(t), opFor(t)}, [p](Builder& bl, Ops o) { return bl.zext(bl.cmp(p, o[0], o[1]), Type::i32()); },
                    nullptr, 256});
  for (Type t : {Type::f32(), Type::bf16()})
    for (CmpPred p : fltPreds)
      cs.push_back({fmt::format("cmp.{}.{}", cmpPredName(p), t.str()), "fcmp -> v_cmp_*_f32 + v_cndmask",
                    {opFor(t), opFor(t)}, [p](Builder& bl, Ops o) { return bl.zext(bl.cmp(p, o[0], o[1]), Type::i32()); },
                    nullptr, 256});
  cs.push_back({"cmp.slt.<4 x i32>.select", "icmp <4 x i32> + select per element -> v_cmp + v_cndmask",
                {opFor(vec(Type::i32(), 4)), opFor(vec(Type::i32(), 4))},
                [](Builder& bl, Ops o) { return bl.select(bl.cmp(CmpPred::Slt, o[0], o[1]), o[0], o[1] + o[1]); }, nullptr});
  cs.push_back({"select.f32", "select -> v_cndmask_b32", {intop(Type::i8()), f32op(), f32op()},
                [](Builder& bl, Ops o) { return bl.select(bl.trunc(o[0], Type::i1()), o[1], o[2]); }, nullptr});
  cs.push_back({"select.i64", "select -> 2 x v_cndmask_b32", {intop(Type::i8()), intop(Type::i64()), intop(Type::i64())},
                [](Builder& bl, Ops o) { return bl.select(bl.trunc(o[0], Type::i1()), o[1], o[2]); }, nullptr});

  // Conversions.
  auto conv = [&](std::string name, std::string lowers, Operand a, std::function<Val(Builder&, Val)> f) {
    cs.push_back({std::move(name), std::move(lowers), {std::move(a)},
                  [f](Builder& bl, Ops o) { return f(bl, o[0]); }, nullptr});
  };
  conv("bitcast.f32.i32", "bitcast -> no instruction", f32op(), [](Builder& b, Val a) { return b.bitcast(a, Type::i32()); });
  conv("bitcast.<2 x bf16>.i32", "bitcast -> none", bf16op(2), [](Builder& b, Val a) { return b.bitcast(a, Type::i32()); });
  conv("bitcast.i64.<2 x f32>", "bitcast -> none", intop(Type::i64()),
       [](Builder& b, Val a) { return b.bitcast(a, vec(Type::f32(), 2)); });
  conv("bitcast.<8 x bf16>.<4 x i32>", "bitcast -> none", bf16op(8),
       [](Builder& b, Val a) { return b.bitcast(a, vec(Type::i32(), 4)); });
  conv("bitcast.i16.<16 x i1>.i16", "bitcast <16 x i1> (bits) -> lane-mask bit ops", intop(Type::i16()),
       [](Builder& b, Val a) { return b.bitcast(b.bitcast(a, vec(Type::i1(), 16)), Type::i16()); });
  conv("bitcast.<16 x i1> of cmp", "icmp <16 x i8> packed to i16", intop(vec(Type::i8(), 16)),
       [](Builder& b, Val a) { return b.bitcast(b.cmp(CmpPred::Slt, a, b.splat(b.constInt(Type::i8(), 9), 16)), Type::i16()); });
  const std::pair<Type, Type> widths[] = {{Type::i64(), Type::i32()}, {Type::i32(), Type::i16()}, {Type::i32(), Type::i8()},
                                          {Type::i16(), Type::i8()},  {Type::i64(), Type::i8()},  {Type::i32(), Type::i1()},
                                          {Type::i64(), Type::i1()}};
  for (auto [w, n] : widths) {
    conv(fmt::format("trunc.{}.{}", w.str(), n.str()), "trunc -> none / v_and", intop(w),
         [n](Builder& b, Val a) { Val t = b.trunc(a, n); return n.isBool() ? b.zext(t, Type::i32()) : t; });
    const Type small = n.isBool() ? Type::i8() : n;
    Operand s = intop(small);
    if (n.isBool()) s.pool = range(0, 4);
    conv(fmt::format("zext.{}.{}", n.str(), w.str()), "zext -> v_and / v_bfe_u32 / mov 0", s, [n, w](Builder& b, Val a) {
      return b.zext(n.isBool() ? b.trunc(a, n) : a, w);
    });
    conv(fmt::format("sext.{}.{}", n.str(), w.str()), "sext -> v_bfe_i32 / v_ashrrev", s, [n, w](Builder& b, Val a) {
      return b.sext(n.isBool() ? b.trunc(a, n) : a, w);
    });
  }
  conv("sext.<4 x i8>.<4 x i32>", "sext per element -> v_bfe_i32", intop(vec(Type::i8(), 4)),
       [](Builder& b, Val a) { return b.sext(a, vec(Type::i32(), 4)); });
  Operand i32s = intop(Type::i32());
  for (uint64_t x : {0x01000001ull, 0x01000003ull, 0x7fffffc0ull, 0x7fffffbfull, 0xffffff7full, 0x80000040ull})
    i32s.pool.push_back(x);  // f32 rounding ties and near-ties
  conv("sitofp.i32.f32", "sitofp -> v_cvt_f32_i32", i32s, [](Builder& b, Val a) { return b.siToFp(a); });
  conv("uitofp.i32.f32", "uitofp -> v_cvt_f32_u32", i32s, [](Builder& b, Val a) { return b.uiToFp(a); });
  conv("fptosi.f32.i32", "llvm.fptosi.sat.i32 -> v_cvt_i32_f32", f32op(), [](Builder& b, Val a) { return b.fpToSi(a, Type::i32()); });
  conv("fptosi.f32.i64", "llvm.fptosi.sat.i64 -> a split-and-convert sequence + clamps", f32op(),
       [](Builder& b, Val a) { return b.fpToSi(a, Type::i64()); });
  conv("bf16tof32.bf16", "fpext bf16 -> v_lshlrev_b32 16", bf16op(), [](Builder& b, Val a) { return b.bf16ToF32(a); });
  conv("bf16tof32.<4 x bf16>", "fpext <4 x bf16> -> shifts / v_and", bf16op(4), [](Builder& b, Val a) { return b.bf16ToF32(a); });
  Operand tiesF32 = f32op();
  for (uint32_t m : {0x00008000u, 0x00018000u, 0x00007fffu, 0x00008001u, 0x007f8000u, 0x007fffffu})
    for (uint32_t e : {0x3f800000u, 0x00000000u, 0x7f000000u, 0x80800000u}) tiesF32.pool.push_back(e | m);
  conv("f32tobf16.f32", "fptrunc -> v_cvt_pk_bf16_f32 (RNE)", tiesF32, [](Builder& b, Val a) { return b.f32ToBf16(a); });
  cs.back().open = Open::NanAny;
  conv("f32tobf16.<4 x f32>", "fptrunc <4 x f32> -> v_cvt_pk_bf16_f32", {vec(Type::f32(), 4), tiesF32.pool, Rand::F32Normal},
       [](Builder& b, Val a) { return b.f32ToBf16(a); });
  cs.back().open = Open::NanAny;
  Operand codes{Type::i32(), range(0, 16)};
  for (uint64_t x : {0x12345670ull, 0xfffffff9ull, 0x80000008ull}) codes.pool.push_back(x);  // high bits are ignored
  cs.push_back({"fp4tof32", "e2m1 table arithmetic * scale -> v_cvt / v_mul_f32", {codes, {Type::f32(), scalesF32()}},
                [](Builder& b, Ops o) { return b.fp4ToF32(o[0], o[1]); }, nullptr, 1024, Open::NanAny});
  Operand words{Type::i32(), {0x76543210ull, 0xfedcba98ull, 0x08f7e6d5ull, 0x00000000ull, 0x88888888ull, 0x7f7f7f7full}};
  cs.push_back({"fp4x8tobf16x8", "8 x (e2m1 * scale, RNE to bf16) -> integer/float ops", {words, {Type::f32(), scalesF32()}},
                [](Builder& b, Ops o) { return b.fp4x8ToBf16x8(o[0], o[1]); }, nullptr, 2048, Open::NanAny});
  cs.push_back({"fp4x8tobf16x8, e8m0 scale", "4 x v_cvt_scalef32_pk_bf16_fp4 (the scale is an E8m0ToF32)",
                {words, {Type::i32(), range(0, 256)}},
                [](Builder& b, Ops o) { return b.fp4x8ToBf16x8(o[0], b.e8m0ToF32(o[1])); }, nullptr, 2048, Open::NanAny});
  Operand bytes{Type::i32(), range(0, 256)};
  for (uint64_t x : {0xffffff00ull, 0x12345601ull, 0x800000ffull}) bytes.pool.push_back(x);
  conv("e8m0tof32", "e8m0 -> exponent bits (0: 2^-127, 255: NaN)", bytes, [](Builder& b, Val a) { return b.e8m0ToF32(a); });
  conv("fp8tof32", "v_cvt_f32_fp8 of byte 0, its NaNs selected to 0x7fc00000", bytes, [](Builder& b, Val a) { return b.fp8ToF32(a); });
  Operand toFp8 = f32op();
  for (uint64_t x : fp8Ties()) toFp8.pool.push_back(x);
  for (uint32_t c = 0; c <= 0x7e; ++c) {  // every code's value, both signs
    toFp8.pool.push_back(fbits(num::fp8E4m3ToF32(c)));
    toFp8.pool.push_back(fbits(-num::fp8E4m3ToF32(c)));
  }
  for (float x : {449.0f, 463.9f, 464.0f, 480.0f, 1e6f, -1e30f, -449.0f, -464.0f, 1e-40f, -1e-45f, 3.14159f})
    toFp8.pool.push_back(fbits(x));  // past 448 (464 is the tie to the next would-be code), f32 subnormals
  conv("f32tofp8", "NaN-keeping clamp +-448, v_cvt_pk_fp8_f32 (OCP e4m3fn, RNE), a NaN byte -> 0x7f", toFp8, [](Builder& b, Val a) { return b.f32ToFp8(a); });
  // The cross product runs the first operand fastest: a second case sweeps b against a few a's.
  Operand fewFp8{Type::f32(), {0x7fc00000, 0xff812345, 0x43e00000, 0xc3e80000, 0x00000001, 0x3f880000}, Rand::F32Normal};
  const char* pkLowers = "2 x NaN-keeping clamp +-448, one v_cvt_pk_fp8_f32 (OCP e4m3fn, RNE), NaN bytes -> 0x7f";
  cs.push_back({"f32x2tofp8x2", pkLowers, {toFp8, fewFp8},
                [](Builder& b, Ops o) { return b.f32x2ToFp8x2(o[0], o[1]); }, nullptr, 4096});
  cs.push_back({"f32x2tofp8x2, b swept", pkLowers, {fewFp8, toFp8},
                [](Builder& b, Ops o) { return b.f32x2ToFp8x2(o[0], o[1]); }, nullptr, 1024});

  // Math.
  Operand expIn = f32op();
  for (int k = -1500; k <= 1300; k += 7) expIn.pool.push_back(fbits(k / 10.0f + 0.03125f));
  cs.push_back({"exp2.f32", "llvm.exp2.f32 -> v_exp_f32 (+ range scaling)", {expIn},
                [](Builder& b, Ops o) { return b.exp2(o[0]); },
                [](const std::vector<uint64_t>& e) { return f32Model(runtime::gfx950run::exp2(asF32(e[0]))); }, 1024,
                Open::NanAny});
  cs.push_back({"rcp.f32", "llvm.amdgcn.rcp.f32 -> v_rcp_f32", {f32op()}, [](Builder& b, Ops o) { return b.rcp(o[0]); },
                [](const std::vector<uint64_t>& e) { return f32Model(runtime::gfx950run::rcp(asF32(e[0]))); }, 1024,
                Open::NanAny});
  cs.push_back({"rsq.f32", "llvm.amdgcn.rsq.f32 -> v_rsq_f32", {f32op()}, [](Builder& b, Ops o) { return b.rsq(o[0]); },
                [](const std::vector<uint64_t>& e) { return f32Model(runtime::gfx950run::rsq(asF32(e[0]))); }, 1024,
                Open::NanAny});
  cs.push_back({"sqrt.f32", "llvm.sqrt.f32 -> v_sqrt_f32 + correction (correctly rounded)", {f32op()},
                [](Builder& b, Ops o) { return b.sqrt(o[0]); }, nullptr, 1024, Open::NanAny});
  cs.push_back({"abs.f32", "llvm.fabs.f32 -> v_and_b32 (the sign bit cleared)", {f32op()},
                [](Builder& b, Ops o) { return b.unary(OpCode::Abs, o[0]); },
                [](const std::vector<uint64_t>& e) { return e[0] & 0x7fffffffu; }});
  cs.push_back({"popcount.i32", "ctpop -> v_bcnt_u32_b32", {intop(Type::i32())},
                [](Builder& b, Ops o) { return b.popcount(o[0]); }, nullptr});
  cs.push_back({"popcount.i64", "ctpop i64 -> 2 x v_bcnt_u32_b32", {intop(Type::i64())},
                [](Builder& b, Ops o) { return b.popcount(o[0]); }, nullptr});

  // Vectors.
  cs.push_back({"extract.<4 x i32>.2", "extractelement -> register pick", {intop(vec(Type::i32(), 4))},
                [](Builder& b, Ops o) { return b.extract(o[0], 2); }, nullptr});
  cs.push_back({"extract.<8 x bf16>.5", "extractelement -> v_lshrrev / v_and", {bf16op(8)},
                [](Builder& b, Ops o) { return b.extract(o[0], 5); }, nullptr});
  cs.push_back({"insert.<2 x f32>.1", "insertelement -> register pick", {{vec(Type::f32(), 2), edgesF32(), Rand::F32Normal}, f32op()},
                [](Builder& b, Ops o) { return b.insert(o[0], o[1], 1); }, nullptr});
  cs.push_back({"insert.<8 x bf16>.3", "insertelement -> v_perm / v_and_or", {bf16op(8), bf16op()},
                [](Builder& b, Ops o) { return b.insert(o[0], o[1], 3); }, nullptr});
  cs.push_back({"splat.f32.4", "splat -> copies", {f32op()}, [](Builder& b, Ops o) { return b.splat(o[0], 4); }, nullptr});
  cs.push_back({"splat.i64.2", "splat -> copies", {intop(Type::i64())}, [](Builder& b, Ops o) { return b.splat(o[0], 2); }, nullptr});
  cs.push_back({"splat.bf16.8", "splat -> v_perm / copies", {bf16op()}, [](Builder& b, Ops o) { return b.splat(o[0], 8); }, nullptr});
  return cs;
}

// ------------------------------------------------------------------ custom cases

template <class T>
void putAt(std::vector<uint8_t>& v, size_t off, T x) {
  std::memcpy(v.data() + off, &x, sizeof(T));
}
template <class T>
T getAt(const std::vector<uint8_t>& v, size_t off) {
  T x;
  std::memcpy(&x, v.data() + off, sizeof(T));
  return x;
}
void fillRandom(std::vector<uint8_t>& in, uint64_t& st) {
  for (size_t i = 0; i + 8 <= in.size(); i += 8) putAt<uint64_t>(in, i, runtime::simSplitMix64(st));
}

/// The MfmaScale case's lanes (80 bytes: 32 A bytes, 16 B bytes, 4 f32 accumulators, 2 scale words;
/// the scale of A's row i / B's column j in K block t is lane 16 t + i's / 16 t + j's byte 0):
/// - wave 0: every A code (NaNs only here) and every B code; scales near 1; random accumulators;
/// - waves 1..4: every A code and B code (no NaN); A scale codes 0..255 and B's 255..0 across the four
///   (the rest of each word random), so a product's scale is 2^(i - j + 1); accumulators random
///   normals, +-2^24, +-0 and +-FLT_MAX;
/// - wave 5: the same codes; B's scale by column from code 0 to 255, so results run from below the
///   subnormals past FLT_MAX; accumulators +-0, subnormals and normals;
/// - waves 6, 7: A +-448 or small, B +-6 or small, so a block's in-order f32 sum rounds and cancels;
///   accumulators 0 (wave 6) or random normals (wave 7).
void mfmaScaleInputs(std::vector<uint8_t>& in, uint64_t& st) {
  auto rnd = [&st] { return runtime::simSplitMix64(st); };
  auto normal = [&] { return std::bit_cast<float>(static_cast<uint32_t>(randomElem(Rand::F32Normal, 32, st))); };
  constexpr int kOffsets[16] = {-127, -126, -124, -120, -116, -110, -90, -40, 0, 40, 90, 110, 118, 122, 126, 128};
  for (int g = 0; g < kLanes; ++g) {
    const int w = g / 64, l = g % 64;
    uint8_t* p = in.data() + 80 * g;
    const bool cancel = w >= 6;
    for (int e = 0; e < 32; ++e) {
      uint8_t c = static_cast<uint8_t>(((32 * l + e) % 256) * 77 + 13 * w);  // a permutation of the codes
      if (w > 0 && (c & 0x7f) == 0x7f) c ^= 1;                                // 0x7e / 0xfe
      if (cancel) {
        const uint64_t x = rnd();
        c = static_cast<uint8_t>((x % 8 < 5 ? 0x7e : 1 + (x >> 8) % 15) | (x >> 16 & 1) << 7);
      }
      p[e] = c;
    }
    for (int n = 0; n < 32; n += 2) {
      auto nib = [&](int k) {
        if (!cancel) return (k * 5 + w + 3 * l) % 16;
        const uint64_t x = rnd();
        return static_cast<int>((x % 4 < 3 ? 7 : 1 + (x >> 8) % 3) | (x >> 16 & 1) << 3);
      };
      p[32 + n / 2] = static_cast<uint8_t>(nib(n) | nib(n + 1) << 4);
    }
    for (int r = 0; r < 4; ++r) {
      const uint64_t x = rnd();
      const float sign = x >> 63 ? -1.0f : 1.0f;
      float v = normal();
      if (w >= 1 && w <= 4 && x % 8 == 0) v = sign * (x % 3 == 0 ? 16777216.0f : x % 3 == 1 ? 0.0f : std::numeric_limits<float>::max());
      if (w == 5 && x % 3 != 2) v = x % 3 == 0 ? sign * 0.0f : std::bit_cast<float>(static_cast<uint32_t>(x) & 0x807fffffu);
      if (w == 6) v = 0.0f;
      putAt<float>(in, 80 * g + 48 + 4 * r, v);
    }
    const uint32_t high = static_cast<uint32_t>(rnd()) & ~0xffu;  // only byte 0 counts
    int sa = 127 + static_cast<int>(rnd() % 7) - 3, sb = 127 + static_cast<int>(rnd() % 7) - 3;
    if (w >= 1 && w <= 4) sa = 64 * (w - 1) + l, sb = 255 - sa;
    if (w == 5) sa = 110 + l % 16 + l / 16, sb = std::clamp(127 + kOffsets[l % 16], 0, 255);
    putAt<uint32_t>(in, 80 * g + 64, high | static_cast<uint32_t>(sa));
    putAt<uint32_t>(in, 80 * g + 68, (high ^ 0xabcd00u) | static_cast<uint32_t>(sb));
  }
}

std::vector<Custom> customCases() {
  std::vector<Custom> cs;
  const Type gptr = Type::ptr(AddrSpace::Global);

  cs.push_back({"constants", "ConstInt/ConstFloat -> v_mov / s_mov of literals", 0, 64,
                [](Builder& b, Val, Val, Val out) {
                  int o = 0;
                  auto put = [&](Val v) {
                    b.store(b.ptrAdd(out, o), v);
                    o += v.type().bytes();
                  };
                  put(b.constInt(Type::i64(), static_cast<int64_t>(0x8000000000000001ull)));
                  put(b.constInt(Type::i64(), -3));
                  put(b.i32(INT32_MIN));
                  put(b.i32(0x7ffffffe));
                  put(b.f32(-0.0));
                  put(b.f32(std::ldexp(1.0, -149)));
                  put(b.f32(static_cast<double>(std::numeric_limits<float>::max())));
                  put(b.f32(static_cast<double>(0.1f)));
                  put(b.f32(-std::numeric_limits<double>::infinity()));
                  put(b.constInt(Type::i16(), -32767));
                  put(b.constInt(Type::i16(), 0x7fff));
                  put(b.bf16(-std::ldexp(1.0, -133)));
                  put(b.bf16(3.0));
                  put(b.constInt(Type::i8(), -128));
                  put(b.constInt(Type::i8(), 127));
                  put(b.zext(b.i1(true), Type::i8()));
                  put(b.zext(b.i1(false), Type::i8()));
                  put(b.constInt(Type::i32(), 0));  // 44 bytes so far
                },
                nullptr, nullptr});
  cs.push_back({"ids and args", "ThreadId/LaneId/WaveId/BlockId -> v0, mbcnt, s_lshr; Arg -> s_load from kernarg", 0, 32,
                [gptr](Builder& b, Val, Val, Val out) {
                  b.store(b.ptrAdd(out, 0), b.tid());
                  b.store(b.ptrAdd(out, 4), b.lane());
                  b.store(b.ptrAdd(out, 8), b.wave());
                  b.store(b.ptrAdd(out, 12), b.block());
                  b.store(b.ptrAdd(out, 16), b.arg(2, Type::i32(), "k32"));
                  b.store(b.ptrAdd(out, 24), b.arg(3, Type::i64(), "k64"));
                },
                nullptr, nullptr});
  cs.push_back({"cta_uniform", "v_readfirstlane_b32 of a value every lane holds", 0, 16,
                [](Builder& b, Val, Val, Val out) {
                  b.store(b.ptrAdd(out, 0), b.ctaUniform(b.block() * 3 + b.arg(2, Type::i32(), "k32")));
                  b.store(b.ptrAdd(out, 8), b.ctaUniform(b.arg(3, Type::i64(), "k64")));
                },
                nullptr, nullptr});
  // Wave ops under divergence: the lanes where in[0] & 3 != 0 take part.
  cs.push_back({"shuffle/ballot/readfirstlane, divergent", "ds_bpermute_b32; v_cmp -> s mask; v_readfirstlane_b32", 16, 48,
                [](Builder& b, Val, Val in, Val out) {
                  Val sel = b.load(Type::i32(), in);
                  Val x64 = b.load(Type::i64(), b.ptrAdd(in, 8));
                  Val src = b.lshr(sel, b.i32(8));  // 0 .. 2^24: & 63 by the op
                  b.if_((sel & 3) != 0, [&] {
                    b.store(b.ptrAdd(out, 0), b.shuffle(sel, src));
                    b.store(b.ptrAdd(out, 8), b.shuffle(x64, src));
                    b.store(b.ptrAdd(out, 16), b.shuffle(b.bitcast(sel, Type::f32()), src ^ 5));
                    b.store(b.ptrAdd(out, 20), b.shuffle(b.bitcast(sel, vec(Type::bf16(), 2)), src + 1));
                    b.store(b.ptrAdd(out, 24), b.ballot((sel & 0x100) != 0));
                    b.store(b.ptrAdd(out, 32), b.readFirstLane(x64));
                    b.store(b.ptrAdd(out, 40), b.readFirstLane(sel));
                    b.store(b.ptrAdd(out, 44), b.readFirstLane(b.bitcast(b.trunc(sel, Type::i16()), Type::bf16())));
                  });
                },
                fillRandom, nullptr});
  // MFMAs, both shapes: per lane A, B and the accumulator from the input (one wave = one MFMA).
  cs.push_back({"mfma.16x16x32.bf16", "llvm.amdgcn.mfma.f32.16x16x32.bf16 -> v_mfma_f32_16x16x32_bf16", 32, 16,
                [](Builder& b, Val, Val in, Val out) {
                  Val a = b.load(vec(Type::bf16(), 8), in), bb = b.load(vec(Type::bf16(), 8), b.ptrAdd(in, 16));
                  Val acc = b.splat(b.f32(0.25), 4);
                  b.store(out, b.mfma(MfmaKind::F32_16x16x32_BF16, a, bb, acc));
                },
                [](std::vector<uint8_t>& in, uint64_t& st) {
                  for (size_t i = 0; i < in.size(); i += 2) {
                    const uint64_t r = runtime::simSplitMix64(st);
                    const auto edges = edgesBf16();
                    putAt<uint16_t>(in, i, static_cast<uint16_t>(r % 97 == 0 ? edges[(r >> 8) % edges.size()]
                                                                             : randomElem(Rand::Bf16Normal, 16, st)));
                  }
                },
                nullptr});
  cs.back().f32NanAny = true;
  // The FP8 MFMA: per lane A and B as 8 e4m3fn bytes (i64 each) and the accumulator. The bytes are
  // any code but NaN, with subnormals (exponent 0), +-448 (0x7e / 0xfe) and zeros over-weighted
  // and a NaN (0x7f / 0xff) in about one byte of 600; the accumulators random normal f32s.
  cs.push_back({"mfma.16x16x32.fp8", "llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8 -> v_mfma_f32_16x16x32_fp8_fp8", 32, 16,
                [](Builder& b, Val, Val in, Val out) {
                  Val a = b.load(Type::i64(), in), bb = b.load(Type::i64(), b.ptrAdd(in, 8));
                  Val acc = b.load(vec(Type::f32(), 4), b.ptrAdd(in, 16));
                  b.store(out, b.mfma(MfmaKind::F32_16x16x32_FP8, a, bb, acc));
                },
                [](std::vector<uint8_t>& in, uint64_t& st) {
                  for (size_t lane = 0; lane < in.size() / 32; ++lane) {
                    for (int i = 0; i < 16; ++i) {
                      const uint64_t r = runtime::simSplitMix64(st);
                      uint8_t c = static_cast<uint8_t>(r);
                      const uint64_t pick = (r >> 8) % 600;
                      if (pick == 0) c = (r >> 20) & 1 ? 0xff : 0x7f;
                      else if (pick < 60) c = static_cast<uint8_t>(((r >> 20) & 0x80) | ((r >> 24) & 7));  // subnormal / 0
                      else if (pick < 90) c = (r >> 20) & 1 ? 0xfe : 0x7e;
                      else if ((c & 0x7f) == 0x7f) c = c & 0xfe;
                      in[lane * 32 + i] = c;
                    }
                    for (int e = 0; e < 4; ++e)
                      putAt<uint32_t>(in, lane * 32 + 16 + 4 * e, static_cast<uint32_t>(randomElem(Rand::F32Normal, 32, st)));
                  }
                },
                nullptr});
  cs.back().f32NanAny = true;
  // The block-scaled MFMA (E4M3 A, E2M1 B, E8M0 scales): mfmaScaleInputs says which wave covers what.
  cs.push_back({"mfma_scale.16x16x128.e4m3.e2m1",
                "llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4 -> v_mfma_scale_f32_16x16x128_f8f6f4 blgp:4", 80, 16,
                [](Builder& b, Val, Val in, Val out) {
                  Val a = b.concat(b.load(vec(Type::i32(), 4), in), b.load(vec(Type::i32(), 4), b.ptrAdd(in, 16)));
                  Val bb = b.load(vec(Type::i32(), 4), b.ptrAdd(in, 32));
                  Val acc = b.load(vec(Type::f32(), 4), b.ptrAdd(in, 48));
                  Val sa = b.load(Type::i32(), b.ptrAdd(in, 64)), sb = b.load(Type::i32(), b.ptrAdd(in, 68));
                  b.store(out, b.mfmaScale(a, bb, acc, sa, sb));
                },
                mfmaScaleInputs, nullptr});
  cs.back().f32NanAny = true;
  cs.push_back({"mfma.16x16x4.f32", "llvm.amdgcn.mfma.f32.16x16x4f32 -> v_mfma_f32_16x16x4_f32", 24, 16,
                [](Builder& b, Val, Val in, Val out) {
                  Val a = b.load(Type::f32(), in), bb = b.load(Type::f32(), b.ptrAdd(in, 4));
                  Val acc = b.load(vec(Type::f32(), 4), b.ptrAdd(in, 8));
                  b.store(out, b.mfma(MfmaKind::F32_16x16x4_F32, a, bb, acc));
                },
                [](std::vector<uint8_t>& in, uint64_t& st) {
                  for (size_t i = 0; i < in.size(); i += 4)
                    putAt<uint32_t>(in, i, static_cast<uint32_t>(randomElem(Rand::F32Normal, 32, st)));
                },
                [](const std::vector<uint8_t>& in, std::vector<uint8_t>& want) {  // declared: an fma chain
                  for (int w = 0; w < kLanes / 64; ++w)
                    for (int l = 0; l < 64; ++l)
                      for (int e = 0; e < 4; ++e) {
                        const int row = mfma::dRow(l, e), col = mfma::dCol(l, e);
                        float a[4], bv[4];
                        for (int k = 0; k < 4; ++k) {
                          a[k] = getAt<float>(in, (w * 64 + 16 * k + row) * 24);
                          bv[k] = getAt<float>(in, (w * 64 + 16 * k + col) * 24 + 4);
                        }
                        const float acc = getAt<float>(in, (w * 64 + l) * 24 + 8 + 4 * e);
                        putAt<float>(want, (w * 64 + l) * 16 + 4 * e, runtime::gfx950run::mfmaF32Element(a, bv, acc));
                      }
                }});
  cs.back().f32NanAny = true;
  // Memory: every access width, order and scope; global, peer and LDS; a barrier between waves.
  cs.push_back({"load/store, every width and order", "global_load/store_{ubyte,ushort,dword,dwordx2..x4} sc0 sc1 nt; "
                "buffer_wbl2 / buffer_inv around release/acquire",
                16, 16 * 5,
                [gptr](Builder& b, Val, Val in, Val out) {
                  Val v = b.load(vec(Type::i32(), 4), in);
                  Val o1 = b.ptrAdd(out, 16);
                  b.store(out, v);  // 16 bytes plain
                  b.store(o1, b.load(Type::i64(), b.ptrAdd(in, 8), MemOrder::Acquire, MemScope::System),
                          MemOrder::Release, MemScope::System);
                  b.store(b.ptrAdd(o1, 8), b.load(Type::i32(), b.ptrAdd(in, 4), MemOrder::Relaxed, MemScope::Workgroup),
                          MemOrder::Relaxed, MemScope::Agent);
                  b.store(b.ptrAdd(o1, 12), b.load(Type::i16(), b.ptrAdd(in, 2), MemOrder::Acquire, MemScope::Agent),
                          MemOrder::Release, MemScope::Workgroup);
                  b.store(b.ptrAdd(o1, 14), b.load(Type::i8(), b.ptrAdd(in, 1)));
                  b.store(b.ptrAdd(o1, 15), b.zext(b.load(Type::i1(), in), Type::i8()));
                  Val o2 = b.ptrAdd(out, 32);
                  b.store(o2, b.load(vec(Type::i32(), 3), b.ptrAdd(in, 4)));  // 12 bytes
                  b.store(b.ptrAdd(o2, 12), b.load(vec(Type::bf16(), 2), b.ptrAdd(in, 12)));
                  // Peer: this rank's own buffer through a peer pointer (lowered as global).
                  Val peer = b.intToPtr(b.ptrToInt(b.ptrAdd(o2, 16)), AddrSpace::Peer);
                  b.store(peer, b.load(Type::i64(), b.intToPtr(b.ptrToInt(in), AddrSpace::Peer)), MemOrder::Release,
                          MemScope::System);
                  b.store(b.ptrAdd(peer, 8), b.load(Type::f32(), b.ptrAdd(b.intToPtr(b.ptrToInt(in), AddrSpace::Peer), 8),
                                                    MemOrder::Acquire, MemScope::System));
                  b.store(b.ptrAdd(peer, 12), b.load(Type::i32(), b.ptrAdd(peer, 0)));  // reads back its own store
                  // Pointer arithmetic: byte distances, i32 (negative) and i64 offsets.
                  Val o4 = b.ptrAdd(out, 64);
                  Val p64 = b.ptrAdd(b.ptrAdd(o4, b.i64(int64_t{1} << 33)), b.i64(-(int64_t{1} << 33)) + 4);
                  b.store(o4, b.ptrToInt(p64) - b.ptrToInt(o4));
                  b.store(b.ptrAdd(b.ptrAdd(o4, 20), b.i32(-12)), b.trunc(b.ptrToInt(b.ptrAdd(o4, 3)) - b.ptrToInt(out), Type::i32()));
                },
                fillRandom, nullptr});
  cs.push_back({"lds and barrier", "ds_write/ds_read_b32..b128, s_barrier (+ waitcnt)", 16, 32,
                [](Builder& b, Val, Val in, Val out) {
                  Val t = b.tid();
                  Val base = b.intToPtr(b.i32(0), AddrSpace::Lds);
                  Val mine = b.ptrAdd(base, t * 16);
                  b.store(mine, b.load(vec(Type::i32(), 4), in));
                  b.barrier();
                  Val other = b.ptrAdd(base, ((t + 64) % kThreads) * 16);  // the next wave's slot
                  b.store(out, b.load(vec(Type::i32(), 4), other));
                  b.store(b.ptrAdd(out, 16), b.load(Type::i64(), b.ptrAdd(other, 8), MemOrder::Acquire, MemScope::Workgroup));
                  b.barrier();
                  b.store(mine, b.load(Type::i16(), b.ptrAdd(in, 6)), MemOrder::Release, MemScope::Workgroup);
                  b.store(b.ptrAdd(mine, 2), b.load(Type::i8(), b.ptrAdd(in, 9)));
                  b.barrier();
                  b.store(b.ptrAdd(out, 24), b.load(Type::i32(), other));
                  b.store(b.ptrAdd(out, 28), b.ptrToInt(other));
                },
                fillRandom, nullptr});
  // Atomics on per-lane words (old values and final memory), and one contended word a wave.
  cs.push_back({"atomics", "global_atomic_{add,or,and,xor,smax,smin,umax,umin,swap,cmpswap}[_x2], global_atomic_add_f32", 8 * 12,
                8 * 12 + 8 * 12,
                [](Builder& b, Val gid, Val in, Val out) {
                  const RmwOp ops[] = {RmwOp::Add, RmwOp::Or, RmwOp::And, RmwOp::Xor, RmwOp::Max,
                                       RmwOp::Min, RmwOp::UMax, RmwOp::UMin, RmwOp::Xchg};
                  Val mem = b.ptrAdd(out, 96);  // 12 words: copied from the input, then updated
                  for (int k = 0; k < 12; ++k) b.store(b.ptrAdd(mem, 8 * k), b.load(Type::i64(), b.ptrAdd(in, 8 * k)));
                  for (int k = 0; k < 9; ++k) {
                    const bool wide = k % 2;
                    const Type t = wide ? Type::i64() : Type::i32();
                    Val operand = b.load(t, b.ptrAdd(in, 8 * ((k + 3) % 12)));
                    b.store(b.ptrAdd(out, 8 * k),
                            b.atomicRmw(ops[k], b.ptrAdd(mem, 8 * k), operand, k % 3 == 0 ? MemOrder::AcqRel : MemOrder::Relaxed,
                                        k % 3 == 1 ? MemScope::System : MemScope::Agent));
                  }
                  Val e = b.load(Type::i32(), b.ptrAdd(mem, 72));  // expected: the word itself or off by one
                  b.store(b.ptrAdd(out, 72), b.cmpXchg(b.ptrAdd(mem, 72), e + (gid & 1), b.load(Type::i32(), b.ptrAdd(in, 4))));
                  Val e64 = b.load(Type::i64(), b.ptrAdd(mem, 80));
                  b.store(b.ptrAdd(out, 80), b.cmpXchg(b.ptrAdd(mem, 80), e64 - b.zext(gid & 2, Type::i64()),
                                                        b.load(Type::i64(), in), MemOrder::Acquire, MemScope::System));
                  b.store(b.ptrAdd(out, 88), b.atomicRmw(RmwOp::Add, b.ptrAdd(mem, 88),
                                                         b.bitcast(b.load(Type::i32(), b.ptrAdd(in, 16)) & 0x3fffffff, Type::f32())));
                },
                fillRandom, nullptr});
  // Contended: every lane of a wave adds to the wave's first slot (an order-free sum; the old
  // values depend on the order and are not kept).
  cs.push_back({"atomic add, contended", "global_atomic_add (64 lanes, one address)", 8, 4,
                [](Builder& b, Val, Val in, Val out) {
                  Val first = b.ptrAdd(out, b.lane() * -4);
                  b.atomicRmw(RmwOp::Add, first, b.load(Type::i32(), in));
                  b.atomicRmw(RmwOp::Or, b.ptrAdd(first, 0), b.i32(1) << (b.lane() & 31), MemOrder::Release, MemScope::System);
                },
                fillRandom, nullptr});
  // (value, tag) pairs: block 0's lanes publish to block 1's, which wait; block 0 also waits on a
  // pair nobody publishes, which times out into its error word.
  cs.push_back({"publish/wait", "global_store_dwordx2 after a release; a polling loop of global_load_dwordx2 + s_sleep "
                "+ s_memrealtime, then the error word's cmpswap and add",
                0, 32,
                [](Builder& b, Val gid, Val, Val out) {
                  const int32_t tag = 0x77;
                  b.if_(b.block() == 0, [&] {
                    b.publish(b.ptrAdd(out, kThreads * 32), gid * 7 + 1, b.i32(tag));
                    b.store(b.ptrAdd(out, 24), b.i64(0));
                    Val r = b.wait(b.ptrAdd(out, 16), b.i32(tag), b.i64(2000), b.ptrAdd(out, 24), b.i32(9), 1);
                    b.store(b.ptrAdd(out, 8), r);
                  }, [&] {
                    Val r = b.wait(out, b.i32(tag), b.i64(int64_t{1} << 40), b.ptrAdd(out, 24), b.i32(5), 2,
                                   MemOrder::Relaxed, MemScope::System);
                    b.store(b.ptrAdd(out, 8), r);
                  });
                },
                nullptr, nullptr});
  // Fences, sleep and the clock: values round-trip around them; the clock does not go back.
  cs.push_back({"fence/sleep/realtime", "buffer_wbl2/buffer_inv/s_waitcnt per scope; s_sleep; s_memrealtime", 8, 16,
                [](Builder& b, Val, Val in, Val out) {
                  Val t0 = b.realtime();
                  b.store(out, b.load(Type::i32(), in));
                  b.fence(MemOrder::Release, MemScope::Agent);
                  b.fence(MemOrder::Acquire, MemScope::System);
                  b.fence(MemOrder::AcqRel, MemScope::Workgroup);
                  b.fence(MemOrder::SeqCst, MemScope::System);
                  b.sleep(2);
                  b.store(b.ptrAdd(out, 4), b.load(Type::i32(), out) ^ 0x5a5a);
                  Val t1 = b.realtime();
                  b.store(b.ptrAdd(out, 8), b.zext(t1 >= t0, Type::i32()));
                  b.store(b.ptrAdd(out, 12), b.zext(t0 > b.i64(0), Type::i32()));
                },
                fillRandom, nullptr});
  // Control flow and variables: divergent if/else, a for with per-lane bounds, a while loop.
  cs.push_back({"if/for/while/vars, divergent", "branches under exec masks (s_and_saveexec, s_cbranch_execz), loops", 8, 12,
                [](Builder& b, Val, Val in, Val out) {
                  Val x = b.load(Type::i32(), in), y = b.load(Type::i32(), b.ptrAdd(in, 4));
                  Var acc = b.var(b.i32(7), "acc");
                  b.if_((x & 1) == 1, [&] { b.set(acc, b.get(acc) * x); },
                        [&] { b.if_((x & 2) == 2, [&] { b.set(acc, b.get(acc) + y); }); });
                  b.for_(x & 7, (y & 15) + 1, b.i32(2), [&](Val i) { b.set(acc, b.get(acc) * 3 + i); });
                  Var n = b.var((x & 0xffff) + 1, "n");
                  Var steps = b.var(b.i32(0), "steps");
                  b.while_([&] { return (b.get(n) != 1) & (b.get(steps) < 300); }, [&] {
                    Val v = b.get(n);
                    b.set(n, b.select((v & 1) == 1, v * 3 + 1, b.lshr(v, b.i32(1))));
                    b.set(steps, b.get(steps) + 1);
                  });
                  b.store(out, b.get(acc));
                  b.store(b.ptrAdd(out, 4), b.get(steps));
                  Var f = b.var(b.f32(0.0), "f");
                  b.stage(0, [&] { b.set(f, b.bitcast(y, Type::f32()) * 2.0f); });
                  b.store(b.ptrAdd(out, 8), b.get(f));
                },
                fillRandom, nullptr});
  return cs;
}

// ------------------------------------------------------------------ the kernel and its runs

/// Where each case's operands and results live, and what they are.
struct Slot {
  std::string name, lowers;
  int64_t count = 0;                 // elementwise: tuples (a multiple of kLanes); custom: kLanes
  std::vector<Type> operandTypes;    // elementwise
  std::vector<int64_t> inOff;        // per operand (custom: one region)
  int64_t outOff = 0, outBytes = 0;  // the result region and its size
  Type result;                       // elementwise: the result type
  const Elementwise* ew = nullptr;
  const Custom* custom = nullptr;
};

struct Suite {
  std::vector<Elementwise> ew = elementwiseCases();
  std::vector<Custom> custom = customCases();
  /// The kernels, each applying a run of the cases (one kernel of them all would spill SGPRs);
  /// they share the in and out buffers and run one after another.
  std::vector<Plan> plans;
  std::vector<Slot> slots;
  std::vector<uint8_t> in;
  int64_t outBytes = 0;
};

int64_t align256(int64_t x) { return (x + 255) / 256 * 256; }

/// How many tuples of an elementwise case cross its edge pools: the product, at most 4096.
int64_t crossTuples(const Elementwise& c) {
  int64_t cross = 1;
  for (const Operand& o : c.operands) cross = std::min<int64_t>(4096, cross * static_cast<int64_t>(o.pool.size()));
  return cross;
}

/// The operand tuples of an elementwise case: the pools' cross product (crossTuples, the first
/// operand fastest), then random ones, to a multiple of the grid.
void fillTuples(const Elementwise& c, int64_t count, std::vector<uint8_t>& in, const std::vector<int64_t>& offs,
                uint64_t seed) {
  const int64_t cross = crossTuples(c);
  uint64_t st = seed;
  for (size_t oi = 0; oi < c.operands.size(); ++oi) {
    const Operand& o = c.operands[oi];
    const int eb = o.type.elemBytes(), L = o.type.lanes;
    int64_t stride = 1;
    for (size_t q = 0; q < oi; ++q) stride *= static_cast<int64_t>(c.operands[q].pool.size());
    for (int64_t k = 0; k < count; ++k)
      for (int e = 0; e < L; ++e) {
        uint64_t bits;
        if (k < cross) {
          const int64_t n = static_cast<int64_t>(o.pool.size());
          bits = o.pool[static_cast<size_t>(((k / stride) + e * 7) % n)];
        } else {
          bits = randomElem(o.rand, o.type.elemBits() == 1 ? 8 : o.type.elemBits(), st);
          if (o.nonzero && bits == 0) bits = 1;
        }
        std::memcpy(in.data() + offs[oi] + (k * L + e) * eb, &bits, static_cast<size_t>(eb));
      }
  }
}

/// The cases a kernel applies: few enough that no kernel spills.
constexpr int kCasesPerKernel = 40;

/// A new kernel of the suite, with its arguments (in, out, k32, k64) and the lane's grid index.
struct KernelBuilder {
  Plan* plan;
  std::unique_ptr<Builder> b;
  Val inP, outP, gid;
};
KernelBuilder newKernel(Suite& s) {
  Plan& p = s.plans.emplace_back();
  p.key.spec = "test.executor.ops";
  p.key.target = ir::gfx950();
  p.kernel.name = fmt::format("executor_ops_{}", s.plans.size() - 1);
  p.grid = {kBlocks, kThreads};
  p.ldsBytes = kThreads * 16;
  Stage st;
  st.name = "ops";
  st.tasks = kBlocks;
  st.everyCta = true;
  p.stages = {st};
  KernelBuilder k{&p, std::make_unique<Builder>(p.kernel), {}, {}, {}};
  Builder& b = *k.b;
  k.inP = b.arg(0, Type::ptr(AddrSpace::Global), "in");
  k.outP = b.arg(1, Type::ptr(AddrSpace::Global), "out");
  k.gid = b.named(b.block() * b.i32(kThreads) + b.tid(), "gid");
  return k;
}

/// The suite of every case, or (given `only`) of those custom cases alone.
Suite buildSuite(std::optional<std::vector<Custom>> only = std::nullopt) {
  Suite s;
  if (only) {
    s.ew.clear();
    s.custom = std::move(*only);
  }
  s.plans.reserve((s.ew.size() + s.custom.size()) / kCasesPerKernel + 2);
  KernelBuilder kb;
  int inKernel = kCasesPerKernel;
  // Switches to a new kernel every kCasesPerKernel cases; b, inP, outP and gid follow it.
  auto next = [&]() -> KernelBuilder& {
    if (inKernel++ == kCasesPerKernel) {
      kb = newKernel(s);
      inKernel = 1;
    }
    return kb;
  };
  int64_t inAt = 0, outAt = 0;
  uint64_t seed = 0x0e5ec5eed;
  for (const Elementwise& c : s.ew) {
    KernelBuilder& k = next();
    Builder& b = *k.b;
    Val inP = k.inP, outP = k.outP, gid = k.gid;
    Slot sl;
    sl.name = c.name;
    sl.lowers = c.lowers;
    sl.ew = &c;
    sl.count = (crossTuples(c) + c.randomTuples + kLanes - 1) / kLanes * kLanes;
    for (const Operand& o : c.operands) {
      sl.operandTypes.push_back(o.type);
      sl.inOff.push_back(inAt);
      inAt = align256(inAt + sl.count * o.type.bytes());
    }
    b.for_(b.i32(0), b.i32(sl.count / kLanes), b.i32(1), [&](Val j) {
      Val idx = j * b.i32(kLanes) + gid;
      std::vector<Val> ops;
      for (size_t oi = 0; oi < c.operands.size(); ++oi) {
        const Type t = c.operands[oi].type;
        ops.push_back(b.load(t, b.ptrAdd(b.ptrAdd(inP, sl.inOff[oi]), idx * b.i32(t.bytes()))));
      }
      Val r = c.f(b, ops);
      sl.result = r.type();
      b.store(b.ptrAdd(b.ptrAdd(outP, outAt), idx * b.i32(r.type().bytes())), r);
    });
    sl.outOff = outAt;
    sl.outBytes = sl.count * sl.result.bytes();
    outAt = align256(outAt + sl.outBytes);
    s.slots.push_back(sl);
  }
  for (const Custom& c : s.custom) {
    KernelBuilder& k = next();
    Builder& b = *k.b;
    Val inP = k.inP, outP = k.outP, gid = k.gid;
    Slot sl;
    sl.name = c.name;
    sl.lowers = c.lowers;
    sl.custom = &c;
    sl.count = kLanes;
    sl.inOff = {inAt};
    inAt = align256(inAt + kLanes * c.inBytes);
    sl.outOff = outAt;
    sl.outBytes = kLanes * c.outBytes;
    outAt = align256(outAt + sl.outBytes);
    Val in = b.ptrAdd(b.ptrAdd(inP, sl.inOff[0]), gid * b.i32(c.inBytes));
    Val out = b.ptrAdd(b.ptrAdd(outP, sl.outOff), gid * b.i32(c.outBytes));
    c.body(b, gid, in, out);
    s.slots.push_back(sl);
  }
  s.outBytes = outAt;
  for (Plan& p : s.plans)
    p.args = {{"in", true, Scalar::I32, {inAt / 4}, ArgRole::Input, 16, ""},
            {"out", true, Scalar::I32, {outAt / 4}, ArgRole::Output, 16, ""},
            {"k32", false, Scalar::I32, {}, ArgRole::Control, 4, ""},
            {"k64", false, Scalar::I64, {}, ArgRole::Control, 8, ""}};
  s.in.assign(static_cast<size_t>(inAt), 0);
  for (size_t i = 0; i < s.slots.size(); ++i) {
    const Slot& sl = s.slots[i];
    if (sl.ew) fillTuples(*sl.ew, sl.count, s.in, sl.inOff, seed + i);
    if (sl.custom && sl.custom->fill) {
      std::vector<uint8_t> region(static_cast<size_t>(kLanes * sl.custom->inBytes));
      uint64_t st2 = seed + i;
      sl.custom->fill(region, st2);
      std::copy(region.begin(), region.end(), s.in.begin() + sl.inOff[0]);
    }
  }
  return s;
}

/// The suite's kernels one after another on `dev` (compiled when it runs code objects): the out buffer.
std::vector<uint8_t> runSuite(runtime::Device& dev, const Suite& s) {
  const int64_t inBytes = static_cast<int64_t>(s.in.size());
  const uint64_t ia = dev.alloc(0, inBytes, "in"), oa = dev.alloc(0, s.outBytes, "out");
  dev.upload(0, ia, s.in.data(), inBytes);
  std::vector<uint8_t> out(static_cast<size_t>(s.outBytes), 0xa5);  // unwritten bytes stand out
  dev.upload(0, oa, out.data(), s.outBytes);
  using runtime::DType;
  using runtime::LaunchArg;
  for (const Plan& p : s.plans) {
    const codegen::CodeObject co = dev.runsCodeObjects() ? codegen::compile(p) : codegen::CodeObject{};
    dev.launch(p, co.bytes, {{{"in", LaunchArg::tensor(ia, DType::I32, {inBytes / 4})},
                              {"out", LaunchArg::tensor(oa, DType::I32, {s.outBytes / 4})},
                              {"k32", LaunchArg::scalar(kArg32)},
                              {"k64", LaunchArg::scalar(kArg64)}}});
  }
  dev.download(0, out.data(), oa, s.outBytes);
  return out;
}

void census(const Region& r, std::set<OpCode>& seen) {
  for (const Op& op : r.ops) {
    seen.insert(op.code);
    for (const Region& sub : op.regions) census(sub, seen);
  }
}

template <class T>
T getAtPtr(const uint8_t* p) {
  T x;
  std::memcpy(&x, p, sizeof(T));
  return x;
}

std::string hexElem(const uint8_t* p, int n) {
  uint64_t v = 0;
  std::memcpy(&v, p, static_cast<size_t>(std::min(n, 8)));
  return fmt::format("{:#0{}x}", v, 2 + 2 * n);
}

bool isNanBits(const uint8_t* p, Scalar s) {
  if (s == Scalar::F32) return std::isnan(getAtPtr<float>(p));
  uint16_t b;
  std::memcpy(&b, p, 2);
  return (b & 0x7fff) > 0x7f80;
}
bool isZeroBits(const uint8_t* p, Scalar s) {
  uint32_t b = 0;
  std::memcpy(&b, p, s == Scalar::F32 ? 4 : 2);
  return (b & (s == Scalar::F32 ? 0x7fffffffu : 0x7fffu)) == 0;
}
/// Two results of one element agree: the same bits, or the same where the IR leaves it open.
bool agree(const uint8_t* x, const uint8_t* y, Type elem, Open open) {
  if (std::memcmp(x, y, static_cast<size_t>(elem.elemBytes())) == 0) return true;
  if (open == Open::Nothing || !elem.isFloat()) return false;
  if (isNanBits(x, elem.scalar) && isNanBits(y, elem.scalar)) return true;
  return open == Open::NanAnyZeroSign && isZeroBits(x, elem.scalar) && isZeroBits(y, elem.scalar);
}

/// One case's verdict: elements compared, those under a declared difference, and mismatches.
struct Verdict {
  int64_t elements = 0;
  int64_t declared = 0;    // the executor differs from the Sim as a declared difference says it does
  int64_t uncompared = 0;  // in a declared region where the executor's value is not compared
  std::vector<std::string> mismatches;  // the first few, described
  int64_t mismatchCount = 0;
};

Verdict compareSlot(const Suite& s, const Slot& sl, const std::vector<uint8_t>& sim, const std::vector<uint8_t>& exe) {
  Verdict v;
  auto bad = [&](std::string what) {
    if (++v.mismatchCount <= (std::getenv("MONOGEN_OPS_ALL") ? 100000 : 4)) v.mismatches.push_back(std::move(what));
  };
  if (sl.ew) {
    const int eb = sl.result.elemBytes(), L = sl.result.lanes;
    for (int64_t k = 0; k < sl.count; ++k)
      for (int e = 0; e < L; ++e) {
        const size_t off = static_cast<size_t>(sl.outOff + (k * L + e) * eb);
        const uint8_t* sp = sim.data() + off;
        const uint8_t* xp = exe.data() + off;
        ++v.elements;
        std::vector<uint64_t> opnd;
        std::string args;
        for (size_t oi = 0; oi < sl.operandTypes.size(); ++oi) {
          const Type t = sl.operandTypes[oi];
          const int oeb = t.elemBytes();
          const int oe = t.lanes == L ? e : 0;
          uint64_t x = 0;
          std::memcpy(&x, s.in.data() + sl.inOff[oi] + (k * t.lanes + oe) * oeb, static_cast<size_t>(oeb));
          opnd.push_back(x);
          args += (oi ? ", " : "") + hexElem(reinterpret_cast<const uint8_t*>(&x), oeb);
        }
        if (sl.ew->skip && sl.ew->skip(opnd)) {
          ++v.uncompared;
          v.declared += !agree(sp, xp, sl.result.elem(), sl.ew->open);
        } else if (sl.ew->executor) {
          const uint64_t want = sl.ew->executor(opnd);
          const uint8_t* wp = reinterpret_cast<const uint8_t*>(&want);
          v.declared += !agree(sp, wp, sl.result.elem(), sl.ew->open);
          if (!agree(xp, wp, sl.result.elem(), sl.ew->open))
            bad(fmt::format("tuple {} element {}: ({}) -> executor {}, its declared model {}, Sim {}", k, e, args,
                            hexElem(xp, eb), hexElem(reinterpret_cast<const uint8_t*>(&want), eb), hexElem(sp, eb)));
        } else if (!agree(sp, xp, sl.result.elem(), sl.ew->open)) {
          bad(fmt::format("tuple {} element {}: ({}) -> executor {}, Sim {}", k, e, args, hexElem(xp, eb), hexElem(sp, eb)));
        }
      }
    return v;
  }
  const Custom& c = *sl.custom;
  std::vector<uint8_t> want(sim.begin() + sl.outOff, sim.begin() + sl.outOff + sl.outBytes);
  if (c.executor) {
    const std::vector<uint8_t> in(s.in.begin() + sl.inOff[0], s.in.begin() + sl.inOff[0] + kLanes * c.inBytes);
    std::vector<uint8_t> model = want;
    c.executor(in, model);
    for (int64_t i = 0; i < sl.outBytes; i += 4)
      v.declared += !agree(&model[i], &want[i], Type::f32(), c.f32NanAny ? Open::NanAny : Open::Nothing);
    want = model;
  }
  for (int64_t lane = 0; lane < kLanes; ++lane)
    for (int64_t i = 0; i < c.outBytes; i += 4) {
      const size_t off = static_cast<size_t>(lane * c.outBytes + i);
      ++v.elements;
      if (!agree(exe.data() + sl.outOff + off, want.data() + off, c.f32NanAny ? Type::f32() : Type::i32(),
                 c.f32NanAny ? Open::NanAny : Open::Nothing))
        bad(fmt::format("lane {} byte {}: executor {}, {} {}", lane, i, hexElem(exe.data() + sl.outOff + off, 4),
                        c.executor ? "declared model" : "Sim", hexElem(want.data() + off, 4)));
    }
  return v;
}

bool haveTool() {
  if (Gfx950RunDevice::toolAvailable()) return true;
  WARN("gfx950-run not found at '" << Gfx950RunDevice::defaultToolPath()
                                   << "' (set MONOGEN_GFX950_RUN): the executor op test is skipped");
  return false;
}

}  // namespace

TEST_CASE("executor ops: the differential kernel applies every op in ir/Op.h", "[executor_ops]") {
  const Suite s = buildSuite();
  std::set<OpCode> seen;
  for (const Plan& p : s.plans) census(p.kernel.body, seen);
  std::vector<std::string> missing;
  for (int c = 0; c <= static_cast<int>(OpCode::StageScope); ++c)
    if (!seen.count(static_cast<OpCode>(c))) missing.push_back(opName(static_cast<OpCode>(c)));
  INFO("ops the kernel lacks: " << fmt::format("{}", fmt::join(missing, ", ")));
  CHECK(missing.empty());
  std::set<std::string> names;
  for (const Slot& sl : s.slots) {
    CHECK(names.insert(sl.name).second);  // one slot a case
    CHECK_FALSE(sl.lowers.empty());
  }
  CHECK(s.slots.size() > 150);
}

TEST_CASE("executor ops: every op's lowering on gfx950-run equals the Sim bit for bit, declared differences apart",
          "[executor_ops][gfx950run]") {
  if (!haveTool()) return;
  const Suite s = buildSuite();
  runtime::SimDeviceAdapter simDev;
  Gfx950RunDevice exeDev;
  const std::vector<uint8_t> sim = runSuite(simDev, s);
  const std::vector<uint8_t> exe = runSuite(exeDev, s);
  WARN(fmt::format("{} kernels on the executor; the last: {:.1f} s, {} wave-instructions", s.plans.size(),
                   exeDev.lastRun().totalSeconds, exeDev.lastRun().waveInstructions));
  std::string table = fmt::format("{:<44} {:>8} {:>8} {:>10} {:>6}  lowers to\n", "case", "elements", "declared",
                                  "uncompared", "bad");
  std::string failures;
  int64_t elements = 0, bad = 0, declared = 0, uncompared = 0;
  for (const Slot& sl : s.slots) {
    const Verdict v = compareSlot(s, sl, sim, exe);
    elements += v.elements;
    bad += v.mismatchCount;
    declared += v.declared;
    uncompared += v.uncompared;
    table += fmt::format("{:<44} {:>8} {:>8} {:>10} {:>6}  {}\n", sl.name, v.elements, v.declared, v.uncompared,
                         v.mismatchCount, sl.lowers);
    for (const std::string& m : v.mismatches) failures += fmt::format("  {}: {}\n", sl.name, m);
  }
  // The table goes to stdout unwrapped (ctest --output-on-failure, or run the test binary).
  fmt::print("{}{} cases, {} result elements; {} differ from the Sim as declared, {} in declared regions not compared; "
             "{} mismatches\n{}",
             table, s.slots.size(), elements, declared, uncompared, bad, failures);
  INFO(failures);
  CHECK(bad == 0);
}

// ------------------------------------------------------------------ the MXFP8 quant (mfma_scale's A)

namespace {

using specs::minimax_m3::Mxfp8Block;

constexpr int kMxfp8In = 128, kMxfp8Out = 36;  // a lane: 32 f32 in; 8 A words and the scale word out

/// Block bl (0 .. kLanes - 1, 64 a wave: wave bl / 64, row bl % 64 / 4, K block bl % 4) of the inputs:
/// - 0 .. 247: scale code bl (amax 448 2^(bl - 127), FLT_MAX for 247; 0 all +-0 and a NaN) over
///   every e4m3 code times the scale;
/// - 248 .. 255: Inf, -Inf and NaN, all NaN, f32 subnormals, amax 448 and its f32 neighbours
///   among 440 .. 448 and their midpoints, amax just below 448 2^-126;
/// - 256 .. 383: amax 448 2^k (k in -20 .. 19) over every e4m3 midpoint times 2^k, and its f32
///   neighbours;
/// - 384 .. 447: Gaussians (bf16) of random magnitude; 448 .. 511: random bits (Infs, NaNs).
std::vector<float> mxfp8BlockInputs(int bl, uint64_t& st) {
  auto rnd = [&st] { return runtime::simSplitMix64(st); };
  auto code = [](int k) { return k < 127 ? k : 0x80 + (k - 127); };  // k in 0 .. 253: every non-NaN code
  std::vector<float> v(32, 0.0f);
  const float sign = bl % 2 ? -1.0f : 1.0f;
  if (bl < 248) {
    const int c = bl;
    if (c == 0) {
      for (int j = 0; j < 32; ++j) v[j] = j % 2 ? -0.0f : 0.0f;
      v[5] = std::numeric_limits<float>::quiet_NaN();
      return v;
    }
    const double amax = std::ldexp(448.0, c - 127);
    v[0] = sign * static_cast<float>(std::min<double>(amax, std::numeric_limits<float>::max()));
    for (int j = 1; j < 32; ++j)
      v[j] = static_cast<float>(std::ldexp(static_cast<double>(num::fp8E4m3ToF32(code((31 * bl + j - 1) % 254))), c - 127));
    return v;
  }
  if (bl < 256) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    for (int j = 0; j < 32; ++j) v[j] = static_cast<float>(static_cast<int>(rnd() % 2001) - 1000) / 7.0f;
    switch (bl) {
      case 248: v[3] = inf; break;
      case 249: v[7] = -inf, v[9] = nan; break;
      case 250: for (float& x : v) x = nan; break;
      case 251: for (float& x : v) x = std::bit_cast<float>(static_cast<uint32_t>(rnd()) & 0x807fffffu); break;
      case 252:
      case 253:
      case 254: {
        const float a = bl == 252 ? 448.0f : std::nextafter(448.0f, bl == 253 ? inf : 0.0f);
        const float near[] = {440.0f, 444.0f, 436.0f, 432.0f, 416.0f, 424.0f, 392.0f, 400.0f};
        for (int j = 0; j < 32; ++j) {
          const float f = near[j % 8], d = j / 8 == 1 ? std::nextafter(f, 0.0f) : j / 8 == 2 ? std::nextafter(f, inf) : f;
          v[j] = j % 2 ? -d : d;
        }
        v[0] = a, v[1] = -a;
        break;
      }
      default:
        v[0] = std::nextafter(static_cast<float>(std::ldexp(448.0, -126)), 0.0f);
        for (int j = 1; j < 32; ++j) v[j] = std::bit_cast<float>(static_cast<uint32_t>(j) << (j % 24));
    }
    return v;
  }
  if (bl < 384) {
    const int k = (bl * 37) % 40 - 20;
    v[0] = sign * std::ldexp(448.0f, k);
    for (int j = 1; j < 32; ++j) {
      const int q = (31 * (bl - 256) + j - 1) % 756;  // 126 midpoints x {mid, below, above} x sign
      const float lo = num::fp8E4m3ToF32(static_cast<uint32_t>(q / 6)), hi = num::fp8E4m3ToF32(static_cast<uint32_t>(q / 6 + 1));
      const float mid = (lo + hi) / 2, f = q % 3 == 0 ? mid : std::nextafter(mid, q % 3 == 1 ? 0.0f : 1e9f);
      v[j] = std::ldexp(q / 3 % 2 ? -f : f, k);
    }
    return v;
  }
  if (bl < 448) {
    const int k = static_cast<int>(rnd() % 61) - 30;
    for (int j = 0; j < 32; ++j) {
      const double u1 = (static_cast<double>(rnd() >> 11) + 1) * 0x1p-53, u2 = static_cast<double>(rnd() >> 11) * 0x1p-53;
      const double g = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
      v[j] = num::roundBf16(static_cast<float>(std::ldexp(g, k)));
    }
    return v;
  }
  for (int j = 0; j < 32; ++j) v[j] = std::bit_cast<float>(static_cast<uint32_t>(rnd()));
  return v;
}

/// Where K block t's element j of row i sits in the A layout: the lane (of the wave) and its byte.
std::pair<int, int> mxfp8ALanePos(int i, int t, int j) {
  const int k = 32 * t + j;
  return {16 * (k % 64 / 16) + i, 16 * (k / 64) + k % 16};
}

void mxfp8Fill(std::vector<uint8_t>& in, uint64_t& st) {
  for (int bl = 0; bl < kLanes; ++bl) {
    const std::vector<float> v = mxfp8BlockInputs(bl, st);
    const int w = bl / 64, i = bl % 64 / 4, t = bl % 4;
    for (int j = 0; j < 32; ++j) {
      const auto [l, e] = mxfp8ALanePos(i, t, j);
      putAt<float>(in, static_cast<size_t>(kMxfp8In * (64 * w + l) + 4 * e), v[j]);
    }
  }
}

/// The lanes' expected output (8 A words, the scale word) from each block's quant.
std::vector<uint8_t> mxfp8Expected(const std::vector<uint8_t>& in, const std::function<Mxfp8Block(const float*)>& quant,
                                   bool scaleLane4iPlusT = false) {
  std::vector<uint8_t> out(static_cast<size_t>(kLanes * kMxfp8Out), 0);
  for (int bl = 0; bl < kLanes; ++bl) {
    const int w = bl / 64, i = bl % 64 / 4, t = bl % 4;
    float x[32];
    for (int j = 0; j < 32; ++j) {
      const auto [l, e] = mxfp8ALanePos(i, t, j);
      x[j] = getAt<float>(in, static_cast<size_t>(kMxfp8In * (64 * w + l) + 4 * e));
    }
    const Mxfp8Block blk = quant(x);
    for (int j = 0; j < 32; ++j) {
      const auto [l, e] = mxfp8ALanePos(i, t, j);
      out[static_cast<size_t>(kMxfp8Out * (64 * w + l) + e)] = blk.codes[j];
    }
    const int sl = scaleLane4iPlusT ? 4 * i + t : 16 * t + i;
    out[static_cast<size_t>(kMxfp8Out * (64 * w + sl) + 32)] = blk.scale;
  }
  return out;
}

Custom mxfp8Case() {
  return {"mxfp8 quant, mfma_scale A", "abs/max, ds_bpermute (shuffle), bit ops, v_cvt_pk_fp8_f32", kMxfp8In, kMxfp8Out,
          [](Builder& b, Val, Val in, Val out) {
            std::vector<Val> xs;
            for (int e = 0; e < 32; ++e) xs.push_back(b.load(Type::f32(), b.ptrAdd(in, 4 * e)));
            const specs::minimax_m3::Mxfp8Operand q = specs::minimax_m3::mxfp8QuantizeA(b, xs);
            for (int w = 0; w < 8; ++w) b.store(b.ptrAdd(out, 4 * w), b.extract(q.a, w));
            b.store(b.ptrAdd(out, 32), q.scale);
          },
          mxfp8Fill, nullptr};
}

/// Words of a device's output region that differ from `want`; the first few described.
int64_t mxfp8Mismatches(const std::vector<uint8_t>& got, int64_t off, const std::vector<uint8_t>& want, std::string* first) {
  int64_t bad = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(want.size()); i += 4) {
    const uint32_t g = getAt<uint32_t>(got, static_cast<size_t>(off + i)), x = getAt<uint32_t>(want, static_cast<size_t>(i));
    if (g != x && ++bad <= 6 && first)
      *first += fmt::format("  lane {} word {}: got {:#010x}, want {:#010x}\n", i / kMxfp8Out, i % kMxfp8Out / 4, g, x);
  }
  return bad;
}

/// A broken quant: a wrong element rounding, scale rule or clamp, to show the inputs tell it apart.
enum class Mxfp8Broken { Truncate, TiesAway, TiesOdd, FloorScale, FloorScaleNoClamp, FlushSubnormals, NoNanSkip };

uint8_t mxfp8BrokenEncode(double y, Mxfp8Broken k) {
  using specs::minimax_m3::e4m3RoundNearestEven;
  if (std::isnan(y) || k == Mxfp8Broken::FloorScale || k == Mxfp8Broken::NoNanSkip) return e4m3RoundNearestEven(y);
  const uint8_t sign = std::signbit(y) ? 0x80 : 0;
  const double a = std::fabs(y);
  if (k == Mxfp8Broken::FloorScaleNoClamp) return a >= 464.0 ? static_cast<uint8_t>(sign | 0x7f) : e4m3RoundNearestEven(y);
  if (k == Mxfp8Broken::FlushSubnormals) return a < 0x1p-6 ? sign : e4m3RoundNearestEven(y);
  // the codes below and above a, and which is nearer
  uint8_t lo = 0;
  for (uint8_t c = 0; c <= 0x7e; ++c)
    if (specs::minimax_m3::mxfp8Dequant(c, 127) <= a) lo = c;
  if (lo == 0x7e) return sign | 0x7e;
  const double vl = specs::minimax_m3::mxfp8Dequant(lo, 127), vh = specs::minimax_m3::mxfp8Dequant(lo + 1, 127);
  uint8_t c = lo;
  if (k == Mxfp8Broken::Truncate) c = lo;
  else if (a - vl > vh - a) c = lo + 1;
  else if (a - vl == vh - a) c = k == Mxfp8Broken::TiesAway ? lo + 1 : (lo & 1) ? lo : lo + 1;  // TiesOdd
  return sign | c;
}

Mxfp8Block mxfp8BrokenQuant(const float* x, Mxfp8Broken k) {
  Mxfp8Block blk;
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) amax = k == Mxfp8Broken::NoNanSkip ? (std::isnan(x[i]) ? x[i] : std::max(amax, std::fabs(x[i])))
                                                                    : std::isnan(x[i]) ? amax : std::max(amax, std::fabs(x[i]));
  if (k == Mxfp8Broken::FloorScale || k == Mxfp8Broken::FloorScaleNoClamp) {
    // the OCP spec's rule: 2^(floor(log2 amax) - 8), e4m3's largest power being 2^8
    int e2 = 0;
    std::frexp(amax, &e2);
    blk.scale = amax == 0 ? 0 : std::isinf(amax) ? 255 : static_cast<uint8_t>(std::clamp(e2 - 1 - 8 + 127, 0, 254));
  } else {
    blk.scale = std::isnan(amax) ? 255 : specs::minimax_m3::mxfp8ScaleOf(amax);
  }
  for (int i = 0; i < 32; ++i) {
    const double v = x[i];
    blk.codes[i] = mxfp8BrokenEncode(blk.scale == 255 ? v * 0.0 : std::ldexp(v, 127 - blk.scale), k);
  }
  return blk;
}

}  // namespace

TEST_CASE("executor ops: the MXFP8 quant into mfma_scale's A equals its reference on the Sim and gfx950-run",
          "[executor_ops][mxfp8]") {
  const Suite s = buildSuite(std::vector<Custom>{mxfp8Case()});
  REQUIRE(s.slots.size() == 1);
  const Slot& sl = s.slots[0];
  const std::vector<uint8_t> in(s.in.begin() + sl.inOff[0], s.in.begin() + sl.inOff[0] + kLanes * kMxfp8In);
  const std::vector<uint8_t> want = mxfp8Expected(in, [](const float* x) { return specs::minimax_m3::mxfp8QuantizeBlock(x); });

  // The inputs reach every E8M0 code and every e4m3 code.
  std::set<int> scales, codes;
  for (int l = 0; l < kLanes; ++l) {
    scales.insert(want[static_cast<size_t>(kMxfp8Out * l + 32)]);
    for (int e = 0; e < 32; ++e) codes.insert(want[static_cast<size_t>(kMxfp8Out * l + e)]);
  }
  CHECK(scales.size() == 249);  // 0 .. 247 and 255 (a finite f32 amax never needs 248 .. 254)
  CHECK(codes.size() == 255);  // every code but 0xff: a NaN becomes 0x7f

  runtime::SimDeviceAdapter simDev;
  const std::vector<uint8_t> sim = runSuite(simDev, s);
  std::string first;
  const int64_t simBad = mxfp8Mismatches(sim, sl.outOff, want, &first);
  INFO("Sim vs the reference:\n" << first);
  CHECK(simBad == 0);

  // Each broken quant differs from the Sim somewhere.
  std::string counts;
  const std::pair<Mxfp8Broken, const char*> broken[] = {
      {Mxfp8Broken::Truncate, "truncate"}, {Mxfp8Broken::TiesAway, "ties away"}, {Mxfp8Broken::TiesOdd, "ties odd"},
      {Mxfp8Broken::FloorScale, "floor scale"}, {Mxfp8Broken::FloorScaleNoClamp, "floor scale, no clamp"},
      {Mxfp8Broken::FlushSubnormals, "subnormals flushed"}, {Mxfp8Broken::NoNanSkip, "NaN in amax"}};
  for (const auto& [k, name] : broken) {
    const int64_t n = mxfp8Mismatches(sim, sl.outOff, mxfp8Expected(in, [k = k](const float* x) { return mxfp8BrokenQuant(x, k); }), nullptr);
    counts += fmt::format(" {} {};", name, n);
    CHECK(n > 0);
  }
  const int64_t wrongLane = mxfp8Mismatches(sim, sl.outOff, mxfp8Expected(in, [](const float* x) {
    return specs::minimax_m3::mxfp8QuantizeBlock(x); }, true), nullptr);
  counts += fmt::format(" scale in lane 4 i + t {}", wrongLane);
  CHECK(wrongLane > 0);
  fmt::print("mxfp8: {} words; broken quants' mismatches with the Sim:{}\n", kLanes * kMxfp8Out / 4, counts);

  if (!haveTool()) return;
  Gfx950RunDevice exeDev;
  const std::vector<uint8_t> exe = runSuite(exeDev, s);
  std::string firstExe;
  const int64_t exeBad = mxfp8Mismatches(exe, sl.outOff, want, &firstExe);
  fmt::print("mxfp8: gfx950-run vs the reference: {} mismatches of {} words ({} wave-instructions)\n", exeBad,
             kLanes * kMxfp8Out / 4, exeDev.lastRun().waveInstructions);
  INFO("gfx950-run vs the reference:\n" << firstExe);
  CHECK(exeBad == 0);
}
