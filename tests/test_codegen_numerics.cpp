// The lowered conversions (fp4 e2m1 with e8m0 scales, e8m0, bf16) equal
// ir/Numerics.h bit for bit. Each conversion of a constant is stored to its own slot of `out`
// with a relaxed atomic store (never merged into vector stores); LLVM's O3 constant-folds the
// lowering's integer/float arithmetic (IEEE, no fast-math), and the folded constants are read
// back from the optimized LLVM IR and compared with the shared model. fp4x8 -> bf16x8 with an
// E8m0ToF32 scale lowers to gfx950's v_cvt_scalef32_pk_bf16_fp4, which LLVM does not fold: here
// only which path is taken; its values are checked on gfx950-run (tests/test_gfx950run.cpp). So for
// f32 -> fp8 e4m3fn and fp8 e4m3fn -> f32, which lower to v_cvt_pk_fp8_f32 and v_cvt_f32_fp8
// (values: tests/test_executor_ops.cpp).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>

#include "codegen/Compiler.h"
#include "ir/Builder.h"
#include "ir/Numerics.h"

using namespace monogen;
using namespace monogen::ir;

namespace {

struct Case {
  std::string what;
  uint32_t expected;
  bool nan = false;  // any NaN is accepted (payloads are not part of the model for these ops)
};

/// Builds one kernel storing `emit(b, i)` (an i32 of bits) to out[i] for every case, compiles it
/// to optimized LLVM IR and returns the folded constant of each slot.
std::map<int64_t, uint32_t> fold(int n, const std::function<Val(Builder&, int)>& emit) {
  Plan p;
  p.key.spec = "test.codegen.numerics";
  p.key.target = gfx950();
  p.grid = {1, 512};
  p.args = {{"out", true, Scalar::I32, {n}, ArgRole::Output, 16, ""}};
  Builder b(p.kernel);
  Val out = b.arg(0, Type::ptr(AddrSpace::Global), "out");
  for (int i = 0; i < n; ++i)
    b.store(b.ptrAdd(out, int64_t{4} * i), emit(b, i), MemOrder::Relaxed, MemScope::Agent);
  const std::string ir = codegen::llvmIr(p, true);

  std::map<std::string, int64_t> offsetOf{{"%out", 0}};
  std::map<int64_t, uint32_t> got;
  const std::regex gep(R"((%[\w.]+) = getelementptr (?:inbounds )?(?:nuw )?i8, ptr addrspace\(1\) %out, i64 (\d+))");
  const std::regex st(R"(store atomic i32 (-?\d+), ptr addrspace\(1\) (%[\w.]+) )");
  std::istringstream in(ir);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, gep)) offsetOf[m[1]] = std::stoll(m[2]);
    if (std::regex_search(line, m, st)) {
      auto it = offsetOf.find(m[2]);
      if (it != offsetOf.end()) got[it->second / 4] = static_cast<uint32_t>(std::stoll(m[1]));
    }
  }
  INFO(ir.substr(0, 4000));
  REQUIRE(got.size() == static_cast<size_t>(n));  // every slot folded to a constant
  return got;
}

void compare(const std::vector<Case>& cases, const std::map<int64_t, uint32_t>& got) {
  int bad = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const uint32_t g = got.at(static_cast<int64_t>(i));
    const bool ok = cases[i].nan ? std::isnan(num::bitsToF32(g)) : g == cases[i].expected;
    if (!ok && ++bad <= 20)
      UNSCOPED_INFO(fmt::format("{}: got 0x{:08x}, expected 0x{:08x}", cases[i].what, g, cases[i].expected));
  }
  CHECK(bad == 0);
}

/// One lane-wise conversion `conv` of a loaded `in` element stored to `out`, lowered for gfx950:
/// its optimized LLVM IR and ISA.
struct Lowered {
  std::string ir, isa;
  size_t count(const std::string& what) const {
    size_t n = 0;
    for (size_t at = ir.find(what); at != std::string::npos; at = ir.find(what, at + 1)) ++n;
    return n;
  }
};
Lowered lowerConversion(Scalar from, Scalar to, const std::function<Val(Builder&, Val)>& conv) {
  Plan p;
  p.key.spec = "test.codegen.conversion";
  p.key.target = gfx950();
  p.grid = {1, 64};
  p.args = {{"in", true, from, {64}, ArgRole::Input, 16, ""}, {"out", true, to, {64}, ArgRole::Output, 16, ""}};
  Builder b(p.kernel);
  Val in = b.arg(0, Type::ptr(AddrSpace::Global), "in"), out = b.arg(1, Type::ptr(AddrSpace::Global), "out");
  const Type t = from == Scalar::F32 ? Type::f32() : Type::i32();
  b.store(b.ptrAdd(out, b.tid() * b.i32(4)), conv(b, b.load(t, b.ptrAdd(in, b.tid() * b.i32(4)))));
  return {codegen::llvmIr(p, true), codegen::isaText(p)};
}

