// Sim device: the executable semantics of the kernel IR. Plans are built by hand with ir::Builder.
#include <catch2/catch.hpp>

#include <functional>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ctime>
#include <algorithm>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "test_sim_util.h"

using namespace simtest;
using monogen::SimError;
using monogen::ir::AddrSpace;
using monogen::ir::CmpPred;
using monogen::ir::OpCode;

namespace {

/// Records values (i32 or f32 bits) into out[slot++] from every lane (all lanes agree).
struct Recorder {
  Kit& k;
  Val out;
  int slot = 0;
  int put(Val v) {
    Val x = v;
    if (v.type() == Type::i1()) x = k.b.zext(v, Type::i32());
    k.b.store(k.b.ptrAdd(out, 4 * slot), x);
    return slot++;
  }
};

}  // namespace

TEST_CASE("sim: integer arithmetic wraps, shifts take the amount modulo the width, signed div/rem truncate") {
  Kit k(1, 64);
  auto& b = k.b;
  Recorder r{k, k.gptr(0)};
  const int add = r.put(b.i32(INT32_MAX) + b.i32(1));
  const int mul = r.put(b.i32(0x10000) * b.i32(0x10000));
  const int shl = r.put(b.i32(1) << b.i32(33));
  const int ashr = r.put(b.i32(-16) >> b.i32(34));
  const int lshr = r.put(b.lshr(b.i32(-16), b.i32(28)));
  const int div = r.put(b.i32(-7) / b.i32(2));
  const int rem = r.put(b.i32(-7) % b.i32(2));
  const int rem2 = r.put(b.i32(7) % b.i32(-2));
  const int minDiv = r.put(b.i32(INT32_MIN) / b.i32(-1));
  const int minRem = r.put(b.i32(INT32_MIN) % b.i32(-1));
  const int udiv = r.put(b.udiv(b.i32(-1), b.i32(2)));
  const int urem = r.put(b.urem(b.i32(-1), b.i32(10)));
  const int smin = r.put(b.min(b.i32(-1), b.i32(1)));
  const int umin = r.put(b.umin(b.i32(-1), b.i32(1)));
  const int smax = r.put(b.max(b.i32(-1), b.i32(1)));
  const int umax = r.put(b.umax(b.i32(-1), b.i32(1)));
  const int i64wrap = r.put(b.trunc((b.i64(INT64_MAX) + b.i64(1)) >> b.i64(63), Type::i32()));
  const int shl64 = r.put(b.trunc(b.i64(1) << b.i64(65), Type::i32()));
  Val byte = b.trunc(b.i32(0x180), Type::i8());
  const int sext = r.put(b.sext(byte, Type::i32()));
  const int zext = r.put(b.zext(byte, Type::i32()));
  const int i16wrap = r.put(b.zext(b.constInt(Type::i16(), 0xffff) + b.constInt(Type::i16(), 2), Type::i32()));
  const int i1not = r.put(!b.i1(true));
  const int slt = r.put(b.cmp(CmpPred::Slt, b.i32(-1), b.i32(0)));
  const int ult = r.put(b.cmp(CmpPred::Ult, b.i32(-1), b.i32(0)));
  const int pop = r.put(b.popcount(b.i64(-1)));
  const int sel = r.put(b.select(b.i1(false), b.i32(3), b.i32(4)));
  const uint64_t out = k.alloc(4 * r.slot, "out");
  k.run({{out}});
  auto v = k.read<int32_t>(out, r.slot);
  CHECK(v[add] == INT32_MIN);
  CHECK(v[mul] == 0);
  CHECK(v[shl] == 2);
  CHECK(v[ashr] == -4);
  CHECK(v[lshr] == 0xf);
  CHECK(v[div] == -3);
  CHECK(v[rem] == -1);
  CHECK(v[rem2] == 1);
  CHECK(v[minDiv] == INT32_MIN);
  CHECK(v[minRem] == 0);
  CHECK(v[udiv] == 0x7fffffff);
  CHECK(v[urem] == 5);
  CHECK(v[smin] == -1);
  CHECK(v[umin] == 1);
  CHECK(v[smax] == 1);
  CHECK(v[umax] == -1);
  CHECK(v[i64wrap] == -1);
  CHECK(v[shl64] == 2);
  CHECK(v[sext] == -128);
  CHECK(v[zext] == 128);
  CHECK(v[i16wrap] == 1);
  CHECK(v[i1not] == 0);
  CHECK(v[slt] == 1);
  CHECK(v[ult] == 0);
  CHECK(v[pop] == 64);
  CHECK(v[sel] == 4);
}

TEST_CASE("sim: integer division by zero is an error naming the op") {
  Kit k(1, 64);
  auto& b = k.b;
  Val out = k.gptr(0);
  b.store(out, b.i32(5) / (b.lane() - b.lane()));
  const uint64_t o = k.alloc(4, "out");
  REQUIRE_THROWS_WITH(k.run({{o}}), Catch::Contains("division by zero") && Catch::Contains("div"));
}

