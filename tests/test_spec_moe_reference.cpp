// The MoE reference (specs/minimax_m3/reference/MoeReference) against the float64 model, the routing's
// corner cases, the TP invariants, the AITER (16,16) shuffle and the weight contract check.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/Error.h"
#include "ir/Mfma.h"
#include "ir/Numerics.h"
#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/MoeA8w4Reference.h"
#include "specs/minimax_m3/reference/MoeFloat64.h"
#include "specs/minimax_m3/reference/MoeReference.h"
#include "specs/minimax_m3/kernel/MoeTiling.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::DType;
using runtime::HostTensor;
using runtime::TensorMap;
namespace num = monogen::ir::num;

namespace {

// A platform-independent RNG: splitmix64, and only exact f32 arithmetic on its bits.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1), exact
  // Irwin-Hall(4), scaled to unit variance: about normal, exact on every host.
  float normal() { return ((uniform() + uniform()) + (uniform() + uniform()) - 2.0f) * 1.7320508f; }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
};

// Logical (TP-independent) MXFP4 weights of every expert: random e2m1 codes, e8m0 scales
// 2^-7..2^-5 (w13) and 2^-8..2^-6 (w2), so gate / up / down values are O(1).
TensorMap logicalWeights(const ModelConfig& cfg, uint64_t seed) {
  Rng rng(seed);
  const int64_t e1 = cfg.expertsWithShared(), h = cfg.hidden, I = cfg.intermediate;
  TensorMap m;
  m["w13"] = HostTensor::zeros(DType::U8, {e1, 2 * I, h / 2});
  m["s13"] = HostTensor::zeros(DType::U8, {e1, 2 * I, h / 32});
  m["w2"] = HostTensor::zeros(DType::U8, {e1, h, I / 2});
  m["s2"] = HostTensor::zeros(DType::U8, {e1, h, I / 32});
  for (auto& b : m["w13"].data) b = static_cast<uint8_t>(rng.next());
  for (auto& b : m["s13"].data) b = static_cast<uint8_t>(120 + rng.below(3));
  for (auto& b : m["w2"].data) b = static_cast<uint8_t>(rng.next());
  for (auto& b : m["s2"].data) b = static_cast<uint8_t>(119 + rng.below(3));
  return m;
}

// The f32 sums of squares of the reduce's tasks: task p sums columns 32 p .. 32 p + 31, in order.
void fillSsq(TensorMap& in, const ModelConfig& cfg, int S) {
  const MoeTiling T = MoeTiling::derive(cfg, 1);
  const int H = cfg.hidden, P = T.seamTasks, per = H / P;
  HostTensor ssq = HostTensor::zeros(DType::F32, {S, P});
  for (int t = 0; t < S; ++t)
    for (int p = 0; p < P; ++p) {
      float s = 0.0f;
      for (int c = p * per; c < (p + 1) * per; ++c) {
        const float v = in.at("sres").as<float>()[int64_t(t) * H + c];
        s = s + v * v;
      }
      ssq.as<float>()[t * P + p] = s;
    }
  in["ssq"] = std::move(ssq);
}

// Activations, router, bias, norm weight, and every rank's contract tensors.
TensorMap makeInputs(const ModelConfig& cfg, int S, int TP, const TensorMap& logical, uint64_t seed) {
  Rng rng(seed);
  const int H = cfg.hidden, E = cfg.experts;
  TensorMap in;
  in["sres"] = HostTensor::zeros(DType::F32, {S, H});
  for (int64_t i = 0; i < int64_t(S) * H; ++i) in["sres"].as<float>()[i] = rng.normal();
  in["norm_w"] = HostTensor::zeros(DType::BF16, {H});
  for (int c = 0; c < H; ++c) in["norm_w"].as<uint16_t>()[c] = num::f32ToBf16(rng.normal() * 0.1f);
  in["router_w"] = HostTensor::zeros(DType::F32, {E, H});
  for (int64_t i = 0; i < int64_t(E) * H; ++i) in["router_w"].as<float>()[i] = rng.normal() * 0.025f;
  in["bias"] = HostTensor::zeros(DType::F32, {E});
  for (int e = 0; e < E; ++e) in["bias"].as<float>()[e] = rng.normal() * 0.05f;
  in["slots"] = HostTensor::zeros(DType::I64, {S});
  for (int t = 0; t < S; ++t) in["slots"].as<int64_t>()[t] = 100 + t;
  for (int r = 0; r < TP; ++r)
    for (auto& [name, t] : rankExpertTensors(cfg, TP, r, logical, ScaleLayout::E8m0Shuffle)) in[rankName(name, r)] = t;
  fillSsq(in, cfg, S);
  return in;
}

void resliceRanks(TensorMap& in, const ModelConfig& cfg, int TP, const TensorMap& logical) {
  for (auto it = in.begin(); it != in.end();)
    it = it->first.find(".r") != std::string::npos ? in.erase(it) : std::next(it);
  for (int r = 0; r < TP; ++r)
    for (auto& [name, t] : rankExpertTensors(cfg, TP, r, logical, ScaleLayout::E8m0Shuffle)) in[rankName(name, r)] = t;
}

const TensorMap& reducedLogical() {
  static const TensorMap m = logicalWeights(ModelConfig::reduced(), 0x5eed0001);
  return m;
}

float bf(const HostTensor& t, int64_t i) { return num::bf16ToF32(t.as<uint16_t>()[i]); }

bool sameBytes(const HostTensor& a, const HostTensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.data == b.data;
}

struct Agreement {
  double maxErr = 0, maxRatio = 0, maxSigmas = 0, rmsErr = 0, rmsOut = 0;
  int64_t over = 0, overSigma = 0;
};

Agreement compare(const ModelConfig& cfg, int S, const TensorMap& ref, const MoeFloat64Result& d) {
  Agreement a;
  const int64_t n = int64_t(S) * cfg.hidden;
  for (int64_t i = 0; i < n; ++i) {
    const double err = std::fabs(double(bf(ref.at("out"), i)) - d.out[i]);
    a.maxErr = std::max(a.maxErr, err);
    if (d.bound[i] > 0) a.maxRatio = std::max(a.maxRatio, err / d.bound[i]);
    if (!(err <= d.bound[i])) ++a.over;
    if (d.sigma[i] > 0) a.maxSigmas = std::max(a.maxSigmas, err / d.sigma[i]);
    if (!(err <= 8 * d.sigma[i])) ++a.overSigma;
    a.rmsErr += err * err;
    a.rmsOut += d.out[i] * d.out[i];
  }
  a.rmsErr = std::sqrt(a.rmsErr / n);
  a.rmsOut = std::sqrt(a.rmsOut / n);
  return a;
}

}  // namespace

