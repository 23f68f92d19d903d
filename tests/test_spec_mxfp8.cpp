// The MXFP8 quant's native reference (specs/minimax_m3/reference/Mxfp8Reference): its rule at the
// edges, its agreement with the IR's f32 -> e4m3 conversion, and its error on Gaussian inputs; the
// kernel's quant (kernel/Mxfp8) refusing a bad operand.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <algorithm>
#include <vector>

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Numerics.h"
#include "runtime/sim/SimRng.h"
#include "specs/minimax_m3/kernel/Mxfp8.h"
#include "specs/minimax_m3/reference/MoeA8w4Reference.h"
#include "specs/minimax_m3/reference/Mxfp8Reference.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
namespace num = monogen::ir::num;

namespace {

double gaussian(uint64_t& st) {
  const double u1 = (static_cast<double>(runtime::simSplitMix64(st) >> 11) + 1) * 0x1p-53;
  const double u2 = static_cast<double>(runtime::simSplitMix64(st) >> 11) * 0x1p-53;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

}  // namespace

TEST_CASE("mxfp8 reference: the E8M0 scale is ceil_pow2(amax / 448), 0 for amax 0, 255 for Inf", "[mxfp8]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(mxfp8ScaleOf(0.0f) == 0);
  CHECK(mxfp8ScaleOf(inf) == 255);
  CHECK(mxfp8ScaleOf(448.0f) == 127);
  CHECK(mxfp8ScaleOf(std::nextafter(448.0f, inf)) == 128);
  CHECK(mxfp8ScaleOf(224.0f) == 126);
  CHECK(mxfp8ScaleOf(std::nextafter(224.0f, inf)) == 127);
  CHECK(mxfp8ScaleOf(1.0f) == 127 - 8);  // 1 / 448 in (2^-9, 2^-8]
  CHECK(mxfp8ScaleOf(std::numeric_limits<float>::max()) == 247);
  CHECK(mxfp8ScaleOf(std::numeric_limits<float>::denorm_min()) == 1);  // never below 2^-126 when amax > 0
  CHECK(mxfp8ScaleOf(std::ldexp(448.0f, -126)) == 1);
  CHECK(mxfp8ScaleOf(std::nextafter(std::ldexp(448.0f, -126), inf)) == 2);
  for (int k = -126; k <= 119; ++k) {
    const float a = std::ldexp(448.0f, k);
    CHECK(mxfp8ScaleOf(a) == 127 + k);
    CHECK(mxfp8ScaleOf(std::nextafter(a, inf)) == 128 + k);
  }
}

TEST_CASE("mxfp8 reference: e4m3 rounding agrees with the IR's f32 -> e4m3 on every code, tie and random value",
          "[mxfp8]") {
  std::vector<float> xs;
  for (uint32_t c = 0; c < 256; ++c)
    if ((c & 0x7f) != 0x7f) xs.push_back(num::fp8E4m3ToF32(c));
  for (uint32_t c = 0; c < 0x7e; ++c) {
    const float mid = (num::fp8E4m3ToF32(c) + num::fp8E4m3ToF32(c + 1)) / 2;
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) xs.insert(xs.end(), {f, -f});
  }
  for (float f : {448.0f, 464.0f, std::nextafter(464.0f, 0.0f), 480.0f, 1e30f, std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::denorm_min(), 0x1p-10f, std::nextafter(0x1p-10f, 0.0f)})
    xs.insert(xs.end(), {f, -f});
  uint64_t st = 7;
  for (int i = 0; i < 20000; ++i) xs.push_back(std::ldexp(static_cast<float>(gaussian(st)), static_cast<int>(i % 24) - 12));
  int bad = 0;
  for (float f : xs) bad += e4m3RoundNearestEven(f) != num::f32ToFp8E4m3(f);
  CHECK(bad == 0);
  CHECK(e4m3RoundNearestEven(std::numeric_limits<double>::quiet_NaN()) == 0x7f);
  CHECK(e4m3RoundNearestEven(444.0) == 0x7e);   // the tie 440 | 448 goes to 448 (even)
  CHECK(e4m3RoundNearestEven(0x1p-10) == 0x00);  // the tie 0 | 2^-9 goes to 0
  CHECK(e4m3RoundNearestEven(-0.0) == 0x80);
}

