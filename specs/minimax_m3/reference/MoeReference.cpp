#include "specs/minimax_m3/reference/MoeReference.h"

#include "runtime/Gfx950RunNumerics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "specs/minimax_m3/kernel/WeightContract.h"
#include "specs/minimax_m3/reference/MoeA8w4Reference.h"

namespace monogen::specs::minimax_m3 {

using runtime::DType;
using runtime::HostTensor;
using runtime::TensorMap;
namespace num = ir::num;

// ---------------------------------------------------------------- declared scalar models

float moeDiv(float a, float b, RefNumerics n) { return n == RefNumerics::Gfx950Run ? runtime::gfx950run::div(a, b) : a / b; }

float moeExp2(float x, RefNumerics n) { return n == RefNumerics::Gfx950Run ? runtime::gfx950run::exp2(x) : ir::num::exp2(x); }

float moeSigmoid(float x, RefNumerics n) {
  const float kLog2e = 1.44269504088896340736f;  // f32(log2 e) = 0x3fb8aa3b
  const float t = (-x) * kLog2e;
  const float e = moeExp2(t, n);
  const float d = 1.0f + e;
  return moeDiv(1.0f, d, n);
}

float swigluOai(float gate, float up, float limit, float alpha, RefNumerics n) {
  const float g = std::fmin(gate, limit);                 // minNum
  const float u = std::fmax(std::fmin(up, limit), -limit);
  const float s = moeSigmoid(alpha * g, n);
  const float gs = g * s;
  return gs * (u + 1.0f);
}

float a16w4Dot(float acc, const float* wRow, const float* x, int64_t k, int step0, int steps) {
  for (int s = step0; s < step0 + steps; ++s)
    for (int d = 0; d < 4; ++d)          // the step's 4 chained MFMAs
      for (int g = 0; g < 4; ++g)        // MFMA-K kk = 8 g + e ascending
        for (int e = 0; e < 8; ++e) {
          const int64_t kk = int64_t(128) * s + 32 * g + 8 * d + e;
          float p = 0.0f;                // past the row: a +0 product
          if (kk < k) p = wRow[kk] * x[kk];
          acc = acc + p;
        }
  return acc;
}

float routerLogit(const float* wRow, const float* x, const MoeTiling& t, RefNumerics n) {
  float tot = 0.0f;
  for (int q = 0; q < t.routeQuarters; ++q) {
    float part = 0.0f;
    for (int p = 0; p < t.routePartsPerQuarter; ++p) part = part + routerPart(wRow, x, t, q * t.routePartsPerQuarter + p, n);
    tot = tot + part;
  }
  return tot;
}

float routerPart(const float* wRow, const float* x, const MoeTiling& t, int part, RefNumerics n) {
  float tot = 0.0f;
  for (int w = 0; w < t.waves; ++w) {
    float acc = 0.0f;
    const int base = part * t.routerK + w * t.routerWaveK;
    for (int ch = 0; ch < t.routerChunks; ++ch)
      for (int m = 0; m < 4; ++m)        // (h, lo/hi) = (m / 2, m % 2): one f32 MFMA each
        for (int g = 0; g < 4; ++g) {    // K slot = lane group, ascending
          const int k = base + 16 * ch + 4 * g + m;
          if (n == RefNumerics::Gfx950Run) {
            acc = std::fma(wRow[k], x[k], acc);  // the executor's f32 MFMA: an fma chain (gfx950run::mfmaF32Element)
          } else {
            const float p = wRow[k] * x[k];
            acc = acc + p;
          }
        }
    tot = tot + acc;                     // waves in order
  }
  return tot;
}

float blockSum(const float* vals, int n, int threads) {
  const int waves = threads / 64;
  float tot = 0.0f;
  for (int w = 0; w < waves; ++w) {
    float v[64];
    for (int l = 0; l < 64; ++l) v[l] = (w * 64 + l < n) ? vals[w * 64 + l] : 0.0f;
    for (int off : {32, 16, 8, 4, 2, 1}) {
      float nv[64];
      for (int l = 0; l < 64; ++l) nv[l] = v[l] + v[l ^ off];
      std::copy(nv, nv + 64, v);
    }
    tot = tot + v[0];                    // lane 0's sum, waves in order
  }
  return tot;
}

// ---------------------------------------------------------------- helpers

void routeToken(const float* logits, const float* bias, int E, int K, float routedScale, bool valid,
                int32_t* picks, float* weights, RefNumerics n) {
  const float neg = -std::numeric_limits<float>::infinity();
  std::vector<float> sc(static_cast<size_t>(E)), val(static_cast<size_t>(E));
  for (int e = 0; e < E; ++e) {
    sc[e] = moeSigmoid(logits[e], n);
    val[e] = sc[e] + bias[e];
    if (std::isnan(val[e])) val[e] = neg;
    if (std::isnan(sc[e])) sc[e] = 0.0f;
  }
  std::vector<bool> taken(static_cast<size_t>(E), false);
  float total = 0.0f;
  std::vector<int> id(static_cast<size_t>(K));
  std::vector<float> w(static_cast<size_t>(K));
  for (int k = 0; k < K; ++k) {
    float best = neg;
    for (int e = 0; e < E; ++e) best = std::fmax(best, taken[e] ? neg : val[e]);
    int win = -1;  // the lowest untaken expert whose value is best: the k picks are distinct
    for (int e = E - 1; e >= 0; --e)
      if (!taken[e] && val[e] == best) win = e;
    if (win < 0) throw InputError("routeToken", fmt::format("top-k {} of {} experts: expected top-k <= experts", K, E));
    taken[win] = true;
    w[k] = best > neg ? sc[win] : 0.0f;  // an unusable score (NaN or -inf) weighs 0
    total = total + w[k];
    id[k] = win;
  }
  const float scale = moeDiv(routedScale, std::fmax(total, 1e-20f), n);
  for (int k = 0; k < K; ++k) {
    picks[k] = valid ? id[k] : -1;
    weights[k] = w[k] * scale;
  }
}

namespace {

const HostTensor& need(const TensorMap& in, const std::string& name, DType dt, const std::vector<int64_t>& shape) {
  return runtime::requireTensor(in, name, dt, shape, "moeReference: " + name);
}

std::vector<float> bf16Row(const uint16_t* p, int64_t n) {
  std::vector<float> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[i] = num::bf16ToF32(p[i]);
  return r;
}

// An expert matrix dequantized to the MFMA's bf16 A operands, as f32 (exact; see a16w4Dot).
std::vector<float> dequant(const ExpertMatrix& m) {
  std::vector<float> w(static_cast<size_t>(m.rows * m.k));
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t k = 0; k < m.k; ++k) w[r * m.k + k] = num::roundBf16(m.value(r, k));
  return w;
}

/// Row t of the reference's published XN (bf16 bits).
const uint16_t* xnRowBits(const TensorMap& out, int t, int H) { return out.at("xn").as<uint16_t>() + int64_t(t) * H; }

}  // namespace