float f(uint32_t bits) { return num::bitsToF32(bits); }

}  // namespace

TEST_CASE("fp8 e4m3fn decode lowers to v_cvt_f32_fp8 of byte 0 and a NaN select", "[codegen][numerics]") {
  // LLVM does not fold llvm.amdgcn.cvt.f32.fp8, so its values are checked where it runs: on
  // gfx950-run, against num::fp8E4m3ToF32 on every code, high bits set too (tests/test_executor_ops.cpp,
  // "fp8tof32"). Here: the path it takes.
  const Lowered l = lowerConversion(Scalar::I32, Scalar::F32, [](Builder& b, Val x) { return b.fp8ToF32(x); });
  INFO(l.ir);
  CHECK(l.count("call float @llvm.amdgcn.cvt.f32.fp8(i32 %") == 1);
  CHECK(l.count(", i32 0)") >= 1);  // byte 0
  CHECK(l.count("and i32 %") == 1);  // (code & 0x7f) == 0x7f: a NaN code -> 0x7fc00000
  CHECK(l.count("0x7FF8000000000000") == 1);
  CHECK(l.isa.find("v_cvt_f32_fp8") != std::string::npos);
}

TEST_CASE("e8m0 decode and fp4 e2m1 times a scale equal the model", "[codegen][numerics]") {
  std::vector<Case> cases;
  for (uint32_t e = 0; e < 256; ++e) {
    const float v = num::e8m0ToF32(e);
    cases.push_back({fmt::format("e8m0ToF32({})", e), num::f32ToBits(v), std::isnan(v)});
  }
  const uint32_t scales[] = {0, 1, 2, 100, 126, 127, 128, 200, 253, 254, 255};
  for (uint32_t s : scales)
    for (uint32_t c = 0; c < 16; ++c) {
      const float v = num::fp4ToF32(c, num::e8m0ToF32(s));
      cases.push_back({fmt::format("fp4ToF32({}, e8m0 {})", c, s), num::f32ToBits(v), std::isnan(v)});
    }
  auto got = fold(static_cast<int>(cases.size()), [&](Builder& b, int i) {
    if (i < 256) return b.bitcast(b.e8m0ToF32(b.i32(i)), Type::i32());
    const int j = i - 256;
    Val scale = b.e8m0ToF32(b.i32(scales[j / 16]));
    return b.bitcast(b.fp4ToF32(b.i32((j % 16) | 0x70), scale), Type::i32());
  });
  CHECK(got.at(0) == 0x00400000u);    // 2^-127, subnormal
  CHECK(got.at(127) == 0x3f800000u);  // 1.0
  CHECK(got.at(256 + 5 * 16 + 15) == 0xc0c00000u);  // fp4 0xf (-6) x 2^0
  compare(cases, got);
}

TEST_CASE("fp4x8 -> bf16x8 with any f32 scale (the arithmetic lowering) equals the model, element by element",
          "[codegen][numerics]") {
  // Every code in every position, e8m0 scales (subnormal 2^-127, 1, large, overflowing to inf,
  // NaN) and scales that are no power of two (rounded in f32, then to bf16), all given as f32
  // bits: not E8m0ToF32 results, so the arithmetic lowering.
  const uint32_t scales[] = {num::f32ToBits(num::e8m0ToF32(0)), num::f32ToBits(num::e8m0ToF32(1)),
                             num::f32ToBits(num::e8m0ToF32(127)), num::f32ToBits(num::e8m0ToF32(130)),
                             num::f32ToBits(num::e8m0ToF32(254)), num::f32ToBits(num::e8m0ToF32(255)),
                             0x3fc00000u /* 1.5 */, 0xc0490fdbu /* -pi */, 0x3f7fffffu, 0x00000001u, 0x7f7fffffu};
  const uint32_t words[] = {0x76543210u, 0xfedcba98u, 0x0f1e2d3cu, 0x89abcdefu};
  std::vector<Case> cases;
  for (uint32_t s : scales)
    for (uint32_t w : words)
      for (int e = 0; e < 8; e += 2) {  // an i32 slot holds two bf16 (elements e, e + 1)
        const uint32_t lo = num::fp4x8ElemToBf16(w, e, f(s));
        const uint32_t hi = num::fp4x8ElemToBf16(w, e + 1, f(s));
        cases.push_back({fmt::format("fp4x8ToBf16x8(0x{:08x}, 0x{:08x})[{}..{}]", w, s, e, e + 1), lo | hi << 16,
                         std::isnan(f(s))});
      }
  auto got = fold(static_cast<int>(cases.size()), [&](Builder& b, int i) {
    const int e = (i % 4) * 2, w = (i / 4) % 4, s = i / 16;
    Val v = b.fp4x8ToBf16x8(b.i32(words[w]), b.bitcast(b.constInt(Type::i32(), scales[s]), Type::f32()));
    Val pair = b.splat(b.bf16(0.0), 2);
    pair = b.insert(pair, b.extract(v, e), 0);
    pair = b.insert(pair, b.extract(v, e + 1), 1);
    return b.bitcast(pair, Type::i32());
  });
  CHECK(got.at(16 * 2) == 0x3f000000u);  // word 0x76543210 at scale 2^0: codes 0, 1 -> bf16 0 and 0.5
  compare(cases, got);
}