TEST_CASE("sim: float ops, bf16 RNE ties and NaN, fp4, e8m0, fp8, compares on NaN") {
  Kit k(1, 64);
  auto& b = k.b;
  Recorder r{k, k.gptr(0)};
  auto bf16Bits = [&](Val bf) { return b.zext(b.bitcast(bf, Type::i16()), Type::i32()); };
  Val nanPayload = b.bitcast(b.i32(0x7f800001), Type::f32());
  const int tieEven = r.put(bf16Bits(b.f32ToBf16(b.f32(1.00390625))));      // 1 + 2^-8
  const int tieUp = r.put(bf16Bits(b.f32ToBf16(b.f32(1.01171875))));        // 1 + 3 * 2^-8
  const int above = r.put(bf16Bits(b.f32ToBf16(b.f32(1.0039063692092896)))); // just above the tie
  const int nan = r.put(bf16Bits(b.f32ToBf16(nanPayload)));
  const int bfAdd = r.put(bf16Bits(b.bf16(1.0) + b.bf16(0.00390625)));
  const int bfAdd3 = r.put(bf16Bits(b.bf16(1.0) + b.bf16(0.01171875)));
  const int bfWiden = r.put(b.bf16ToF32(b.bf16(-2.5)));
  const int fp4a = r.put(b.fp4ToF32(b.i32(0xF), b.f32(2.0)));
  const int fp4b = r.put(b.fp4ToF32(b.i32(0x31), b.f32(0.25)));  // low 4 bits only
  const int fp4c = r.put(b.fp4ToF32(b.i32(0x7), b.f32(1.0)));
  const int e127 = r.put(b.e8m0ToF32(b.i32(127)));
  const int e128 = r.put(b.e8m0ToF32(b.i32(128)));
  const int e255 = r.put(b.e8m0ToF32(b.i32(255)));
  const int e0 = r.put(b.e8m0ToF32(b.i32(0)));
  const int fp8max = r.put(b.fp8ToF32(b.i32(0x7e)));
  const int fp8sub = r.put(b.fp8ToF32(b.i32(0x01)));
  const int fp8nan = r.put(b.fp8ToF32(b.i32(0xff)));
  const int fp8one = r.put(b.fp8ToF32(b.i32(0x38)));
  const int toFp8sat = r.put(b.f32ToFp8(b.f32(1000.0)));
  const int toFp8neg = r.put(b.f32ToFp8(b.f32(-1000.0)));
  const int toFp8nan = r.put(b.f32ToFp8(nanPayload));
  const int toFp8tie = r.put(b.f32ToFp8(b.f32(1.0625)));
  const int toFp8tie2 = r.put(b.f32ToFp8(b.f32(1.1875)));
  const int toFp8pair = r.put(b.f32x2ToFp8x2(b.f32(1.0625), b.f32(-1000.0)));
  const int toFp8pairNan = r.put(b.f32x2ToFp8x2(b.f32(448.0), nanPayload));
  const int fptosi = r.put(b.fpToSi(b.f32(-2.7), Type::i32()));
  const int fptosiSat = r.put(b.fpToSi(b.f32(3e9), Type::i32()));
  const int fptosiNan = r.put(b.fpToSi(nanPayload, Type::i32()));
  const int olt = r.put(b.cmp(CmpPred::Olt, nanPayload, b.f32(1.0)));
  const int uno = r.put(b.cmp(CmpPred::Uno, nanPayload, b.f32(1.0)));
  const int one = r.put(b.cmp(CmpPred::One, nanPayload, b.f32(1.0)));
  const int ord = r.put(b.cmp(CmpPred::Ord, b.f32(1.0), b.f32(2.0)));
  const int oeqZero = r.put(b.cmp(CmpPred::Oeq, b.f32(0.0), b.f32(-0.0)));
  Val qnan = b.bitcast(b.i32(0x7fc00000), Type::f32());
  const int fmin = r.put(b.min(qnan, b.f32(1.0)));
  const int fmax = r.put(b.max(b.f32(1.0), qnan));
  const int third = r.put(b.f32(1.0) / b.f32(3.0));
  const int sqrt2 = r.put(b.sqrt(b.f32(2.0)));
  const int rcp3 = r.put(b.rcp(b.f32(3.0)));
  const int rsq4 = r.put(b.rsq(b.f32(4.0)));
  const int absNeg = r.put(b.unary(OpCode::Abs, b.f32(-2.5)));
  const int exp2 = r.put(b.exp2(b.f32(3.0)));
  const int exp2n = r.put(b.exp2(b.f32(-1.0)));
  const int fma = r.put(b.fma(b.f32(1.0 + std::ldexp(1.0, -23)), b.f32(1.0 - std::ldexp(1.0, -23)), b.f32(-1.0)));
  const int sitofp = r.put(b.siToFp(b.i32(16777217)));
  const int uitofp = r.put(b.uiToFp(b.i32(-1)));
  const int vecAdd = r.put(b.extract(b.splat(b.f32(1.5), 4) + b.splat(b.f32(2.0), 4), 3));
  const uint64_t out = k.alloc(4 * r.slot, "out");
  k.run({{out}});
  auto u = k.read<uint32_t>(out, r.slot);
  auto f = [&](int i) { return f32FromBits(u[i]); };
  CHECK(u[tieEven] == 0x3f80);
  CHECK(u[tieUp] == 0x3f82);
  CHECK(u[above] == 0x3f81);
  CHECK(u[nan] == 0x7fc0);
  CHECK(u[bfAdd] == 0x3f80);
  CHECK(u[bfAdd3] == 0x3f82);
  CHECK(f(bfWiden) == -2.5f);
  CHECK(f(fp4a) == -12.0f);
  CHECK(f(fp4b) == 0.125f);
  CHECK(f(fp4c) == 6.0f);
  CHECK(f(e127) == 1.0f);
  CHECK(f(e128) == 2.0f);
  CHECK(std::isnan(f(e255)));
  CHECK(f(e0) == std::ldexp(1.0f, -127));
  CHECK(f(fp8max) == 448.0f);
  CHECK(f(fp8sub) == std::ldexp(1.0f, -9));
  CHECK(std::isnan(f(fp8nan)));
  CHECK(f(fp8one) == 1.0f);
  CHECK(u[toFp8sat] == 0x7e);
  CHECK(u[toFp8neg] == 0xfe);
  CHECK(u[toFp8nan] == 0x7f);
  CHECK(u[toFp8tie] == 0x38);
  CHECK(u[toFp8tie2] == 0x3a);
  CHECK(u[toFp8pair] == 0xfe38);  // byte 0 the tie to even, byte 1 -448
  CHECK(u[toFp8pairNan] == 0x7f7e);
  CHECK(static_cast<int32_t>(u[fptosi]) == -2);
  CHECK(static_cast<int32_t>(u[fptosiSat]) == INT32_MAX);
  CHECK(u[fptosiNan] == 0);
  CHECK(u[olt] == 0);
  CHECK(u[uno] == 1);
  CHECK(u[one] == 0);
  CHECK(u[ord] == 1);
  CHECK(u[oeqZero] == 1);
  CHECK(f(fmin) == 1.0f);
  CHECK(f(fmax) == 1.0f);
  CHECK(u[third] == 0x3eaaaaabu);
  CHECK(u[sqrt2] == 0x3fb504f3u);
  CHECK(u[rcp3] == 0x3eaaaaabu);
  CHECK(f(rsq4) == 0.5f);
  CHECK(f(absNeg) == 2.5f);
  CHECK(f(exp2) == 8.0f);
  CHECK(f(exp2n) == 0.5f);
  CHECK(f(fma) == -std::ldexp(1.0f, -46));
  CHECK(f(sitofp) == 16777216.0f);
  CHECK(f(uitofp) == 4294967296.0f);
  CHECK(f(vecAdd) == 3.5f);
}

TEST_CASE("sim: divergent if/else merges through variables") {
  Kit k(1, 64);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val lane = b.lane();
  ir::Var v = b.var(Type::i32(), "v");
  b.if_((lane & 1) == 1, [&] { b.set(v, lane * 2); },
        [&] {
          b.set(v, -lane);
          b.if_(lane < 8, [&] { b.set(v, b.i32(100)); });
        });
  b.store(b.ptrAdd(out, b.sext(lane * 4, Type::i64())), b.get(v));
  const uint64_t o = k.alloc(256, "out");
  k.run({{o}});
  auto r = k.read<int32_t>(o, 64);
  for (int l = 0; l < 64; ++l) {
    const int want = (l & 1) ? 2 * l : (l < 8 ? 100 : -l);
    CHECK(r[l] == want);
  }
}

TEST_CASE("sim: for and while loops with per-lane bounds, lanes leave independently") {
  Kit k(1, 64);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val lane = b.lane();
  auto at = [&](int col) { return b.ptrAdd(out, b.sext((lane * 5 + col) * 4, Type::i64())); };
  // sum of [0, lane)
  ir::Var acc = b.var(b.i32(0), "acc");
  Val c = lane * 3;  // defined before the loop, used inside after temporaries die: stays live
  ir::Var acc2 = b.var(b.i32(0), "acc2");
  b.for_(b.i32(0), lane, b.i32(1), [&](Val i) {
    b.set(acc, b.get(acc) + i);
    Val t = b.get(acc2) + c;
    b.set(acc2, t);
    Val junk = i * 1000 + 17;  // a temporary after c's last use in the body
    b.set(acc2, b.get(acc2) + junk - junk);
  });
  b.store(at(0), b.get(acc));
  b.store(at(1), b.get(acc2));
  // descending: i = lane, lane - 2, ... > -1
  ir::Var cnt = b.var(b.i32(0), "cnt");
  b.for_(lane, b.i32(-1), b.i32(-2), [&](Val) { b.set(cnt, b.get(cnt) + 1); });
  b.store(at(2), b.get(cnt));
  // collatz steps of lane + 1
  ir::Var x = b.var(lane + 1, "x");
  ir::Var steps = b.var(b.i32(0), "steps");
  b.while_([&] { return b.get(x) != 1; },
           [&] {
             Val xv = b.get(x);
             b.set(x, b.select((xv & 1) == 1, xv * 3 + 1, xv / 2));
             b.set(steps, b.get(steps) + 1);
           });
  b.store(at(3), b.get(steps));
  // a value defined in the loop body and used after the loop keeps each lane's last value,
  // even though the condition region's temporaries are written by lanes about to leave (the
  // verifier rejects such IR; the sim still gives it a defined meaning)
  ir::Var y = b.var(b.i32(0), "y");
  Val last;
  b.while_([&] {
             Val tc = b.get(y) + 0;
             return tc < lane % 5 + 1;
           },
           [&] {
             last = b.get(y) * 5 + 1;
             b.set(y, b.get(y) + 1);
           });
  b.store(at(4), last);
  const uint64_t o = k.alloc(64 * 5 * 4, "out");
  k.run({{o}});
  auto r = k.read<int32_t>(o, 64 * 5);
  for (int l = 0; l < 64; ++l) {
    INFO("lane " << l);
    CHECK(r[l * 5 + 0] == l * (l - 1) / 2);
    CHECK(r[l * 5 + 1] == 3 * l * l);
    CHECK(r[l * 5 + 2] == l / 2 + 1);
    int xs = l + 1, n = 0;
    while (xs != 1) {
      xs = (xs & 1) ? 3 * xs + 1 : xs / 2;
      ++n;
    }
    CHECK(r[l * 5 + 3] == n);
    CHECK(r[l * 5 + 4] == (l % 5) * 5 + 1);
  }
}