std::vector<bool> moeValidRows(const TensorMap& in, int S) {
  std::vector<bool> v(static_cast<size_t>(S), true);
  if (auto it = in.find("slots"); it != in.end()) {
    const HostTensor& t = it->second;
    if (t.dtype != DType::I64 || t.numel() != S)
      throw InputError("moeReference: slots", fmt::format("expected I64 [{}], given {} with {} elements", S,
                                                           runtime::dtypeName(t.dtype), t.numel()));
    for (int i = 0; i < S; ++i) v[i] = t.as<int64_t>()[i] >= 0;
  } else if (auto it2 = in.find("valid"); it2 != in.end()) {
    const HostTensor& t = it2->second;
    if (t.dtype != DType::I32 || t.numel() != S)
      throw InputError("moeReference: valid", fmt::format("expected I32 [{}], given {} with {} elements", S,
                                                           runtime::dtypeName(t.dtype), t.numel()));
    for (int i = 0; i < S; ++i) v[i] = t.as<int32_t>()[i] != 0;
  }
  return v;
}

// ---------------------------------------------------------------- the launch

TensorMap moeReference(const ModelConfig& cfg, int S, int TP, const TensorMap& in, MoeExperts experts,
                       const TensorMap* acts, MoeQuant quant, RefNumerics numerics) {
  const MoeTiling T = MoeTiling::derive(cfg, TP, "moeReference");
  if (S < 1 || S > cfg.maxRows || S > 16)
    throw InputError("moeReference", fmt::format("S = {}: expected 1..{}", S, std::min(cfg.maxRows, 16)));
  const int H = cfg.hidden, E = cfg.experts, K = cfg.topk, IP = T.interPerRank;
  const HostTensor& sres = need(acts ? *acts : in, "sres", DType::F32, {S, H});
  const HostTensor& ssq = need(acts ? *acts : in, "ssq", DType::F32, {});
  if (ssq.shape.size() != 2 || ssq.shape[0] != S || ssq.shape[1] < 1 || ssq.shape[1] > cfg.threads)
    throw InputError("moeReference: ssq", fmt::format("expected F32 [{}, T] with 1 <= T <= {}", S, cfg.threads));
  const int nParts = static_cast<int>(ssq.shape[1]);
  const HostTensor& normW = need(in, "norm_w", DType::BF16, {H});
  const HostTensor& routerW = need(in, "router_w", DType::F32, {E, H});
  const HostTensor& bias = need(in, "bias", DType::F32, {E});
  struct RankWeights {
    const HostTensor *w13, *s13, *w2, *s2;
  };
  std::vector<RankWeights> rankW;
  for (int r = 0; r < TP; ++r) {
    try {
      checkContract(cfg, TP, in, r, launchScaleLayout(in, r));
    } catch (const InputError& e) {
      throw InputError(fmt::format("moeReference: rank {}", r), e.what());
    }
    auto at = [&](const char* n) { return &in.at(rankName(n, r)); };
    rankW.push_back({at("w13"), at("s13"), at("w2"), at("s2")});
  }
  const std::vector<bool> valid = moeValidRows(in, S);

  TensorMap out;
  // ---- norm (stage_norm): Gemma RMSNorm of SRES -> XN ----
  // var = block_sum(the token's SSQ parts) / f32(hidden); rstd = 1 / sqrt(var + f32(eps))
  // (IEEE sqrt and division); xn = bf16((x * rstd) * (1 + w)) with w = the bf16 norm weight.
  HostTensor rstdT = HostTensor::zeros(DType::F32, {S});
  HostTensor xnT = HostTensor::zeros(DType::BF16, {S, H});
  std::vector<std::vector<float>> xn(static_cast<size_t>(S));  // f32(XN): the GEMVs' operand
  const float eps = static_cast<float>(cfg.rmsEps);
  for (int t = 0; t < S; ++t) {
    const float var =
        moeDiv(blockSum(ssq.as<float>() + int64_t(t) * nParts, nParts, cfg.threads), static_cast<float>(H), numerics);
    const float rstd = moeDiv(1.0f, std::sqrt(var + eps), numerics);
    rstdT.as<float>()[t] = rstd;
    xn[t].resize(static_cast<size_t>(H));
    for (int c = 0; c < H; ++c) {
      const float x = sres.as<float>()[int64_t(t) * H + c];
      const float w = num::bf16ToF32(normW.as<uint16_t>()[c]);
      const float xr = x * rstd;
      const float o = xr * (1.0f + w);
      const uint16_t b = num::f32ToBf16(o);
      xnT.as<uint16_t>()[int64_t(t) * H + c] = b;
      xn[t][c] = num::bf16ToF32(b);
    }
  }
  out["rstd"] = std::move(rstdT);
  out["xn"] = std::move(xnT);

  // ---- router (stage_router) + route's part sums (stage_route) ----
  // LOGIT[t][e][part] = routerPart(..); the route: a thread sums a quarter's parts in order
  // (0 + p_{q P/4} + ...), wave 0 the 4 quarter sums in order (0 + q0 + q1 + q2 + q3).
  HostTensor logitsT = HostTensor::zeros(DType::F32, {S, E});
  for (int t = 0; t < S; ++t)
    for (int e = 0; e < E; ++e) {
      const float* wRow = routerW.as<float>() + int64_t(e) * H;
      logitsT.as<float>()[int64_t(t) * E + e] = routerLogit(wRow, xn[t].data(), T, numerics);
    }

  // ---- route (stage_route): top-k of sigmoid + bias, weights renormalized x routed scale ----
  // (routeToken; a padded row's weights are still computed).
  HostTensor picksT = HostTensor::zeros(DType::I32, {S, K});
  HostTensor weightsT = HostTensor::zeros(DType::F32, {S, K});
  for (int t = 0; t < S; ++t)
    routeToken(logitsT.as<float>() + int64_t(t) * E, bias.as<float>(), E, K, static_cast<float>(cfg.routedScale),
               valid[t], picksT.as<int32_t>() + t * K, weightsT.as<float>() + t * K, numerics);

  // ---- table (load_table + shared_slot) ----
  struct Slot {
    int expert;
    std::vector<int> rows, picks;
  };
  std::vector<Slot> slots;
  {
    Slot sh{E, {}, {}};  // slot 0: the shared expert over the valid rows, ascending
    for (int t = 0; t < S; ++t)
      if (valid[t]) {
        sh.rows.push_back(t);
        sh.picks.push_back(K * S + t);
      }
    slots.push_back(sh);
    for (int e = 0; e < E; ++e) {  // then the picked experts ascending, their rows ascending
      Slot s{e, {}, {}};
      for (int t = 0; t < S; ++t) {
        int pick = -1;
        // a row's picks are distinct (routeToken), so at most one k names e
        for (int k = 0; k < K; ++k)
          if (picksT.as<int32_t>()[t * K + k] == e) pick = t * K + k;
        if (pick >= 0) {
          s.rows.push_back(t);
          s.picks.push_back(pick);
        }
      }
      if (!s.rows.empty()) slots.push_back(s);
    }
  }
  const int nSlots = static_cast<int>(slots.size());
  {
    HostTensor se = HostTensor::zeros(DType::I32, {nSlots});
    HostTensor sc = HostTensor::zeros(DType::I32, {nSlots});
    HostTensor sr = HostTensor::zeros(DType::I32, {nSlots, 16});
    HostTensor sp = HostTensor::zeros(DType::I32, {nSlots, 16});
    for (int u = 0; u < nSlots; ++u) {
      se.as<int32_t>()[u] = slots[u].expert;
      sc.as<int32_t>()[u] = static_cast<int>(slots[u].rows.size());
      for (int c = 0; c < 16; ++c) {
        const bool used = c < static_cast<int>(slots[u].rows.size());
        sr.as<int32_t>()[u * 16 + c] = used ? slots[u].rows[c] : -1;
        sp.as<int32_t>()[u * 16 + c] = used ? slots[u].picks[c] : -1;
      }
    }
    out["slot_expert"] = std::move(se);
    out["slot_count"] = std::move(sc);
    out["slot_row"] = std::move(sr);
    out["slot_pick"] = std::move(sp);
  }

  // ---- per rank: up, down, combine ----
  const float limit = static_cast<float>(cfg.swigluLimit), alpha = static_cast<float>(cfg.swigluAlpha);
  std::vector<HostTensor> partials;
  for (int r = 0; r < TP; ++r) {
    HostTensor midT = HostTensor::zeros(DType::BF16, {nSlots, 16, IP});
    HostTensor contribT = HostTensor::zeros(DType::F32, {int64_t(K + 1) * S, H});
    for (int u = 0; u < nSlots; ++u) {
      const Slot& sl = slots[u];
      if (sl.rows.empty()) continue;
      if (quant == MoeQuant::A8w4) {
        // up and down (A8W4): the slot's rows as moeReferenceA8w4's rows, in column order; the
        // down dot unweighted into CONTRIB (the combine below weighs it).
        const ExpertMatrix m13 = expertMatrix(*rankW[r].w13, *rankW[r].s13, sl.expert);
        const ExpertMatrix m2 = expertMatrix(*rankW[r].w2, *rankW[r].s2, sl.expert);
        const int rows = static_cast<int>(sl.rows.size());
        std::vector<uint16_t> x(static_cast<size_t>(rows) * H);
        for (int c = 0; c < rows; ++c)
          std::copy_n(xnRowBits(out, sl.rows[c], H), H, x.begin() + static_cast<ptrdiff_t>(c) * H);
        const std::vector<float> ones(static_cast<size_t>(rows), 1.0f);
        const A8w4Expert e = moeReferenceA8w4(
            x.data(), ones.data(), rows, {int(m13.rows), int(m13.k), m13.codes.data(), m13.scales.data()},
            {int(m2.rows), int(m2.k), m2.codes.data(), m2.scales.data()}, limit, alpha, numerics);
        for (int c = 0; c < rows; ++c) {
          std::copy_n(e.mid.begin() + static_cast<ptrdiff_t>(c) * IP, IP,
                      midT.as<uint16_t>() + (int64_t(u) * 16 + c) * IP);
          std::copy_n(e.down.begin() + static_cast<ptrdiff_t>(c) * H, H,
                      contribT.as<float>() + int64_t(sl.picks[c]) * H);
        }
        continue;
      }
      const std::vector<float> w13 = dequant(expertMatrix(*rankW[r].w13, *rankW[r].s13, sl.expert));
      // up (stage_up): tile pair j = rows 16 j .. of the gate and the up half. Wave w sums its
      // K steps [w upWaveSteps, ..) from 0 (a16w4Dot); gate = 0 + acc_0 + ... + acc_{waves-1}
      // (waves in order; a wave without steps adds its +0); the same for up;
      // MID = bf16(swigluOai(gate, up)).
      for (size_t c = 0; c < sl.rows.size(); ++c) {
        const float* x = xn[sl.rows[c]].data();
        for (int i = 0; i < IP; ++i) {
          float g = 0.0f, up = 0.0f;
          for (int w = 0; w < T.waves; ++w) {
            const int st0 = w * T.upWaveSteps;
            const int n = std::max(0, std::min(T.upWaveSteps, T.upSteps - st0));
            g = g + a16w4Dot(0.0f, w13.data() + int64_t(i) * H, x, H, st0, n);
            up = up + a16w4Dot(0.0f, w13.data() + int64_t(IP + i) * H, x, H, st0, n);
          }
          midT.as<uint16_t>()[(int64_t(u) * 16 + c) * IP + i] = num::f32ToBf16(swigluOai(g, up, limit, alpha, numerics));
        }
      }
      // down (stage_down): hidden row h of the slot's expert, one wave over all K2 steps from
      // 0 (a16w4Dot over I / TP, bf16 MID column) -> CONTRIB[pick][h] in f32, not rounded.
      const std::vector<float> w2 = dequant(expertMatrix(*rankW[r].w2, *rankW[r].s2, sl.expert));
      for (size_t c = 0; c < sl.rows.size(); ++c) {
        const std::vector<float> mid = bf16Row(midT.as<uint16_t>() + (int64_t(u) * 16 + c) * IP, IP);
        for (int h = 0; h < H; ++h)
          contribT.as<float>()[int64_t(sl.picks[c]) * H + h] =
              a16w4Dot(0.0f, w2.data() + int64_t(h) * IP, mid.data(), IP, 0, T.downSteps);
      }
    }
    // combine (stage_down's tail, AITER's stage 2): tot = bf16(CONTRIB[shared]) (unless
    // routed only); then for k in top-k order: tot = bf16(tot + bf16(weight_k * CONTRIB[t K + k]))
    // (unless shared only; starting from 0 when routed only). A padded row's partial is 0.
    HostTensor downT = HostTensor::zeros(DType::BF16, {S, H});
    for (int t = 0; t < S; ++t)
      for (int h = 0; h < H; ++h) {
        float tot = 0.0f;
        if (experts != MoeExperts::Routed)
          tot = num::roundBf16(contribT.as<float>()[int64_t(K * S + t) * H + h]);
        if (experts != MoeExperts::Shared)
          for (int k = 0; k < K; ++k) {
            const float w = weightsT.as<float>()[t * K + k];
            const float v = contribT.as<float>()[int64_t(t * K + k) * H + h];
            const float wv = num::roundBf16(w * v);
            tot = num::roundBf16(tot + wv);
          }
        downT.as<uint16_t>()[int64_t(t) * H + h] = num::f32ToBf16(valid[t] ? tot : 0.0f);
      }
    out[rankName("mid", r)] = std::move(midT);
    out[rankName("contrib", r)] = std::move(contribT);
    partials.push_back(downT);
    out[rankName("down", r)] = std::move(downT);
  }

  // ---- final: the ranks' bf16 partials summed in rank order in f32 (acc = p_0, then
  // acc = acc + p_r), rounded once to bf16 ----
  HostTensor outT = HostTensor::zeros(DType::BF16, {S, H});
  for (int64_t i = 0; i < int64_t(S) * H; ++i) {
    float acc = num::bf16ToF32(partials[0].as<uint16_t>()[i]);
    for (int r = 1; r < TP; ++r) acc = acc + num::bf16ToF32(partials[r].as<uint16_t>()[i]);
    outT.as<uint16_t>()[i] = num::f32ToBf16(acc);
  }
  out["logits"] = std::move(logitsT);
  out["picks"] = std::move(picksT);
  out["weights"] = std::move(weightsT);
  out["out"] = std::move(outT);
  return out;
}

}  // namespace monogen::specs::minimax_m3
