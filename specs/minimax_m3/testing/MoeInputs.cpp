#include "specs/minimax_m3/testing/MoeInputs.h"

#include "runtime/sim/SimRng.h"
#include "specs/minimax_m3/testing/InputRng.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/reference/MoeReference.h"
#include "specs/minimax_m3/kernel/MoeTiling.h"
#include "specs/minimax_m3/reference/OprojReference.h"
#include "specs/minimax_m3/reference/Reference.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

namespace monogen::specs::minimax_m3 {

using runtime::DType;
using runtime::HostTensor;
using runtime::TensorMap;
namespace num = ir::num;

namespace {

constexpr const char* kWhere = "moe inputs";

uint64_t mix(uint64_t z) { return runtime::splitMix64Mix(z); }

using Rng = InputRng;

/// One stream a purpose, so changing one option never shifts another's numbers.
Rng stream(uint64_t seed, uint64_t purpose) { return Rng(mix(seed * 0x100000001b3ull + purpose * 0x9e3779b97f4a7c15ull)); }

/// 8 bytes of logical weight tensor `tag` at (expert, row, 8-byte group): a pure function.
uint64_t weightBits(uint64_t seed, uint64_t tag, int64_t e, int64_t row, int64_t group) {
  uint64_t h = mix(seed ^ (tag * 0xd1b54a32d192ed03ull));
  h = mix(h ^ static_cast<uint64_t>(e) * 0x9e3779b97f4a7c15ull);
  h = mix(h ^ static_cast<uint64_t>(row) * 0xc2b2ae3d27d4eb4full);
  return mix(h ^ static_cast<uint64_t>(group) * 0x165667b19e3779f9ull);
}
uint8_t weightByte(uint64_t seed, uint64_t tag, int64_t e, int64_t row, int64_t col) {
  return static_cast<uint8_t>(weightBits(seed, tag, e, row, col / 8) >> (8 * (col % 8)));
}
/// An e8m0 scale around `base` (base - 1 a quarter of the time, base + 1 a quarter).
uint8_t scaleOf(uint8_t b, int base) {
  const int k = b % 8;
  return static_cast<uint8_t>(base + (k < 2 ? -1 : k < 6 ? 0 : 1));
}
int ceilLog2(double x) { return static_cast<int>(std::ceil(std::log2(x))); }

enum Tag : uint64_t { kW13 = 1, kS13 = 2, kW2 = 3, kS2 = 4 };

/// EdgeCases' sameExpert experts: (3 + 5 i) % E, i < topk.
std::vector<int> sameExpertSet(const ModelConfig& cfg) {
  std::vector<int> c;
  for (int i = 0; i < cfg.topk; ++i) c.push_back((3 + 5 * i) % cfg.experts);
  return c;
}

/// What the routing options come to.
struct RoutingPlan {
  int valid = 0;                         // valid rows (the first `valid`)
  int n = 0;                             // steered distinct experts (0: natural)
  std::vector<int> chosen;               // C, in assignment order
  std::vector<std::vector<int>> assign;  // valid row -> its topk experts
  std::vector<int> nanExperts;
  int tieGroup = 0;                      // 0: no ties
};

RoutingPlan planRouting(const ModelConfig& cfg, int S, int TP, uint64_t seed, const LaunchInputOptions& o) {
  MoeTiling::derive(cfg, TP, kWhere);
  if (S < 1 || S > cfg.maxRows)
    throw InputError(kWhere, fmt::format("S = {}: expected 1..{}", S, cfg.maxRows));
  if (o.paddedRows < 0 || o.paddedRows > S)
    throw InputError(kWhere, fmt::format("paddedRows = {}: expected 0..S ({})", o.paddedRows, S));
  if (o.distinctExperts < 0)
    throw InputError(kWhere, fmt::format("distinctExperts = {}: expected >= 0 (0: natural)", o.distinctExperts));
  for (int t : o.paddedAt)
    if (t < 0 || t >= S) throw InputError(kWhere, fmt::format("paddedAt row {}: expected 0..S-1 ({})", t, S - 1));
  const int E = cfg.experts, K = cfg.topk;
  RoutingPlan p;
  p.valid = S - o.paddedRows;
  if (o.values == InputValues::EdgeCases) {
    if (o.distinctExperts != 0 || o.distinctPerToken)
      throw InputError(kWhere, "distinctExperts and distinctPerToken steer Natural values only, not EdgeCases");
    if (o.sameExpert) p.chosen = sameExpertSet(cfg);
    return p;
  }
  p.n = o.distinctExperts;
  if (o.sameExpert && o.distinctPerToken)
    throw InputError(kWhere, "sameExpert and distinctPerToken contradict each other");
  if (o.sameExpert) {
    if (p.n != 0 && p.n != K)
      throw InputError(kWhere, fmt::format("sameExpert means {} distinct experts (top-k), not distinctExperts = {}",
                                           K, p.n));
    p.n = K;
  }
  if (o.distinctPerToken) {
    const int want = p.valid * K;
    if (p.n != 0 && p.n != want)
      throw InputError(kWhere, fmt::format("distinctPerToken means {} distinct experts ({} valid rows x top-k {}), "
                                           "not distinctExperts = {}",
                                           want, p.valid, K, p.n));
    if (want > E)
      throw InputError(kWhere, fmt::format("distinctPerToken needs {} valid rows x top-k {} = {} experts; the "
                                           "config has {}",
                                           p.valid, K, want, E));
    p.n = want;
  }
  if (p.n > 0) {
    if (p.valid < 1) throw InputError(kWhere, "steering the routing needs at least one valid row");
    const int most = std::min(E, p.valid * K);
    if (p.n < K || p.n > most)
      throw InputError(kWhere, fmt::format("distinctExperts = {}: expected top-k {} .. min(experts {}, valid rows {} "
                                           "x top-k) = {}",
                                           p.n, K, E, p.valid, most));
    if (o.ties) throw InputError(kWhere, "ties apply to natural routing only (distinctExperts = 0)");
    if (!o.paddedAt.empty())
      throw InputError(kWhere, "paddedAt with steered routing: steering takes the first S - paddedRows rows as the "
                               "valid ones (use paddedRows)");
    Rng g = stream(seed, 11);
    std::vector<int> all(static_cast<size_t>(E));
    for (int e = 0; e < E; ++e) all[e] = e;
    for (int i = 0; i < p.n; ++i) std::swap(all[i], all[i + g.below(E - i)]);  // Fisher-Yates prefix
    p.chosen.assign(all.begin(), all.begin() + p.n);
    for (int v = 0; v < p.valid; ++v) {
      std::vector<int> a;
      for (int j = 0; j < K; ++j) a.push_back(p.chosen[(v * K + j) % p.n]);
      p.assign.push_back(a);
    }
  }
  if (o.ties) p.tieGroup = K >= 3 ? K - 1 : K + 1;
  if (o.nanLogits) {
    std::vector<bool> inC(static_cast<size_t>(E), false);
    for (int e : p.chosen) inC[e] = true;
    std::vector<int> out;
    for (int e = 0; e < E; ++e)
      if (!inC[e]) out.push_back(e);
    const int want = std::max(1, E / 8);
    if (p.n > 0 && out.empty())
      throw InputError(kWhere, "nanLogits with distinctExperts = experts leaves no expert outside the steered set");
    if (p.n == 0 && E - want < K)
      throw InputError(kWhere, fmt::format("nanLogits: {} NaN experts leave fewer than top-k {}", want, K));
    Rng g = stream(seed, 12);
    const int cnt = std::min<int>(want, static_cast<int>(out.size()));
    for (int i = 0; i < cnt; ++i) std::swap(out[i], out[i + g.below(static_cast<int>(out.size()) - i)]);
    p.nanExperts.assign(out.begin(), out.begin() + cnt);
    std::sort(p.nanExperts.begin(), p.nanExperts.end());
  }
  return p;
}

HostTensor bf16Of(const std::vector<float>& v, std::vector<int64_t> shape) {
  HostTensor t = HostTensor::zeros(DType::BF16, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.as<uint16_t>()[i] = num::f32ToBf16(v[i]);
  return t;
}

/// The slots: a row's index, -1 for the last paddedRows rows and the paddedAt rows.
HostTensor slotsOf(int S, const LaunchInputOptions& o) {
  HostTensor slots = HostTensor::zeros(DType::I64, {S});
  for (int t = 0; t < S; ++t) slots.as<int64_t>()[t] = t < S - o.paddedRows ? t : -1;
  for (int t : o.paddedAt) slots.as<int64_t>()[t] = -1;
  return slots;
}

/// push + reduce's results (the MoE reference's inputs) of m's parts and residual: sres, ssq.
void addAllReduceResults(int S, int TP, int H, TensorMap& m) {
  std::vector<const uint16_t*> parts;
  for (int r = 0; r < TP; ++r) parts.push_back(m.at(rankName("part", r)).as<uint16_t>());
  const AllReduceResult ar = referenceAllReduce(S, H, parts, m.at("res_in").as<uint16_t>());
  HostTensor sres = HostTensor::zeros(DType::F32, {S, H});
  std::memcpy(sres.data.data(), ar.sres.data(), sres.data.size());
  const int64_t T = static_cast<int64_t>(ar.ssq.size()) / S;
  HostTensor ssq = HostTensor::zeros(DType::F32, {S, T});
  std::memcpy(ssq.data.data(), ar.ssq.data(), ssq.data.size());
  m["sres"] = std::move(sres);
  m["ssq"] = std::move(ssq);
}

/// Rank `rank`'s w13 / s13 / w2 / s2 of the logical model `seed`, in the contract layout (the
/// scales in layout `sl`, holdScales of the row-major values).
void rankWeights(const ModelConfig& cfg, int TP, int rank, uint64_t seed, ScaleLayout sl, TensorMap& out) {
  const int64_t e1 = cfg.expertsWithShared(), H = cfg.hidden, I = cfg.intermediate, IP = cfg.interPerRank(TP);
  const int base13 = 127 - ceilLog2(std::sqrt(double(H)) * 1.5);  // gate / up std about 1 .. 4
  const int base2 = 127 - ceilLog2(std::sqrt(double(I)) * 3.0);   // down std about 1
  HostTensor w13 = HostTensor::zeros(DType::U8, {e1, 2 * IP, H / 2});
  HostTensor s13 = HostTensor::zeros(DType::U8, {e1, 2 * IP, H / 32});
  HostTensor w2 = HostTensor::zeros(DType::U8, {e1, H, IP / 2});
  HostTensor s2 = HostTensor::zeros(DType::U8, {e1, H, IP / 32});
  const int64_t kb13 = H / 2, kb2 = IP / 2;
  for (int64_t e = 0; e < e1; ++e) {
    uint8_t* w13e = w13.data.data() + e * 2 * IP * kb13;
    for (int64_t r = 0; r < 2 * IP; ++r) {
      const int64_t src = r < IP ? rank * IP + r : I + rank * IP + (r - IP);  // logical gate / up row
      for (int64_t c = 0; c < kb13; c += 16) {  // 16 bytes stay contiguous in the shuffle
        const uint64_t lo = weightBits(seed, kW13, e, src, c / 8), hi = weightBits(seed, kW13, e, src, c / 8 + 1);
        uint8_t* d = w13e + shuffledOffset16x16(r, c, kb13);
        std::memcpy(d, &lo, 8);  // little-endian hosts (the project's: x86-64 / aarch64)
        std::memcpy(d + 8, &hi, 8);
      }
      for (int64_t b = 0; b < H / 32; ++b)
        s13.data[(e * 2 * IP + r) * (H / 32) + b] = scaleOf(weightByte(seed, kS13, e, src, b), base13);
    }
    uint8_t* w2e = w2.data.data() + e * H * kb2;
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t c = 0; c < kb2; c += 16) {
        const int64_t lc = rank * kb2 + c;  // logical byte column (I / 2 a row)
        const uint64_t lo = weightBits(seed, kW2, e, h, lc / 8), hi = weightBits(seed, kW2, e, h, lc / 8 + 1);
        uint8_t* d = w2e + shuffledOffset16x16(h, c, kb2);
        std::memcpy(d, &lo, 8);
        std::memcpy(d + 8, &hi, 8);
      }
      for (int64_t b = 0; b < IP / 32; ++b)
        s2.data[(e * H + h) * (IP / 32) + b] = scaleOf(weightByte(seed, kS2, e, h, rank * (IP / 32) + b), base2);
    }
  }
  out[rankName("w13", rank)] = std::move(w13);
  out[rankName("s13", rank)] = holdScales(s13, sl);
  out[rankName("w2", rank)] = std::move(w2);
  out[rankName("s2", rank)] = holdScales(s2, sl);
}

const HostTensor& need(const TensorMap& in, const std::string& name, DType dt, const std::vector<int64_t>& shape) {
  return runtime::requireTensor(in, name, dt, shape, kWhere);
}

// ---- EdgeCases values ----
// Every draw is a statement of its own: the draws of one expression (a call's arguments, the
// operands of |) may be evaluated in any order, and GCC and clang differ. The order is GCC 12's
// for the one-expression forms these replaced (a call's arguments right to left, | left to
// right), so the streams the tests were written against stay.

uint16_t bf(uint32_t sign, uint32_t exp, uint32_t mant) {
  return static_cast<uint16_t>(sign << 15 | (exp & 0xff) << 7 | (mant & 0x7f));
}
uint32_t bfExp(uint16_t b) { return (b >> 7) & 0xff; }

/// A bf16 with exponent expBase + [0, expSpan): the mantissa drawn first, then the exponent, then the sign.
uint16_t drawBf(Rng& g, uint32_t expBase, uint32_t expSpan) {
  const uint32_t mant = g.ubelow(128);
  const uint32_t exp = expBase + g.ubelow(expSpan);
  const uint32_t sign = g.bit();
  return bf(sign, exp, mant);
}
/// An f32 with exponent expBase + [0, expSpan): the sign drawn first, then the exponent, then the mantissa.
float drawF32(Rng& g, uint32_t expBase, uint32_t expSpan) {
  const uint32_t sign = g.bit();
  const uint32_t exp = expBase + g.ubelow(expSpan);
  const uint32_t mant = g.ubelow(1u << 23);
  return num::bitsToF32(sign << 31 | exp << 23 | mant);
}

/// A value of moderate magnitude (2^-8 .. 2^5).
uint16_t moderate(Rng& g) { return drawBf(g, 127 - 8, 13); }

/// Any finite value: mostly moderate, some zeros, large, tiny and subnormal ones. Large ones
/// stay below 2^57 so a 32-column sum of squares stays finite.
uint16_t anyValue(Rng& g) {
  const uint32_t k = g.ubelow(100);
  if (k < 70) return moderate(g);
  if (k < 78) return bf(g.bit(), 0, 0);            // +0 / -0
  if (k < 86) return drawBf(g, 127 + 30, 27);      // large: 2^30 .. 2^56
  if (k < 90) {                                    // subnormal
    const uint32_t mant = 1 + g.ubelow(127);
    return bf(g.bit(), 0, mant);
  }
  if (k < 94) return drawBf(g, 1, 16);             // tiny normal
  return drawBf(g, 127 - 30, 50);                  // wide: 2^-30 .. 2^19
}

/// EdgeCases' MoE half: norm_w, router_w, bias, every rank's w13 / s13 / w2 / s2 from one
/// sequential stream (in that order), into `m`.
void edgeCaseMoe(const ModelConfig& cfg, int TP, uint64_t seed, const LaunchInputOptions& opt, TensorMap& m) {
  Rng g(seed * 0x9e3779b97f4a7c15ull + 0x6d6f65ull);
  const int64_t H = cfg.hidden, E = cfg.experts, E1 = cfg.expertsWithShared(), I = cfg.intermediate;
  HostTensor normW = HostTensor::zeros(DType::BF16, {H});
  for (int64_t i = 0; i < H; ++i) normW.as<uint16_t>()[i] = drawBf(g, 127 - 8, 8);
  HostTensor routerW = HostTensor::zeros(DType::F32, {E, H});
  HostTensor bias = HostTensor::zeros(DType::F32, {E});
  if (!opt.ties) {  // ties: zero weights and bias, every logit ties
    for (int64_t i = 0; i < E * H; ++i) routerW.as<float>()[i] = drawF32(g, 127 - 9, 5);
    for (int64_t e = 0; e < E; ++e) bias.as<float>()[e] = drawF32(g, 127 - 8, 4);
  }
  if (opt.sameExpert) {
    for (int64_t e = 0; e < E; ++e) bias.as<float>()[e] = 0.0f;
    for (int e : sameExpertSet(cfg)) bias.as<float>()[e] = 4.0f;  // topk experts, every row
  }
  if (opt.nanLogits) {
    const float nan = num::bitsToF32(0x7fc00000u);
    for (int64_t e = 0; e < E; ++e) {
      if (e % 5 == 1) routerW.as<float>()[e * H + (e * 37) % H] = nan;  // logit NaN: sigmoid NaN, weight 0
      if (e % 7 == 3) bias.as<float>()[e] = nan;                         // selection value NaN: never preferred
    }
  }
  m["norm_w"] = std::move(normW);
  m["router_w"] = std::move(routerW);
  m["bias"] = std::move(bias);
  if (!opt.expertWeights) return;

  TensorMap logical;
  auto bytes = [&](std::vector<int64_t> shape, bool scale) {
    HostTensor t = HostTensor::zeros(DType::U8, std::move(shape));
    uint8_t* p = t.data.data();
    const int64_t n = static_cast<int64_t>(t.data.size());
    if (scale) {
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(127 - 4 + g.ubelow(5));
    } else {
      for (int64_t i = 0; i < n; i += 8) {
        uint64_t v = g.next();
        for (int64_t k = i; k < std::min(n, i + 8); ++k, v >>= 8) p[k] = static_cast<uint8_t>(v);
      }
    }
    return t;
  };
  logical["w13"] = bytes({E1, 2 * I, H / 2}, false);
  logical["s13"] = bytes({E1, 2 * I, H / 32}, true);
  logical["w2"] = bytes({E1, H, I / 2}, false);
  logical["s2"] = bytes({E1, H, I / 32}, true);
  for (int r = 0; r < TP; ++r)
    for (auto& [name, t] : rankExpertTensors(cfg, TP, r, logical, opt.scales)) m[rankName(name, r)] = std::move(t);
}

}  // namespace

