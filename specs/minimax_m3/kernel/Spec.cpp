#include "specs/minimax_m3/kernel/Spec.h"

#include <fmt/format.h>

#include <limits>
#include <variant>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/FfnVariant.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/kernel/OprojShape.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/StageDef.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::ArgRole;
using ir::KernelArg;
using ir::Scalar;

namespace {

KernelArg ptrArg(std::string name, Scalar elem, std::vector<int64_t> shape, ArgRole role, int align,
                 std::string doc) {
  KernelArg a;
  a.name = std::move(name);
  a.isPointer = true;
  a.elem = elem;
  a.shape = std::move(shape);
  a.role = role;
  a.align = align;
  a.doc = std::move(doc);
  return a;
}

KernelArg scalarArg(std::string name, Scalar elem, std::string doc) {
  KernelArg a;
  a.name = std::move(name);
  a.isPointer = false;
  a.elem = elem;
  a.role = ArgRole::Control;
  a.align = elem == Scalar::I64 ? 8 : 4;
  a.doc = std::move(doc);
  return a;
}

std::vector<KernelArg> kernelArgs(const Layout& L, ScaleLayout scales) {
  const int64_t S = L.rows, H = L.hidden, E1 = L.experts + 1, IP = L.tiling.interPerRank, A = L.attnWidth;
  const std::string sl = scaleLayoutName(scales);
  std::vector<KernelArg> in;
  if (L.oproj) {
    in = {ptrArg(arg::kAttn, Scalar::BF16, {S, A}, ArgRole::Input, 16,
                 "bf16 [S, heads head_dim / TP]: this rank's attention rows, o_proj's input"),
          ptrArg(arg::kWo, Scalar::I8, {H, A}, ArgRole::Weight, 16,
                 "e4m3fn [hidden, heads head_dim / TP]: o_proj's rowwise-FP8 weight, AITER (16,16)-shuffled"),
          ptrArg(arg::kWoScale, Scalar::F32, {H}, ArgRole::Weight, 16, "f32 [hidden]: its scale per output channel")};
  } else {
    in = {ptrArg(arg::kPart, Scalar::BF16, {S, H}, ArgRole::Input, 16, "bf16 [S, hidden]: this rank's o_proj partial")};
  }
  std::vector<KernelArg> rest = {
      ptrArg(arg::kResIn, Scalar::BF16, {S, H}, ArgRole::Input, 16, "bf16 [S, hidden]: the residual stream in"),
      ptrArg(arg::kResOut, Scalar::BF16, {S, H}, ArgRole::Output, 16,
             "bf16 [S, hidden]: the all-reduced attention output + residual"),
      ptrArg(arg::kScratch, Scalar::I8, {L.scratchBytes}, ArgRole::Scratch, static_cast<int>(kRegionAlign),
             "u8 [bytes]: this rank's scratch (SRES, SSQ); flags are never reset, zero it once"),
      ptrArg(arg::kSym, Scalar::I8, {L.symBytes}, ArgRole::Scratch, static_cast<int>(kRegionAlign),
             "u8 [bytes]: this rank's symmetric peer buffer (ATTN), the one `peers` lists for this rank; "
             "every rank allocates it alike; zero it once"),
      ptrArg(arg::kPeers, Scalar::I64, {L.tp}, ArgRole::Peers, 8,
             "u64 [TP]: every rank's symmetric buffer address, in rank order"),
      ptrArg(arg::kErr, Scalar::I32, {2}, ArgRole::Control, 4,
             "i32 [2]: the error word (first failure: site | rank << 8 | token << 16) and the failure count; "
             "zero it once (a failure sets it only while it is 0), and again once a failure is handled"),
      scalarArg(arg::kRank, Scalar::I32, "i32: this rank, 0..TP-1"),
      scalarArg(arg::kWaitTicks, Scalar::I64, "i64: a wait's bound in 100 MHz realtime ticks"),
      // the MoE's weights (WeightContract.h) and its rows and output
      ptrArg(arg::kNormW, Scalar::BF16, {H}, ArgRole::Weight, 16, "bf16 [hidden]: Gemma RMSNorm weight (scale 1 + w)"),
      ptrArg(arg::kRouterW, Scalar::F32, {L.experts, H}, ArgRole::Weight, 16, "f32 [E, hidden]: router weight"),
      ptrArg(arg::kBias, Scalar::F32, {L.experts}, ArgRole::Weight, 16,
             "f32 [E]: e_score_correction_bias (selection only)"),
      ptrArg(arg::kW13, Scalar::I8, {E1, 2 * IP, H / 2}, ArgRole::Weight, 16,
             "fp4x2 [E+1, 2 I/TP, hidden/2]: gate then up rows, AITER (16,16)-shuffled"),
      ptrArg(arg::kS13, Scalar::I8, {E1, 2 * IP, heldScaleColumns(H / 32, scales)}, ArgRole::Weight, 16,
             "e8m0 [E+1, 2 I/TP, P(hidden/32)], " + sl + " (WeightContract.h; declare the layout)"),
      ptrArg(arg::kW2, Scalar::I8, {E1, H, IP / 2}, ArgRole::Weight, 16,
             "fp4x2 [E+1, hidden, I/TP/2]: AITER (16,16)-shuffled"),
      ptrArg(arg::kS2, Scalar::I8, {E1, H, heldScaleColumns(IP / 32, scales)}, ArgRole::Weight, 16,
             "e8m0 [E+1, hidden, P(I/TP/32)], " + sl + " (WeightContract.h; declare the layout)"),
      ptrArg(arg::kSlots, Scalar::I64, {S}, ArgRole::Input, 8, "i64 [S]: a row is valid when its slot >= 0 (padded: -1)"),
      ptrArg(arg::kOut, Scalar::BF16, {S, H}, ArgRole::Output, 16, "bf16 [S, hidden]: the reduced MoE output"),
  };
  in.insert(in.end(), rest.begin(), rest.end());
  return in;
}

}  // namespace

