// The spec's MFMA tile view (MfmaTile, KernelContext.h) on the Sim device: its lanes' (row,
// column) and K against ir/Mfma.h's declared layout over all 64 lanes, its operand loads against
// a host-side gather, and a whole chained step (load, step, storeAcc) against the declared MFMA
// model chained on the host and against a plain product. Every kind the stages use.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <random>

#include "ir/Error.h"
#include "ir/Mfma.h"
#include "specs/common/MfmaTile.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "test_sim_util.h"

using namespace monogen;
using ir::Type;
using ir::Val;
using specs::MfmaTile;
using simtest::bitsOf;
using simtest::f32FromBits;
using simtest::Kit;

namespace {

struct Kind {
  ir::MfmaKind kind;
  int chain;
  Type operand;  // one MFMA's lane elements
};
// The stages' tiles: A16W4's (up, down) and the router's.
const Kind kKinds[] = {{ir::MfmaKind::F32_16x16x32_BF16, 4, Type::vec(Type::bf16(), 8)},
                       {ir::MfmaKind::F32_16x16x4_F32, 4, Type::f32()}};

/// x with its low 16 bits cleared when `bf16` (a bf16 value, truncated); noinline, as the
/// compiler check below needs a call it cannot fold.
[[gnu::noinline]] float truncatedIf(float x, bool bf16) {
  if (bf16) x = f32FromBits(bitsOf(x) & 0xffff0000u);
  return x;
}

uint16_t bf16Bits(float x) { return static_cast<uint16_t>(bitsOf(x) >> 16); }  // x exact in bf16

/// A K-contiguous 16 x stepK matrix (A, or B stored transposed: Bt[n][k] = B[k][n]) in the
/// operand's element format: value(r, k) as bf16 bits or f32.
struct Matrix {
  int rows = 16, cols = 0;
  bool bf16 = false;
  std::vector<float> v;  // [rows][cols], exact in the element format
  float at(int r, int k) const { return v[static_cast<size_t>(r * cols + k)]; }
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out(v.size() * (bf16 ? 2 : 4));
    for (size_t i = 0; i < v.size(); ++i) {
      if (bf16) {
        const uint16_t h = bf16Bits(v[i]);
        std::memcpy(&out[2 * i], &h, 2);
      } else {
        std::memcpy(&out[4 * i], &v[i], 4);
      }
    }
    return out;
  }
};

Matrix makeMatrix(int cols, bool bf16, bool integers, uint32_t seed) {
  Matrix m;
  m.cols = cols;
  m.bf16 = bf16;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (int i = 0; i < 16 * cols; ++i) {
    float x = integers ? static_cast<float>(static_cast<int>(rng() % 7) - 3) : u(rng);
    m.v.push_back(truncatedIf(x, bf16));
  }
  return m;
}

/// The lane's element pointer of a K-contiguous matrix at `base`: row `row`, K laneK0 + k.
Val elemPtr(ir::Builder& b, Val base, const MfmaTile& t, Val row, int cols, int elemBytes, int k) {
  return b.ptrAdd(base, (row * b.i32(cols) + t.laneK0() + b.i32(k)) * b.i32(elemBytes));
}

}  // namespace

// GCC 12.2 (x86-64, -O1 and up) compiled truncatedIf to a bare `ret`: its split of the `and` into a
// 16-bit strict_low_part move dropped the result. cmake/HostCompilerChecks.cmake detects that and
// turns the split off; this fails if a build lost that.
TEST_CASE("tiles: the host compiler clears a bit-cast float's low 16 bits under a condition") {
  volatile float in = 1.2345f;  // 0x3f9e0419
  volatile bool yes = true, no = false;
  CHECK(bitsOf(truncatedIf(in, yes)) == 0x3f9e0000u);
  CHECK(bitsOf(truncatedIf(in, no)) == 0x3f9e0419u);
}

