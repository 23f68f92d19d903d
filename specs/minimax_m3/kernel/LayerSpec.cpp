#include "specs/minimax_m3/kernel/LayerSpec.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/AttentionConstants.h"
#include "specs/minimax_m3/kernel/AttentionContext.h"
#include "specs/minimax_m3/kernel/AttentionSpec.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"
#include "specs/minimax_m3/kernel/stages/StageDef.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::Val;

namespace {

const std::map<std::string, std::string>& attnRenames() {
  static const std::map<std::string, std::string> r = {{attn_arg::kScratch, kLayerAttnScratch},
                                                       {attn_arg::kResOut, arg::kResIn}};
  return r;
}

std::string prefixed(const std::string& name) { return kLayerAttnPrefix + name; }

/// The attention stage's record with its flags named as in the layer's Plan.
ir::Stage attentionRecord(const AttentionStageDef& d, const AttentionLaunchLayout& L) {
  ir::Stage s = d.record(L);
  for (auto* uses : {&s.waits, &s.publishes})
    for (ir::FlagUse& u : *uses) u.flag = prefixed(u.flag);
  return s;
}

/// Once a CTA that runs push tasks: thread t < S waits for ARDY[t] (row t's attention row is
/// written), then the CTA syncs; before push reads `attn`.
void awaitAttnRows(KernelContext& c, const AttentionLaunchLayout& A) {
  ir::Builder& b = c.b;
  const Placement& p = c.L.push;
  Val hasTasks = specs::stageFirstTask(c.b, c.block, p.base, c.L.blocks) < c.i32(p.tasks);
  b.if_(hasTasks, [&] {
    b.if_(c.tid < c.i32(A.rows), [&] {
      Val pair = b.ptrAdd(c.argPtr(kLayerAttnScratch), c.i32(A.ardyOffset) + c.tid * c.i32(8));
      c.await(pair, c.errorCode(kSiteLayerArdy, c.tid), kSiteLayerArdy);
    });
  });
  c.ctaSync(false);  // every CTA: the attention stages' LDS is the FFN stages' from here
}

/// Up to this S a CTA's two o_proj tasks share one epilogue sync (S 8 TP 4 reduced: 0.05 us later
/// with it, modeled, docs/layer.md).
constexpr int kOneSyncEpilogueRows = 4;

/// LDS byte offsets of the merge inside o_proj (S = 1): its weights past o_proj's sums and token
/// scales, then the row (bf16, attention width); IrError where the layer's LDS does not hold them
/// or a CTA has more than two o_proj tasks (the rest read `attn`);
/// and o_proj's second task's sums past them where they fit up to kOneSyncEpilogueRows (S > 1: past
/// o_proj's own bytes).
struct OprojLds {
  int64_t weights = 0, row = 0, sums2 = 0, end = 0;
};
OprojLds oprojLds(const AttentionLaunchLayout& A, const Layout& L, int64_t ldsBytes, const ir::Key& key) {
  const auto align = [](int64_t x) { return (x + 255) / 256 * 256; };
  OprojLds m;
  m.weights = align(L.red.offset + oprojLdsBytes());
  m.row = align(m.weights + int64_t{8} * A.shape.qHeads * kAttnSplits);
  m.end = A.merge.tasks > 0 ? m.weights : m.row + 2 * A.shape.attnWidth();
  if (m.end > ldsBytes)
    throw IrError(key.variantName(), fmt::format("the merge inside o_proj needs {} B of LDS, the layer has {}", m.end,
                                                 ldsBytes));
  if (A.merge.tasks == 0 && L.push.tasks > 2 * int64_t{L.blocks})  // a third task a CTA would read `attn`
    throw IrError(key.variantName(), fmt::format("the merge inside o_proj: {} o_proj tasks on {} CTAs, past 2 a CTA",
                                                 L.push.tasks, L.blocks));
  const bool fits = align(m.end) + oprojSumsBytes() <= ldsBytes;
  m.sums2 = fits && L.rows <= kOneSyncEpilogueRows ? align(m.end) : -1;  // -1: a sync pair a task
  return m;
}

/// push with o_proj: the weights and w_o scales of the CTA's first two tasks load before the rows
/// are ready (they need no attention row), then the token scales and both tasks in one pass. With
/// no merge task (S = 1), each push CTA merges the row's splits itself into LDS, as the serving
/// stack's o task does; push task 0's CTA also writes it to `attn` (an output).
void oprojAfterAttention(KernelContext& c, AttentionContext& ac, const AttentionLaunchLayout& A, int64_t ldsBytes,
                         const ir::Key& key) {
  ir::Builder& b = c.b;
  const Placement& p = c.L.push;
  const int blocks = c.L.blocks;
  c.loadPeers();
  Val first = b.named(specs::stageFirstTask(b, c.block, p.base, blocks), "first");
  Val second = first + c.i32(blocks);
  // a CTA past the tasks loads the last task's (read, not used): no branch around the loads
  std::vector<Val> tasks{first};
  std::vector<OprojEarly> early{oprojEarly(c, b.min(first, c.i32(p.tasks - 1)))};
  if (p.tasks > blocks) {
    tasks.push_back(second);
    early.push_back(oprojEarly(c, b.min(second, c.i32(p.tasks - 1))));
  }
  const OprojLds m = oprojLds(A, c.L, ldsBytes, key);
  const int sums2 = m.sums2 < 0 ? -1 : static_cast<int>(m.sums2 - c.L.red.offset);
  if (A.merge.tasks > 0) {
    awaitAttnRows(c, A);
    b.if_(first < c.i32(p.tasks), [&] { oprojPushTasks(c, tasks, early, {}, sums2); });
  } else {
    // the attention code on this stage's ids (its stage binds them in attention stages only)
    ac.tid = c.tid, ac.lane = c.lane, ac.wave = c.wave, ac.block = c.block;
    ac.tag = c.tag, ac.waitTicks = c.waitTicks, ac.err = c.err;
    Val row = b.named(b.intToPtr(c.i32(m.row), ir::AddrSpace::Lds), "merged_row");
    b.if_(first < c.i32(p.tasks), [&] {
      Val writer = first == c.i32(0);
      mergeAttentionRow(ac, c.i32(0), b.intToPtr(c.i32(m.weights), ir::AddrSpace::Lds), [&](Val cell, Val v) {
        b.store(b.ptrAdd(row, cell * c.i32(2)), v);
        b.if_(writer, [&] { b.store(c.elemAt(c.attn, cell, 2), v); });
      });
      c.ctaSync(false);
      oprojPushTasks(c, tasks, early, row, sums2);
    });
    // a CTA with no push task: the FFN stages' LDS is theirs from here
    b.if_(first >= c.i32(p.tasks), [&] { c.ctaSync(false); });
  }
  if (p.tasks <= blocks) return;
  b.for_(second + c.i32(blocks), c.i32(p.tasks), c.i32(blocks), [&](Val t) { stageOprojPush(c, t); });
}

}  // namespace

