#include "specs/minimax_m3/reference/MoeFloat64.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

namespace monogen::specs::minimax_m3 {

using runtime::DType;
using runtime::HostTensor;
using runtime::TensorMap;
namespace num = ir::num;

namespace {

constexpr double kU = 1.0 / 256.0;            // bf16 unit roundoff 2^-8 (8 significant bits)
constexpr double kUf = 1.0 / 16777216.0;      // f32 unit roundoff 2^-24

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double sq3(double e) { return e * e / 3.0; }  // the variance of a uniform error in [-e, e]

const HostTensor& get(const TensorMap& in, const std::string& name) {
  auto it = in.find(name);
  if (it == in.end()) throw InputError("moeFloat64: " + name, "missing input '" + name + "'");
  return it->second;
}

}  // namespace

MoeFloat64Result moeFloat64(const ModelConfig& cfg, int S, int TP, const TensorMap& in, MoeExperts experts) {
  const MoeTiling T = MoeTiling::derive(cfg, TP, "moeFloat64");
  const int H = cfg.hidden, E = cfg.experts, K = cfg.topk, IP = T.interPerRank;
  const HostTensor& sres = get(in, "sres");
  const HostTensor& normW = get(in, "norm_w");
  const HostTensor& routerW = get(in, "router_w");
  const HostTensor& bias = get(in, "bias");
  if (sres.dtype != DType::F32 || sres.shape != std::vector<int64_t>{S, H} || normW.numel() != H ||
      routerW.numel() != int64_t(E) * H || bias.numel() != E)
    throw InputError("moeFloat64", "sres / norm_w / router_w / bias do not match the config");
  for (int r = 0; r < TP; ++r) checkContract(cfg, TP, in, r, launchScaleLayout(in, r));
  const std::vector<bool> valid = moeValidRows(in, S);

  MoeFloat64Result R;
  R.rstd.assign(S, 0.0);
  R.logits.assign(size_t(S) * E, 0.0);
  R.picks.assign(size_t(S) * K, -1);
  R.weights.assign(size_t(S) * K, 0.0);
  R.margin.assign(S, 0.0);
  R.out.assign(size_t(S) * H, 0.0);
  R.bound.assign(size_t(S) * H, 0.0);
  R.sigma.assign(size_t(S) * H, 0.0);

  // ---- norm: xn = x / sqrt(mean(x^2) + eps) * (1 + w); its reference error: the f32 rstd
  // (sum of squares, division, sqrt: <= (H + 32) 2^-24 relative), 3 f32 ops, one bf16 rounding.
  std::vector<std::vector<double>> xn(S, std::vector<double>(H)), exn(S, std::vector<double>(H)),
      vxn(S, std::vector<double>(H));  // and the variance of the reference's error (rounding as
                                        // uniform noise in [-u |v|, u |v|]: variance (u v)^2 / 3)
  for (int t = 0; t < S; ++t) {
    double ss = 0;
    for (int c = 0; c < H; ++c) {
      const double x = sres.as<float>()[int64_t(t) * H + c];
      ss += x * x;
    }
    const double rstd = 1.0 / std::sqrt(ss / H + cfg.rmsEps);
    R.rstd[t] = rstd;
    for (int c = 0; c < H; ++c) {
      const double w = num::bf16ToF32(normW.as<uint16_t>()[c]);
      xn[t][c] = double(sres.as<float>()[int64_t(t) * H + c]) * rstd * (1.0 + w);
      exn[t][c] = (kU + (H + 40) * kUf) * std::fabs(xn[t][c]);
      vxn[t][c] = sq3(exn[t][c]);
    }
  }

  // ---- router + route: logits, sigmoid + bias selection (ties to the lower expert, NaN never
  // picked while a number is left), weights = routedScale * s_k / sum of the picked s.
  // The reference's weight error: the logits' (xn's error through the router weights, an f32
  // K-sum), the sigmoid's s (1 - s) slope, the renormalization, a few f32 ulps.
  std::vector<double> dw(size_t(S) * K, 0.0);  // bound on |reference weight - weight|
  std::vector<double> vw(size_t(S) * K, 0.0);  // its variance
  for (int t = 0; t < S; ++t) {
    std::vector<double> s(E), ds(E), val(E), vs(E);
    for (int e = 0; e < E; ++e) {
      const float* wr = routerW.as<float>() + int64_t(e) * H;
      double l = 0, labs = 0, dl = 0, vl = 0;
      for (int c = 0; c < H; ++c) {
        l += double(wr[c]) * xn[t][c];
        labs += std::fabs(double(wr[c]) * xn[t][c]);
        dl += std::fabs(double(wr[c])) * exn[t][c];
        vl += double(wr[c]) * double(wr[c]) * vxn[t][c];
      }
      vl += sq3((H + 8) * kUf * labs);
      dl += (H + 8) * kUf * labs;
      R.logits[size_t(t) * E + e] = l;
      s[e] = std::isnan(l) ? 0.0 : sigmoid(l);
      ds[e] = s[e] * (1 - s[e]) * dl + 8 * kUf * s[e];
      vs[e] = s[e] * (1 - s[e]) * s[e] * (1 - s[e]) * vl + sq3(8 * kUf * s[e]);
      val[e] = std::isnan(l) ? -std::numeric_limits<double>::infinity() : s[e] + double(bias.as<float>()[e]);
    }
    std::vector<bool> taken(E, false);
    double total = 0, dtotal = 0, vtotal = 0, lastVal = 0;
    std::vector<int> id(K);
    for (int k = 0; k < K; ++k) {
      int win = -1;
      for (int e = 0; e < E; ++e)
        if (!taken[e] && (win < 0 || val[e] > val[win])) win = e;
      taken[win] = true;
      id[k] = win;
      total += s[win];
      dtotal += ds[win];
      vtotal += vs[win];
      lastVal = val[win];
    }
    double bestLeft = -std::numeric_limits<double>::infinity();
    for (int e = 0; e < E; ++e)
      if (!taken[e]) bestLeft = std::max(bestLeft, val[e]);
    R.margin[t] = lastVal - bestLeft;
    const double tot = std::max(total, 1e-20);
    for (int k = 0; k < K; ++k) {
      R.picks[size_t(t) * K + k] = valid[t] ? id[k] : -1;
      const double w = cfg.routedScale * s[id[k]] / tot;
      R.weights[size_t(t) * K + k] = w;
      dw[size_t(t) * K + k] = cfg.routedScale * (ds[id[k]] / tot + s[id[k]] * dtotal / (tot * tot)) + 8 * kUf * w;
      // (the two terms are correlated: their variances added twice over)
      vw[size_t(t) * K + k] = 2 * cfg.routedScale * cfg.routedScale *
                                  (vs[id[k]] / (tot * tot) + s[id[k]] * s[id[k]] * vtotal / (tot * tot * tot * tot)) +
                              sq3(8 * kUf * w);
    }
  }

  // ---- experts, rank by rank: v[t][term][h] and its error ev, term 0 the shared expert,
  // 1 + k the routed picks; then the combine's bf16 roundings and the final sum.
  const double L = cfg.swigluLimit, A = cfg.swigluAlpha;
  std::vector<double> outAbs(size_t(S) * H, 0.0), rankErr(size_t(S) * H, 0.0), outVar(size_t(S) * H, 0.0);
  for (int r = 0; r < TP; ++r) {
    std::vector<double> v(size_t(S) * (K + 1) * H, 0.0), ev(v.size(), 0.0), vv(v.size(), 0.0);
    for (int e = 0; e <= E; ++e) {
      std::vector<std::pair<int, int>> uses;  // (t, term)
      for (int t = 0; t < S; ++t) {
        if (!valid[t]) continue;
        if (e == E) uses.push_back({t, 0});
        for (int k = 0; k < K; ++k)
          if (R.picks[size_t(t) * K + k] == e) uses.push_back({t, 1 + k});
      }
      if (uses.empty()) continue;
      const ExpertMatrix w13 = expertMatrix(get(in, rankName("w13", r)), get(in, rankName("s13", r)), e);
      const ExpertMatrix w2 = expertMatrix(get(in, rankName("w2", r)), get(in, rankName("s2", r)), e);
      std::vector<double> W13(size_t(2) * IP * H), W2(size_t(H) * IP);
      for (int i = 0; i < 2 * IP; ++i)
        for (int c = 0; c < H; ++c) W13[size_t(i) * H + c] = w13.value(i, c);
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < IP; ++i) W2[size_t(h) * IP + i] = w2.value(h, i);
      for (auto [t, term] : uses) {
        std::vector<double> mid(IP), em(IP), vm(IP);
        for (int i = 0; i < IP; ++i) {
          double g = 0, gAbs = 0, eg = 0, u = 0, uAbs = 0, eu = 0, vg = 0, vu = 0;
          for (int c = 0; c < H; ++c) {
            const double wg = W13[size_t(i) * H + c], wu = W13[size_t(IP + i) * H + c];
            g += wg * xn[t][c];
            gAbs += std::fabs(wg * xn[t][c]);
            eg += std::fabs(wg) * exn[t][c];
            u += wu * xn[t][c];
            uAbs += std::fabs(wu * xn[t][c]);
            eu += std::fabs(wu) * exn[t][c];
            vg += wg * wg * vxn[t][c];
            vu += wu * wu * vxn[t][c];
          }
          vg += sq3((H + 8) * kUf * gAbs);
          vu += sq3((H + 8) * kUf * uAbs);
          eg += (H + 8) * kUf * gAbs;
          eu += (H + 8) * kUf * uAbs;
          const double gc = std::min(g, L), uc = std::max(std::min(u, L), -L);
          const double sg = sigmoid(A * gc);
          mid[i] = gc * sg * (uc + 1);
          // |d mid / d gate| (the unclamped slope: conservative at the clamp), |d mid / d up|
          const double fg = std::fabs(uc + 1) * std::fabs(sg + A * gc * sg * (1 - sg));
          const double fu = std::fabs(gc * sg);
          em[i] = fg * eg + fu * eu + (kU + 16 * kUf) * std::fabs(mid[i]);
          vm[i] = fg * fg * vg + fu * fu * vu + sq3((kU + 16 * kUf) * std::fabs(mid[i]));
        }
        for (int h = 0; h < H; ++h) {
          double acc = 0, abs = 0, err = 0, var = 0;
          for (int i = 0; i < IP; ++i) {
            const double w = W2[size_t(h) * IP + i];
            acc += w * mid[i];
            abs += std::fabs(w * mid[i]);
            err += std::fabs(w) * em[i];
            var += w * w * vm[i];
          }
          const size_t at = (size_t(t) * (K + 1) + term) * H + h;
          v[at] = acc;
          ev[at] = err + (IP + 8) * kUf * abs;
          vv[at] = var + sq3((IP + 8) * kUf * abs);
        }
      }
    }
    // combine: tot = bf16(shared); tot = bf16(tot + bf16(w_k v_k)) in top-k order
    for (int t = 0; t < S; ++t) {
      if (!valid[t]) continue;
      for (int h = 0; h < H; ++h) {
        double tot = 0, err = 0, var = 0;
        if (experts != MoeExperts::Routed) {
          const size_t at = (size_t(t) * (K + 1)) * H + h;
          tot = v[at];
          err = ev[at] + kU * std::fabs(v[at]);
          var = vv[at] + sq3(kU * std::fabs(v[at]));
        }
        if (experts != MoeExperts::Shared)
          for (int k = 0; k < K; ++k) {
            const size_t at = (size_t(t) * (K + 1) + 1 + k) * H + h;
            const double w = R.weights[size_t(t) * K + k];
            const double p = w * v[at];
            err += std::fabs(w) * ev[at] + std::fabs(v[at]) * dw[size_t(t) * K + k] + (kU + kUf) * std::fabs(p);
            var += w * w * vv[at] + v[at] * v[at] * vw[size_t(t) * K + k] + sq3(kU * std::fabs(p));
            tot += p;
            err += kU * (std::fabs(tot) + err);
            var += sq3(kU * std::fabs(tot));
          }
        R.out[size_t(t) * H + h] += tot;
        outAbs[size_t(t) * H + h] += std::fabs(tot);
        rankErr[size_t(t) * H + h] += err;
        outVar[size_t(t) * H + h] += var;
      }
    }
  }
  // final: the f32 rank sum (TP adds) and the bf16 out
  for (size_t i = 0; i < R.out.size(); ++i) {
    const double e1 = rankErr[i] + TP * kUf * (outAbs[i] + rankErr[i]);
    R.bound[i] = 2.0 * (e1 + kU * (std::fabs(R.out[i]) + e1));
    R.sigma[i] = std::sqrt(outVar[i] + sq3(TP * kUf * outAbs[i]) + sq3(kU * std::fabs(R.out[i])));
  }
  return R;
}

}  // namespace monogen::specs::minimax_m3