TEST_CASE("tiles: MfmaTile's lane (row, column) and K are ir/Mfma.h's declared layout on every lane") {
  for (const Kind& kd : kKinds) {
    INFO(ir::mfmaKindName(kd.kind));
    const MfmaTile h = MfmaTile::of(kd.kind, 1);
    // chain 1: the host mirror's K is the declared A column and B row
    for (int l = 0; l < 64; ++l)
      for (int e = 0; e < h.shape.abPerLane; ++e) {
        CHECK(h.kOf(l, 0, e) == ir::mfma::aCol(kd.kind, l, e));
        CHECK(h.kOf(l, 0, e) == ir::mfma::bRow(kd.kind, l, e));
      }
    // The IR: every lane stores aRow, bCol, laneK0 and its accumulator elements' (row, col).
    Kit k(1, 64);
    auto& b = k.b;
    Val lane = b.lane();
    Val out = k.gptr(0);
    MfmaTile t = MfmaTile::at(lane, kd.kind, kd.chain);
    auto put = [&](int slot, Val v) { b.store(b.ptrAdd(out, (lane * b.i32(8) + b.i32(slot)) * b.i32(4)), v); };
    put(0, t.aRow());
    put(1, t.bCol());
    put(2, t.laneK0());
    for (int i = 0; i < 4; ++i) put(3 + i, t.accRow(i) * b.i32(16) + t.accCol());
    const uint64_t go = k.zeroed(64 * 8 * 4, "out");
    k.run({{go}});
    auto o = k.read<int32_t>(go, 64 * 8);
    for (int l = 0; l < 64; ++l) {
      INFO("lane " << l);
      CHECK(o[l * 8 + 0] == ir::mfma::aRow(kd.kind, l, 0));
      CHECK(o[l * 8 + 1] == ir::mfma::bCol(kd.kind, l, 0));
      // the lane's run starts at K chain x (declared K of element 0)
      CHECK(o[l * 8 + 2] == kd.chain * ir::mfma::aCol(kd.kind, l, 0));
      CHECK(o[l * 8 + 2] == t.kOf(l, 0, 0));
      for (int i = 0; i < 4; ++i)
        CHECK(o[l * 8 + 3 + i] == ir::mfma::dRow(l, i) * 16 + ir::mfma::dCol(l, i));
    }
  }
}

TEST_CASE("tiles: MfmaTile refuses an unknown kind and an empty chain") {
  CHECK_THROWS_WITH(MfmaTile::of(ir::MfmaKind::None, 1), Catch::Contains("expected a 16 x 16 MFMA kind"));
  CHECK_THROWS_WITH(MfmaTile::of(ir::MfmaKind::F32_16x16x32_BF16, 0), Catch::Contains("1 or more MFMAs, got 0"));
}

TEST_CASE("tiles: an operand load is the host's gather of the declared layout, zeroed where not live") {
  for (const Kind& kd : kKinds) {
    INFO(ir::mfmaKindName(kd.kind));
    const bool bf16 = kd.operand.elem() == Type::bf16();
    const int eb = bf16 ? 2 : 4;
    const MfmaTile h = MfmaTile::of(kd.kind, kd.chain);
    const int cols = 2 * h.stepK(), stepK0 = h.stepK();  // the matrix's second step
    const Matrix A = makeMatrix(cols, bf16, false, 7);
    Kit k(1, 64);
    auto& b = k.b;
    Val lane = b.lane();
    Val pa = k.gptr(0), po = k.gptr(1), pz = k.gptr(2);
    MfmaTile t = MfmaTile::at(lane, kd.kind, kd.chain);
    auto at = [&](int kk) { return elemPtr(b, pa, t, t.aRow(), cols, eb, stepK0 + kk); };
    std::vector<Val> a = t.load(kd.operand, at);
    std::vector<Val> z = t.load(kd.operand, at, t.group < b.i32(2));  // lane groups 2, 3 get +0
    const int opBytes = kd.operand.bytes();
    for (int d = 0; d < kd.chain; ++d) {
      Val off = (lane * b.i32(kd.chain) + b.i32(d)) * b.i32(opBytes);
      b.store(b.ptrAdd(po, off), a[static_cast<size_t>(d)]);
      b.store(b.ptrAdd(pz, off), z[static_cast<size_t>(d)]);
    }
    const uint64_t ga = k.alloc(16 * cols * eb, "a"), go = k.alloc(64 * kd.chain * opBytes, "o"),
                   gz = k.alloc(64 * kd.chain * opBytes, "z");
    k.write(ga, A.bytes());
    k.run({{ga, go, gz}});
    auto o = k.read<uint8_t>(go, static_cast<size_t>(64 * kd.chain * opBytes));
    auto oz = k.read<uint8_t>(gz, static_cast<size_t>(64 * kd.chain * opBytes));
    auto value = [&](const std::vector<uint8_t>& m, int l, int d, int e) {
      const size_t p = static_cast<size_t>((l * kd.chain + d) * opBytes + e * eb);
      uint32_t u = 0;
      std::memcpy(&u, &m[p], static_cast<size_t>(eb));
      return bf16 ? f32FromBits(u << 16) : f32FromBits(u);
    };
    for (int l = 0; l < 64; ++l)
      for (int d = 0; d < kd.chain; ++d)
        for (int e = 0; e < h.shape.abPerLane; ++e) {
          INFO("lane " << l << " MFMA " << d << " element " << e);
          const float want = A.at(ir::mfma::aRow(kd.kind, l, e), stepK0 + h.kOf(l, d, e));
          CHECK(bitsOf(value(o, l, d, e)) == bitsOf(want));
          CHECK(bitsOf(value(oz, l, d, e)) == (l / 16 < 2 ? bitsOf(want) : 0u));
        }
  }
}