TEST_CASE("sim: temporaries reuse register slots") {
  Kit k(1, 64);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val v = b.lane();
  for (int i = 0; i < 1000; ++i) v = v + 1;
  b.store(b.ptrAdd(out, b.sext(b.lane() * 4, Type::i64())), v);
  const uint64_t o = k.alloc(256, "out");
  auto st = k.run({{o}});
  CHECK(k.read<int32_t>(o, 64)[63] == 1063);
  CHECK(st.globalBytesStored == 256);
  CHECK(st.globalBytesLoaded == 0);
  CHECK(st.steps >= 2000);
  CHECK(k.dev.lastFrameBytes() <= 4096);  // 2000 i32 values without reuse would be 512 KiB
}

TEST_CASE("sim: a wave's load counts the union of its lanes' bytes") {
  // four loads a lane: the same word (uniform), its own word, a word shared by lane pairs, and
  // 8 bytes at 4-byte steps (overlapping neighbours), in a lane order the sort must undo
  struct Case {
    const char* what;
    std::function<Val(ir::Builder&, Val lane)> index;  // i32 byte offset into `in`
    int bytes;
    int64_t expected;
  };
  const Case cases[] = {
      {"uniform", [](ir::Builder& b, Val) { return b.i32(12); }, 4, 4},
      {"contiguous", [](ir::Builder&, Val l) { return l * 4; }, 4, 256},
      {"pairs share a word", [](ir::Builder&, Val l) { return (l / 2) * 4; }, 4, 128},
      {"overlapping, reversed", [](ir::Builder& b, Val l) { return (b.i32(63) - l) * 4; }, 8, 64 * 4 + 4},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Kit k(1, 64);
    auto& b = k.b;
    Val in = k.gptr(0), out = k.gptr(1);
    Val v = b.load(c.bytes == 4 ? Type::i32() : Type::i64(), b.ptrAdd(in, b.sext(c.index(b, b.lane()), Type::i64())));
    b.store(b.ptrAdd(out, b.sext(b.lane() * 8, Type::i64())), c.bytes == 4 ? b.zext(v, Type::i64()) : v);
    const uint64_t i = k.alloc(1024, "in"), o = k.alloc(512, "out");
    CHECK(k.run({{i, o}}).globalBytesLoaded == c.expected);
  }
}

TEST_CASE("sim: every memory op counts its global bytes, by stage, and none on LDS") {
  // 64 lanes, each on its own 8-byte word (Wait: its own pair, already carrying the tag; a pair
  // on LDS is not a wait's)
  struct Case {
    const char* what;
    std::function<void(ir::Builder&, Val p)> op;  // p: the lane's 8-byte word
    int64_t loaded, stored;
  };
  const Case cases[] = {
      {"load", [](ir::Builder& b, Val p) { b.load(Type::i32(), p); }, 256, 0},
      {"store", [](ir::Builder& b, Val p) { b.store(p, b.i64(0)); }, 0, 512},
      {"atomic_rmw", [](ir::Builder& b, Val p) { b.atomicRmw(ir::RmwOp::Add, p, b.i32(1)); }, 256, 256},
      {"cmpxchg", [](ir::Builder& b, Val p) { b.cmpXchg(p, b.i32(0), b.i32(1)); }, 256, 256},
      {"publish", [](ir::Builder& b, Val p) { b.publish(p, b.i32(1), b.i32(1)); }, 0, 512},
      {"wait", [](ir::Builder& b, Val p) { b.wait(p, b.i32(0), b.i64(1000), p, b.i32(1), 1); }, 512, 0},
  };
  for (const Case& c : cases) {
    for (const bool lds : {false, true}) {
      if (lds && std::string(c.what) == "wait") continue;
      INFO(c.what << (lds ? " on LDS" : " on global memory"));
      Kit k(1, 64, 512);
      auto& b = k.b;
      Val g = k.gptr(0);
      b.stage(1, [&] {
        Val base = lds ? b.intToPtr(b.i32(0), ir::AddrSpace::Lds) : g;
        Val off = b.lane() * 8;
        c.op(b, lds ? b.ptrAdd(base, off) : b.ptrAdd(base, b.sext(off, Type::i64())));
      });
      const uint64_t a = k.zeroed(512, "words");
      const runtime::SimStats st = k.run({{a}});
      CHECK(st.globalBytesLoaded == (lds ? 0 : c.loaded));
      CHECK(st.globalBytesStored == (lds ? 0 : c.stored));
      const auto it = st.bytesLoadedByStage.find("second");
      CHECK((it == st.bytesLoadedByStage.end() ? 0 : it->second) == (lds ? 0 : c.loaded));
    }
  }
}

TEST_CASE("sim: every memory op names itself, its stage and the lane of an out-of-bounds access") {
  const std::function<void(ir::Builder&, Val p)> ops[] = {
      [](ir::Builder& b, Val p) { b.load(Type::i32(), p); },
      [](ir::Builder& b, Val p) { b.store(p, b.i32(0)); },
      [](ir::Builder& b, Val p) { b.atomicRmw(ir::RmwOp::Add, p, b.i32(1)); },
      [](ir::Builder& b, Val p) { b.cmpXchg(p, b.i32(0), b.i32(1)); },
      [](ir::Builder& b, Val p) { b.publish(p, b.i32(1), b.i32(1)); },
      [](ir::Builder& b, Val p) { b.wait(p, b.i32(1), b.i64(1000), p, b.i32(1), 1); },
  };
  const char* names[] = {"load", "store", "atomic_rmw", "cmpxchg", "publish", "wait"};
  for (int i = 0; i < 6; ++i) {
    INFO(names[i]);
    Kit k(1, 64);
    auto& b = k.b;
    Val g = k.gptr(0);
    b.stage(1, [&] { ops[i](b, b.ptrAdd(g, b.sext(b.lane() * 8, Type::i64()))); });  // lane 63 is past the end
    const uint64_t a = k.zeroed(504, "words");
    REQUIRE_THROWS_WITH(k.run({{a}}), Catch::Contains(std::string("op #")) && Catch::Contains(names[i]) &&
                                          Catch::Contains("stage 'second'") && Catch::Contains("lane 63") &&
                                          Catch::Contains("out-of-bounds") && Catch::Contains("words"));
  }
}

TEST_CASE("sim: progress reports every progressEvery ops, steps rising, waves counted") {
  Kit k(2, 128);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val v = b.lane();
  for (int i = 0; i < 500; ++i) v = v + 1;
  b.store(b.ptrAdd(out, b.sext((b.block() * 128 + b.tid()) * 4, Type::i64())), v);
  const uint64_t o = k.alloc(1024, "out");
  std::vector<runtime::SimProgress> seen;
  runtime::SimOptions opts;
  opts.progressEvery = 300;
  opts.progress = [&](const runtime::SimProgress& p) { seen.push_back(p); };
  const runtime::SimStats st = k.dev.run(k.plan, {{o}}, opts);
  REQUIRE(seen.size() >= 2);
  CHECK(static_cast<int64_t>(seen.size()) <= st.steps / 300);
  for (size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i].wavesTotal == 4);  // 2 CTAs x 2 waves
    CHECK(seen[i].steps >= 300 * static_cast<int64_t>(i + 1));
    if (i) CHECK(seen[i].steps > seen[i - 1].steps);
  }
}

TEST_CASE("sim: barrier orders an LDS exchange across waves") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    Kit k(2, 256, 1024);
    auto& b = k.b;
    Val out = k.gptr(0);
    Val tid = b.tid();
    Val lds = b.intToPtr(b.i32(0), AddrSpace::Lds);
    b.store(b.ptrAdd(lds, tid * 4), tid * 7 + b.block());
    b.barrier();
    Val other = b.load(Type::i32(), b.ptrAdd(lds, ((tid + 64) % 256) * 4));
    b.store(b.ptrAdd(out, b.sext((b.block() * 256 + tid) * 4, Type::i64())), other);
    const uint64_t o = k.alloc(2 * 256 * 4, "out");
    k.run({{o}}, seed);
    auto r = k.read<int32_t>(o, 512);
    for (int c = 0; c < 2; ++c)
      for (int t = 0; t < 256; ++t) REQUIRE(r[c * 256 + t] == ((t + 64) % 256) * 7 + c);
  }
}