// ---------------------------------------------------------------------------------- tolerance

// Tolerance against the float64 model, all from bf16's unit roundoff u = 2^-8: every element within
// the rigorous first-order bound and within 8 sigma of the statistical one, and RMS error <= 3 u
// RMS output (the derivation: docs/verification.md, "The reference's own check").
TEST_CASE("moe reference agrees with the float64 model (reduced config, S x TP)", "[moe][reference]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const double u = 1.0 / 256.0;  // bf16 unit roundoff
  for (int S : {1, 3, 8, 16})
    for (int TP : {1, 2, 4, 8}) {
      CAPTURE(S, TP);
      const TensorMap in = makeInputs(cfg, S, TP, reducedLogical(), 0x1000 + S);
      const TensorMap ref = moeReference(cfg, S, TP, in);
      const MoeFloat64Result d = moeFloat64(cfg, S, TP, in);
      // the routing agrees (these input seeds make no near-tie: margins are checked)
      for (int t = 0; t < S; ++t) {
        CAPTURE(t, d.margin[t]);
        REQUIRE(d.margin[t] > 1e-4);
        for (int k = 0; k < cfg.topk; ++k) {
          REQUIRE(ref.at("picks").as<int32_t>()[t * cfg.topk + k] == d.picks[t * cfg.topk + k]);
          REQUIRE(std::fabs(ref.at("weights").as<float>()[t * cfg.topk + k] - d.weights[t * cfg.topk + k]) <=
                  1e-2 * d.weights[t * cfg.topk + k]);
        }
        REQUIRE(std::fabs(ref.at("rstd").as<float>()[t] - d.rstd[t]) <= 1e-5 * d.rstd[t]);
      }
      const Agreement a = compare(cfg, S, ref, d);
      std::printf("moe S=%2d TP=%d: max |ref - f64| %.3e, max err / bound %.4f, max err / sigma %.2f, "
                  "rms err / rms out %.3e (%.2f u)\n",
                  S, TP, a.maxErr, a.maxRatio, a.maxSigmas, a.rmsErr / a.rmsOut, a.rmsErr / a.rmsOut / u);
      CHECK(a.over == 0);
      CHECK(a.overSigma == 0);
      CHECK(a.rmsErr <= 3 * u * a.rmsOut);
      CHECK(a.rmsOut > 0.1);  // not a vacuous all-zero layer
    }
}

// The full model's router and up tiling (hidden 6144: 16 router parts, 4 a quarter; 6 up
// steps a wave on all 8 waves), with few experts to stay fast.
TEST_CASE("moe reference at hidden 6144 agrees with the float64 model", "[moe][reference][wide]") {
  ModelConfig cfg = ModelConfig::reduced();
  cfg.hidden = 6144;
  const MoeTiling T = MoeTiling::derive(cfg, 2);
  REQUIRE(T.routerParts == 16);
  REQUIRE(T.upWaveSteps == 6);
  REQUIRE(T.upWaves == 8);
  const int S = 2, TP = 2;
  const TensorMap logical = logicalWeights(cfg, 0x5eed0002);
  const TensorMap in = makeInputs(cfg, S, TP, logical, 0x2000);
  const TensorMap ref = moeReference(cfg, S, TP, in);
  const MoeFloat64Result d = moeFloat64(cfg, S, TP, in);
  for (int i = 0; i < S * cfg.topk; ++i) REQUIRE(ref.at("picks").as<int32_t>()[i] == d.picks[i]);
  const Agreement a = compare(cfg, S, ref, d);
  std::printf("moe hidden 6144 S=%d TP=%d: max |ref - f64| %.3e, max err / sigma %.2f, rms err / rms out %.3e\n", S,
              TP, a.maxErr, a.maxSigmas, a.rmsErr / a.rmsOut);
  CHECK(a.over == 0);
  CHECK(a.overSigma == 0);
  CHECK(a.rmsErr <= 3.0 / 256.0 * a.rmsOut);
}

// ---------------------------------------------------------------------------------- A8W4

namespace {

/// Rank `rank`'s slice of expert e's logical weights, row-major as moeReferenceA8w4 reads them:
/// w13 the rank's gate rows then its up rows [2 IP][hidden], w2 its columns [hidden][IP].
struct RankExpert {
  std::vector<uint8_t> c13, s13, c2, s2;
  Mxfp4Rows w13, w2;
  RankExpert(const ModelConfig& cfg, const TensorMap& logical, int e, int tp, int rank) {
    const int64_t h = cfg.hidden, I = cfg.intermediate, ip = cfg.interPerRank(tp);
    const uint8_t *lw13 = logical.at("w13").as<uint8_t>(), *ls13 = logical.at("s13").as<uint8_t>();
    const uint8_t *lw2 = logical.at("w2").as<uint8_t>(), *ls2 = logical.at("s2").as<uint8_t>();
    for (int64_t r = 0; r < 2 * ip; ++r) {
      const int64_t src = e * 2 * I + (r < ip ? rank * ip + r : I + rank * ip + r - ip);
      c13.insert(c13.end(), lw13 + src * (h / 2), lw13 + (src + 1) * (h / 2));
      s13.insert(s13.end(), ls13 + src * (h / 32), ls13 + (src + 1) * (h / 32));
    }
    for (int64_t r = 0; r < h; ++r) {
      const int64_t row = e * h + r;
      c2.insert(c2.end(), lw2 + row * (I / 2) + rank * ip / 2, lw2 + row * (I / 2) + (rank + 1) * ip / 2);
      s2.insert(s2.end(), ls2 + row * (I / 32) + rank * ip / 32, ls2 + row * (I / 32) + (rank + 1) * ip / 32);
    }
    w13 = {int(2 * ip), int(h), c13.data(), s13.data()};
    w2 = {int(h), int(ip), c2.data(), s2.data()};
  }
};

}  // namespace

