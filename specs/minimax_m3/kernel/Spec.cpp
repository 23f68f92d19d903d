#include "specs/minimax_m3/kernel/Spec.h"

#include <fmt/format.h>

#include <limits>
#include <variant>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/kernel/OprojShape.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::ArgRole;
using ir::KernelArg;
using ir::Scalar;

namespace {

ir::Key checkedKey(const ModelConfig& cfg, const ir::Key& in) {
  ir::Key key = in;
  const std::string where = key.variantName();
  if (key.spec != kSpecId)
    throw InputError(where, fmt::format("spec '{}': this builder makes '{}'", key.spec, kSpecId));
  if (key.specVersion != kSpecVersion)
    throw InputError(where, fmt::format("spec version {}: this builder makes version {}", key.specVersion,
                                        kSpecVersion));
  const bool paramsOk = key.params.size() == 2 && key.params[0].name == kParamRows &&
                        key.params[1].name == kParamTp &&
                        std::holds_alternative<int64_t>(key.params[0].value) &&
                        std::holds_alternative<int64_t>(key.params[1].value);
  if (!paramsOk) {
    std::string given;
    for (const ir::KeyParam& p : key.params) given += (given.empty() ? "" : " ") + p.name + "=" + p.valueText();
    throw InputError(where, fmt::format("parameters [{}]: this builder takes integers {} and {}, in that order", given,
                                        kParamRows, kParamTp));
  }
  const std::string canon = cfg.canonical();
  if (key.config.empty()) key.config = canon;
  if (key.config != canon)
    throw InputError(where, fmt::format("the key's config '{}' is not the model config's '{}'", key.config, canon));
  const FfnKnobs knobs = knobsOf(key);  // an unknown or bad knob is an InputError
  if (knobs.dropMark < -1 || knobs.dropMark >= cfg.blocks)
    throw InputError(where, fmt::format("drop mark CTA {}: expected -1 (none) or 0..{}", knobs.dropMark,
                                        cfg.blocks - 1));
  return key;
}

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

runtime::ArgLayouts argLayouts(const ir::Plan& plan) {
  const std::string l = scaleLayoutName(knobsOf(plan.key).scales);
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

ir::Plan buildPlan(const ModelConfig& cfg, const ir::Key& keyIn) {
  ir::Key key = checkedKey(cfg, keyIn);
  Layout L;
  try {
    L = Layout::make(cfg, rowsOf(key), tpOf(key), knobsOf(key).input);
  } catch (const InputError& e) {
    throw InputError(key.variantName(), e.what());
  }

  ir::Plan plan;
  plan.key = key;
  plan.ranks = L.tp;
  plan.grid = ir::Grid{cfg.blocks, cfg.threads};
  plan.args = kernelArgs(L, knobsOf(key).scales);
  for (const KernelArg& a : finishArgs(L, key)) plan.args.push_back(a);  // epoch, handshake, inject, trace

  for (const Area& a : L.areas()) {
    plan.regions.push_back(ir::MemRegion{a.name, a.buffer, a.offset, a.bytes, a.doc});
    if (a.pairs > 0) plan.flags.push_back(ir::FlagArray{a.name, a.name, a.pairs, a.peer, a.doc, a.parity});
  }
  for (const Pool& p : L.pools()) plan.pools.push_back(ir::LdsPool{p.name, p.offset, p.bytes, "", p.doc});
  plan.ldsBytes = L.ldsBytes;

  // Pairs a launch moves, counted over every rank for the peer array ATTN: each of TP ranks
  // pushes S x hidden / 2 pairs to each of TP ranks, and each rank's reduce waits on its TP x S x
  // hidden / 2. SSQ is per rank: S x tasks pairs.
  const int64_t attnPairs = int64_t{L.tp} * L.tp * L.rows * (L.hidden / 2);
  const int64_t ssqPairs = int64_t{L.rows} * L.reduce.tasks;
  ir::Stage push;
  push.name = L.push.name;
  push.tasks = L.push.tasks;
  push.base = L.push.base;
  push.publishes = {{L.attn.name, attnPairs}};
  push.doc = L.oproj ? "o_proj: every row's per-token FP8 quant, then the rowwise-FP8 GEMM of the task's 32 columns "
                       "(v_mfma_f32_16x16x32_fp8_fp8; OPART), as bf16 pairs to every rank's ATTN"
                     : "this rank's o_proj partial as bf16 pairs (32 columns a task, every row) to every rank's ATTN";
  ir::Stage reduce;
  reduce.name = L.reduce.name;
  reduce.tasks = L.reduce.tasks;
  reduce.base = L.reduce.base;
  reduce.waits = {{L.attn.name, attnPairs}};
  reduce.publishes = {{L.ssq.name, ssqPairs}};
  reduce.doc = "the ranks' pairs in rank order, f32 -> bf16, + residual in f32 -> res_out (bf16), SRES (f32), "
               "SSQ (the task's sum of squares, a pair a row)";
  plan.stages = {push, reduce};

  // --- the MoE ---
  const int64_t S = L.rows;
  auto stage = [&](const Placement& p, std::vector<ir::FlagUse> waits, std::vector<ir::FlagUse> pubs,
                   std::string doc) {
    ir::Stage s;
    s.name = p.name;
    s.tasks = p.tasks;
    s.base = p.base;
    s.waits = std::move(waits);
    s.publishes = std::move(pubs);
    s.doc = std::move(doc);
    plan.stages.push_back(s);
    return plan.stages.size() - 1;
  };
  stage(L.norm, {{L.ssq.name, ssqPairs}}, {{L.rstd.name, S}, {L.xrdy.name, S}},
        "Gemma RMSNorm: SSQ parts block-summed -> RSTD (published first); bf16((x rstd)(1 + w)) -> XN; XRDY");
  stage(L.router, {{L.rstd.name, S * L.router.tasks}}, {{L.logit.name, L.logit.pairs}},
        "FP32 router weight x f32(XN) on v_mfma_f32_16x16x4_f32, 16 experts x a K part a task -> LOGIT; its "
        "columns of XN from SRES and the published RSTD (it never waits for XN)");
  stage(L.route, {{L.logit.name, L.logit.pairs}}, {{L.routeA.name, L.routeA.pairs}},
        "the parts summed in quarters, sigmoid, + bias for selection, top-k, renormalized x routed scale");
  {
    const size_t i = stage(L.table, {{L.routeA.name, L.routeA.pairs * L.blocks}}, {},
                           "every CTA: the picks -> the slot table in LDS (slot 0 the shared expert)");
    plan.stages[i].everyCta = true;
  }
  const int64_t upPairs = L.upf.pairs;
  {
    const size_t i = stage(L.up, {{L.xrdy.name, S}}, {{L.upf.name, upPairs}},
                           "16 gate + 16 up rows of a slot's expert a task, A16W4 MFMA, SwiGLU-OAI -> MID (bf16), "
                           "UPF; the task count is the table's slots x upTiles (bounded here)");
    plan.stages[i].runtimeTasks = true;
  }
  const int64_t ffnPairs = int64_t{L.tp} * L.tp * L.rows * (L.hidden / 2);
  stage(L.down, {{L.upf.name, upPairs}}, {{L.ffn.name, ffnPairs}},
        "16 hidden rows a task: every slot's A16W4 GEMV of MID -> CONTRIB (LDS), the combine -> every rank's FFN");
  stage(L.final, {{L.ffn.name, ffnPairs}}, {},
        "the ranks' combined partials in rank order, f32 -> bf16 -> out");

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
  KernelContext c(cfg, L, plan, b);
  c.stage(plan.stageIndex(L.push.name), [&] {
    c.loadPeers();
    if (L.oproj) {
      oprojTokenScales(c);
      c.forEachTask(L.push, [&](ir::Val t) { stageOprojPush(c, t); });
    } else {
      c.forEachTask(L.push, [&](ir::Val t) { stagePush(c, t); });
    }
  });
  c.stage(plan.stageIndex(L.reduce.name),
          [&] { c.forEachTask(L.reduce, [&](ir::Val t) { stageReduce(c, t); }); });
  c.stage(plan.stageIndex(L.norm.name), [&] {
    c.forEachTask(L.norm, [&](ir::Val t) { stageNorm(c, t); });
  });
  c.stage(plan.stageIndex(L.router.name), [&] {
    c.forEachTask(L.router, [&](ir::Val t) { stageRouter(c, t); });
  });
  c.stage(plan.stageIndex(L.route.name), [&] {
    c.forEachTask(L.route, [&](ir::Val t) { stageRoute(c, t); });
  });
  c.stage(plan.stageIndex(L.table.name), [&] {
    stageTable(c);
  });
  c.stage(plan.stageIndex(L.up.name), [&] {
    UpWeights cur = makeUpWeights(c), next = makeUpWeights(c);
    loadUpWeights(c, c.block, cur);  // the CTA's first unit (up's base is CTA 0), right after the table
    c.awaitX(kSiteUp);
    if (L.xnInLds) stageXnToLds(c);
    c.forEachTask(L.up, [&](ir::Val t) { stageUp(c, t, cur, next); });
  });
  c.stage(plan.stageIndex(L.down.name), [&] {
    c.loadPeers();
    awaitUp(c);
    c.forEachTask(L.down, [&](ir::Val t) { stageDown(c, t); });
  });
  c.stage(plan.stageIndex(L.final.name), [&] {
    c.forEachTask(L.final, [&](ir::Val t) { stageFinal(c, t); });
  });
  addFinishStages(c, plan);  // mark, epoch, handshake: the last stages (every stage above goes through c.stage)
  c.finishMutation();        // a race test's mutation (Mutation.h) must have hit its site
  return plan;
}

}  // namespace monogen::specs::minimax_m3