TEST_CASE("fp4x8 -> bf16x8 takes v_cvt_scalef32_pk_bf16_fp4 exactly when the scale is an E8m0ToF32 result",
          "[codegen][numerics]") {
  auto intrinsicCalls = [](bool e8m0Scale) {
    Plan p;
    p.key.spec = "test.codegen.fp4x8";
    p.key.target = gfx950();
    p.grid = {1, 64};
    p.args = {{"in", true, Scalar::I32, {128}, ArgRole::Input, 16, ""},
              {"out", true, Scalar::BF16, {512}, ArgRole::Output, 16, ""}};
    Builder b(p.kernel);
    Val in = b.arg(0, Type::ptr(AddrSpace::Global), "in"), out = b.arg(1, Type::ptr(AddrSpace::Global), "out");
    Val w = b.load(Type::i32(), b.ptrAdd(in, b.tid() * b.i32(4)));
    Val raw = b.load(Type::i32(), b.ptrAdd(in, (b.tid() + b.i32(64)) * b.i32(4)));
    Val scale = e8m0Scale ? b.e8m0ToF32(raw) : b.bitcast(raw, Type::f32());
    b.store(b.ptrAdd(out, b.tid() * b.i32(16)), b.fp4x8ToBf16x8(w, scale));
    const std::string ir = codegen::llvmIr(p, true);
    size_t n = 0;
    for (size_t at = ir.find("call <2 x bfloat> @llvm.amdgcn.cvt.scalef32.pk.bf16.fp4("); at != std::string::npos;
         at = ir.find("call <2 x bfloat> @llvm.amdgcn.cvt.scalef32.pk.bf16.fp4(", at + 1))
      ++n;
    return n;
  };
  CHECK(intrinsicCalls(true) == 4);  // one a byte of the word
  CHECK(intrinsicCalls(false) == 0);
}

TEST_CASE("f32 -> fp8 e4m3fn lowers to a NaN-keeping clamp to +-448, v_cvt_pk_fp8_f32 and no select", "[codegen][numerics]") {
  // LLVM does not fold llvm.amdgcn.cvt.pk.fp8.f32, so its values are checked where it runs: on
  // gfx950-run, against num::f32ToFp8E4m3 on every code, rounding tie, +-448, overflow, subnormal,
  // NaN and Inf (tests/test_executor_ops.cpp, "f32tofp8"). Here: the path it takes.
  const Lowered l = lowerConversion(Scalar::F32, Scalar::I32, [](Builder& b, Val x) { return b.f32ToFp8(x); });
  INFO(l.ir);
  CHECK(l.count("call i32 @llvm.amdgcn.cvt.pk.fp8.f32(") == 1);
  CHECK(l.count("@llvm.maximum.f32(float %") + l.count("@llvm.minimum.f32(float %") == 2);  // keeps a NaN
  CHECK(l.count("@llvm.maxnum.f32(") + l.count("@llvm.minnum.f32(") == 0);
  CHECK(l.count("fcmp ") == 0);    // no lane mask: a NaN code's sign is cleared with integer ops
  CHECK(l.count("select ") == 0);
  CHECK(l.isa.find("v_cvt_pk_fp8_f32") != std::string::npos);
}