std::string LaunchInputOptions::describe() const {
  std::string s = values == InputValues::EdgeCases ? "edge-cases"
                  : distinctExperts                ? fmt::format("experts={}", distinctExperts)
                                                   : "natural";
  if (paddedRows) s += fmt::format(" padded={}", paddedRows);
  if (!paddedAt.empty()) s += fmt::format(" padded-at={}", fmt::join(paddedAt, ","));
  if (ties) s += " ties";
  if (nanLogits) s += " nan-logits";
  if (sameExpert) s += " same-expert";
  if (distinctPerToken) s += " distinct-per-token";
  if (!oproj) s += " input=part";
  return s;
}

std::vector<int> steeredExperts(const ModelConfig& cfg, int S, int TP, uint64_t seed, const LaunchInputOptions& opt) {
  std::vector<int> c = planRouting(cfg, S, TP, seed, opt).chosen;
  std::sort(c.begin(), c.end());
  return c;
}

/// o_proj's inputs (LaunchInputOptions::oproj) into m, replacing part.rR by their o_proj partial
/// (OprojReference): awkward attention rows (tiny, zero, subnormal) and a logical e4m3fn weight
/// every TP splits alike. The values: docs/minimax-m3-kernel.md, "The inputs".
void addOprojInputs(const ModelConfig& cfg, int S, int TP, uint64_t seed, TensorMap& m, RefNumerics numerics) {
  const Layout L = Layout::make(cfg, S, TP, FfnInput::Attn);  // refuses a width TP does not divide
  const int H = cfg.hidden;
  const int64_t K = L.attnWidth, KT = K * TP;
  double ms = 0;  // mean square of the codes used
  for (uint32_t c = 0; c < 256; ++c)
    if ((c & 0x7f) != 0x7f) ms += std::pow(static_cast<double>(num::fp8E4m3ToF32(c)), 2) / 254.0;
  HostTensor ws = HostTensor::zeros(DType::F32, {H});
  {
    Rng g = stream(seed, 21);
    const float partStd = 0.5f / std::sqrt(static_cast<float>(TP));
    for (int n = 0; n < H; ++n)
      ws.as<float>()[n] = static_cast<float>(partStd / std::sqrt(ms * static_cast<double>(KT))) * (0.5f + g.uniform());
  }
  std::vector<std::vector<uint8_t>> wRank(static_cast<size_t>(TP), std::vector<uint8_t>(static_cast<size_t>(H) * K));
  for (int n = 0; n < H; ++n) {
    Rng g = stream(seed, 1000 + static_cast<uint64_t>(n));
    for (int64_t k = 0; k < KT; ++k) {
      uint8_t c = static_cast<uint8_t>(g.next() >> 56);
      if ((c & 0x7f) == 0x7f) c ^= 1;  // no NaN weights
      wRank[k / K][n * K + k % K] = c;
    }
  }
  Rng g = stream(seed, 22);
  for (int r = 0; r < TP; ++r) {  // the attention rows and the weight; part.rR below
    std::vector<float> x(static_cast<size_t>(S) * K);
    for (int t = 0; t < S; ++t)
      for (int64_t k = 0; k < K; ++k) {
        float v = g.normal();
        if (k % 97 == 5) v = ((g.next() & 1) ? 1.0f : -1.0f) * (4.0f + 12.0f * g.uniform());  // the row's amax
        if (k % 101 == 7) v = std::ldexp(g.normal(), -130);  // a bf16 subnormal
        if (t % 4 == 3) v = std::ldexp(v, -100);
        if (S >= 3 && t == 2) v = 0.0f;
        x[static_cast<size_t>(t) * K + k] = v;
      }
    const std::vector<uint8_t> w = shuffle16x16(wRank[r].data(), H, K);
    HostTensor wt = HostTensor::zeros(DType::U8, {H, K});
    std::memcpy(wt.data.data(), w.data(), w.size());
    m[rankName("attn", r)] = bf16Of(x, {S, K});
    m[rankName("wo", r)] = std::move(wt);
  }
  m["wo_scale"] = std::move(ws);
  rederiveOprojPartials(cfg, S, TP, m, numerics);
}