TEST_CASE("moe reference A8W4: each slot is moeReferenceA8w4, not A16W4, and its float64 error", "[moe][reference][a8w4]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const float limit = static_cast<float>(cfg.swigluLimit), alpha = static_cast<float>(cfg.swigluAlpha);
  const int K = cfg.topk, H = cfg.hidden;
  const double u = 1.0 / 256;
  for (int S : {1, 3, 8, 16})
    for (int TP : {1, 2, 4}) {
      CAPTURE(S, TP);
      const int IP = cfg.interPerRank(TP);
      const TensorMap in = makeInputs(cfg, S, TP, reducedLogical(), 0x1000 + S);
      const TensorMap a16 = moeReference(cfg, S, TP, in);
      const TensorMap a8 = moeReference(cfg, S, TP, in, MoeExperts::All, nullptr, MoeQuant::A8w4);
      // the router and the table are the quant's inputs, not its outputs
      for (const char* n : {"rstd", "xn", "logits", "picks", "weights", "slot_expert", "slot_count", "slot_row", "slot_pick"})
        CHECK(sameBytes(a16.at(n), a8.at(n)));
      int64_t midSame = 0, midAll = 0, outSame = 0, mism = 0;
      const int nSlots = static_cast<int>(a8.at("slot_count").numel());
      for (int r = 0; r < TP; ++r) {
        const HostTensor &mid8 = a8.at(rankName("mid", r)), &mid16 = a16.at(rankName("mid", r));
        const HostTensor& contrib = a8.at(rankName("contrib", r));
        for (int sl = 0; sl < nSlots; ++sl) {
          const int rows = a8.at("slot_count").as<int32_t>()[sl], e = a8.at("slot_expert").as<int32_t>()[sl];
          std::vector<uint16_t> x;
          std::vector<float> w;
          for (int c = 0; c < rows; ++c) {
            const int t = a8.at("slot_row").as<int32_t>()[sl * 16 + c], pick = a8.at("slot_pick").as<int32_t>()[sl * 16 + c];
            x.insert(x.end(), a8.at("xn").as<uint16_t>() + int64_t(t) * H, a8.at("xn").as<uint16_t>() + int64_t(t + 1) * H);
            w.push_back(pick < K * S ? a8.at("weights").as<float>()[pick] : 1.0f);
          }
          const RankExpert re(cfg, reducedLogical(), e, TP, r);
          const A8w4Expert want = moeReferenceA8w4(x.data(), w.data(), rows, re.w13, re.w2, limit, alpha);
          for (int c = 0; c < rows; ++c) {
            const int pick = a8.at("slot_pick").as<int32_t>()[sl * 16 + c];
            for (int i = 0; i < IP; ++i) {
              const int64_t o = (int64_t(sl) * 16 + c) * IP + i;
              mism += mid8.as<uint16_t>()[o] != want.mid[size_t(c) * IP + i];
              midSame += mid8.as<uint16_t>()[o] == mid16.as<uint16_t>()[o];
              ++midAll;
            }
            for (int h = 0; h < H; ++h) {
              const float d = contrib.as<float>()[int64_t(pick) * H + h];
              mism += std::bit_cast<uint32_t>(d) != std::bit_cast<uint32_t>(want.down[size_t(c) * H + h]);
              mism += std::bit_cast<uint32_t>(d * w[c]) != std::bit_cast<uint32_t>(want.out[size_t(c) * H + h]);
            }
          }
        }
      }
      CHECK(mism == 0);
      for (int64_t i = 0; i < int64_t(S) * H; ++i) outSame += a8.at("out").as<uint16_t>()[i] == a16.at("out").as<uint16_t>()[i];
      CHECK(midSame < midAll / 2);   // the MXFP8 xn changes most mids' bf16 bits
      CHECK(outSame < S * H / 2);
      const MoeFloat64Result d = moeFloat64(cfg, S, TP, in);
      const Agreement e16 = compare(cfg, S, a16, d), e8 = compare(cfg, S, a8, d);
      std::printf("moe vs float64 S=%2d TP=%d: rms err / rms out a16w4 %.2e (%.2f u), a8w4 %.2e (%.2f u); "
                  "max err / sigma a16w4 %.2f, a8w4 %.1f; mids equal %lld of %lld\n",
                  S, TP, e16.rmsErr / e16.rmsOut, e16.rmsErr / e16.rmsOut / u, e8.rmsErr / e8.rmsOut,
                  e8.rmsErr / e8.rmsOut / u, e16.maxSigmas, e8.maxSigmas, (long long)midSame, (long long)midAll);
      CHECK(e8.rmsErr > 2 * e16.rmsErr);    // MXFP8 adds about 16x bf16's error a value
      CHECK(e8.rmsErr < 0.1 * e8.rmsOut);   // stated tolerance: moeReferenceA8w4's one-expert 0.1
    }
}

// ---------------------------------------------------------------------------------- routing

TEST_CASE("routing: exact ties pick the lower expert", "[moe][route]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 1, E = cfg.experts;
  TensorMap in = makeInputs(cfg, S, TP, reducedLogical(), 7);
  SECTION("zero logits, ties in the bias") {
    // logits are exactly 0 -> sigmoid 0.5 for all; bias decides, 3 and 5 tie for the last pick
    for (auto& b : in["router_w"].data) b = 0;
    for (int e = 0; e < E; ++e) in["bias"].as<float>()[e] = 0.0f;
    in["bias"].as<float>()[10] = 0.3f;
    in["bias"].as<float>()[11] = 0.2f;
    in["bias"].as<float>()[12] = 0.1f;
    in["bias"].as<float>()[5] = 0.05f;
    in["bias"].as<float>()[3] = 0.05f;
    const TensorMap ref = moeReference(cfg, S, TP, in);
    for (int t = 0; t < S; ++t) {
      const int32_t* p = ref.at("picks").as<int32_t>() + t * 4;
      CHECK(p[0] == 10);
      CHECK(p[1] == 11);
      CHECK(p[2] == 12);
      CHECK(p[3] == 3);
      for (int k = 0; k < 4; ++k) CHECK(ref.at("weights").as<float>()[t * 4 + k] == 0.5f);  // 0.5 x (2 / 2)
    }
  }
  SECTION("identical router rows lead") {
    float* w = in["router_w"].as<float>();
    for (int c = 0; c < cfg.hidden; ++c) w[9 * cfg.hidden + c] = w[6 * cfg.hidden + c] = w[6 * cfg.hidden + c] * 40.0f;
    for (int e = 0; e < E; ++e) in["bias"].as<float>()[e] = 0.0f;
    // make the shared row point along row t's xn so the two lead: set it from sres
    for (int t = 0; t < S; ++t) {
      // a row whose xn is proportional to the router row: logit large positive
      for (int c = 0; c < cfg.hidden; ++c) in["sres"].as<float>()[t * cfg.hidden + c] = w[6 * cfg.hidden + c];
    }
    fillSsq(in, cfg, S);
    const TensorMap ref = moeReference(cfg, S, TP, in);
    for (int t = 0; t < S; ++t) {
      CHECK(ref.at("logits").as<float>()[t * E + 6] == ref.at("logits").as<float>()[t * E + 9]);
      CHECK(ref.at("picks").as<int32_t>()[t * 4 + 0] == 6);
      CHECK(ref.at("picks").as<int32_t>()[t * 4 + 1] == 9);
    }
  }
}