TEST_CASE("mxfp8 reference: a block's edges (amax 0, Inf, NaN elements, every code at every scale)", "[mxfp8]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = j % 2 ? -0.0f : 0.0f;
  x[3] = nan;
  Mxfp8Block b = mxfp8QuantizeBlock(x);
  CHECK(b.scale == 0);
  CHECK(b.codes[0] == 0x00);
  CHECK(b.codes[1] == 0x80);
  CHECK(b.codes[3] == 0x7f);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j) - 10.0f;
  x[5] = -inf;
  b = mxfp8QuantizeBlock(x);
  CHECK(b.scale == 255);
  CHECK(b.codes[5] == 0x7f);
  CHECK(b.codes[0] == 0x80);  // -10 * 0 = -0
  CHECK(std::isnan(mxfp8Dequant(b.codes[0], b.scale)));
  // every non-NaN code times 2^k, with amax 448 2^k, comes back as itself
  for (int k = -126; k <= 119; k += 7)
    for (int base = 0; base < 254; base += 31) {
      uint8_t want[32];
      for (int j = 0; j < 32; ++j) {
        const int q = (base + j) % 254;
        want[j] = static_cast<uint8_t>(j == 0 ? 0x7e : q < 127 ? q : 0x80 + q - 127);
        x[j] = static_cast<float>(std::ldexp(static_cast<double>(num::fp8E4m3ToF32(want[j])), k));
      }
      b = mxfp8QuantizeBlock(x);
      REQUIRE(b.scale == 127 + k);
      for (int j = 0; j < 32; ++j)
        if (std::ldexp(std::fabs(num::fp8E4m3ToF32(want[j])), k) >= 0x1p-149 || want[j] % 128 == 0)
          CHECK(b.codes[j] == want[j]);
    }
}

TEST_CASE("mxfp8 reference: its error on bf16 Gaussian inputs", "[mxfp8]") {
  // x ~ N(0, 1) rounded to bf16, 4096 blocks of 32: the dequantized value against x, in double.
  uint64_t st = 1234;
  const int n = 32 * 4096;
  std::vector<float> x(n);
  double sx2 = 0, se2 = 0, maxRel = 0, maxAmaxRel = 0, sbf = 0;
  for (float& v : x) {
    const double g = gaussian(st);
    v = num::roundBf16(static_cast<float>(g));
    sbf += (v - g) * (v - g);
  }
  std::vector<uint8_t> codes(n), scales(n / 32);
  mxfp8Quantize(x.data(), n, codes.data(), scales.data());
  for (int i = 0; i < n; ++i) {
    const double d = mxfp8Dequant(codes[i], scales[i / 32]), e = d - x[i];
    sx2 += static_cast<double>(x[i]) * x[i];
    se2 += e * e;
    if (std::fabs(x[i]) >= std::ldexp(1.0, scales[i / 32] - 127 - 6)) maxRel = std::max(maxRel, std::fabs(e / x[i]));
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[i / 32 * 32 + j]));
    maxAmaxRel = std::max(maxAmaxRel, std::fabs(e) / amax);
  }
  const double rms = std::sqrt(se2 / sx2), bfRms = std::sqrt(sbf / sx2);
  fmt::print("mxfp8 on bf16 N(0,1), {} values: relative rms error {:.5f} (bf16 of N(0,1) itself: {:.5f}); "
             "max relative error of an e4m3 normal {:.5f}; max |error| / block amax {:.5f}\n",
             n, rms, bfRms, maxRel, maxAmaxRel);
  CHECK(maxRel <= 1.0 / 16);        // e4m3's unit roundoff 2^-4 (3 mantissa bits)
  CHECK(maxAmaxRel <= 1.0 / 14);  // half of the top binade's step 32, 16 scale, with amax > 224 scale
  CHECK(rms < 0.04);
}