void rederiveOprojPartials(const ModelConfig& cfg, int S, int TP, TensorMap& m, RefNumerics numerics) {
  const Layout L = Layout::make(cfg, S, TP, FfnInput::Attn);
  const int H = cfg.hidden;
  const int64_t K = L.attnWidth;
  const HostTensor& ws = m.at("wo_scale");
  for (int r = 0; r < TP; ++r) {
    const QuantRows q = quantizeRows(m.at(rankName("attn", r)).as<uint16_t>(), S, K, numerics);
    const std::vector<uint16_t> part = oprojPartial(q, m.at(rankName("wo", r)).data.data(), ws.as<float>(), S, K, H);
    HostTensor p = HostTensor::zeros(DType::BF16, {S, H});
    std::memcpy(p.data.data(), part.data(), p.data.size());
    m[rankName("part", r)] = std::move(p);
  }
}

std::vector<std::string> rederiveDerivedInputs(const ModelConfig& cfg, int S, int TP, FfnInput input, TensorMap& m,
                                               RefNumerics numerics) {
  // What the derivations read, checked first (they index the raw bytes).
  const char* where = "saved launch inputs";
  const int H = cfg.hidden;
  if (input == FfnInput::Attn) {
    const int64_t K = Layout::make(cfg, S, TP, FfnInput::Attn).attnWidth;
    runtime::requireTensor(m, "wo_scale", DType::F32, {H}, where);
    for (int r = 0; r < TP; ++r) {
      runtime::requireTensor(m, rankName("attn", r), DType::BF16, {S, K}, where);
      runtime::requireTensor(m, rankName("wo", r), DType::U8, {H, K}, where);
    }
  }
  const bool allReduce = m.count("sres") || m.count("ssq");
  if (allReduce) {
    runtime::requireTensor(m, "res_in", DType::BF16, {S, H}, where);
    if (input != FfnInput::Attn)
      for (int r = 0; r < TP; ++r) runtime::requireTensor(m, rankName("part", r), DType::BF16, {S, H}, where);
  }
  std::vector<std::string> derived;
  if (input == FfnInput::Attn)
    for (int r = 0; r < TP; ++r) derived.push_back(rankName("part", r));
  if (allReduce) derived.insert(derived.end(), {"sres", "ssq"});
  TensorMap before;  // the derived tensors alone (never the weights)
  for (const std::string& n : derived)
    if (auto it = m.find(n); it != m.end()) before.emplace(n, it->second);
  if (input == FfnInput::Attn) rederiveOprojPartials(cfg, S, TP, m, numerics);
  if (allReduce) addAllReduceResults(S, TP, H, m);
  std::vector<std::string> changed;
  for (const std::string& n : derived) {
    auto it = before.find(n);
    if (it == before.end() || it->second.shape != m.at(n).shape || it->second.data != m.at(n).data) changed.push_back(n);
  }
  return changed;
}