TEST_CASE("routing: NaN logits get weight 0 and are not picked", "[moe][route]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 4, TP = 2, E = cfg.experts, H = cfg.hidden;
  TensorMap in = makeInputs(cfg, S, TP, reducedLogical(), 11);
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  SECTION("a few NaN experts, with the largest bias") {
    for (int e : {4, 13}) {
      in["router_w"].as<float>()[int64_t(e) * H + 100] = qnan;
      in["bias"].as<float>()[e] = 5.0f;  // would win if NaN were not -inf for the selection
    }
    const TensorMap ref = moeReference(cfg, S, TP, in);
    for (int t = 0; t < S; ++t) {
      REQUIRE(std::isnan(ref.at("logits").as<float>()[t * E + 4]));
      float sum = 0;
      for (int k = 0; k < 4; ++k) {
        const int p = ref.at("picks").as<int32_t>()[t * 4 + k];
        CHECK(p != 4);
        CHECK(p != 13);
        const float w = ref.at("weights").as<float>()[t * 4 + k];
        CHECK(std::isfinite(w));
        sum += w;
      }
      CHECK(std::fabs(sum - 2.0f) < 1e-5f);
    }
    for (int64_t i = 0; i < int64_t(S) * H; ++i) REQUIRE(std::isfinite(bf(ref.at("out"), i)));
  }
  SECTION("fewer finite experts than top-k: the NaN picks weigh 0") {
    for (int e = 0; e < E; ++e)
      if (e != 7 && e != 9) in["router_w"].as<float>()[int64_t(e) * H] = qnan;
    in["bias"].as<float>()[9] = 2.0f;  // sigmoid + bias: 9 above 2, 7 below
    in["bias"].as<float>()[7] = 1.0f;
    const TensorMap ref = moeReference(cfg, S, TP, in);
    for (int t = 0; t < S; ++t) {
      const int32_t* p = ref.at("picks").as<int32_t>() + t * 4;
      const float* w = ref.at("weights").as<float>() + t * 4;
      CHECK(p[0] == 9);
      CHECK(p[1] == 7);
      CHECK(std::fabs(w[0] + w[1] - 2.0f) <= 1e-6f);  // the finite picks carry the whole routed scale
      CHECK(w[2] == 0.0f);
      CHECK(w[3] == 0.0f);
    }
    for (int64_t i = 0; i < int64_t(S) * H; ++i) REQUIRE(std::isfinite(bf(ref.at("out"), i)));
  }
}

TEST_CASE("routing: fewer than top-k usable scores still picks top-k distinct experts, the unusable ones weigh 0",
          "[moe][route]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int E = cfg.experts, K = cfg.topk;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> logits(E, 0.5f), bias(E, 0.0f);
  int32_t picks[8];
  float weights[8];
  SECTION("every logit NaN, or every bias -inf (finite sigmoids): the lowest experts, every weight 0") {
    for (std::vector<float>* v : {&logits, &bias}) {
      std::vector<float> keep = *v;
      std::fill(v->begin(), v->end(), v == &logits ? nan : -inf);
      routeToken(logits.data(), bias.data(), E, K, 2.0f, true, picks, weights);
      for (int k = 0; k < K; ++k) {
        CHECK(picks[k] == k);
        CHECK(weights[k] == 0.0f);
      }
      *v = keep;
    }
  }
  SECTION("one usable expert: it takes the whole routed scale, the rest are distinct and weigh 0") {
    std::fill(bias.begin(), bias.end(), -inf);
    bias[5] = 0.0f;
    routeToken(logits.data(), bias.data(), E, K, 2.0f, true, picks, weights);
    CHECK(picks[0] == 5);
    CHECK(std::fabs(weights[0] - 2.0f) <= 2.4e-7f);  // sc x (2 / sc): within an ulp of 2
    std::set<int> seen(picks, picks + K);
    CHECK(static_cast<int>(seen.size()) == K);
    for (int k = 1; k < K; ++k) CHECK(weights[k] == 0.0f);
  }
}

TEST_CASE("the reference's sum mode is its argument: an extra `experts` tensor in the inputs is ignored",
          "[moe][knob]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 2, TP = 2;
  TensorMap in = makeInputs(cfg, S, TP, reducedLogical(), 52);
  const TensorMap all = moeReference(cfg, S, TP, in, MoeExperts::All);
  HostTensor knob = HostTensor::zeros(DType::I32, {1});
  knob.as<int32_t>()[0] = 1;  // "shared" in the old override
  in["experts"] = knob;
  CHECK(sameBytes(all.at("out"), moeReference(cfg, S, TP, in, MoeExperts::All).at("out")));
  CHECK(moeFloat64(cfg, S, TP, in).out == moeFloat64(cfg, S, TP, in, MoeExperts::All).out);
}