TEST_CASE("sim: a barrier does not wait for waves that exited") {
  Kit k(1, 128);
  auto& b = k.b;
  Val out = k.gptr(0);
  b.if_(b.wave() == 0, [&] {
    b.barrier();
    b.store(out, b.i32(9));
  });
  const uint64_t o = k.alloc(4, "out");
  k.run({{o}});
  CHECK(k.read<int32_t>(o, 1)[0] == 9);
}

TEST_CASE("sim: butterfly sums and maxes across the wave") {
  Kit k(1, 64);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val lane = b.lane();
  Val s = b.butterfly(b.siToFp(lane), {32, 16, 8, 4, 2, 1});
  Val m = b.butterfly(lane * 7 % 64, {32, 16, 8, 4, 2, 1}, OpCode::Max);
  b.store(b.ptrAdd(out, b.sext(lane * 8, Type::i64())), s);
  b.store(b.ptrAdd(out, b.sext(lane * 8 + 4, Type::i64())), m);
  const uint64_t o = k.alloc(64 * 8, "out");
  k.run({{o}});
  auto r = k.read<uint32_t>(o, 128);
  for (int l = 0; l < 64; ++l) {
    CHECK(f32FromBits(r[2 * l]) == 2016.0f);
    CHECK(r[2 * l + 1] == 63);
  }
}

TEST_CASE("sim: cta_uniform passes a value every lane holds and stops on one that differs") {
  // 2 waves; `split` picks who differs: -1 nobody, 64 lane 5 of wave 0, 1 wave 1 (its lanes agree)
  for (int split : {-1, 64, 1}) {
    Kit k(1, 128);
    auto& b = k.b;
    Val out = k.gptr(0);
    Val tid = b.tid();
    Val v = split == 64 ? b.select(tid == 5, b.i32(8), b.i32(7)) : split == 1 ? b.i32(7) + b.wave() : b.i32(7);
    Val n = b.ctaUniform(v);
    b.for_(b.i32(0), n, b.i32(1), [&](Val) { b.barrier(); });
    b.store(b.ptrAdd(out, b.sext(tid * 4, Type::i64())), n);
    const uint64_t o = k.zeroed(128 * 4, "out");
    INFO("split " << split);
    if (split < 0) {
      k.run({{o}});
      for (int32_t x : k.read<int32_t>(o, 128)) CHECK(x == 7);
    } else if (split == 64) {
      REQUIRE_THROWS_WITH(k.run({{o}}), Catch::Contains("cta_uniform: lane 5 holds 0x8"));
    } else {
      // whichever wave runs first sets the value; the other is stopped
      REQUIRE_THROWS_WITH(k.run({{o}}), Catch::Contains("an earlier wave of the CTA held") && Catch::Contains("0x7") &&
                                            Catch::Contains("0x8"));
    }
  }
}

TEST_CASE("sim: ballot, popcount, readfirstlane, shuffle from inactive lanes") {
  Kit k(1, 64);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val lane = b.lane();
  auto at = [&](int col) { return b.ptrAdd(out, b.sext((lane * 4 + col) * 8, Type::i64())); };
  Val bal = b.ballot(lane % 3 == 0);
  b.store(at(0), bal);
  b.store(at(1), b.sext(b.popcount(bal), Type::i64()));
  b.if_(lane >= 5, [&] {
    Val first = b.readFirstLane(lane * 10);
    b.store(at(2), b.sext(first, Type::i64()));
    Val sh = b.shuffle(lane + 100, lane - 3);  // lanes 5..7 read inactive lanes 2..4
    b.store(at(3), b.sext(sh, Type::i64()));
    Val inner = b.ballot(b.i1(true));
    b.if_(lane == 63, [&] { b.store(at(0), inner); });
  });
  const uint64_t o = k.zeroed(64 * 32, "out");  // lanes that store nothing leave 0
  k.run({{o}});
  auto r = k.read<int64_t>(o, 256);
  uint64_t want = 0;
  for (int l = 0; l < 64; l += 3) want |= 1ull << l;
  for (int l = 0; l < 63; ++l) CHECK(static_cast<uint64_t>(r[4 * l]) == want);
  CHECK(static_cast<uint64_t>(r[4 * 63]) == ~0ull << 5);
  CHECK(r[4 * 10 + 1] == 22);
  for (int l = 5; l < 64; ++l) {
    CHECK(r[4 * l + 2] == 50);
    CHECK(r[4 * l + 3] == (l < 8 ? 0 : l - 3 + 100));
  }
  CHECK(r[4 * 4 + 2] == 0);  // inactive lanes wrote nothing
}

TEST_CASE("sim: MFMA 16x16x32 bf16, 16x16x32 fp8 and 16x16x4 f32 match a naive product in the documented layout") {
  // Values are small integers, so every product and sum is exact in f32.
  float A[16][32], B[32][16], C[16][16];
  for (int i = 0; i < 16; ++i)
    for (int kk = 0; kk < 32; ++kk) A[i][kk] = static_cast<float>((i * 3 + kk * 5) % 7 - 3);
  for (int kk = 0; kk < 32; ++kk)
    for (int j = 0; j < 16; ++j) B[kk][j] = static_cast<float>((kk * 2 + j * 7) % 5 - 2);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) C[i][j] = static_cast<float>(i - j);

  // The 16x16x32 shapes (DESIGN.md, ir/Mfma.h): lane l holds A[l % 16][8 (l / 16) + e] and
  // B[8 (l / 16) + e][l % 16], elements of `bytes` bytes each (`enc` gives an element's bits,
  // exact for small ints); D[4 (l / 16) + i][l % 16].
  auto run16x16x32 = [&](ir::MfmaKind kind, Type operand, int bytes, const std::function<uint16_t(float)>& enc) {
    std::vector<uint8_t> a(64 * 8 * bytes), bb(64 * 8 * bytes);
    std::vector<float> acc(64 * 4);
    for (int l = 0; l < 64; ++l) {
      for (int e = 0; e < 8; ++e) {
        const uint16_t x = enc(A[l % 16][8 * (l / 16) + e]), y = enc(B[8 * (l / 16) + e][l % 16]);
        std::memcpy(&a[(l * 8 + e) * bytes], &x, bytes);  // little-endian: the low byte(s)
        std::memcpy(&bb[(l * 8 + e) * bytes], &y, bytes);
      }
      for (int i = 0; i < 4; ++i) acc[l * 4 + i] = C[4 * (l / 16) + i][l % 16];
    }
    Kit k(1, 64);
    auto& b = k.b;
    Val lane = b.lane();
    Val pa = k.gptr(0), pb = k.gptr(1), pc = k.gptr(2), po = k.gptr(3);
    Val offAb = b.sext(lane * (8 * bytes), Type::i64()), off16 = b.sext(lane * 16, Type::i64());
    Type v4 = Type::vec(Type::f32(), 4);
    Val d = b.mfma(kind, b.load(operand, b.ptrAdd(pa, offAb)), b.load(operand, b.ptrAdd(pb, offAb)),
                   b.load(v4, b.ptrAdd(pc, off16)));
    b.store(b.ptrAdd(po, off16), d);
    const uint64_t ga = k.alloc(1024, "a"), gb = k.alloc(1024, "b"), gc = k.alloc(1024, "c"), go = k.alloc(1024, "o");
    k.write(ga, a);
    k.write(gb, bb);
    k.write(gc, acc);
    k.run({{ga, gb, gc, go}});
    auto o = k.read<float>(go, 256);
    for (int l = 0; l < 64; ++l)
      for (int i = 0; i < 4; ++i) {
        const int row = 4 * (l / 16) + i, col = l % 16;
        float want = C[row][col];
        for (int kk = 0; kk < 32; ++kk) want += A[row][kk] * B[kk][col];
        INFO("lane " << l << " i " << i);
        CHECK(o[l * 4 + i] == want);
      }
  };
  SECTION("bf16 16x16x32") {
    run16x16x32(ir::MfmaKind::F32_16x16x32_BF16, Type::vec(Type::bf16(), 8), 2,
                [](float x) { return static_cast<uint16_t>(bitsOf(x) >> 16); });
  }
  SECTION("fp8 16x16x32") {  // 8 e4m3fn bytes a lane (byte e element e) as an i64
    run16x16x32(ir::MfmaKind::F32_16x16x32_FP8, Type::i64(), 1,
                [](float x) { return static_cast<uint16_t>(ir::num::f32ToFp8E4m3(x)); });
  }
  SECTION("f32 16x16x4") {
    // lane l holds A[l % 16][l / 16] and B[l / 16][l % 16].
    std::vector<float> a(64), bb(64), acc(64 * 4);
    for (int l = 0; l < 64; ++l) {
      a[l] = A[l % 16][l / 16];
      bb[l] = B[l / 16][l % 16];
      for (int i = 0; i < 4; ++i) acc[l * 4 + i] = C[4 * (l / 16) + i][l % 16];
    }
    Kit k(1, 64);
    auto& b = k.b;
    Val lane = b.lane();
    Val pa = k.gptr(0), pb = k.gptr(1), pc = k.gptr(2), po = k.gptr(3);
    Type v4 = Type::vec(Type::f32(), 4);
    Val d = b.mfma(ir::MfmaKind::F32_16x16x4_F32, b.load(Type::f32(), b.ptrAdd(pa, b.sext(lane * 4, Type::i64()))),
                   b.load(Type::f32(), b.ptrAdd(pb, b.sext(lane * 4, Type::i64()))),
                   b.load(v4, b.ptrAdd(pc, b.sext(lane * 16, Type::i64()))));
    b.store(b.ptrAdd(po, b.sext(lane * 16, Type::i64())), d);
    const uint64_t ga = k.alloc(256, "a"), gb = k.alloc(256, "b"), gc = k.alloc(1024, "c"), go = k.alloc(1024, "o");
    k.write(ga, a);
    k.write(gb, bb);
    k.write(gc, acc);
    k.run({{ga, gb, gc, go}});
    auto o = k.read<float>(go, 256);
    for (int l = 0; l < 64; ++l)
      for (int i = 0; i < 4; ++i) {
        const int row = 4 * (l / 16) + i, col = l % 16;
        float want = C[row][col];
        for (int kk = 0; kk < 4; ++kk) want += A[row][kk] * B[kk][col];
        CHECK(o[l * 4 + i] == want);
      }
  }
}