namespace {

/// Random MXFP4 rows: every e2m1 code, scales 2^-6 .. 2^0.
struct Fp4Rows {
  std::vector<uint8_t> codes, scales;
  Mxfp4Rows view;
  Fp4Rows(int rows, int cols, uint64_t& st) : codes(static_cast<size_t>(rows) * cols / 2), scales(static_cast<size_t>(rows) * cols / 32) {
    for (uint8_t& c : codes) c = static_cast<uint8_t>(runtime::simSplitMix64(st));
    for (uint8_t& c : scales) c = static_cast<uint8_t>(121 + runtime::simSplitMix64(st) % 7);
    view = {rows, cols, codes.data(), scales.data()};
  }
  double at(int r, int c) const {
    const int code = (codes[static_cast<size_t>(r) * (view.cols / 2) + c / 2] >> (4 * (c % 2))) & 0xf;
    return num::fp4E2m1ToF32(static_cast<uint32_t>(code)) * std::ldexp(1.0, scales[static_cast<size_t>(r) * (view.cols / 32) + c / 32] - 127);
  }
};

double swiglu64(double gate, double up, double limit, double alpha) {
  const double g = std::min(gate, limit), u = std::max(std::min(up, limit), -limit);
  return g / (1 + std::exp(-alpha * g)) * (u + 1);
}

}  // namespace

TEST_CASE("moeReferenceA8w4: one expert against float64, within the MXFP8 quant's bound", "[mxfp8]") {
  // xn ~ N(0, 1) bf16, 5 rows; hidden 512, I 256; limit 7, alpha 1.702 (the model's).
  const int rows = 5, hidden = 512, inter = 256;
  const float limit = 7.0f, alpha = 1.702f;
  uint64_t st = 99;
  std::vector<uint16_t> xn(static_cast<size_t>(rows) * hidden);
  for (uint16_t& v : xn) v = num::f32ToBf16(static_cast<float>(gaussian(st)));
  const Fp4Rows w13(2 * inter, hidden, st), w2(hidden, inter, st);
  const float weight[rows] = {0.25f, 0.5f, 1.0f, 0.125f, 0.75f};
  const A8w4Expert r = moeReferenceA8w4(xn.data(), weight, rows, w13.view, w2.view, limit, alpha);

  // gate / up: |ref - exact dot| <= sum |w| (the element's quant error bound) + f32 sums' bound
  int outside = 0, outsideQ = 0;  // beyond the quant's bound; beyond f32 sums' of the quantized xn
  double e2 = 0, n2 = 0;
  std::vector<double> mid64(static_cast<size_t>(rows) * inter);
  for (int t = 0; t < rows; ++t) {
    const uint16_t* x = xn.data() + static_cast<size_t>(t) * hidden;
    std::vector<double> qerr(hidden);
    for (int b = 0; b < hidden / 32; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(num::bf16ToF32(x[32 * b + j])));
      const double scale = std::ldexp(1.0, mxfp8ScaleOf(amax) - 127);
      for (int j = 0; j < 32; ++j) qerr[32 * b + j] = std::max(0x1p-4 * std::fabs(num::bf16ToF32(x[32 * b + j])), 0x1p-10 * scale);
    }
    std::vector<float> xf(hidden);
    std::vector<uint8_t> xc(hidden), xs(hidden / 32);
    for (int k = 0; k < hidden; ++k) xf[k] = num::bf16ToF32(x[k]);
    mxfp8Quantize(xf.data(), hidden, xc.data(), xs.data());
    double gu[2];
    for (int n = 0; n < inter; ++n) {
      for (int h = 0; h < 2; ++h) {
        double dot = 0, bound = 0, mag = 0, dotq = 0, magq = 0;
        for (int k = 0; k < hidden; ++k) {
          const double w = w13.at(h * inter + n, k), xv = num::bf16ToF32(x[k]), xq = mxfp8Dequant(xc[k], xs[k / 32]);
          dot += w * xv;
          dotq += w * xq;
          magq += std::fabs(w * xq);
          bound += std::fabs(w) * qerr[k];
          mag += std::fabs(w) * (std::fabs(xv) + qerr[k]);
        }
        bound += (hidden + hidden / 32 + 2) * 0x1p-24 * mag;
        const float got = h ? r.up[static_cast<size_t>(t) * inter + n] : r.gate[static_cast<size_t>(t) * inter + n];
        outside += std::fabs(got - dot) > bound;
        outsideQ += std::fabs(got - dotq) > (hidden + hidden / 32 + 2) * 0x1p-24 * magq;
        gu[h] = dot;
      }
      mid64[static_cast<size_t>(t) * inter + n] = swiglu64(gu[0], gu[1], limit, alpha);
    }
    for (int h = 0; h < hidden; ++h) {
      double dot = 0;
      for (int n = 0; n < inter; ++n) dot += w2.at(h, n) * mid64[static_cast<size_t>(t) * inter + n];
      const double want = dot * weight[t], got = r.out[static_cast<size_t>(t) * hidden + h];
      e2 += (got - want) * (got - want);
      n2 += want * want;
    }
  }
  double me2 = 0, mn2 = 0;
  for (size_t i = 0; i < mid64.size(); ++i) {
    me2 += (num::bf16ToF32(r.mid[i]) - mid64[i]) * (num::bf16ToF32(r.mid[i]) - mid64[i]);
    mn2 += mid64[i] * mid64[i];
  }
  const double outRel = std::sqrt(e2 / n2), midRel = std::sqrt(me2 / mn2);
  fmt::print("moeReferenceA8w4 vs float64 (5 rows, hidden 512, I 256): gate/up outside the quant's bound {}, "
             "outside f32 sums' bound from the quantized xn {}, of {}; relative rms error mid {:.4f}, out {:.4f}\n",
             outside, outsideQ, 2 * rows * inter, midRel, outRel);
  CHECK(outside == 0);
  CHECK(outsideQ == 0);
  CHECK(midRel < 0.1);  // stated tolerance: the quant's 0.027 a value, through two dots and SwiGLU
  CHECK(outRel < 0.1);
}

