#include "specs/minimax_m3/reference/MoeA8w4Reference.h"

#include <fmt/format.h>

#include "ir/Error.h"
#include "ir/Mfma.h"
#include "ir/Numerics.h"
#include "specs/minimax_m3/reference/MoeReference.h"
#include "specs/minimax_m3/reference/Mxfp8Reference.h"

namespace monogen::specs::minimax_m3 {

namespace {

namespace mf = ir::mfma;

/// MXFP8 rows: codes [16][k], scales [16][k / 32] (k % 128 == 0); rows past `rows` and K past the
/// quantized width are zero under code 0.
struct Mxfp8Rows {
  int k = 0;
  std::vector<uint8_t> codes, scales;
};

Mxfp8Rows quantizeRows(const float* x, int rows, int width) {
  const int k = (width + 127) / 128 * 128;
  Mxfp8Rows q{k, std::vector<uint8_t>(16 * static_cast<size_t>(k), 0), std::vector<uint8_t>(16 * static_cast<size_t>(k / 32), 0)};
  for (int r = 0; r < rows; ++r)
    mxfp8Quantize(x + static_cast<size_t>(r) * width, static_cast<size_t>(width), q.codes.data() + static_cast<size_t>(r) * k,
                  q.scales.data() + static_cast<size_t>(r) * (k / 32));
  return q;
}

/// d[16 tokens][16 weight rows from col0] = the chain of scaled MFMAs over K steps ascending.
void scaledTile(const Mxfp8Rows& a, const Mxfp4Rows& w, int col0, float d[16][16]) {
  float acc[64][4] = {};
  for (int s = 0; s < a.k / 128; ++s) {
    uint8_t ab[64][32], bb[64][16] = {}, sa[64], sb[64];
    for (int l = 0; l < 64; ++l) {
      const int i = l % 16, j = col0 + l % 16;
      for (int e = 0; e < 32; ++e) ab[l][e] = a.codes[static_cast<size_t>(i) * a.k + 128 * s + mf::scaledAK(l, e)];
      for (int n = 0; n < 32; ++n) {
        const int k = 128 * s + mf::scaledBK(l, n);
        const uint8_t c = j < w.rows && k < w.cols ? (w.codes[static_cast<size_t>(j) * (w.cols / 2) + k / 2] >> (4 * (k % 2))) & 0xf : 0;
        bb[l][n / 2] = static_cast<uint8_t>(bb[l][n / 2] | c << (4 * (n % 2)));
      }
      const int t = l / 16;  // lane l carries the scales of block t of row / column l % 16
      sa[l] = a.scales[static_cast<size_t>(i) * (a.k / 32) + 4 * s + t];
      sb[l] = j < w.rows && 128 * s + 32 * t < w.cols ? w.scales[static_cast<size_t>(j) * (w.cols / 32) + 4 * s + t] : 127;
    }
    mf::runScaled(&ab[0][0], &bb[0][0], sa, sb, &acc[0][0]);
  }
  for (int l = 0; l < 64; ++l)
    for (int r = 0; r < 4; ++r) d[mf::dRow(l, r)][mf::dCol(l, r)] = acc[l][r];
}

}  // namespace

std::vector<float> a8w4Gemm(const float* x, int rows, const Mxfp4Rows& w) {
  if (rows < 0 || rows > 16 || w.cols % 32)
    throw InputError("a8w4Gemm", fmt::format("{} rows of x times a weight of K {}: expected 0..16 rows and K % 32 == 0",
                                             rows, w.cols));
  const Mxfp8Rows a = quantizeRows(x, rows, w.cols);
  std::vector<float> out(static_cast<size_t>(rows) * w.rows);
  for (int c0 = 0; c0 < w.rows; c0 += 16) {
    float d[16][16];
    scaledTile(a, w, c0, d);
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < 16 && c0 + j < w.rows; ++j) out[static_cast<size_t>(r) * w.rows + c0 + j] = d[r][j];
  }
  return out;
}

A8w4Expert moeReferenceA8w4(const uint16_t* xn, const float* weight, int rows, const Mxfp4Rows& w13,
                            const Mxfp4Rows& w2, float limit, float alpha, RefNumerics numerics) {
  const int hidden = w13.cols, inter = w13.rows / 2;
  if (rows < 0 || rows > 16 || hidden % 32 || inter % 32 || w13.rows != 2 * inter || w2.rows != hidden ||
      w2.cols != inter)
    throw InputError("moeReferenceA8w4",
                     fmt::format("{} rows, w13 [{}][{}], w2 [{}][{}]: expected 0..16 rows, w13 [2 I][hidden], w2 "
                                 "[hidden][I], I and hidden % 32 == 0",
                                 rows, w13.rows, w13.cols, w2.rows, w2.cols));
  std::vector<float> x(static_cast<size_t>(rows) * hidden);
  for (size_t i = 0; i < x.size(); ++i) x[i] = ir::num::bf16ToF32(xn[i]);
  const std::vector<float> gu = a8w4Gemm(x.data(), rows, w13);
  A8w4Expert r;
  r.gate.resize(static_cast<size_t>(rows) * inter);
  r.up.resize(r.gate.size());
  r.mid.resize(r.gate.size());
  std::vector<float> mid(r.gate.size());
  for (int t = 0; t < rows; ++t)
    for (int n = 0; n < inter; ++n) {
      const size_t o = static_cast<size_t>(t) * inter + n;
      r.gate[o] = gu[static_cast<size_t>(t) * 2 * inter + n];
      r.up[o] = gu[static_cast<size_t>(t) * 2 * inter + inter + n];
      r.mid[o] = ir::num::f32ToBf16(swigluOai(r.gate[o], r.up[o], limit, alpha, numerics));
      mid[o] = ir::num::bf16ToF32(r.mid[o]);
    }
  r.down = a8w4Gemm(mid.data(), rows, w2);
  r.out.resize(r.down.size());
  for (int t = 0; t < rows; ++t)
    for (int h = 0; h < hidden; ++h) r.out[static_cast<size_t>(t) * hidden + h] = r.down[static_cast<size_t>(t) * hidden + h] * weight[t];
  return r;
}

}  // namespace monogen::specs::minimax_m3