TEST_CASE("routing: every token on the same experts", "[moe][route][table]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 8, TP = 2, E = cfg.experts;
  TensorMap in = makeInputs(cfg, S, TP, reducedLogical(), 21);
  for (int e : {2, 4, 6, 8}) in["bias"].as<float>()[e] = 10.0f;
  const TensorMap ref = moeReference(cfg, S, TP, in);
  REQUIRE(ref.at("slot_expert").numel() == 5);
  const int want[5] = {E, 2, 4, 6, 8};
  for (int u = 0; u < 5; ++u) {
    CHECK(ref.at("slot_expert").as<int32_t>()[u] == want[u]);
    CHECK(ref.at("slot_count").as<int32_t>()[u] == S);
    for (int c = 0; c < 16; ++c) {
      const int row = ref.at("slot_row").as<int32_t>()[u * 16 + c], pick = ref.at("slot_pick").as<int32_t>()[u * 16 + c];
      if (c >= S) {
        CHECK(row == -1);
        continue;
      }
      CHECK(row == c);  // columns: rows ascending
      if (u == 0) CHECK(pick == 4 * S + c);
      else CHECK(ref.at("picks").as<int32_t>()[pick] == want[u]);
      if (u > 0) CHECK(pick / 4 == c);
    }
  }
  const MoeFloat64Result d = moeFloat64(cfg, S, TP, in);
  const Agreement a = compare(cfg, S, ref, d);
  CHECK(a.over == 0);
  CHECK(a.overSigma == 0);
}

TEST_CASE("routing: every token on distinct experts", "[moe][route][table]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 4, TP = 4, E = cfg.experts, H = cfg.hidden;
  TensorMap in = makeInputs(cfg, S, TP, reducedLogical(), 31);
  // expert e reads column e / 4 only; row t is large in column t: row t picks 4 t .. 4 t + 3
  for (auto& b : in["router_w"].data) b = 0;
  for (int e = 0; e < E; ++e) {
    in["router_w"].as<float>()[int64_t(e) * H + e / 4] = 1.0f;
    in["bias"].as<float>()[e] = 0.0f;
  }
  for (int t = 0; t < S; ++t) in["sres"].as<float>()[int64_t(t) * H + t] = 40.0f;
  fillSsq(in, cfg, S);
  const TensorMap ref = moeReference(cfg, S, TP, in);
  for (int t = 0; t < S; ++t)
    for (int k = 0; k < 4; ++k) CHECK(ref.at("picks").as<int32_t>()[t * 4 + k] == 4 * t + k);
  REQUIRE(ref.at("slot_expert").numel() == 1 + E);
  for (int u = 1; u <= E; ++u) {
    CHECK(ref.at("slot_expert").as<int32_t>()[u] == u - 1);
    CHECK(ref.at("slot_count").as<int32_t>()[u] == 1);
    CHECK(ref.at("slot_row").as<int32_t>()[u * 16] == (u - 1) / 4);
    CHECK(ref.at("slot_pick").as<int32_t>()[u * 16] == u - 1);
  }
  const MoeFloat64Result d = moeFloat64(cfg, S, TP, in);
  const Agreement a = compare(cfg, S, ref, d);
  CHECK(a.over == 0);
  CHECK(a.overSigma == 0);
}

TEST_CASE("padded rows pick nothing and output 0", "[moe][route][table]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 8, TP = 2, H = cfg.hidden;
  TensorMap in = makeInputs(cfg, S, TP, reducedLogical(), 41);
  in["slots"].as<int64_t>()[2] = -1;
  in["slots"].as<int64_t>()[5] = -1;
  const TensorMap ref = moeReference(cfg, S, TP, in);
  for (int t : {2, 5}) {
    for (int k = 0; k < 4; ++k) CHECK(ref.at("picks").as<int32_t>()[t * 4 + k] == -1);
    for (int h = 0; h < H; ++h) {
      REQUIRE(ref.at("out").as<uint16_t>()[int64_t(t) * H + h] == 0);
      for (int r = 0; r < TP; ++r) REQUIRE(ref.at(rankName("down", r)).as<uint16_t>()[int64_t(t) * H + h] == 0);
    }
  }
  CHECK(ref.at("slot_count").as<int32_t>()[0] == 6);
  const int n = static_cast<int>(ref.at("slot_expert").numel());
  for (int u = 0; u < n; ++u)
    for (int c = 0; c < 16; ++c) {
      const int row = ref.at("slot_row").as<int32_t>()[u * 16 + c];
      CHECK(row != 2);
      CHECK(row != 5);
    }
  // a padded row's data does not reach the valid rows: garbage there changes nothing
  TensorMap in2 = in;
  for (int h = 0; h < H; ++h) {
    in2["sres"].as<float>()[2 * H + h] = std::numeric_limits<float>::quiet_NaN();
    in2["sres"].as<float>()[5 * H + h] = 1e30f;
  }
  fillSsq(in2, cfg, S);
  const TensorMap ref2 = moeReference(cfg, S, TP, in2);
  CHECK(sameBytes(ref.at("out"), ref2.at("out")));
  // and "valid" I32 says the same as slots
  TensorMap in3 = in;
  in3.erase("slots");
  in3["valid"] = HostTensor::zeros(DType::I32, {S});
  for (int t = 0; t < S; ++t) in3["valid"].as<int32_t>()[t] = (t == 2 || t == 5) ? 0 : 1;
  CHECK(sameBytes(ref.at("out"), moeReference(cfg, S, TP, in3).at("out")));
}

TEST_CASE("experts knob: shared + routed sides", "[moe][knob]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 2;
  const TensorMap in = makeInputs(cfg, S, TP, reducedLogical(), 51);
  const TensorMap all = moeReference(cfg, S, TP, in, MoeExperts::All);
  const TensorMap sh = moeReference(cfg, S, TP, in, MoeExperts::Shared);
  const TensorMap ro = moeReference(cfg, S, TP, in, MoeExperts::Routed);
  // shared only: the partial is bf16 of the shared expert's CONTRIB
  for (int64_t i = 0; i < int64_t(S) * cfg.hidden; ++i) {
    const int t = static_cast<int>(i / cfg.hidden), h = static_cast<int>(i % cfg.hidden);
    REQUIRE(bf(sh.at("down.r0"), i) ==
            num::roundBf16(sh.at("contrib.r0").as<float>()[int64_t(4 * S + t) * cfg.hidden + h]));
  }
  CHECK(!sameBytes(all.at("out"), sh.at("out")));
  CHECK(!sameBytes(all.at("out"), ro.at("out")));
  const MoeFloat64Result ds = moeFloat64(cfg, S, TP, in, MoeExperts::Shared);
  const MoeFloat64Result dr = moeFloat64(cfg, S, TP, in, MoeExperts::Routed);
  CHECK(compare(cfg, S, sh, ds).over == 0);
  CHECK(compare(cfg, S, ro, dr).over == 0);
  CHECK(compare(cfg, S, sh, ds).overSigma == 0);
  CHECK(compare(cfg, S, ro, dr).overSigma == 0);
}

