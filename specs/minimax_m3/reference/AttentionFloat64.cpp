#include "specs/minimax_m3/reference/AttentionFloat64.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "ir/Numerics.h"
#include "specs/minimax_m3/kernel/WeightContract.h"
#include "specs/minimax_m3/reference/AttentionNumerics.h"
#include "specs/minimax_m3/reference/AttentionPre.h"

namespace monogen::specs::minimax_m3 {

namespace num = ir::num;

namespace {

double bf(uint16_t b) { return num::bf16ToF32(b); }

/// Gemma RMSNorm then partial NeoX RoPE, in double.
std::vector<double> normRope(const double* e, const uint16_t* g, int D, double eps, const uint16_t* cs, int R) {
  double ss = 0;
  for (int d = 0; d < D; ++d) ss += e[d] * e[d];
  const double rstd = 1.0 / std::sqrt(ss / D + eps);
  std::vector<double> n(static_cast<size_t>(D)), out(n.size());
  for (int d = 0; d < D; ++d) n[d] = e[d] * rstd * (1.0 + bf(g[d]));
  const int half = R / 2;
  for (int d = 0; d < D; ++d) {
    if (d >= R) {
      out[d] = n[d];
      continue;
    }
    const double c = bf(cs[d % half]), s = bf(cs[half + d % half]);
    out[d] = d < half ? n[d] * c - n[d + half] * s : n[d] * c + n[d - half] * s;
  }
  return out;
}

}  // namespace

AttentionFloat64Result attentionFloat64(const ModelConfig& cfg, const AttentionLaunch& in, const AttentionResult& ref) {
  const int S = in.S, H = cfg.hidden, block = cfg.indexBlock;
  const double eps = cfg.rmsEps;
  const AttentionRows& rows = in.rows;
  AttentionFloat64Result res;
  res.rstd.assign(S, 0.0);
  std::vector<std::vector<double>> xn(S);
  for (int t = 0; t < S; ++t) {
    if (!rows.live(t)) continue;
    std::vector<double> acc(static_cast<size_t>(H));
    double ss = 0;
    for (int i = 0; i < H; ++i) {
      acc[i] = bf(in.x[static_cast<size_t>(t) * H + i]) + bf(in.res[static_cast<size_t>(t) * H + i]);
      ss += acc[i] * acc[i];
    }
    res.rstd[t] = 1.0 / std::sqrt(ss / H + eps);
    xn[t].resize(acc.size());
    for (int i = 0; i < H; ++i) xn[t][i] = acc[i] * res.rstd[t] * (1.0 + bf(in.weights.gIn[i]));
  }
  for (int r = 0; r < in.TP; ++r) {
    const AttentionShape sh = AttentionShape::make(cfg, in.TP, r, "attention float64");
    const int D = sh.headDim, ID = sh.indexDim, R = sh.rotaryDim, nRows = sh.rowsOf(in.fullLayer);
    const AttentionCaches& c = in.caches[r];  // before the launch
    const bool atom = in.mode == CacheMode::Atom;
    AttentionFloat64Rank out;
    out.q.assign(static_cast<size_t>(S) * sh.qHeads * D, 0.0);
    out.attn.assign(static_cast<size_t>(S) * sh.attnWidth(), 0.0);
    out.sameSelection.assign(static_cast<size_t>(S) * sh.kvHeads, true);
    out.margin.assign(out.sameSelection.size(), std::numeric_limits<double>::infinity());
    out.scoreScale.assign(out.sameSelection.size(), 0.0);
    // the launch's own keys, by (slot) and (index slot)
    std::map<int64_t, std::vector<double>> newK, newV, newIk;
    std::vector<std::vector<double>> iq(S);
    const std::vector<float> w = decodeQkvWeights(in.weights.wQkv[r].data(), nRows, H);
    for (int t = 0; t < S; ++t) {
      if (!rows.live(t)) continue;
      std::vector<double> qkv(static_cast<size_t>(nRows));
      for (int row = 0; row < nRows; ++row) {
        double dot = 0;
        for (int k = 0; k < H; ++k)
          dot += static_cast<double>(w[static_cast<size_t>(row) * H + k]) * xn[t][k];
        qkv[row] = dot * in.weights.sQkv[r][row];
      }
      const uint16_t* cs = &in.weights.cosSin[static_cast<size_t>(rows.positions[t]) * R];
      for (int i = 0; i < sh.qHeads; ++i) {
        const auto q = normRope(&qkv[sh.qOff + i * D], in.weights.gQ.data(), D, eps, cs, R);
        std::copy(q.begin(), q.end(), out.q.begin() + (static_cast<size_t>(t) * sh.qHeads + i) * D);
      }
      for (int h = 0; h < sh.kvHeads; ++h) {
        const int64_t key = rows.slots[t] * 64 + h;
        newK[key] = normRope(&qkv[sh.kOff + h * D], in.weights.gK.data(), D, eps, cs, R);
        newV[key] = std::vector<double>(qkv.begin() + sh.vOff + h * D, qkv.begin() + sh.vOff + (h + 1) * D);
      }
      if (in.fullLayer) continue;
      for (int g = 0; g < sh.indexHeads; ++g) {
        const auto v = normRope(&qkv[sh.iqOff + g * ID], in.weights.gIq.data(), ID, eps, cs, R);
        iq[t].insert(iq[t].end(), v.begin(), v.end());
      }
      newIk[rows.indexSlots[t]] = normRope(&qkv[sh.ikOff], in.weights.gIk.data(), ID, eps, cs, R);
    }
    auto keyAt = [&](int t, int64_t pos, int h, std::vector<double>& k, std::vector<double>& v) {
      const int64_t entry = rows.tables[static_cast<size_t>(t) * rows.tableWidth + pos / block];
      const int64_t slot = c.kv.slotOf(c.kv.blockOfEntry(entry, "attention float64"), static_cast<int>(pos % block));
      if (auto it = newK.find(slot * 64 + h); it != newK.end()) {
        k = it->second;
        v = newV.at(slot * 64 + h);
        return;
      }
      const auto pt = c.kv.pageOfKey(entry, pos, h);
      const double ks = atom ? c.kScale[c.kv.scaleIndex(pt.page, pt.token)] : c.kScale[0];
      const double vs = atom ? c.vScale[c.kv.scaleIndex(pt.page, pt.token)] : c.vScale[0];
      k.resize(static_cast<size_t>(D));
      v.resize(k.size());
      for (int d = 0; d < D; ++d) {
        k[d] = e4m3Value(c.kView()[c.kv.kByte(pt.page, pt.token, d)]) * ks;
        v[d] = e4m3Value(c.vView()[c.kv.vByte(pt.page, pt.token, d)]) * vs;
      }
    };
    const double sm = 1.0 / std::sqrt(static_cast<double>(D));
    for (int t = 0; t < S; ++t) {
      if (!rows.live(t)) continue;
      const int seq = rows.seqLens[t], nBlk = (seq + block - 1) / block;
      for (int h = 0; h < sh.kvHeads; ++h) {
        const Selection* sel = in.fullLayer ? nullptr : &ref.ranks[r].selections[static_cast<size_t>(t) * sh.kvHeads + h];
        // the double scores' selection beside the reference's
        if (sel && nBlk > cfg.indexTopk) {
          std::vector<double> score(static_cast<size_t>(nBlk), -INFINITY);
          const auto& itab = in.mode == CacheMode::Vllm ? rows.indexTables : rows.tables;
          for (int b = cfg.indexInit; b < nBlk - cfg.indexLocal; ++b) {
            const int64_t ib = itab[static_cast<size_t>(t) * rows.tableWidth + b];
            for (int i = 0; i < block && int64_t{b} * block + i < seq; ++i) {
              const int64_t islot = c.index.slotOf(ib, i);
              double dot = 0;
              auto it = newIk.find(islot);
              for (int d = 0; d < ID; ++d)
                dot += iq[t][h * ID + d] *
                       (it != newIk.end() ? it->second[d] : e4m3Value(c.indexKeys[c.index.byteOf(islot, d)]));
              score[b] = std::max(score[b], dot);
            }
          }
          std::vector<bool> chosen(static_cast<size_t>(nBlk), false);
          for (int b : sel->blocks)
            if (b >= 0) chosen[b] = true;
          double minSel = INFINITY, maxUnsel = -INFINITY, scale = 0;
          for (int b = cfg.indexInit; b < nBlk - cfg.indexLocal; ++b) {
            (chosen[b] ? minSel : maxUnsel) = chosen[b] ? std::min(minSel, score[b]) : std::max(maxUnsel, score[b]);
            scale = std::max(scale, std::fabs(score[b]));
          }
          out.scoreScale[static_cast<size_t>(t) * sh.kvHeads + h] = scale;
          out.margin[static_cast<size_t>(t) * sh.kvHeads + h] = minSel - maxUnsel;
          out.sameSelection[static_cast<size_t>(t) * sh.kvHeads + h] = minSel >= maxUnsel;
        }
        const int n = sel ? sel->nCtx : seq;
        std::vector<std::vector<double>> K(static_cast<size_t>(n)), V(K.size());
        for (int i = 0; i < n; ++i) {
          const int64_t pos = sel ? int64_t{sel->blocks[i / block]} * block + i % block : i;
          keyAt(t, pos, h, K[i], V[i]);
        }
        for (int qi = 0; qi < sh.qGroup; ++qi) {
          const int lq = h * sh.qGroup + qi;
          const double* q = &out.q[(static_cast<size_t>(t) * sh.qHeads + lq) * D];
          std::vector<double> s(static_cast<size_t>(n));
          double mx = -INFINITY;
          for (int i = 0; i < n; ++i) {
            double dot = 0;
            for (int d = 0; d < D; ++d) dot += q[d] * K[i][d];
            s[i] = dot * sm;
            mx = std::max(mx, s[i]);
          }
          double l = 0;
          for (int i = 0; i < n; ++i) l += (s[i] = std::exp(s[i] - mx));
          double* o = &out.attn[static_cast<size_t>(t) * sh.attnWidth() + static_cast<size_t>(lq) * D];
          for (int i = 0; i < n; ++i)
            for (int d = 0; d < D; ++d) o[d] += s[i] / l * V[i][d];
        }
      }
    }
    res.ranks.push_back(std::move(out));
  }
  return res;
}

}  // namespace monogen::specs::minimax_m3
