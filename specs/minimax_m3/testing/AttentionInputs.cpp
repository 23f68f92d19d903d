#include "specs/minimax_m3/testing/AttentionInputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "runtime/sim/SimRng.h"
#include "specs/minimax_m3/testing/InputRng.h"
#include "specs/minimax_m3/kernel/WeightContract.h"
#include "specs/minimax_m3/reference/AttentionNumerics.h"
#include "specs/minimax_m3/reference/AttentionPre.h"

namespace monogen::specs::minimax_m3 {

namespace num = ir::num;

namespace {

constexpr const char* kWhere = "attention inputs";

uint64_t mix(uint64_t z) { return runtime::splitMix64Mix(z); }

using Rng = InputRng;
Rng stream(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  return Rng(mix(mix(mix(seed ^ (a * 0xd1b54a32d192ed03ull)) ^ (b * 0x9e3779b97f4a7c15ull)) ^
                 (c * 0xc2b2ae3d27d4eb4full)));
}
enum Purpose : uint64_t { kX = 1, kRes, kNorms, kWeight, kBlocks, kIndexBlocks, kKeys, kValues, kIndexKeys };
/// The norm weights, each its own stream under kNorms (a shared stream would make them equal).
enum NormWeight : uint64_t { kGIn = 1, kGQ, kGK, kGIq, kGIk };

std::vector<uint16_t> bf16Normal(Rng&& g, size_t n, float scale) {
  std::vector<uint16_t> v(n);
  for (auto& e : v) e = num::f32ToBf16(g.normal() * scale);
  return v;
}

std::vector<int> permutation(Rng&& g, int n) {
  std::vector<int> p(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) p[i] = i;
  for (int i = n - 1; i > 0; --i) std::swap(p[i], p[g.below(i + 1)]);
  return p;
}

/// One logical w_qkv row (the same on every rank that holds it): normal / sqrt(hidden).
void weightRow(uint64_t seed, const QkvRow& r, int hidden, std::vector<float>& out) {
  Rng g = stream(seed, kWeight, static_cast<uint64_t>(r.kind) * 4096 + r.head, r.channel);
  const float s = 1.0f / std::sqrt(static_cast<float>(hidden));
  for (int k = 0; k < hidden; ++k) out[k] = g.normal() * s;
}

}  // namespace

std::string AttentionInputOptions::describe() const {
  return fmt::format("mode={} layer={} context={} rows={} padded={}", cacheModeName(mode), fullLayer ? "full" : "sparse",
                     context, shareSequence ? "shared" : "batch", paddedRows);
}

AttentionLaunch makeAttentionLaunch(const ModelConfig& cfg, int S, int TP, uint64_t seed,
                                    const AttentionInputOptions& o) {
  cfg.validateAttention(kWhere);
  if (S < 1 || S > cfg.maxRows) throw InputError(kWhere, fmt::format("S = {}: expected 1..{}", S, cfg.maxRows));
  if (o.paddedRows < 0 || o.paddedRows >= S)
    throw InputError(kWhere, fmt::format("paddedRows = {}: expected 0..S-1 ({})", o.paddedRows, S - 1));
  if (o.context < 0) throw InputError(kWhere, fmt::format("context = {}: expected >= 0", o.context));
  const int H = cfg.hidden, block = cfg.indexBlock, live = S - o.paddedRows;
  AttentionLaunch L;
  L.S = S;
  L.TP = TP;
  L.mode = o.mode;
  L.fullLayer = o.fullLayer;
  L.indexCp = o.indexCp;
  L.x = bf16Normal(stream(seed, kX), static_cast<size_t>(S) * H, 1.0f);
  L.res = bf16Normal(stream(seed, kRes), static_cast<size_t>(S) * H, 2.0f);

  // --- rows: sequences, positions, lengths
  const int nSeq = o.shareSequence ? 1 : live;
  std::vector<int> seqOf(S, -1), finalLen(nSeq, 0);
  AttentionRows& R = L.rows;
  R.S = S;
  R.positions.assign(S, 0);
  R.seqLens.assign(S, 0);
  R.requestLast.resize(S);
  for (int t = 0; t < S; ++t) {
    R.requestLast[t] = t;
    if (t >= live) continue;
    seqOf[t] = o.shareSequence ? 0 : t;
    R.positions[t] = o.context + (o.shareSequence ? t : 0);
    R.seqLens[t] = static_cast<int32_t>(R.positions[t] + 1);
    finalLen[seqOf[t]] = std::max<int>(finalLen[seqOf[t]], R.seqLens[t]);
  }
  if (o.shareSequence)
    for (int t = 0; t < live; ++t) R.requestLast[t] = live - 1;
  int width = 1;
  for (int s = 0; s < nSeq; ++s) width = std::max(width, (finalLen[s] + block - 1) / block);
  R.tableWidth = width;
  int used = 0;
  for (int s = 0; s < nSeq; ++s) used += (finalLen[s] + block - 1) / block;
  const int nBlocks = used + o.spareBlocks;
  const auto perm = permutation(stream(seed, kBlocks), nBlocks);
  const auto iperm = permutation(stream(seed, kIndexBlocks), nBlocks);
  std::vector<std::vector<int>> seqBlocks(nSeq), seqIndexBlocks(nSeq);
  for (int s = 0, next = 0; s < nSeq; ++s)
    for (int b = 0; b < (finalLen[s] + block - 1) / block; ++b, ++next) {
      seqBlocks[s].push_back(perm[next]);
      seqIndexBlocks[s].push_back(o.mode == CacheMode::Vllm ? iperm[next] : perm[next]);
    }

  // --- weights
  AttentionWeights& W = L.weights;
  W.gIn = bf16Normal(stream(seed, kNorms, kGIn), H, 0.1f);
  W.gQ = bf16Normal(stream(seed, kNorms, kGQ), cfg.headDim, 0.1f);
  W.gK = bf16Normal(stream(seed, kNorms, kGK), cfg.headDim, 0.1f);
  W.gIq = bf16Normal(stream(seed, kNorms, kGIq), cfg.indexHeadDim, 0.1f);
  W.gIk = bf16Normal(stream(seed, kNorms, kGIk), cfg.indexHeadDim, 0.1f);
  W.maxPositions = o.context + S + 1;
  const int Rd = cfg.rotaryDim, half = Rd / 2;
  W.cosSin.assign(static_cast<size_t>(W.maxPositions) * Rd, 0);
  for (int64_t p = 0; p < W.maxPositions; ++p)
    for (int i = 0; i < half; ++i) {
      const float inv = static_cast<float>(std::pow(cfg.ropeTheta, -2.0 * i / Rd));
      const float f = static_cast<float>(p) * inv;
      W.cosSin[p * Rd + i] = num::f32ToBf16(static_cast<float>(std::cos(static_cast<double>(f))));
      W.cosSin[p * Rd + half + i] = num::f32ToBf16(static_cast<float>(std::sin(static_cast<double>(f))));
    }
  std::vector<float> wrow(static_cast<size_t>(H));
  for (int r = 0; r < TP; ++r) {
    const AttentionShape sh = AttentionShape::make(cfg, TP, r, kWhere, o.indexCp);
    const int rows = sh.rowsOf(o.fullLayer);
    std::vector<uint8_t> rowMajor(static_cast<size_t>(rows) * H);
    std::vector<float> scales(static_cast<size_t>(rows));
    for (int row = 0; row < rows; ++row) {
      weightRow(seed, qkvRowOf(sh, row), H, wrow);
      float amax = 0.0f;
      for (float v : wrow) amax = std::max(amax, std::fabs(v));
      const float s = std::max(amax / 448.0f, 1e-30f);
      scales[row] = s;
      for (int k = 0; k < H; ++k) rowMajor[static_cast<size_t>(row) * H + k] = e4m3Saturating(wrow[k] / s);
    }
    W.wQkv.push_back(shuffle16x16(rowMajor.data(), rows, H));
    W.sQkv.push_back(std::move(scales));
  }

  // --- caches: the sequences' keys before the launch, the rest NaN
  for (int r = 0; r < TP; ++r) {
    const AttentionShape sh = AttentionShape::make(cfg, TP, r, kWhere);
    AttentionCaches c;
    c.kv = KvCacheGeometry{o.mode, sh.kvHeads, cfg.headDim, block, nBlocks};
    c.index = IndexCacheGeometry{cfg.indexHeadDim, block, nBlocks};
    const float nan = std::numeric_limits<float>::quiet_NaN();
    c.k.assign(static_cast<size_t>(c.kv.kBytes()), 0x7f);
    if (o.mode == CacheMode::Atom) {
      c.v.assign(c.k.size(), 0x7f);
      c.kScale.assign(static_cast<size_t>(c.kv.scaleCount()), nan);
      c.vScale.assign(c.kScale.size(), nan);
    } else {
      c.kScale = {o.kScale};
      c.vScale = {o.vScale};
    }
    c.indexKeys.assign(static_cast<size_t>(c.index.bytes()), 0x7f);
    const int D = cfg.headDim;
    std::vector<float> kf(static_cast<size_t>(D)), vf(kf.size());
    for (int s = 0; s < nSeq; ++s)
      for (int pos = 0; pos < o.context; ++pos) {
        const int m = seqBlocks[s][pos / block];
        for (int h = 0; h < sh.kvHeads; ++h) {
          // a cached key is what the writer stored: K after norm + RoPE, V the raw projection
          Rng gk = stream(seed, kKeys, static_cast<uint64_t>(s) * 64 + sh.firstKvHead + h, pos);
          float km = 0.0f, vm = 0.0f;
          for (int d = 0; d < D; ++d) {
            kf[d] = num::roundBf16(gk.normal());
            vf[d] = num::roundBf16(gk.normal());
            km = std::max(km, std::fabs(kf[d]));
            vm = std::max(vm, std::fabs(vf[d]));
          }
          const auto pt = c.kv.pageOfSlot(c.kv.slotOf(m, pos % block), h);
          const bool atom = o.mode == CacheMode::Atom;
          const float ks = atom ? tokenKvScale(km) : o.kScale, vs = atom ? tokenKvScale(vm) : o.vScale;
          if (atom) {
            c.kScale[c.kv.scaleIndex(pt.page, pt.token)] = ks;
            c.vScale[c.kv.scaleIndex(pt.page, pt.token)] = vs;
          }
          for (int d = 0; d < D; ++d) {
            c.kView()[c.kv.kByte(pt.page, pt.token, d)] = e4m3(kf[d] / ks);
            c.vView()[c.kv.vByte(pt.page, pt.token, d)] = e4m3(vf[d] / vs);
          }
        }
        Rng gi = stream(seed, kIndexKeys, s, pos);
        const int64_t islot = c.index.slotOf(seqIndexBlocks[s][pos / block], pos % block);
        for (int d = 0; d < cfg.indexHeadDim; ++d) c.indexKeys[c.index.byteOf(islot, d)] = e4m3(num::roundBf16(gi.normal()));
      }
    L.caches.push_back(std::move(c));
  }

  // --- slots and tables
  const KvCacheGeometry& g = L.caches[0].kv;
  R.slots.assign(S, -1);
  R.indexSlots.assign(S, -1);
  R.tables.assign(static_cast<size_t>(S) * width, 0);
  R.indexTables.assign(o.mode == CacheMode::Vllm ? static_cast<size_t>(S) * width : 0, 0);
  for (int t = 0; t < live; ++t) {
    const int s = seqOf[t];
    for (size_t b = 0; b < seqBlocks[s].size(); ++b) {
      R.tables[static_cast<size_t>(t) * width + b] = static_cast<int32_t>(g.tableEntry(seqBlocks[s][b]));
      if (o.mode == CacheMode::Vllm) R.indexTables[static_cast<size_t>(t) * width + b] = seqIndexBlocks[s][b];
    }
    const int64_t pos = R.positions[t];
    R.slots[t] = g.slotOf(seqBlocks[s][pos / block], static_cast<int>(pos % block));
    R.indexSlots[t] = L.caches[0].index.slotOf(seqIndexBlocks[s][pos / block], static_cast<int>(pos % block));
  }
  return L;
}

}  // namespace monogen::specs::minimax_m3