// ---------------------------------------------------------------------------------- TP

// What is TP-invariant: everything before the expert GEMVs (the router is not split), and
// each rank's MID columns (an intermediate row's up-GEMV does not depend on TP). The out is
// not: each rank rounds its own partial to bf16. It is bit-identical across TP exactly when
// only the smallest rank slice (rank 0 at TP 8) carries down weights: the other ranks then
// add +0 partials and rank 0 sums the same products in the same K order.
TEST_CASE("TP: what is identical across TP, and what is not", "[moe][tp]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 5, H = cfg.hidden, I = cfg.intermediate;
  std::map<int, TensorMap> refs;
  TensorMap in = makeInputs(cfg, S, 1, reducedLogical(), 61);
  for (int TP : {1, 2, 4, 8}) {
    resliceRanks(in, cfg, TP, reducedLogical());
    refs[TP] = moeReference(cfg, S, TP, in);
  }
  for (int TP : {2, 4, 8}) {
    CAPTURE(TP);
    for (const char* n : {"rstd", "xn", "logits", "picks", "weights", "slot_expert", "slot_row", "slot_pick"})
      CHECK(sameBytes(refs[1].at(n), refs[TP].at(n)));
    // rank r's MID = columns r I/TP .. of the TP 1 MID
    const HostTensor& m1 = refs[1].at("mid.r0");
    const int n = static_cast<int>(m1.shape[0]), ip = I / TP;
    bool same = true;
    for (int r = 0; r < TP; ++r) {
      const HostTensor& mr = refs[TP].at(rankName("mid", r));
      for (int u = 0; u < n; ++u)
        for (int c = 0; c < 16; ++c)
          for (int i = 0; i < ip; ++i)
            same &= mr.as<uint16_t>()[(int64_t(u) * 16 + c) * ip + i] ==
                    m1.as<uint16_t>()[(int64_t(u) * 16 + c) * I + r * ip + i];
    }
    CHECK(same);
    // the out differs (per-rank bf16 partials) but both stay within their float64 bounds
    CHECK(!sameBytes(refs[1].at("out"), refs[TP].at("out")));
  }
  // only intermediate columns < I / 8 carry down weights: out bit-identical across TP
  TensorMap logical = reducedLogical();
  HostTensor& w2 = logical["w2"];
  const int64_t e1 = cfg.expertsWithShared();
  for (int64_t e = 0; e < e1; ++e)
    for (int h = 0; h < H; ++h)
      for (int b = (I / 8) / 2; b < I / 2; ++b) w2.data[(e * H + h) * (I / 2) + b] = 0;
  std::map<int, TensorMap> zr;
  for (int TP : {1, 2, 4, 8}) {
    resliceRanks(in, cfg, TP, logical);
    zr[TP] = moeReference(cfg, S, TP, in);
  }
  double maxOut = 0;
  for (int64_t i = 0; i < int64_t(S) * H; ++i) maxOut = std::max(maxOut, double(std::fabs(bf(zr[1].at("out"), i))));
  CHECK(maxOut > 0.1);
  for (int TP : {2, 4, 8}) {
    CAPTURE(TP);
    CHECK(sameBytes(zr[1].at("out"), zr[TP].at("out")));
  }
}

// ---------------------------------------------------------------------------------- numerics

// a16w4Dot's declared K order is the one ir/Mfma.h's model gives the 4 chained
// v_mfma_f32_16x16x32_bf16 of a step with vLLM's FlyDSL kernel's lane layout; routerPart's the one of
// v_mfma_f32_16x16x4_f32 with stage_router's.
TEST_CASE("a16w4Dot and routerPart follow the MFMA model's lane layout", "[moe][mfma]") {
  Rng rng(99);
  auto wide = [&] { return num::roundBf16(std::ldexp(rng.normal(), rng.below(24) - 12)); };  // order-sensitive sums
  SECTION("A16W4 step: 4 x 16x16x32 bf16") {
    std::vector<float> w(16 * 128), x(16 * 128);
    for (auto& v : w) v = wide();
    for (auto& v : x) v = wide();
    float acc[64 * 4] = {};
    for (int d = 0; d < 4; ++d) {
      float a[64 * 8], b[64 * 8];
      for (int l = 0; l < 64; ++l)
        for (int e = 0; e < 8; ++e) {
          const int k = 32 * (l / 16) + 8 * d + e;  // lane group's 32 K, chunk d
          a[l * 8 + e] = w[(l % 16) * 128 + k];     // A row = weight row l % 16
          b[l * 8 + e] = x[(l % 16) * 128 + k];     // B column = token column l % 16
        }
      ir::mfma::run(ir::MfmaKind::F32_16x16x32_BF16, a, b, acc);
    }
    int mism = 0;
    for (int l = 0; l < 64; ++l)
      for (int i = 0; i < 4; ++i) {
        const int row = ir::mfma::dRow(l, i), col = ir::mfma::dCol(l, i);
        const float want = a16w4Dot(0.0f, &w[row * 128], &x[col * 128], 128, 0, 1);
        mism += std::bit_cast<uint32_t>(want) != std::bit_cast<uint32_t>(acc[l * 4 + i]);
      }
    CHECK(mism == 0);
    // and the order matters on these values: a plain ascending K sum differs somewhere
    int differs = 0;
    for (int row = 0; row < 16; ++row) {
      float s = 0;
      for (int k = 0; k < 128; ++k) s = s + w[row * 128 + k] * x[row * 128 + k];
      differs += s != a16w4Dot(0.0f, &w[row * 128], &x[row * 128], 128, 0, 1);
    }
    CHECK(differs > 0);
  }
  SECTION("router: one wave, 3 chunks x 4 f32 MFMAs") {
    MoeTiling T = MoeTiling::derive(ModelConfig::flash(), 1);
    T.waves = 1;
    T.routerK = T.routerWaveK = 48;
    T.routerChunks = 3;
    std::vector<float> w(16 * 48), x(16 * 48);
    for (auto& v : w) v = std::ldexp(rng.normal(), rng.below(24) - 12);
    for (auto& v : x) v = wide();
    float acc[64 * 4] = {};
    for (int ch = 0; ch < 3; ++ch)
      for (int m = 0; m < 4; ++m) {
        float a[64], b[64];
        for (int l = 0; l < 64; ++l) {
          const int k = (l / 16) * 4 + 16 * ch + m;  // k0 = (lane / 16) * 4
          a[l] = w[(l % 16) * 48 + k];               // A: expert l % 16
          b[l] = x[(l % 16) * 48 + k];               // B: token l % 16
        }
        ir::mfma::run(ir::MfmaKind::F32_16x16x4_F32, a, b, acc);
      }
    int mism = 0;
    for (int l = 0; l < 64; ++l)
      for (int i = 0; i < 4; ++i) {
        const int e = ir::mfma::dRow(l, i), t = ir::mfma::dCol(l, i);
        // a single-expert / single-token view: expert e's row against token t's row
        std::vector<float> wr(48), xr(48);
        for (int k = 0; k < 48; ++k) wr[k] = w[e * 48 + k], xr[k] = x[t * 48 + k];
        const float want = routerPart(wr.data(), xr.data(), T, 0);
        mism += std::bit_cast<uint32_t>(want) != std::bit_cast<uint32_t>(acc[l * 4 + i]);
      }
    CHECK(mism == 0);
  }
}