runtime::ArgLayouts scaleArgLayouts(ScaleLayout scales) {
  const std::string l = scaleLayoutName(scales);
  return {{arg::kS13, l}, {arg::kS2, l}};
}

static int intParamOf(const ir::Key& key, const char* name) {
  const int64_t v = key.intParam(name);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw InputError(key.variantName(), fmt::format("parameter {} = {} does not fit an int", name, v));
  return static_cast<int>(v);
}

int rowsOf(const ir::Key& key) { return intParamOf(key, kParamRows); }
int tpOf(const ir::Key& key) { return intParamOf(key, kParamTp); }

ir::Key makeKey(const ModelConfig& cfg, int rows, int tp, const FfnKnobs& knobs) {
  ir::Key k;
  k.spec = kSpecId;
  k.specVersion = kSpecVersion;
  k.params = {{kParamRows, rows}, {kParamTp, tp}};
  k.target = ir::gfx950();
  k.knobs = knobs.canonical();
  k.config = cfg.canonical();
  return k;
}

ir::Plan buildPlan(const ModelConfig& cfg, const ir::Key& key) { return buildPlan(FfnVariant::make(cfg, key)); }

ir::Plan buildPlan(const FfnVariant& v) {
  const ir::Key& key = v.key;
  const ModelConfig& cfg = v.cfg;
  const Layout& L = v.layout;

  ir::Plan plan;
  plan.key = key;
  plan.ranks = L.tp;
  plan.grid = ir::Grid{cfg.blocks, cfg.threads};
  plan.args = kernelArgs(L, v.knobs.scales);
  for (const KernelArg& a : finishArgs(v)) plan.args.push_back(a);  // epoch, handshake, inject, trace

  for (const Area& a : L.areas()) {
    plan.regions.push_back(ir::MemRegion{a.name, a.buffer, a.offset, a.bytes, a.doc});
    if (a.pairs > 0)
      plan.flags.push_back(ir::FlagArray{a.name, a.name, a.pairs, a.peer, a.doc, a.parity, a.publishedPairs});
  }
  for (const Pool& p : L.pools()) plan.pools.push_back(ir::LdsPool{p.name, p.offset, p.bytes, "", p.doc});
  plan.ldsBytes = L.ldsBytes;

  for (const StageDef* d : ffnStages()) plan.stages.push_back(d->record(L));

  plan.facts = {
      {"hidden", std::to_string(L.hidden)},
      {"S", std::to_string(L.rows)},
      {"TP", std::to_string(L.tp)},
      {"blocks x threads", fmt::format("{} x {}", L.blocks, L.threads)},
      {"waves", std::to_string(L.waves)},
      {"push / reduce task", fmt::format("{} columns = {} bf16 pairs, every row", kTaskColumns, kTaskPairs)},
      {"push / reduce tasks", std::to_string(L.reduce.tasks)},
      {"active threads a task", std::to_string(L.rows * kTaskPairs)},
      {"scratch bytes", std::to_string(L.scratchBytes)},
      {"sym bytes", std::to_string(L.symBytes)},
      {"lds bytes", std::to_string(L.ldsBytes)},
      {"error code", "site | rank << 8 | token << 16 (reduce: site 1, the source rank)"},
      {"moe tiling", L.tiling.describe()},
  };
  if (L.oproj)
    plan.facts.push_back({"o_proj", fmt::format("in the launch: K = {} a rank, 2 channel tiles x {} K parts = 8 waves "
                                                "a push task, {} FP8 MFMA steps a wave",
                                                L.attnWidth, kOprojKParts, L.attnWidth / 32 / kOprojKParts)});

  plan.kernel.name = "monogen_minimax_m3_ffn";
  ir::Builder b(plan.kernel);
  KernelContext c(v, plan, b);
  addMarkStage(c, plan);  // first: the CTA has its tag
  for (const StageDef* d : ffnStages()) c.stage(plan.stageIndex(d->placement(L).name), [&] { d->body(c); });
  addFinishStages(c, plan);  // done, epoch, handshake: the last stages (every stage above goes through c.stage)
  c.finishMutation();        // a race test's mutation (Mutation.h) must have hit its site
  return plan;
}

}  // namespace monogen::specs::minimax_m3