ir::Plan buildLayerPlan(const ModelConfig& cfg, const ir::Key& key) { return buildLayerPlan(LayerVariant::make(cfg, key)); }

ir::Plan buildLayerPlan(const LayerVariant& v) {
  const AttentionLaunchLayout& A = v.attention.layout;
  const Layout& L = v.ffn.layout;
  const ir::Plan attnPlan = buildAttentionPlan(v.attention);
  const ir::Plan ffnPlan = buildPlan(v.ffn);

  ir::Plan plan;
  plan.key = v.key;
  plan.ranks = L.tp;
  plan.grid = ffnPlan.grid;
  plan.args = ffnPlan.args;
  for (ir::KernelArg& a : plan.args) {
    if (a.name == arg::kAttn) {
      a.role = ir::ArgRole::Output;
      a.doc = "bf16 [S, q heads x head_dim / TP]: the attention rows attn_merge writes and o_proj reads";
    } else if (a.name == arg::kResIn) {
      a.role = ir::ArgRole::Output;
      a.doc = "bf16 [S, hidden]: the residual after attention, bf16(x + res) (attn_norm), the FFN's residual in";
    }
  }
  for (ir::KernelArg a : attnPlan.args) {
    if (a.name == attn_arg::kTag) continue;  // the FFN's tag (from its epoch) is the launch's
    if (auto it = attnRenames().find(a.name); it != attnRenames().end()) a.name = it->second;
    if (plan.argIndex(a.name) >= 0) continue;  // one argument for both launches
    plan.args.push_back(a);
  }

  plan.regions = ffnPlan.regions;
  for (ir::MemRegion& r : plan.regions)
    if (r.name == L.xscale.name)
      r.doc = fmt::format("f32 [S]: row t's per-token FP8 scale, amax x f32(1/448), as the quant of push task 0's CTA "
                          "({}) computed it (for checks)",
                          L.push.base);
  for (ir::MemRegion r : attnPlan.regions) {
    r.name = prefixed(r.name);
    if (auto it = attnRenames().find(r.buffer); it != attnRenames().end()) r.buffer = it->second;
    plan.regions.push_back(r);
  }
  for (const ir::FlagArray& f : ffnPlan.flags) plan.flags.push_back(f);
  for (ir::FlagArray f : attnPlan.flags) {
    f.name = prefixed(f.name);
    f.region = prefixed(f.region);
    plan.flags.push_back(f);
  }
  // LDS: the attention stages' pool at 0, the FFN's pools over it (after the boundary barrier)
  const std::string attnPool = prefixed("red");
  plan.pools.push_back(ir::LdsPool{attnPool, 0, A.ldsBytes, "", attnPlan.pools.at(0).doc});
  for (ir::LdsPool p : ffnPlan.pools) {
    if (p.aliasOf.empty() && p.offset < A.ldsBytes) p.aliasOf = attnPool;
    else if (p.offset < A.ldsBytes)
      throw IrError(v.key.variantName(), fmt::format("pool '{}' aliases '{}' and the attention pool", p.name, p.aliasOf));
    plan.pools.push_back(p);
  }
  plan.ldsBytes = std::max(A.ldsBytes, L.ldsBytes);

  for (const AttentionStageDef* d : attentionStages())
    if (d->placement(A).tasks > 0) plan.stages.push_back(attentionRecord(*d, A));
  for (const StageDef* d : layerFfnStages(L)) {
    plan.stages.push_back(d->record(L));
    if (d->placement(L).name == L.push.name)  // the rows (ARDY), or at S = 1 the splits it merges (SRDY)
      plan.stages.back().waits.push_back(A.merge.tasks > 0 ? ir::FlagUse{prefixed("ARDY"), A.rows}
                                                           : ir::FlagUse{prefixed("SRDY"), A.splitTasks});
  }

  plan.facts = {{"launch", "the attention stages, then the FFN's (o_proj after ARDY), then the finish stages"},
                {"placement", fmt::format("the serving stack's bases (LayerPlacement): attn_split {}, attn_merge {}, "
                                          "push and reduce {}, router {}, up {}, down {}; each stage's own task count",
                                          A.split.base, A.merge.base, L.push.base, L.router.base, L.up.base,
                                          L.down.base)},
                {"all-reduces", L.ffnReduceScatter ? fmt::format("reduce-scatter to row t's owner rank t % TP + "
                                                                 "all-gather (A_AG, FFN_AG): S >= ag_rs_from = {}",
                                                                 v.placementKnobs.agRsFrom)
                                                   : fmt::format("one-shot push to every rank: S < ag_rs_from = {}",
                                                                 v.placementKnobs.agRsFrom)}};
  for (const auto& f : attnPlan.facts) plan.facts.push_back({"attention: " + f.first, f.second});
  for (const auto& f : ffnPlan.facts) plan.facts.push_back({"ffn: " + f.first, f.second});
  plan.facts.push_back({"error sites", fmt::format("attention {}..{} (site | token << 16), layer ARDY {}, the FFN's "
                                                   "(site | rank << 8 | token << 16)",
                                                   kSiteAttnGemv, kSiteAttnLast, kSiteLayerArdy)});

  plan.kernel.name = "monogen_minimax_m3_layer";
  ir::Builder b(plan.kernel);
  KernelContext c(v.ffn, plan, b);  // its prologue reads the epoch: the launch's tag
  c.stageBlocks = true;
  addMarkStage(c, plan);  // first: the CTA has its tag
  AttentionContext ac(v.attention, plan, b, attnRenames(), c.launchTag());
  for (const AttentionStageDef* d : attentionStages())
    if (d->placement(A).tasks > 0) ac.stage(plan.stageIndex(d->placement(A).name), [&] { d->body(ac); });
  for (const StageDef* d : layerFfnStages(L)) {
    const bool push = d->placement(L).name == L.push.name;
    c.stage(plan.stageIndex(d->placement(L).name), [&] {
      if (push && L.oproj) return oprojAfterAttention(c, ac, A, plan.ldsBytes, plan.key);
      if (push) awaitAttnRows(c, A);
      d->body(c);
    });
  }
  addFinishStages(c, plan);
  c.finishMutation();
  return plan;
}

}  // namespace monogen::specs::minimax_m3