TEST_CASE("declared scalar models", "[moe][numerics]") {
  CHECK(moeSigmoid(0.0f) == 0.5f);
  CHECK(std::isnan(moeSigmoid(std::numeric_limits<float>::quiet_NaN())));
  CHECK(moeSigmoid(-200.0f) == 0.0f);
  CHECK(moeSigmoid(200.0f) == 1.0f);
  for (float x : {-8.0f, -1.5f, -0.25f, 0.3f, 2.0f, 7.0f}) CHECK(std::fabs(moeSigmoid(x) - 1.0 / (1.0 + std::exp(-double(x)))) < 2e-7);
  CHECK(moeExp2(3.0f) == 8.0f);
  CHECK(moeExp2(-1.0f) == 0.5f);
  // SwiGLU-OAI: gate clamped above only, up both ways
  CHECK(swigluOai(100.0f, 0.0f, 7.0f, 1.702f) == swigluOai(7.0f, 0.0f, 7.0f, 1.702f));
  CHECK(swigluOai(2.0f, 100.0f, 7.0f, 1.702f) == swigluOai(2.0f, 7.0f, 7.0f, 1.702f));
  CHECK(swigluOai(2.0f, -100.0f, 7.0f, 1.702f) == swigluOai(2.0f, -7.0f, 7.0f, 1.702f));
  CHECK(swigluOai(-100.0f, 1.0f, 7.0f, 1.702f) != swigluOai(-7.0f, 1.0f, 7.0f, 1.702f));
  CHECK(swigluOai(0.0f, 3.0f, 7.0f, 1.702f) == 0.0f);
  // block_sum: a butterfly in a wave, waves in order
  std::vector<float> v(192);
  for (int i = 0; i < 192; ++i) v[i] = std::ldexp(1.0f + i / 256.0f, (i * 7) % 30 - 15);
  auto tree = [&](int base) {
    float a[64];
    for (int l = 0; l < 64; ++l) a[l] = v[base + l];
    for (int n = 32; n >= 1; n /= 2)
      for (int l = 0; l < n; ++l) a[l] = a[l] + a[l + n];
    return a[0];
  };
  const float w0 = tree(0), w1 = tree(64), w2 = tree(128);
  CHECK(blockSum(v.data(), 192, 512) == ((0.0f + w0) + w1) + w2);
}

TEST_CASE("MoeTiling derives the model's constants and the reduced ones", "[moe][tiling]") {
  const MoeTiling f = MoeTiling::derive(ModelConfig::flash(), 4);
  CHECK(f.waves == 8);
  CHECK(f.routerParts == 16);
  CHECK(f.routerK == 384);
  CHECK(f.routerWaveK == 48);
  CHECK(f.routerChunks == 3);
  CHECK(f.routerTasks == 128);
  CHECK(f.routePartsPerQuarter == 4);
  CHECK(f.routeExpertsPerLane == 2);
  CHECK(f.upTiles == 48);
  CHECK(f.upWaveSteps == 6);
  CHECK(f.downTasks == 384);
  CHECK(f.downSteps == 6);
  CHECK(f.downTailK == 0);
  CHECK(f.seamTasks == 192);
  CHECK(f.contribPicks == 80);
  CHECK(f.maxSlots == 65);
  const MoeTiling r = MoeTiling::derive(ModelConfig::reduced(), 8);
  CHECK(r.routerParts == 4);
  CHECK(r.routerK == 384);
  CHECK(r.upSteps == 12);
  CHECK(r.upWaveSteps == 2);
  CHECK(r.upWaves == 6);
  CHECK(r.interPerRank == 96);
  CHECK(r.downSteps == 1);
  CHECK(r.downTailK == 96);
  CHECK(r.maxSlots == 17);
  CHECK_THROWS_AS(MoeTiling::derive(ModelConfig::reduced(), 3), InputError);
}

// ---------------------------------------------------------------------------------- contract