// ---------------------------------------------------------------------------------------------
// Sync, scheduling, errors

namespace {

/// Pairs at `pairs`: CTA c (thread 0) waits for pair c - 1, then publishes pair c := value + c.
void buildChain(Kit& k) {
  auto& b = k.b;
  Val pairs = k.gptr(0), out = k.gptr(1), err = k.gptr(2);
  Val tag = b.arg(3, Type::i32(), "tag");
  Val c = b.block();
  b.stage(0, [&] {
    b.if_(b.tid() == 0, [&] {
      ir::Var v = b.var(b.i32(0), "v");
      b.if_(c > 0, [&] {
        b.set(v, b.wait(b.ptrAdd(pairs, b.sext((c - 1) * 8, Type::i64())), tag, b.i64(1'000'000), err, c, 1));
      });
      b.publish(b.ptrAdd(pairs, b.sext(c * 8, Type::i64())), b.get(v) + c, tag);
      b.store(b.ptrAdd(out, b.sext(c * 4, Type::i64())), b.get(v));
    });
  });
}

}  // namespace

// The block-scaled MFMA (ir/Mfma.h, measured on gfx950-run): lane l's byte e of A is
// A[l % 16][64 (e / 16) + 16 (l / 16) + e % 16], its nibble n of B is B[32 (l / 16) + n][l % 16], the
// E8M0 scale of row i (column j) in K block t is lane 16 t + i's (16 t + j's) byte 0.
TEST_CASE("sim: the block-scaled MFMA 16x16x128 E4M3 x E2M1 in its layout, scales and block order") {
  auto e2m1 = [](float x) {
    const float v[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    for (uint8_t c = 0; c < 8; ++c)
      if (v[c] == std::fabs(x)) return static_cast<uint8_t>(c | (x < 0 ? 8 : 0));
    FAIL("not an e2m1 value: " << x);
    return uint8_t{0};
  };
  // A, B, the scale exponents and C; the result of the lanes' layout through one MFMA.
  auto run = [&](const std::vector<std::vector<float>>& A, const std::vector<std::vector<float>>& B,
                 const int (&ea)[16][4], const int (&eb)[4][16], const float (&C)[16][16]) {
    std::vector<uint8_t> a(64 * 32), bb(64 * 16), sa(64 * 4), sb(64 * 4);
    std::vector<float> acc(64 * 4);
    for (int l = 0; l < 64; ++l) {
      for (int e = 0; e < 32; ++e) {
        a[32 * l + e] = static_cast<uint8_t>(ir::num::f32ToFp8E4m3(A[l % 16][64 * (e / 16) + 16 * (l / 16) + e % 16]));
        bb[16 * l + e / 2] |= static_cast<uint8_t>(e2m1(B[32 * (l / 16) + e][l % 16]) << (4 * (e % 2)));
      }
      sa[4 * l] = static_cast<uint8_t>(127 + ea[l % 16][l / 16]);
      sb[4 * l] = static_cast<uint8_t>(127 + eb[l / 16][l % 16]);
      sa[4 * l + 1] = 0xab;  // only byte 0 is the scale
      for (int i = 0; i < 4; ++i) acc[l * 4 + i] = C[4 * (l / 16) + i][l % 16];
    }
    Kit k(1, 64);
    auto& b = k.b;
    Val lane = b.lane();
    Val off32 = b.sext(lane * 32, Type::i64()), off16 = b.sext(lane * 16, Type::i64()), off4 = b.sext(lane * 4, Type::i64());
    Val aLo = b.ptrAdd(k.gptr(0), off32);
    Val d = b.mfmaScale(b.concat(b.load(Type::vec(Type::i32(), 4), aLo), b.load(Type::vec(Type::i32(), 4), b.ptrAdd(aLo, int64_t{16}))),
                        b.load(Type::vec(Type::i32(), 4), b.ptrAdd(k.gptr(1), off16)),
                        b.load(Type::vec(Type::f32(), 4), b.ptrAdd(k.gptr(2), off16)),
                        b.load(Type::i32(), b.ptrAdd(k.gptr(3), off4)), b.load(Type::i32(), b.ptrAdd(k.gptr(4), off4)));
    b.store(b.ptrAdd(k.gptr(5), off16), d);
    const uint64_t ga = k.alloc(2048, "a"), gb = k.alloc(1024, "b"), gc = k.alloc(1024, "c"), gsa = k.alloc(256, "sa"),
                   gsb = k.alloc(256, "sb"), go = k.alloc(1024, "o");
    k.write(ga, a);
    k.write(gb, bb);
    k.write(gc, acc);
    k.write(gsa, sa);
    k.write(gsb, sb);
    k.run({{ga, gb, gc, gsa, gsb, go}});
    auto o = k.read<float>(go, 256);
    std::vector<std::vector<float>> D(16, std::vector<float>(16));
    for (int l = 0; l < 64; ++l)
      for (int i = 0; i < 4; ++i) D[4 * (l / 16) + i][l % 16] = o[l * 4 + i];
    return D;
  };
  std::vector<std::vector<float>> A(16, std::vector<float>(128)), B(128, std::vector<float>(16));
  int ea[16][4] = {}, eb[4][16] = {};
  float C[16][16] = {};
  SECTION("small integers: the layout and the scale lanes") {
    for (int i = 0; i < 16; ++i)
      for (int k = 0; k < 128; ++k) A[i][k] = static_cast<float>((i * 3 + k * 5) % 7 - 3);
    for (int k = 0; k < 128; ++k)
      for (int j = 0; j < 16; ++j) B[k][j] = static_cast<float>((k * 2 + j * 7) % 5 - 2);
    for (int t = 0; t < 4; ++t)
      for (int x = 0; x < 16; ++x) ea[x][t] = (x + 2 * t) % 5 - 2, eb[t][x] = (3 * x + t) % 4 - 1;
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) C[i][j] = static_cast<float>(i - j);
    const auto D = run(A, B, ea, eb, C);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        double want = C[i][j];  // every term and partial sum is exact
        for (int k = 0; k < 128; ++k) want += A[i][k] * B[k][j] * std::ldexp(1.0, ea[i][k / 32] + eb[k / 32][j]);
        INFO("row " << i << " col " << j);
        CHECK(D[i][j] == static_cast<float>(want));
      }
  }
  SECTION("a block sums on its own, then joins the accumulator in block order") {
    for (int k = 0; k < 128; ++k) B[k][0] = 1;
    A[0][0] = 1, ea[0][0] = 24, A[0][32] = 1, A[0][64] = -1, ea[0][2] = 24;  // 2^24 + 1 - 2^24
    A[1][0] = 1, ea[1][0] = 25, A[1][127] = -1, ea[1][3] = 25;                 // 2^25 + 16 x 1 - 2^25
    for (int k = 32; k < 48; ++k) A[1][k] = 1;
    A[2][5] = 2, ea[2][0] = 127;  // scale code 254 x (code 255 - 127 = 2^128 on a zero block)
    eb[0][0] = 0, ea[3][1] = 128;
    A[3][0] = 1;  // row 3: 1 + a zero block scaled by code 255
    // Column 1: 2^-150 (A 2^-127 x B 2^-23), rounded to f32 (0, a tie to even) before it meets 2^-149.
    B[0][1] = 1, eb[0][1] = -23, A[4][0] = 1, ea[4][0] = -127, C[4][1] = 0x1p-149f;
    // Column 2: 2^128 rounds to Inf before it meets -FLT_MAX; column 3: codes 255 and 0 make 2^1.
    B[0][2] = 1, A[5][0] = 1, ea[5][0] = 128, C[5][2] = -std::numeric_limits<float>::max();
    B[0][3] = 1, eb[0][3] = -127, A[6][0] = 1, ea[6][0] = 128;
    // Column 4, row 7: 25 x 2688, five 2^-10, two x -2688 in one block; the f32 sum in K order loses
    // the small ones to 67200's ulp (the exact sum rounds to 61824.0039).
    for (int k = 0; k < 32; ++k) A[7][k] = k < 25 ? 448 : k < 30 ? 0x1p-9f : -448, B[k][4] = k < 25 || k >= 30 ? 6 : 0.5f;
    // Column 5, row 8: the accumulator 2^24 first, then +1, then -2^24 (last, it would give 1).
    B[0][5] = B[32][5] = 1, A[8][0] = 1, A[8][32] = -1, ea[8][1] = 24, C[8][5] = 0x1p24f;
    // Column 6, row 9: a subnormal result, 2^-137.
    B[0][6] = 1, eb[0][6] = -10, A[9][0] = 1, ea[9][0] = -127;
    const auto D = run(A, B, ea, eb, C);
    CHECK(D[0][0] == 0.0f);   // (2^24 + 1) rounds to 2^24 before the third block
    CHECK(D[1][0] == 16.0f);  // the 16 ones summed in their block, not one by one into 2^25
    CHECK(D[2][0] == std::numeric_limits<float>::infinity());  // 2 x 2^127
    CHECK(D[3][0] == 1.0f);   // 0 x 2^128 is 0, not NaN
    CHECK(D[4][1] == 0x1p-149f);  // not 2^-148: the scaled block is rounded first
    CHECK(D[5][2] == std::numeric_limits<float>::infinity());  // not 2^104
    CHECK(D[6][3] == 2.0f);       // the scales combine as exponents: 2^128 x 2^-127
    CHECK(D[7][4] == 61824.0f);
    CHECK(D[8][5] == 0.0f);
    CHECK(D[9][6] == 0x1p-137f);
  }
}