TEST_CASE("tiles: a chained step over loaded tiles is the declared MFMA model chained, and the product") {
  for (const Kind& kd : kKinds) {
    const bool bf16 = kd.operand.elem() == Type::bf16();
    const int eb = bf16 ? 2 : 4;
    const MfmaTile h = MfmaTile::of(kd.kind, kd.chain);
    const int K = h.stepK();
    for (bool integers : {true, false}) {
      INFO(ir::mfmaKindName(kd.kind) << (integers ? " small integers" : " random values"));
      const Matrix A = makeMatrix(K, bf16, integers, 11), Bt = makeMatrix(K, bf16, integers, 12);
      std::vector<float> C(256);
      for (int i = 0; i < 256; ++i) C[static_cast<size_t>(i)] = integers ? static_cast<float>(i % 9 - 4) : 0.25f * (i % 7);
      Kit k(1, 64);
      auto& b = k.b;
      Val lane = b.lane();
      Val pa = k.gptr(0), pb = k.gptr(1), pc = k.gptr(2), po = k.gptr(3);
      MfmaTile t = MfmaTile::at(lane, kd.kind, kd.chain);
      std::vector<Val> a = t.load(kd.operand, [&](int kk) { return elemPtr(b, pa, t, t.aRow(), K, eb, kk); });
      std::vector<Val> bo = t.load(kd.operand, [&](int kk) { return elemPtr(b, pb, t, t.bCol(), K, eb, kk); });
      Val acc = b.splat(b.f32(0.0), 4);
      for (int i = 0; i < 4; ++i)
        acc = b.insert(acc, b.load(Type::f32(), b.ptrAdd(pc, (t.accRow(i) * b.i32(16) + t.accCol()) * b.i32(4))), i);
      acc = t.step(acc, a, bo);
      t.storeAcc(acc, po, [&](int i) { return t.accRow(i) * b.i32(16) + t.accCol(); });
      const uint64_t ga = k.alloc(16 * K * eb, "a"), gb = k.alloc(16 * K * eb, "b"), gc = k.alloc(1024, "c"),
                     go = k.alloc(1024, "o");
      k.write(ga, A.bytes());
      k.write(gb, Bt.bytes());
      k.write(gc, C);
      k.run({{ga, gb, gc, go}});
      auto o = k.read<float>(go, 256);

      // The host: MFMA d = 0 .. chain - 1 of ir/Mfma.h's model, each lane's operands gathered by
      // the declared layout at K kOf(lane, d, e), the accumulator chained.
      const int n = h.shape.abPerLane;
      std::vector<float> ha(64 * static_cast<size_t>(n)), hb(ha.size()), hacc(256);
      for (int l = 0; l < 64; ++l)
        for (int i = 0; i < 4; ++i) hacc[static_cast<size_t>(l * 4 + i)] = C[static_cast<size_t>(ir::mfma::dRow(l, i) * 16 + ir::mfma::dCol(l, i))];
      for (int d = 0; d < kd.chain; ++d) {
        for (int l = 0; l < 64; ++l)
          for (int e = 0; e < n; ++e) {
            ha[static_cast<size_t>(l * n + e)] = A.at(ir::mfma::aRow(kd.kind, l, e), h.kOf(l, d, e));
            hb[static_cast<size_t>(l * n + e)] = Bt.at(ir::mfma::bCol(kd.kind, l, e), h.kOf(l, d, e));
          }
        ir::mfma::run(kd.kind, ha.data(), hb.data(), hacc.data());
      }
      for (int l = 0; l < 64; ++l)
        for (int i = 0; i < 4; ++i) {
          const int r = ir::mfma::dRow(l, i), cc = ir::mfma::dCol(l, i);
          INFO("D[" << r << "][" << cc << "]");
          CHECK(bitsOf(o[static_cast<size_t>(r * 16 + cc)]) == bitsOf(hacc[static_cast<size_t>(l * 4 + i)]));
          if (integers) {  // every product and sum exact: the plain product, in any order
            double want = C[static_cast<size_t>(r * 16 + cc)];
            for (int kk = 0; kk < K; ++kk) want += static_cast<double>(A.at(r, kk)) * Bt.at(cc, kk);
            CHECK(o[static_cast<size_t>(r * 16 + cc)] == static_cast<float>(want));
          }
        }
    }
  }
}