TEST_CASE("shuffle16x16 and unshuffle16x16", "[moe][contract][shuffle]") {
  Rng rng(5);
  for (auto [rows, kb] : std::vector<std::pair<int, int>>{{16, 32}, {32, 64}, {48, 768}, {16, 48}, {64, 16}}) {
    CAPTURE(rows, kb);
    std::vector<uint8_t> m(size_t(rows) * kb);
    for (auto& b : m) b = static_cast<uint8_t>(rng.next());
    const auto s = shuffle16x16(m.data(), rows, kb);
    if (kb > 16) CHECK(s != m);  // one 16-byte half a row: the layout is row-major
    CHECK(unshuffle16x16(s.data(), rows, kb) == m);
    CHECK(shuffle16x16(unshuffle16x16(m.data(), rows, kb).data(), rows, kb) == m);
    // AITER's view [N/16, 16, Kb/32, 2, 16] made contiguous as [N/16, Kb/32, 2, 16, 16]
    if (kb % 32 == 0) {
      std::vector<uint8_t> want;
      for (int nb = 0; nb < rows / 16; ++nb)
        for (int kt = 0; kt < kb / 32; ++kt)
          for (int half = 0; half < 2; ++half)
            for (int n = 0; n < 16; ++n)
              for (int b = 0; b < 16; ++b) want.push_back(m[size_t(nb * 16 + n) * kb + kt * 32 + half * 16 + b]);
      CHECK(s == want);
    }
  }
  // the moves, spelled out on a 32 x 64 matrix
  std::vector<uint8_t> m(32 * 64, 0);
  auto at = [&](int r, int c) -> uint8_t& { return m[r * 64 + c]; };
  at(0, 0) = 1;    // -> 0
  at(1, 0) = 2;    // the next row's first byte -> 16
  at(0, 16) = 3;   // K 32 .. of row 0 (the tile's high half) -> 256
  at(0, 32) = 4;   // the next K tile -> 512
  at(16, 0) = 5;   // the next row tile -> 16 rows x 64 bytes = 1024
  at(17, 63) = 6;  // row tile 1, K tile 1, high half, row 1, byte 15 -> 1024 + 512 + 256 + 16 + 15
  const auto s = shuffle16x16(m.data(), 32, 64);
  CHECK(s[0] == 1);
  CHECK(s[16] == 2);
  CHECK(s[256] == 3);
  CHECK(s[512] == 4);
  CHECK(s[1024] == 5);
  CHECK(s[1024 + 512 + 256 + 16 + 15] == 6);
  CHECK_THROWS_AS(shuffle16x16(m.data(), 24, 64), InputError);
  CHECK_THROWS_AS(shuffle16x16(m.data(), 32, 40), InputError);
  // AITER's e8m0 scale shuffle (not applied by the contract): a permutation, inverted
  std::vector<uint8_t> sc(96 * 12);
  for (auto& b : sc) b = static_cast<uint8_t>(rng.next());
  int64_t pm = 0, pn = 0;
  const auto ss = e8m0Shuffle(sc.data(), 96, 12, &pm, &pn);
  CHECK(pm == 256);
  CHECK(pn == 16);
  CHECK(e8m0Unshuffle(ss.data(), 96, 12) == sc);
  // scale (1, 0) -> the b = (i / 16) % 2 = 0, c = 1 slot: offset (c * 2 + e) * 2 + b = 4
  CHECK(ss[4] == sc[12]);
  // scale (16, 0) -> b = 1: offset 1
  CHECK(ss[1] == sc[16 * 12]);
}

TEST_CASE("checkContract rejects a wrong shape or dtype, naming the tensor", "[moe][contract]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int TP = 4;
  TensorMap w = rankExpertTensors(cfg, TP, 1, reducedLogical(), ScaleLayout::E8m0Shuffle);
  w["router_w"] = HostTensor::zeros(DType::F32, {cfg.experts, cfg.hidden});
  w["bias"] = HostTensor::zeros(DType::F32, {cfg.experts});
  w["norm_w"] = HostTensor::zeros(DType::BF16, {cfg.hidden});
  REQUIRE_NOTHROW(checkContract(cfg, TP, w, ScaleLayout::E8m0Shuffle));
  auto message = [&](const TensorMap& m) -> std::string {
    try {
      checkContract(cfg, TP, m, ScaleLayout::E8m0Shuffle);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  {
    TensorMap m = w;
    m["w2"] = HostTensor::zeros(DType::U8, {cfg.expertsWithShared(), cfg.hidden, cfg.intermediate / 2});
    const std::string msg = message(m);
    CAPTURE(msg);
    CHECK(msg.find("w2") != std::string::npos);
    CHECK(msg.find("[17, 1536, 96]") != std::string::npos);   // expected (I / TP / 2 = 96)
    CHECK(msg.find("[17, 1536, 384]") != std::string::npos);  // given
  }
  {
    TensorMap m = w;
    m["router_w"] = HostTensor::zeros(DType::BF16, {cfg.experts, cfg.hidden});
    const std::string msg = message(m);
    CAPTURE(msg);
    CHECK(msg.find("router_w") != std::string::npos);
    CHECK(msg.find("F32") != std::string::npos);
    CHECK(msg.find("BF16") != std::string::npos);
  }
  {
    TensorMap m = w;
    m.erase("s13");
    const std::string msg = message(m);
    CAPTURE(msg);
    CHECK(msg.find("s13") != std::string::npos);
    CHECK(msg.find("missing") != std::string::npos);
  }
  {
    TensorMap m = w;
    m["s2"].shape = {cfg.expertsWithShared(), cfg.hidden, 6, 1};
    CHECK(message(m).find("s2") != std::string::npos);
  }
  // the reference refuses a rank's bad tensor too, naming the rank and tensor
  TensorMap in = makeInputs(cfg, 2, TP, reducedLogical(), 3);
  in["w13.r2"].dtype = DType::I32;
  try {
    moeReference(cfg, 2, TP, in);
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("rank 2") != std::string::npos);
    CHECK(msg.find("w13") != std::string::npos);
  }
}

TEST_CASE("fp4x2 nibble order and e8m0 scale of an expert matrix", "[moe][contract]") {
  // one expert, 16 rows x 64 K (32 bytes): row 0 byte 0 = 0x3A -> K 0 = code 0xA (-1.0),
  // K 1 = code 0x3 (1.5); row 0's first scale 2^(128-127) = 2, its second 2^-1
  HostTensor w = HostTensor::zeros(DType::U8, {1, 16, 32});
  HostTensor s = HostTensor::zeros(DType::U8, {1, 16, 2});
  std::vector<uint8_t> rm(16 * 32, 0);
  rm[0] = 0x3A;
  rm[31] = 0x70;  // row 0, K 62 = code 0 (0), K 63 = code 7 (6.0)
  rm[32 + 16] = 0x0C;  // row 1, K 32 = code 0xC (-2.0)
  const auto sh = shuffle16x16(rm.data(), 16, 32);
  std::copy(sh.begin(), sh.end(), w.data.begin());
  s.layout = "rowmajor";
  for (auto& b : s.data) b = 127;
  s.data[0] = 128;
  s.data[1] = 126;
  const ExpertMatrix m = expertMatrix(w, s, 0);
  CHECK(m.value(0, 0) == -2.0f);
  CHECK(m.value(0, 1) == 3.0f);
  CHECK(m.value(0, 62) == 0.0f);
  CHECK(m.value(0, 63) == 3.0f);
  CHECK(m.value(1, 32) == -2.0f);
  CHECK(m.value(1, 33) == 0.0f);
}