TensorMap makeLaunchInputs(const ModelConfig& cfg, int S, int TP, uint64_t seed, const LaunchInputOptions& opt) {
  const RoutingPlan p = planRouting(cfg, S, TP, seed, opt);
  const int H = cfg.hidden, E = cfg.experts, K = cfg.topk;
  if (opt.values == InputValues::EdgeCases) {
    TensorMap m = makeInputs(cfg, S, TP, seed);
    m["slots"] = slotsOf(S, opt);
    if (opt.oproj) addOprojInputs(cfg, S, TP, seed, m, opt.numerics);
    addAllReduceResults(S, TP, H, m);
    edgeCaseMoe(cfg, TP, seed, opt, m);
    return m;
  }
  const int blk = H / 16;  // a row's signature block (hidden is a multiple of 256)
  TensorMap m;

  // ---- activations: parts summing to about N(0, 1/4), residual about N(0, 1/4) + a row's signature ----
  {
    Rng g = stream(seed, 1);
    std::vector<std::vector<float>> parts(static_cast<size_t>(TP), std::vector<float>(size_t(S) * H));
    std::vector<float> res(size_t(S) * H);
    const float partStd = 0.5f / std::sqrt(static_cast<float>(TP));  // the reduced sum: about N(0, 1/4)
    for (int t = 0; t < S; ++t)
      for (int c = 0; c < H; ++c) {
        const size_t i = size_t(t) * H + c;
        for (int r = 0; r < TP; ++r) parts[r][i] = g.normal() * partStd;
        const bool sig = p.n > 0 && t < p.valid && c / blk == t % 16;
        res[i] = g.normal() * 0.5f + (sig ? 4.0f : 0.0f);
      }
    for (int r = 0; r < TP; ++r) m[rankName("part", r)] = bf16Of(parts[r], {S, H});
    m["res_in"] = bf16Of(res, {S, H});
  }
  m["slots"] = slotsOf(S, opt);
  if (opt.oproj) addOprojInputs(cfg, S, TP, seed, m, opt.numerics);
  addAllReduceResults(S, TP, H, m);

  // ---- norm weight: bf16 in [-1/8, 1/8) ----
  {
    Rng g = stream(seed, 2);
    std::vector<float> w(static_cast<size_t>(H));
    for (float& x : w) x = g.sym(0.125f);
    m["norm_w"] = bf16Of(w, {H});
  }

  // ---- router and bias ----
  {
    Rng g = stream(seed, 3);
    HostTensor rw = HostTensor::zeros(DType::F32, {E, H});
    HostTensor bias = HostTensor::zeros(DType::F32, {E});
    float* w = rw.as<float>();
    float* b = bias.as<float>();
    if (p.n == 0) {
      // logits about N(0, 4): uniform rows of std 2 / sqrt(hidden) against unit-rms XN
      const float a = 2.0f * 1.7320508f / std::sqrt(static_cast<float>(H));
      for (int64_t i = 0; i < int64_t(E) * H; ++i) w[i] = g.sym(a);
      for (int e = 0; e < E; ++e) b[e] = g.sym(0.0625f);
      if (p.tieGroup > 0)  // a group shares its first expert's row and bias
        for (int e = 0; e < E; ++e) {
          const int lead = e - e % p.tieGroup;
          if (lead != e) {
            std::copy_n(w + int64_t(lead) * H, H, w + int64_t(e) * H);
            b[e] = b[lead];
          }
        }
    } else {
      for (int64_t i = 0; i < int64_t(E) * H; ++i) w[i] = g.sym(0.004f);
      std::vector<bool> inC(static_cast<size_t>(E), false);
      for (int e : p.chosen) inC[e] = true;
      for (int e = 0; e < E; ++e) b[e] = inC[e] ? 2.0f + g.uniform() * 0.0625f : g.sym(0.0625f);
      for (int v = 0; v < p.valid; ++v)
        for (int e : p.chosen) {
          const bool mine = std::find(p.assign[v].begin(), p.assign[v].end(), e) != p.assign[v].end();
          for (int c = (v % 16) * blk; c < (v % 16 + 1) * blk; ++c) w[int64_t(e) * H + c] = mine ? 0.08f : -0.08f;
        }
    }
    for (int e : p.nanExperts) w[int64_t(e) * H + (e * 7) % H] = std::numeric_limits<float>::quiet_NaN();
    m["router_w"] = std::move(rw);
    m["bias"] = std::move(bias);
  }

  // ---- expert weights, every rank ----
  if (opt.expertWeights)
    for (int r = 0; r < TP; ++r) rankWeights(cfg, TP, r, seed, opt.scales, m);
  (void)K;
  return m;
}