TEST_CASE("sim: publish/wait chains across CTAs, whatever the interleaving") {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    Kit k(8, 128);
    buildChain(k);
    const uint64_t pairs = k.alloc(64, "pairs"), out = k.alloc(32, "out"), err = k.zeroed(8, "err");
    std::vector<int32_t> stale(16);
    for (int i = 0; i < 8; ++i) {
      stale[2 * i] = 999;
      stale[2 * i + 1] = 4;  // last launch's tag
    }
    k.write(pairs, stale);
    auto st = k.run({{pairs, out, err, 5}}, seed);
    auto r = k.read<int32_t>(out, 8);
    for (int c = 0; c < 8; ++c) REQUIRE(r[c] == c * (c - 1) / 2);
    REQUIRE(k.read<int32_t>(err, 2) == std::vector<int32_t>{0, 0});
    REQUIRE(st.waitTimeouts == 0);
    REQUIRE(st.bytesLoadedByStage.at("first") == 7 * 8);
  }
}

TEST_CASE("sim: publish/wait across ranks through peer pointers") {
  Kit k(2, 64);
  auto& b = k.b;
  Val own = k.gptr(0);
  Val peer = b.arg(1, Type::ptr(AddrSpace::Peer), "peer");
  Val out = k.gptr(2), err = k.gptr(3);
  Val rank = b.arg(4, Type::i32(), "rank");
  b.if_(b.tid() == 0, [&] {
    // CTA c publishes pair c of the other rank; then waits for its own pair c.
    Val c = b.block();
    b.publish(b.ptrAdd(peer, b.sext(c * 8, Type::i64())), rank * 100 + c, b.i32(1));
    Val v = b.wait(b.ptrAdd(own, b.sext(c * 8, Type::i64())), b.i32(1), b.i64(1'000'000), err, b.i32(1), 1);
    b.store(b.ptrAdd(out, b.sext(c * 4, Type::i64())), v);
  });
  std::vector<uint64_t> flags, outs, errs;
  for (int r = 0; r < 2; ++r) {
    flags.push_back(k.zeroed(16, "flags", r));
    outs.push_back(k.alloc(8, "out", r));
    errs.push_back(k.zeroed(8, "err", r));
  }
  k.run({{flags[0], flags[1], outs[0], errs[0], 0}, {flags[1], flags[0], outs[1], errs[1], 1}});
  CHECK(k.read<int32_t>(outs[0], 2) == std::vector<int32_t>{100, 101});
  CHECK(k.read<int32_t>(outs[1], 2) == std::vector<int32_t>{0, 1});
}

TEST_CASE("sim: a wait past its bound sets the error word (first code wins, every lane counts)") {
  Kit k(1, 64);
  auto& b = k.b;
  Val pairs = k.gptr(0), out = k.gptr(1), err = k.gptr(2);
  Val lane = b.lane();
  b.stage(1, [&] {
    b.if_(lane < 2, [&] {
      Val t0 = b.realtime();
      Val v = b.wait(b.ptrAdd(pairs, b.sext(lane * 8, Type::i64())), b.i32(4), b.i64(1000), err, lane + 7, 3);
      Val dt = b.realtime() - t0;
      b.store(b.ptrAdd(out, b.sext(lane * 16, Type::i64())), v);
      b.store(b.ptrAdd(out, b.sext(lane * 16 + 8, Type::i64())), dt);
    });
  });
  const uint64_t gp = k.alloc(16, "pairs"), go = k.alloc(32, "out"), ge = k.zeroed(8, "err");
  k.write(gp, std::vector<int32_t>{42, 3, 43, 3});
  auto st = k.run({{gp, go, ge}});
  CHECK(k.read<int32_t>(ge, 2) == std::vector<int32_t>{7, 2});
  CHECK(st.waitTimeouts == 2);
  CHECK(st.ticks >= 1000);
  auto o = k.read<int64_t>(go, 4);
  CHECK(static_cast<int32_t>(o[0]) == 42);
  CHECK(static_cast<int32_t>(o[2]) == 43);
  CHECK(o[1] >= 1000);
  CHECK(o[1] < 1100);
}

TEST_CASE("sim: sleep blocks for its ticks, realtime counts from clockStart") {
  Kit k(1, 64);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val t0 = b.realtime();
  b.sleep(50);
  Val t1 = b.realtime();
  b.store(out, t0);
  b.store(b.ptrAdd(out, 8), t1 - t0);
  const uint64_t o = k.alloc(16, "out");
  k.run({{o}});
  auto r = k.read<int64_t>(o, 2);
  CHECK(r[0] >= 1'000'000);
  CHECK(r[0] < 1'000'010);
  CHECK(r[1] >= 50);
  CHECK(r[1] < 60);
}