TEST_CASE("moeReferenceA8w4 and a8w4Gemm: a bad shape is an InputError naming what was given", "[mxfp8]") {
  uint64_t st = 5;
  const Fp4Rows w13(2 * 64, 64, st), w2(64, 64, st), w2Narrow(64, 32, st);
  std::vector<uint16_t> xn(17 * 64);
  std::vector<float> x(17 * 64), weight(17, 1.0f);
  const auto inputError = [](const std::function<void()>& f, const std::string& says) {
    try {
      f();
      FAIL("no error: expected " << says);
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains(says));
    }
  };
  inputError([&] { moeReferenceA8w4(xn.data(), weight.data(), 17, w13.view, w2.view, 7.0f, 1.702f); },
             "input error at moeReferenceA8w4: 17 rows, w13 [128][64], w2 [64][64]: expected 0..16 rows");
  inputError([&] { moeReferenceA8w4(xn.data(), weight.data(), 4, w13.view, w2Narrow.view, 7.0f, 1.702f); },
             "input error at moeReferenceA8w4: 4 rows, w13 [128][64], w2 [64][32]: expected");
  inputError([&] { a8w4Gemm(x.data(), 17, w13.view); },
             "input error at a8w4Gemm: 17 rows of x times a weight of K 64: expected 0..16 rows");
}

TEST_CASE("mxfp8QuantizeA: a lane given other than 32 values is an InputError naming the count", "[mxfp8]") {
  ir::Function f;
  ir::Builder b(f);
  const std::vector<ir::Val> xs(31, b.f32(1.0));
  try {
    mxfp8QuantizeA(b, xs);
    FAIL("no error: expected an InputError for 31 values");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("input error at mxfp8QuantizeA: 31 values: expected 32"));
  }
}