TensorMap makeInputs(const FfnVariant& v, uint64_t seed) {
  return makeInputs(v.cfg, v.layout.rows, v.layout.tp, seed, v.knobs.input);
}

TensorMap makeInputs(const ModelConfig& cfg, int rows, int tp, uint64_t seed, FfnInput input) {
  Layout::make(cfg, rows, tp, FfnInput::Part);  // validates S and TP
  const int H = cfg.hidden;
  Rng g(seed * 0x100000001b3ull + 0x6d696e696d6178ull);
  std::vector<HostTensor> parts;
  for (int r = 0; r < tp; ++r) parts.push_back(HostTensor::zeros(DType::BF16, {rows, H}));
  HostTensor res = HostTensor::zeros(DType::BF16, {rows, H});

  for (int64_t i = 0; i < int64_t{rows} * H; ++i) {
    uint16_t p[8] = {};
    uint16_t rv = 0;
    const uint32_t k = g.ubelow(100);
    if (k < 55) {  // independent values
      for (int r = 0; r < tp; ++r) p[r] = anyValue(g);
      rv = anyValue(g);
    } else if (k < 63) {  // negative zero everywhere: -0 + -0 stays -0
      for (int r = 0; r < tp; ++r) p[r] = 0x8000;
      rv = 0x8000;
    } else if (k < 73) {  // the all-reduce's f32 sum lands on a bf16 tie (x + half an ulp of x)
      const uint32_t s = g.bit(), e = 127 - 6 + g.ubelow(13);
      p[0] = bf(s, e, g.ubelow(128));
      if (tp > 1) p[1] = bf(s, e - 8, 0);
      for (int r = 2; r < tp; ++r) p[r] = bf(g.bit(), 0, 0);
      rv = anyValue(g);
    } else if (k < 83) {  // large values cancelling across ranks: the rank order decides the sum
      const uint16_t big = drawBf(g, 127 + 20, 20);
      p[0] = big;
      if (tp > 1) p[1] = big ^ 0x8000;
      for (int r = 2; r < tp; ++r) p[r] = moderate(g);
      rv = moderate(g);
    } else {  // the residual add lands on a bf16 tie: residual = half an ulp of the reduced value
      for (int r = 0; r < tp; ++r) p[r] = moderate(g);
      float acc = num::bf16ToF32(p[0]);
      for (int r = 1; r < tp; ++r) acc = acc + num::bf16ToF32(p[r]);
      const uint16_t reduced = num::f32ToBf16(acc);
      rv = bfExp(reduced) > 9 ? bf(g.bit(), bfExp(reduced) - 8, 0) : anyValue(g);
    }
    for (int r = 0; r < tp; ++r) parts[r].as<uint16_t>()[i] = p[r];
    res.as<uint16_t>()[i] = rv;
  }
  TensorMap m;
  for (int r = 0; r < tp; ++r) m[rankName("part", r)] = std::move(parts[r]);
  m["res_in"] = std::move(res);
  if (input == FfnInput::Attn) addOprojInputs(cfg, rows, tp, seed, m, RefNumerics::Ir);
  return m;
}