TEST_CASE("sim: deadlock is detected and names the blocked waves") {
  Kit k(1, 128);
  auto& b = k.b;
  Val flag = k.gptr(0), err = k.gptr(1);
  b.stage(1, [&] {
    b.if_(b.wave() == 0, [&] {
      b.barrier();  // wave 1 never gets here
      b.publish(flag, b.i32(1), b.i32(1));
    }, [&] { b.wait(flag, b.i32(1), b.i64(INT64_MAX), err, b.i32(1), 2); });
  });
  const uint64_t f = k.zeroed(8, "flag"), e = k.zeroed(8, "err");
  REQUIRE_THROWS_AS(k.run({{f, e}}), SimError);
  REQUIRE_THROWS_WITH(k.run({{f, e}}), Catch::Contains("deadlock") && Catch::Contains("barrier") &&
                                           Catch::Contains("wait") && Catch::Contains("second") &&
                                           Catch::Contains("wave 1"));
}

TEST_CASE("sim: an out-of-bounds access names the op, the stage and the nearest allocation") {
  SECTION("global") {
    Kit k(1, 64);
    auto& b = k.b;
    Val out = k.gptr(0);
    b.stage(0, [&] { b.store(b.ptrAdd(out, b.sext(b.lane() * 4, Type::i64())), b.load(Type::i32(), b.ptrAdd(out, 260))); });
    const uint64_t o = k.alloc(256, "out_buffer");
    REQUIRE_THROWS_WITH(k.run({{o}}), Catch::Contains("load") && Catch::Contains("first") &&
                                          Catch::Contains("op #") && Catch::Contains("out_buffer") &&
                                          Catch::Contains("test.sim-S1-TP1") && Catch::Contains("lane 0") &&
                                          Catch::Contains("4 bytes past its end"));
  }
  SECTION("the op number is the verifier's 1-based preorder number") {
    Kit k(1, 64);
    auto& b = k.b;
    Val out = k.gptr(0);                                 // #1 arg
    b.stage(1, [&] {                                     // #2 stage
      Val v = b.load(Type::i32(), b.ptrAdd(out, 256));   // #3 const, #4 ptr_add, #5 load
      b.store(out, v);
    });
    const uint64_t o = k.alloc(256, "out");
    REQUIRE_THROWS_WITH(k.run({{o}}), Catch::Contains("op #5 load") && Catch::Contains("stage 'second'") &&
                                          Catch::Contains("0 bytes past its end"));
  }
  SECTION("lds") {
    Kit k(1, 64, 1024);
    auto& b = k.b;
    b.stage(1, [&] {
      Val lds = b.intToPtr(b.i32(0), AddrSpace::Lds);
      b.store(b.ptrAdd(lds, b.lane() * 16 + 16), b.i32(1));  // lane 63 writes [1024, 1028)
    });
    REQUIRE_THROWS_WITH(k.run({{}}), Catch::Contains("store") && Catch::Contains("second") &&
                                         Catch::Contains("LDS") && Catch::Contains("lane 63"));
  }
  SECTION("unaligned atomic") {
    Kit k(1, 64);
    auto& b = k.b;
    Val out = k.gptr(0);
    b.atomicRmw(ir::RmwOp::Add, b.ptrAdd(out, 2), b.i32(1));
    const uint64_t o = k.alloc(256, "out");
    REQUIRE_THROWS_WITH(k.run({{o}}), Catch::Contains("unaligned") && Catch::Contains("atomic_rmw"));
  }
}

TEST_CASE("sim: a pair published twice in one launch is an error naming both publishers") {
  Kit k(2, 64);
  auto& b = k.b;
  Val flag = k.gptr(0);
  b.if_(b.tid() == 0, [&] {
    b.if_(b.block() == 0, [&] { b.stage(0, [&] { b.publish(flag, b.i32(1), b.i32(1)); }); },
          [&] { b.stage(1, [&] { b.publish(flag, b.i32(2), b.i32(1)); }); });
  });
  const uint64_t f = k.zeroed(8, "flags");
  REQUIRE_THROWS_WITH(k.run({{f}}), Catch::Contains("published twice") && Catch::Contains("first") &&
                                        Catch::Contains("second") && Catch::Contains("flags"));
  // One publisher per launch is fine, launch after launch.
  Kit k2(1, 64);
  Val flag2 = k2.gptr(0);
  k2.b.if_(k2.b.tid() == 0, [&] { k2.b.publish(flag2, k2.b.i32(1), k2.b.arg(1, Type::i32(), "tag")); });
  const uint64_t f2 = k2.zeroed(8, "flags");
  k2.run({{f2, 1}});
  k2.run({{f2, 2}});
  CHECK(k2.read<int32_t>(f2, 2) == std::vector<int32_t>{1, 2});
}

TEST_CASE("sim: atomics act per active lane in lane order") {
  Kit k(1, 64);
  auto& b = k.b;
  Val ctr = k.gptr(0), out = k.gptr(1), fsum = k.gptr(2);
  Val lane = b.lane();
  Val old = b.atomicRmw(ir::RmwOp::Add, ctr, b.i32(1));
  b.store(b.ptrAdd(out, b.sext(lane * 4, Type::i64())), old);
  b.atomicRmw(ir::RmwOp::Max, b.ptrAdd(ctr, 4), lane * 3 - 100);
  b.atomicRmw(ir::RmwOp::UMin, b.ptrAdd(ctr, 8), lane + 10);  // from 0xffffffff: unsigned
  Val seen = b.cmpXchg(b.ptrAdd(ctr, 12), lane, lane + 1);   // only lane 0 matches 0, then lane 1 matches 1...
  b.store(b.ptrAdd(out, b.sext(256 + lane * 4, Type::i64())), seen);
  b.atomicRmw(ir::RmwOp::Add, fsum, b.f32(0.25));
  const uint64_t c = k.alloc(16, "ctr"), o = k.alloc(512, "out"), fs = k.zeroed(4, "fsum");
  k.write(c, std::vector<int32_t>{0, INT32_MIN, -1, 0});
  k.run({{c, o, fs}});
  auto r = k.read<int32_t>(o, 128);
  auto cv = k.read<int32_t>(c, 4);
  for (int l = 0; l < 64; ++l) {
    CHECK(r[l] == l);
    CHECK(r[64 + l] == l);
  }
  CHECK(cv[0] == 64);
  CHECK(cv[1] == 63 * 3 - 100);
  CHECK(cv[2] == 10);
  CHECK(cv[3] == 64);
  CHECK(k.read<float>(fs, 1)[0] == 16.0f);
}

namespace {
std::vector<int32_t> ticketOrder(uint64_t seed, monogen::runtime::SimStats* st = nullptr) {
  Kit k(8, 256);
  auto& b = k.b;
  Val ctr = k.gptr(0), out = k.gptr(1);
  b.if_(b.lane() == 0, [&] {
    Val t = b.atomicRmw(ir::RmwOp::Add, ctr, b.i32(1));
    b.store(b.ptrAdd(out, b.sext((b.block() * 4 + b.wave()) * 4, Type::i64())), t);
  });
  const uint64_t c = k.zeroed(4, "ctr"), o = k.alloc(128, "out");
  auto s = k.run({{c, o}}, seed);
  if (st) *st = s;
  return k.read<int32_t>(o, 32);
}
}  // namespace

TEST_CASE("sim: the same seed gives the same run, different seeds different interleavings") {
  monogen::runtime::SimStats s1, s1b;
  const auto a = ticketOrder(1, &s1), a2 = ticketOrder(1, &s1b);
  CHECK(a == a2);
  CHECK(s1.steps == s1b.steps);
  CHECK(s1.ticks == s1b.ticks);
  std::vector<int32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 32; ++i) REQUIRE(sorted[i] == i);
  int differ = 0;
  for (uint64_t s = 2; s <= 5; ++s) differ += ticketOrder(s) != a;
  CHECK(differ == 4);
}

