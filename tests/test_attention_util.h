// Shared by the attention launch's tests: one cell (S, TP, cache mode, layer type, context, rows)
// run on the Sim and compared with the native reference bit for bit.
#pragma once
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/AttentionSpec.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/AttentionPre.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSim.h"

namespace attention_test {

using namespace monogen;
using namespace monogen::specs::minimax_m3;

struct Case {
  int S = 1, TP = 1;
  CacheMode mode = CacheMode::Vllm;
  bool full = false;
  bool share = true;
  int context = 128;
  int padded = 0;
  bool races = false;
  float kvScale = 8.0f / 448.0f;  // vllm's scalar K / V scales
  std::function<void(const ModelConfig&, AttentionLaunch&)> edit;  // applied to the inputs, if set
  bool flashDims = false;  // the model's own dims (ModelConfig::flash) instead of the reduced ones
  std::function<void(ModelConfig&)> dims;  // applied to the config, if set
};

/// The first index where a and b differ in bits, or -1.
template <class T>
inline long firstDiff(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<long>(i);
  return -1;
}

/// Runs the cell on the Sim (every rank) and checks every output against the reference bit for bit.
inline void runCase(const Case& k) {
  ModelConfig cfg = k.flashDims ? ModelConfig::flash() : ModelConfig::reduced();
  if (k.dims) k.dims(cfg);
  AttentionKnobs knobs;
  knobs.mode = k.mode;
  knobs.fullLayer = k.full;
  const AttentionVariant v = AttentionVariant::make(cfg, makeAttentionKey(cfg, k.S, k.TP, knobs));
  const ir::Plan plan = buildAttentionPlan(v);
  ir::verify(plan);
  AttentionInputOptions o;
  o.mode = k.mode;
  o.fullLayer = k.full;
  o.context = k.context;
  o.shareSequence = k.share;
  o.paddedRows = k.padded;
  o.kScale = o.vScale = k.kvScale;
  AttentionLaunch in = makeAttentionLaunch(cfg, k.S, k.TP, 7 + k.S + 16 * k.TP, o);
  if (k.edit) k.edit(cfg, in);
  const AttentionResult ref = attentionReference(cfg, in);
  runtime::SimOptions opts;
  opts.races = k.races;
  const AttentionSimRun run = runAttentionOnSim(plan, v, in, opts);
  if (k.races) {
    for (const std::string& f : run.stats.races) UNSCOPED_INFO(f);
    for (const std::string& f : run.stats.uninit) UNSCOPED_INFO(f);
    CHECK(run.stats.findings() == 0);
  }
  const int H = cfg.hidden;
  for (int r = 0; r < k.TP; ++r) {
    INFO("rank " << r);
    const AttentionSimRank& got = run.ranks[r];
    const AttentionRankResult& want = ref.ranks[r];
    CHECK(run.errorWords[r] == 0);
    // every row's HRDY carries the tag, and each row's last heads task reset its count
    for (int t = 0; t < k.S; ++t) {
      CHECK(got.headsCount[t] == 0);
      CHECK(got.hrdy[t] >> 32 == 0x2a5eed01u);
    }
    CHECK(firstDiff(got.h, ref.h) == -1);
    const long dq = firstDiff(got.qkv, want.qkv);
    if (dq >= 0) UNSCOPED_INFO("qkv[" << dq << "]: got " << got.qkv[dq] << " want " << want.qkv[dq]);
    CHECK(dq == -1);
    for (int t = 0; t < k.S; ++t) {
      INFO("row " << t);
      if (!in.rows.live(t)) {  // a padded row's x8 and scales are zeros
        CHECK(got.rstd[t] == 0.0f);
        CHECK(got.xScale[t] == 0.0f);
        continue;
      }
      const NormedRow nr = normRow(&in.x[size_t(t) * H], &in.res[size_t(t) * H], in.weights.gIn.data(), H,
                                   static_cast<float>(cfg.rmsEps));
      CHECK(std::bit_cast<uint32_t>(got.rstd[t]) == std::bit_cast<uint32_t>(ref.rstd[t]));
      CHECK(std::bit_cast<uint32_t>(got.xScale[t]) == std::bit_cast<uint32_t>(ref.xScale[t]));
      CHECK(std::memcmp(&got.x8[size_t(t) * H], nr.x8.data(), size_t(H)) == 0);
    }
    CHECK(firstDiff(got.q, want.q) == -1);
    if (!k.full) CHECK(firstDiff(got.iq, want.iq) == -1);
    CHECK(firstDiff(got.caches.k, want.caches.k) == -1);
    CHECK(firstDiff(got.caches.v, want.caches.v) == -1);
    CHECK(firstDiff(got.caches.kScale, want.caches.kScale) == -1);
    CHECK(firstDiff(got.caches.vScale, want.caches.vScale) == -1);
    CHECK(firstDiff(got.caches.indexKeys, want.caches.indexKeys) == -1);
    // the appends did write: the caches differ from the launch's inputs
    if (in.rows.live(0)) CHECK(firstDiff(got.caches.k, in.caches[r].k) != -1);
    // each live (row, KV head)'s selection on sparse layers: blocks in slot order, sparse length
    for (size_t i = 0; i < want.selections.size(); ++i) {
      if (want.selections[i].blocks.empty()) continue;
      INFO("selection " << i);
      CHECK(got.selections[i].blocks == want.selections[i].blocks);
      CHECK(got.selections[i].nCtx == want.selections[i].nCtx);
    }
    // each live row's splits (o / l, m, l) and the attention rows
    REQUIRE(got.splits.size() == want.splits.size());
    for (size_t i = 0; i < want.splits.size(); ++i) {
      if (want.splits[i].o.empty()) continue;  // a padded row's
      INFO("split " << i);
      CHECK(firstDiff(got.splits[i].o, want.splits[i].o) == -1);
      CHECK(firstDiff(got.splits[i].m, want.splits[i].m) == -1);
      CHECK(firstDiff(got.splits[i].l, want.splits[i].l) == -1);
    }
    const long da = firstDiff(got.attn, want.attn);
    if (da >= 0) UNSCOPED_INFO("attn[" << da << "]: got " << got.attn[da] << " want " << want.attn[da]);
    CHECK(da == -1);
  }
}


}  // namespace attention_test