TensorMap rankContract(const TensorMap& in, int rank) {
  TensorMap w;
  for (const char* n : {"w13", "s13", "w2", "s2"}) {
    auto it = in.find(rankName(n, rank));
    if (it == in.end()) throw InputError(kWhere, fmt::format("missing tensor '{}'", rankName(n, rank)));
    w[n] = it->second;
  }
  for (const char* n : {"router_w", "bias", "norm_w"}) {
    auto it = in.find(n);
    if (it == in.end()) throw InputError(kWhere, fmt::format("missing tensor '{}'", n));
    w[n] = it->second;
  }
  return w;
}

TensorMap moeRouting(const ModelConfig& cfg, int S, int TP, const TensorMap& in) {
  // The same expressions, in the same order, as moeReference's norm, router and route.
  const MoeTiling T = MoeTiling::derive(cfg, TP, "moeRouting");
  const int H = cfg.hidden, E = cfg.experts, K = cfg.topk;
  const HostTensor& sres = need(in, "sres", DType::F32, {S, H});
  const HostTensor& ssq = need(in, "ssq", DType::F32, {});
  if (ssq.shape.size() != 2 || ssq.shape[0] != S || ssq.shape[1] < 1 || ssq.shape[1] > cfg.threads)
    throw InputError(kWhere, fmt::format("ssq: expected F32 [{}, T] with 1 <= T <= {}", S, cfg.threads));
  const int nParts = static_cast<int>(ssq.shape[1]);
  const HostTensor& normW = need(in, "norm_w", DType::BF16, {H});
  const HostTensor& routerW = need(in, "router_w", DType::F32, {E, H});
  const HostTensor& bias = need(in, "bias", DType::F32, {E});
  const std::vector<bool> valid = moeValidRows(in, S);
  const float eps = static_cast<float>(cfg.rmsEps);
  HostTensor logitsT = HostTensor::zeros(DType::F32, {S, E});
  HostTensor picksT = HostTensor::zeros(DType::I32, {S, K});
  HostTensor weightsT = HostTensor::zeros(DType::F32, {S, K});
  std::vector<float> xn(static_cast<size_t>(H));
  for (int t = 0; t < S; ++t) {
    const float var = blockSum(ssq.as<float>() + int64_t(t) * nParts, nParts, cfg.threads) / static_cast<float>(H);
    const float rstd = 1.0f / std::sqrt(var + eps);
    for (int c = 0; c < H; ++c) {
      const float x = sres.as<float>()[int64_t(t) * H + c];
      const float w = num::bf16ToF32(normW.as<uint16_t>()[c]);
      const float xr = x * rstd;
      const float o = xr * (1.0f + w);
      xn[c] = num::roundBf16(o);
    }
    for (int e = 0; e < E; ++e) {
      const float* wRow = routerW.as<float>() + int64_t(e) * H;
      logitsT.as<float>()[int64_t(t) * E + e] = routerLogit(wRow, xn.data(), T);
    }
    routeToken(logitsT.as<float>() + int64_t(t) * E, bias.as<float>(), E, K, static_cast<float>(cfg.routedScale),
               valid[t], picksT.as<int32_t>() + t * K, weightsT.as<float>() + t * K);
  }
  TensorMap out;
  out["logits"] = std::move(logitsT);
  out["picks"] = std::move(picksT);
  out["weights"] = std::move(weightsT);
  return out;
}

std::vector<int> distinctPicked(const HostTensor& picks) {
  if (picks.dtype != DType::I32) throw InputError(kWhere, "picks: expected I32 [S, topk]");
  std::set<int> s;
  for (int64_t i = 0; i < picks.numel(); ++i)
    if (picks.as<int32_t>()[i] >= 0) s.insert(picks.as<int32_t>()[i]);
  return {s.begin(), s.end()};
}

}  // namespace monogen::specs::minimax_m3
