#include "specs/minimax_m3/reference/AttentionReference.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "specs/minimax_m3/reference/AttentionNumerics.h"
#include "specs/minimax_m3/reference/AttentionPre.h"

namespace monogen::specs::minimax_m3 {

namespace num = ir::num;

namespace {

int blocksOf(int64_t seqLen, int block) { return static_cast<int>((seqLen + block - 1) / block); }

template <class T>
void requireSize(const std::vector<T>& v, size_t n, const char* name, const std::string& where) {
  if (v.size() != n)
    throw InputError(where, fmt::format("{} holds {} elements: expected {}", name, v.size(), n));
}

}  // namespace

int64_t indexBlockOf(const AttentionRows& r, CacheMode mode, int t, int64_t b) {
  const auto& tab = mode == CacheMode::Vllm ? r.indexTables : r.tables;
  return tab[static_cast<size_t>(t) * r.tableWidth + b];
}

void validateAttentionLaunch(const ModelConfig& cfg, const AttentionLaunch& in, const std::string& where) {
  cfg.validateAttention(where);
  const int S = in.S, H = cfg.hidden;
  if (S < 1 || S > cfg.maxRows) throw InputError(where, fmt::format("S = {}: expected 1..{}", S, cfg.maxRows));
  if (static_cast<int>(in.caches.size()) != in.TP)
    throw InputError(where, fmt::format("{} ranks' caches for TP = {}", in.caches.size(), in.TP));
  requireSize(in.x, static_cast<size_t>(S) * H, "x", where);
  requireSize(in.res, static_cast<size_t>(S) * H, "res", where);
  const AttentionRows& r = in.rows;
  requireSize(r.positions, S, "positions", where);
  requireSize(r.seqLens, S, "seq_lens", where);
  requireSize(r.slots, S, "slots", where);
  requireSize(r.indexSlots, S, "index slots", where);
  requireSize(r.requestLast, S, "request rows", where);
  requireSize(r.tables, static_cast<size_t>(S) * r.tableWidth, "block tables", where);
  if (in.mode == CacheMode::Vllm) requireSize(r.indexTables, static_cast<size_t>(S) * r.tableWidth, "index block tables", where);
  const int block = cfg.indexBlock;
  const KvCacheGeometry& g = in.caches[0].kv;
  const IndexCacheGeometry& ig = in.caches[0].index;
  std::map<int64_t, int> slotRow, indexSlotRow;
  for (int t = 0; t < S; ++t) {
    const std::string row = fmt::format("row {}", t);
    const int64_t slot = r.slots[t], islot = r.indexSlots[t];
    if (slot < -1 || islot < -1)
      throw InputError(where, fmt::format("{}: slot {} / index slot {}: expected a token address >= 0, or -1 for a "
                                          "padded row (a negative slot is no address)",
                                          row, slot, islot));
    if (slot == -1 || islot == -1) {
      if (slot != islot && in.mode == CacheMode::Vllm)
        throw InputError(where, fmt::format("{}: slot {} and index slot {}: a padded row has both -1", row, slot, islot));
      continue;
    }
    const int64_t seq = r.seqLens[t], pos = r.positions[t];
    if (seq < 1)
      throw InputError(where, fmt::format("{}: seq_len {}: expected at least 1 for a live row (slot {}; a padded row "
                                          "has slot -1)",
                                          row, seq, slot));
    if (pos < 0 || pos >= seq)
      throw InputError(where, fmt::format("{}: position {} is at or past its sequence's length {}: expected 0..{}",
                                          row, pos, seq, seq - 1));
    if (pos >= in.weights.maxPositions)
      throw InputError(where, fmt::format("{}: position {}: the cos/sin table holds {} positions", row, pos,
                                          in.weights.maxPositions));
    const int nBlk = blocksOf(seq, block);
    if (nBlk > r.tableWidth)
      throw InputError(where, fmt::format("{}: seq_len {} needs {} blocks: the block table is {} wide", row, seq, nBlk,
                                          r.tableWidth));
    int64_t ownEntry = 0;
    for (int b = 0; b < nBlk; ++b) {
      const int64_t e = r.tables[static_cast<size_t>(t) * r.tableWidth + b];
      g.blockOfEntry(e, fmt::format("{}, {}: block-table column {}", where, row, b));
      if (b == pos / block) ownEntry = e;
      const int64_t ie = indexBlockOf(r, in.mode, t, b);
      if (ie < 0 || ie >= ig.blocks)
        throw InputError(where, fmt::format("{}: index block-table column {} = {}: expected 0..{}", row, b, ie,
                                            ig.blocks - 1));
    }
    const int64_t want = g.slotOf(g.blockOfEntry(ownEntry, where), static_cast<int>(pos % block));
    if (slot != want)
      throw InputError(where, fmt::format("{}: slot {} is not position {}'s address {} in its block table (the row "
                                          "would not see its own key)",
                                          row, slot, pos, want));
    const int64_t iwant = ig.slotOf(indexBlockOf(r, in.mode, t, pos / block), static_cast<int>(pos % block));
    if (islot != iwant)
      throw InputError(where, fmt::format("{}: index slot {} is not position {}'s index address {}", row, islot, pos,
                                          iwant));
    if (auto [it, fresh] = slotRow.emplace(slot, t); !fresh)
      throw InputError(where, fmt::format("rows {} and {} both write slot {}: one token address a row", it->second, t,
                                          slot));
    if (auto [it, fresh] = indexSlotRow.emplace(islot, t); !fresh)
      throw InputError(where, fmt::format("rows {} and {} both write index slot {}", it->second, t, islot));
    const int last = r.requestLast[t];
    if (last < t || last >= S)
      throw InputError(where, fmt::format("{}: its request's last row {}: expected {}..{}", row, last, t, S - 1));
  }
}

TouchedBlocks touchedBlocks(const AttentionLaunch& in, int block) {
  std::set<int64_t> kv, index;
  const AttentionRows& r = in.rows;
  for (int t = 0; t < in.S; ++t) {
    if (!r.live(t)) continue;
    for (int b = 0; b < blocksOf(r.seqLens[t], block); ++b) {
      kv.insert(in.caches[0].kv.blockOfEntry(r.tables[static_cast<size_t>(t) * r.tableWidth + b], "touched blocks"));
      if (!in.fullLayer) index.insert(indexBlockOf(r, in.mode, t, b));
    }
  }
  return {{kv.begin(), kv.end()}, {index.begin(), index.end()}};
}

GatheredKeys gatherKeys(const AttentionCaches& c, const AttentionRows& rows, int t, int h, const Selection* sel,
                        int block) {
  GatheredKeys k;
  const int D = c.kv.headDim;
  k.headDim = D;
  k.n = sel ? sel->nCtx : rows.seqLens[t];
  k.k.resize(static_cast<size_t>(k.n) * D);
  k.v.resize(k.k.size());
  k.kScale.resize(static_cast<size_t>(k.n));
  k.vScale.resize(k.kScale.size());
  const uint8_t* kv = c.kView();
  const uint8_t* vv = c.vView();
  for (int i = 0; i < k.n; ++i) {
    const int64_t pos = sel ? int64_t{sel->blocks[i / block]} * block + i % block : i;
    const int64_t entry = rows.tables[static_cast<size_t>(t) * rows.tableWidth + pos / block];
    const auto pt = c.kv.pageOfKey(entry, pos, h);
    for (int d = 0; d < D; ++d) {
      k.k[static_cast<size_t>(i) * D + d] = kv[c.kv.kByte(pt.page, pt.token, d)];
      k.v[static_cast<size_t>(i) * D + d] = vv[c.kv.vByte(pt.page, pt.token, d)];
    }
    const bool atom = c.kv.mode == CacheMode::Atom;
    k.kScale[i] = atom ? c.kScale[c.kv.scaleIndex(pt.page, pt.token)] : c.kScale[0];
    k.vScale[i] = atom ? c.vScale[c.kv.scaleIndex(pt.page, pt.token)] : c.vScale[0];
  }
  return k;
}

AttentionResult attentionReference(const ModelConfig& cfg, const AttentionLaunch& in, RefNumerics numerics) {
  const std::string where = "attention reference";
  validateAttentionLaunch(cfg, in, where);
  const int S = in.S, H = cfg.hidden, block = cfg.indexBlock;
  const float eps = static_cast<float>(cfg.rmsEps);
  const AttentionRows& rows = in.rows;
  AttentionResult res;
  res.h.assign(static_cast<size_t>(S) * H, 0);
  res.rstd.assign(S, 0.0f);
  res.xScale.assign(S, 0.0f);
  std::vector<NormedRow> normed(S);
  for (int t = 0; t < S; ++t) {
    if (!rows.live(t)) continue;
    normed[t] = normRow(&in.x[static_cast<size_t>(t) * H], &in.res[static_cast<size_t>(t) * H], in.weights.gIn.data(),
                        H, eps);
    std::copy(normed[t].h.begin(), normed[t].h.end(), res.h.begin() + static_cast<size_t>(t) * H);
    res.rstd[t] = normed[t].rstd;
    res.xScale[t] = normed[t].xScale;
  }
  const float smScale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.headDim)));
  const float indexScale = indexScoreScale(cfg.indexHeadDim);
  for (int r = 0; r < in.TP; ++r) {
    const AttentionShape sh = AttentionShape::make(cfg, in.TP, r, where, in.indexCp);
    const int D = sh.headDim, ID = sh.indexDim, R = sh.rotaryDim, nRows = sh.rowsOf(in.fullLayer);
    AttentionRankResult rr;
    rr.caches = in.caches[r];
    AttentionCaches& c = rr.caches;
    const bool atom = in.mode == CacheMode::Atom;
    rr.qkv.assign(static_cast<size_t>(S) * nRows, 0);
    rr.q.assign(static_cast<size_t>(S) * sh.qHeads * D, 0);
    rr.iq.assign(static_cast<size_t>(S) * sh.indexHeads * ID, 0);
    rr.attn.assign(static_cast<size_t>(S) * sh.attnWidth(), 0);
    // --- every row's projection, heads and inserts first
    const std::vector<float> w = decodeQkvWeights(in.weights.wQkv[r].data(), nRows, H);
    for (int t = 0; t < S; ++t) {
      if (!rows.live(t)) continue;
      uint16_t* qkv = &rr.qkv[static_cast<size_t>(t) * nRows];
      for (int row = 0; row < nRows; ++row)
        qkv[row] = qkvRow(&w[static_cast<size_t>(row) * H], normed[t].x8, normed[t].xScale, in.weights.sQkv[r][row], H);
      const uint16_t* cs = &in.weights.cosSin[static_cast<size_t>(rows.positions[t]) * R];
      for (int i = 0; i < sh.qHeads; ++i) {
        const auto out = headNormRope(qkv + sh.qOff + i * D, in.weights.gQ.data(), D, eps, cs, R);
        for (int d = 0; d < D; ++d) rr.q[(static_cast<size_t>(t) * sh.qHeads + i) * D + d] = num::f32ToBf16(out[d]);
      }
      for (int h = 0; h < sh.kvHeads; ++h) {
        const auto pt = c.kv.pageOfSlot(rows.slots[t], h);
        const auto out = headNormRope(qkv + sh.kOff + h * D, in.weights.gK.data(), D, eps, cs, R);
        float am = 0.0f;
        for (int d = 0; d < D; ++d) am = num::maxNum(am, std::fabs(out[d]));
        const float ks = atom ? tokenKvScale(am) : c.kScale[0];
        if (atom) c.kScale[c.kv.scaleIndex(pt.page, pt.token)] = ks;
        for (int d = 0; d < D; ++d) c.kView()[c.kv.kByte(pt.page, pt.token, d)] = e4m3(num::roundBf16(out[d]) / ks);
        const uint16_t* v = qkv + sh.vOff + h * D;
        float vm = 0.0f;
        for (int d = 0; d < D; ++d) vm = num::maxNum(vm, std::fabs(num::bf16ToF32(v[d])));
        const float vs = atom ? tokenKvScale(vm) : c.vScale[0];
        if (atom) c.vScale[c.kv.scaleIndex(pt.page, pt.token)] = vs;
        for (int d = 0; d < D; ++d) c.vView()[c.kv.vByte(pt.page, pt.token, d)] = e4m3(num::bf16ToF32(v[d]) / vs);
      }
      if (in.fullLayer) continue;
      for (int g = 0; g < sh.indexHeads; ++g) {
        const auto out = headNormRope(qkv + sh.iqOff + g * ID, in.weights.gIq.data(), ID, eps, cs, R);
        for (int d = 0; d < ID; ++d)
          rr.iq[(static_cast<size_t>(t) * sh.indexHeads + g) * ID + d] = indexQueryValue(out[d], in.mode);
      }
      const auto ik = headNormRope(qkv + sh.ikOff, in.weights.gIk.data(), ID, eps, cs, R);
      for (int d = 0; d < ID; ++d)
        c.indexKeys[c.index.byteOf(rows.indexSlots[t], d)] = e4m3(num::roundBf16(ik[d]));
    }
    // --- then every row's selection and attention over the updated caches
    rr.selections.resize(static_cast<size_t>(S) * sh.kvHeads);
    rr.splits.resize(static_cast<size_t>(S) * sh.kvHeads * kAttnSplits);
    const SplitRule rule{in.mode, in.mode == CacheMode::Vllm || in.fullLayer};
    for (int t = 0; t < S; ++t) {
      if (!rows.live(t)) continue;
      const int seq = rows.seqLens[t];
      const int nBlk = blocksOf(seq, block);
      const bool longPath = blocksOf(rows.seqLens[rows.requestLast[t]], block) > kLongFromBlocks;
      for (int h = 0; h < sh.kvHeads; ++h) {
        Selection* sel = nullptr;
        if (!in.fullLayer) {
          std::vector<int32_t> keys(static_cast<size_t>(nBlk));
          const bool scored = nBlk > cfg.indexTopk;
          const uint16_t* iq = &rr.iq[(static_cast<size_t>(t) * sh.indexHeads + h) * ID];
          for (int b = 0; b < nBlk; ++b) {
            if (!scored) {
              keys[b] = -b;
              continue;
            }
            float score = 0.0f;
            if (b >= cfg.indexInit && b < nBlk - cfg.indexLocal) {
              float v = -INFINITY;
              const int64_t base = indexBlockOf(rows, in.mode, t, b);
              for (int i = 0; i < block && int64_t{b} * block + i < seq; ++i) {
                float dot = 0.0f;
                for (int d = 0; d < ID; ++d) {
                  const float prod = num::bf16ToF32(iq[d]) *
                                     e4m3Value(c.indexKeys[c.index.byteOf(c.index.slotOf(base, i), d)]);
                  dot = dot + prod;
                }
                v = num::maxNum(v, dot);
              }
              score = v * indexScale;
            }
            keys[b] = indexSortKey(b, score, nBlk, cfg.indexInit, cfg.indexLocal);
          }
          sel = &rr.selections[static_cast<size_t>(t) * sh.kvHeads + h];
          *sel = selectBlocks(keys, seq, block, cfg.indexTopk, longPath);
        }
        const GatheredKeys keys = gatherKeys(c, rows, t, h, sel, block);
        std::vector<SplitPartial> parts;
        const uint16_t* q = &rr.q[(static_cast<size_t>(t) * sh.qHeads + h * sh.qGroup) * D];
        for (int s = 0; s < kAttnSplits; ++s) parts.push_back(attentionSplit(q, sh.qGroup, keys, s, rule, smScale, numerics));
        const auto merged = mergeSplits(parts, sh.qGroup, D, numerics);
        std::copy(merged.begin(), merged.end(),
                  rr.attn.begin() + static_cast<size_t>(t) * sh.attnWidth() + static_cast<size_t>(h) * sh.qGroup * D);
        for (int s = 0; s < kAttnSplits; ++s)
          rr.splits[(static_cast<size_t>(t) * sh.kvHeads + h) * kAttnSplits + s] = std::move(parts[s]);
      }
    }
    res.ranks.push_back(std::move(rr));
  }
  return res;
}

}  // namespace monogen::specs::minimax_m3