TEST_CASE("f32 -> bf16 rounds to nearest even like the model", "[codegen][numerics]") {
  std::vector<float> xs = {0.0f, -0.0f, 1.0f, f(0x3f808000) /* tie, even down */, f(0x3f818000) /* tie, up */,
                           f(0x3f808001), f(0x7f7fffff) /* rounds to inf */, INFINITY, 1e-40f, f(0x00008000)};
  std::mt19937 rng(99);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  for (int i = 0; i < 300; ++i) {
    const float x = f(bits(rng));
    if (!std::isnan(x)) xs.push_back(x);
  }
  std::vector<Case> cases;
  for (float x : xs) cases.push_back({fmt::format("f32ToBf16({:a})", x), num::f32ToBf16(x)});
  auto got = fold(static_cast<int>(xs.size()), [&](Builder& b, int i) {
    return b.zext(b.bitcast(b.f32ToBf16(b.f32(xs[i])), Type::i16()), Type::i32());
  });
  CHECK(got.at(2) == 0x3f80u);
  CHECK(got.at(3) == 0x3f80u);
  CHECK(got.at(4) == 0x3f82u);
  compare(cases, got);
}

TEST_CASE("integer constants, shift amounts and divisions fold as the IR defines them", "[codegen][numerics]") {
  struct IntCase {
    const char* what;
    uint32_t expected;
    std::function<Val(Builder&)> emit;
  };
  const std::vector<IntCase> cs = {
      {"i32 0xffffffff", 0xffffffffu, [](Builder& b) { return b.constInt(Type::i32(), 0xffffffffLL); }},
      {"zext i8 -1", 255u, [](Builder& b) { return b.zext(b.constInt(Type::i8(), -1), Type::i32()); }},
      {"zext i1 true", 1u, [](Builder& b) { return b.zext(b.i1(true), Type::i32()); }},
      {"sext i1 true", 0xffffffffu, [](Builder& b) { return b.sext(b.i1(true), Type::i32()); }},
      {"zext i16 0x12345", 0x2345u, [](Builder& b) { return b.zext(b.constInt(Type::i16(), 0x12345), Type::i32()); }},
      {"1 << 33", 2u, [](Builder& b) { return b.i32(1) << b.i32(33); }},
      {"-1 lshr 36", 0x0fffffffu, [](Builder& b) { return b.lshr(b.i32(-1), b.i32(36)); }},
      {"-16 ashr 34", static_cast<uint32_t>(-4), [](Builder& b) { return b.i32(-16) >> b.i32(34); }},
      {"i64 1 << 65 (low)", 2u, [](Builder& b) { return b.trunc(b.i64(1) << b.i64(65), Type::i32()); }},
      {"-7 / 2", static_cast<uint32_t>(-3), [](Builder& b) { return b.i32(-7) / b.i32(2); }},
      {"-7 % 2", static_cast<uint32_t>(-1), [](Builder& b) { return b.i32(-7) % b.i32(2); }},
      {"udiv -7 2", 0x7ffffffcu, [](Builder& b) { return b.udiv(b.i32(-7), b.i32(2)); }},
      {"INT_MIN / -1 wraps", 0x80000000u, [](Builder& b) { return b.i32(INT32_MIN) / b.i32(-1); }},
      {"INT_MIN % -1", 0u, [](Builder& b) { return b.i32(INT32_MIN) % b.i32(-1); }},
      {"-7 / -1", 7u, [](Builder& b) { return b.i32(-7) / b.i32(-1); }},
      {"i64 INT_MIN / -1 (high)", 0x80000000u,
       [](Builder& b) { return b.trunc(b.lshr(b.i64(INT64_MIN) / b.i64(-1), b.i64(32)), Type::i32()); }},
      {"fptosi 3e9 saturates", 0x7fffffffu, [](Builder& b) { return b.fpToSi(b.f32(3e9), Type::i32()); }},
      {"fptosi NaN", 0u, [](Builder& b) { return b.fpToSi(b.f32(NAN), Type::i32()); }},
      {"min -3 2", static_cast<uint32_t>(-3), [](Builder& b) { return b.min(b.i32(-3), b.i32(2)); }},
      {"umin -3 2", 2u, [](Builder& b) { return b.umin(b.i32(-3), b.i32(2)); }},
      {"fptosi -2.75", static_cast<uint32_t>(-2), [](Builder& b) { return b.fpToSi(b.f32(-2.75), Type::i32()); }},
      {"minnum(NaN, 3)", 0x40400000u,
       [](Builder& b) { return b.bitcast(b.min(b.f32(NAN), b.f32(3.0)), Type::i32()); }},
      {"popcount i64", 64u, [](Builder& b) { return b.popcount(b.i64(-1)); }},
      {"fdiv 1/3", num::f32ToBits(1.0f / 3.0f), [](Builder& b) { return b.bitcast(b.f32(1.0) / b.f32(3.0), Type::i32()); }},
  };
  auto got = fold(static_cast<int>(cs.size()), [&](Builder& b, int i) { return cs[i].emit(b); });
  std::vector<Case> cases;
  for (const auto& c : cs) cases.push_back({c.what, c.expected});
  compare(cases, got);
}