static void fullSizeLaunch(int tp) {
  Kit k(256, 512, 2048);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val tid = b.tid();
  Val lds = b.intToPtr(b.i32(0), AddrSpace::Lds);
  ir::Var x = b.var(tid + b.block(), "x");
  b.stage(0, [&] {
    b.for_(b.i32(0), b.i32(8), b.i32(1), [&](Val i) {
      Val v = b.get(x) * 3 + i;
      v = (v ^ (v >> 3)) & 0xffff;
      b.store(b.ptrAdd(lds, tid * 4), v);
      b.barrier();
      Val nb = b.load(Type::i32(), b.ptrAdd(lds, ((tid + 1) % 512) * 4));
      b.barrier();
      b.set(x, (v + nb) & 0xffff);
    });
  });
  b.stage(1, [&] {
    Val s = b.butterfly(b.get(x), {32, 16, 8, 4, 2, 1});
    b.if_(b.lane() == 0, [&] {
      b.store(b.ptrAdd(out, b.sext((b.block() * 8 + b.wave()) * 4, Type::i64())), s);
    });
  });
  std::vector<uint64_t> outs;
  std::vector<std::vector<uint64_t>> args;
  for (int r = 0; r < tp; ++r) {
    outs.push_back(k.alloc(256 * 8 * 4, "out", r));
    args.push_back({outs.back()});
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  auto st = k.run(args, 7);
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("full-size launch, TP " << tp << ": " << st.steps << " ops, " << st.ticks << " ticks, " << secs << " s wall, " << cpu
                            << " s cpu, frame " << k.dev.lastFrameBytes() << " bytes a wave");
  CHECK(secs < 10.0);
  // Host model of one CTA.
  for (int c : {0, 17, 255}) {
    std::vector<int32_t> xs(512);
    for (int t = 0; t < 512; ++t) xs[t] = t + c;
    for (int i = 0; i < 8; ++i) {
      std::vector<int32_t> v(512);
      for (int t = 0; t < 512; ++t) {
        int32_t a = xs[t] * 3 + i;
        v[t] = (a ^ (a >> 3)) & 0xffff;
      }
      for (int t = 0; t < 512; ++t) xs[t] = (v[t] + v[(t + 1) % 512]) & 0xffff;
    }
    for (int r = 0; r < tp; ++r) {
      auto got = k.read<int32_t>(outs[r], 256 * 8);
      for (int w = 0; w < 8; ++w) {
        int32_t sum = 0;
        for (int l = 0; l < 64; ++l) sum += xs[w * 64 + l];
        REQUIRE(got[c * 8 + w] == sum);
      }
    }
  }
}

TEST_CASE("sim: a full-size launch (4 ranks x 256 CTAs x 512 threads) runs in seconds") { fullSizeLaunch(4); }
TEST_CASE("sim: a full-size launch at TP 8 (16384 waves)", "[.perf]") { fullSizeLaunch(8); }

TEST_CASE("sim: many waves wait on one pair while data stores hit the same buffer, a plain store wakes them") {
  Kit k(256, 64);
  auto& b = k.b;
  Val scratch = k.gptr(0), out = k.gptr(1), err = k.gptr(2);
  Val lane = b.lane();
  Val flag = b.ptrAdd(scratch, 8192);
  b.if_(b.block() == 0,
        [&] {
          b.for_(b.i32(0), b.i32(64), b.i32(1), [&](Val i) {
            b.store(b.ptrAdd(scratch, b.sext((i * 64 + lane) * 2, Type::i64())), b.trunc(i + lane, Type::i16()));
          });
          // {value 77, tag 9} as one plain 8-byte store
          b.if_(lane == 0, [&] { b.store(flag, b.i64((int64_t{9} << 32) | 77)); });
        },
        [&] {
          Val v = b.wait(flag, b.i32(9), b.i64(100'000'000), err, b.i32(1), 1);
          b.store(b.ptrAdd(out, b.sext((b.block() * 64 + lane) * 4, Type::i64())), v);
        });
  const uint64_t s = k.zeroed(8192 + 8, "scratch"), o = k.alloc(256 * 64 * 4, "out"), e = k.zeroed(8, "err");
  const auto t0 = std::chrono::steady_clock::now();
  auto st = k.run({{s, o, e}}, 3);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(secs < 5.0);
  CHECK(st.waitTimeouts == 0);
  auto r = k.read<int32_t>(o, 256 * 64);
  for (int i = 64; i < 256 * 64; ++i) REQUIRE(r[i] == 77);
  CHECK(k.read<int16_t>(s, 64 * 64)[63 * 64 + 5] == 68);
}

TEST_CASE("sim: a runaway loop stops at maxSteps") {
  Kit k(1, 64);
  auto& b = k.b;
  ir::Var x = b.var(b.i32(0), "x");
  b.while_([&] { return b.get(x) >= 0; }, [&] { b.set(x, (b.get(x) + 1) & 0xff); });
  runtime::SimOptions o;
  o.maxSteps = 100'000;
  REQUIRE_THROWS_WITH(k.dev.run(k.plan, {{}}, o), Catch::Contains("maxSteps"));
}

TEST_CASE("sim: a deadlock with many blocked waves is listed abbreviated") {
  Kit k(64, 128);
  auto& b = k.b;
  Val flag = k.gptr(0), err = k.gptr(1);
  b.if_(b.wave() == 0, [&] { b.barrier(); }, [&] { b.wait(flag, b.i32(1), b.i64(INT64_MAX), err, b.i32(1), 2); });
  const uint64_t f = k.zeroed(8, "flag"), e = k.zeroed(8, "err");
  REQUIRE_THROWS_WITH(k.run({{f, e}}), Catch::Contains("128 waves are blocked") && Catch::Contains("and 112 more"));
}

TEST_CASE("sim: a partial last wave has only its threads' lanes, i1 vectors bitcast bit by bit") {
  Kit k(1, 96);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val bal = b.ballot(b.i1(true));
  b.if_(b.lane() == 0, [&] { b.store(b.ptrAdd(out, b.sext(b.wave() * 8, Type::i64())), bal); });
  Val bits = b.bitcast(b.i32(0xA5), Type::vec(Type::i1(), 32));
  Val back = b.bitcast(b.insert(bits, b.i1(true), 1), Type::i32());
  b.if_(b.tid() == 0, [&] { b.store(b.ptrAdd(out, 16), b.sext(back, Type::i64())); });
  const uint64_t o = k.alloc(24, "out");
  k.run({{o}});
  auto r = k.read<uint64_t>(o, 3);
  CHECK(r[0] == ~0ull);
  CHECK(r[1] == 0xffffffffull);
  CHECK(r[2] == 0xA7);
}

TEST_CASE("sim: nested divergent loops and ifs restore the exec mask at every level") {
  Kit k(1, 64);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val lane = b.lane();
  ir::Var cnt = b.var(b.i32(0), "cnt");
  b.if_(lane != 13, [&] {
    b.for_(b.i32(0), lane % 11 + 1, b.i32(1), [&](Val i) {
      b.for_(b.i32(0), i, b.i32(1), [&](Val j) {
        b.if_((i + j) % 3 == 0, [&] { b.set(cnt, b.get(cnt) + 1); },
              [&] { b.if_(lane < 20, [&] { b.set(cnt, b.get(cnt) + 100); }); });
      });
    });
  });
  Val v = b.select(b.splat(lane, 2) == b.splat(b.i32(7), 2), b.splat(b.i32(-1), 2), b.splat(b.get(cnt), 2));
  b.store(b.ptrAdd(out, b.sext(lane * 8, Type::i64())), v);
  const uint64_t o = k.alloc(512, "out");
  k.run({{o}});
  auto r = k.read<int32_t>(o, 128);
  for (int l = 0; l < 64; ++l) {
    int want = 0;
    if (l != 13)
      for (int i = 0; i < l % 11 + 1; ++i)
        for (int j = 0; j < i; ++j) want += (i + j) % 3 == 0 ? 1 : (l < 20 ? 100 : 0);
    INFO("lane " << l);
    CHECK(r[2 * l] == (l == 7 ? -1 : want));
    CHECK(r[2 * l + 1] == (l == 7 ? -1 : want));
  }
}

TEST_CASE("sim: an argument index past what a rank was given is an error") {
  Kit k(1, 64);
  auto& b = k.b;
  b.store(k.gptr(0), b.arg(2, Type::i32(), "n"));
  const uint64_t o = k.alloc(4, "out");
  REQUIRE_THROWS_WITH(k.run({{o, 1, 2}, {o, 1}}), Catch::Contains("argument 2") && Catch::Contains("rank 1"));
}
