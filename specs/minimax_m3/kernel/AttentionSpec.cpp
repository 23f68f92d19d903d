#include "specs/minimax_m3/kernel/AttentionSpec.h"

#include <fmt/format.h>

#include <tuple>

#include "specs/minimax_m3/kernel/AttentionContext.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"

namespace monogen::specs::minimax_m3 {

using ir::ArgRole;
using ir::KernelArg;
using ir::Scalar;

namespace {

KernelArg tensor(const char* name, Scalar elem, std::vector<int64_t> shape, ArgRole role, std::string doc) {
  KernelArg a;
  a.name = name;
  a.isPointer = true;
  a.elem = elem;
  a.shape = std::move(shape);
  a.role = role;
  a.align = 16;
  a.doc = std::move(doc);
  return a;
}

std::vector<KernelArg> attentionArgs(const AttentionVariant& v) {
  namespace n = attn_arg;
  const AttentionLaunchLayout& L = v.layout;
  const AttentionShape& sh = L.shape;
  const int64_t S = L.rows, H = L.hidden;
  const bool atom = v.knobs.mode == CacheMode::Atom;
  std::vector<KernelArg> args = {
      tensor(n::kX, Scalar::BF16, {S, H}, ArgRole::Input, "bf16 [S, hidden]: the previous layer's all-reduced output"),
      tensor(n::kRes, Scalar::BF16, {S, H}, ArgRole::Input, "bf16 [S, hidden]: its residual"),
      tensor(n::kResOut, Scalar::BF16, {S, H}, ArgRole::Output, "bf16 [S, hidden]: the new residual bf16(x + res)"),
      tensor(n::kGIn, Scalar::BF16, {H}, ArgRole::Weight, "bf16 [hidden]: input_layernorm (1 + w)"),
      tensor(n::kScratch, Scalar::I8, {L.scratchBytes}, ArgRole::Scratch,
             "u8 [bytes]: this rank's scratch (x8 E4M3 [S, hidden], x_scale f32 [S], rstd f32 [S])"),
      tensor(n::kWQkv, Scalar::I8, {L.qkvRows, H}, ArgRole::Weight,
             v.knobs.indexCp() ? "e4m3 [w_qkv rows, hidden]: q | k | v | index q | index k | the other index heads' q, AITER "
                                "(16,16)-shuffled"
                              : "e4m3 [w_qkv rows, hidden]: q | k | v | index q | index k, AITER (16,16)-shuffled"),
      tensor(n::kSQkv, Scalar::F32, {L.qkvRows}, ArgRole::Weight, "f32 [w_qkv rows]: a scale a row"),
      tensor(n::kGQ, Scalar::BF16, {sh.headDim}, ArgRole::Weight, "bf16 [head_dim]: q_norm (1 + w)"),
      tensor(n::kGK, Scalar::BF16, {sh.headDim}, ArgRole::Weight, "bf16 [head_dim]: k_norm (1 + w)"),
      tensor(n::kGIq, Scalar::BF16, {sh.indexDim}, ArgRole::Weight, "bf16 [index_dim]: the index q's norm (1 + w)"),
      tensor(n::kGIk, Scalar::BF16, {sh.indexDim}, ArgRole::Weight, "bf16 [index_dim]: the index key's norm (1 + w)"),
      tensor(n::kCosSin, Scalar::BF16, {0, sh.rotaryDim}, ArgRole::Weight,
             "bf16 [max positions, rotary_dim]: cos then sin of each position (the caller's length)"),
      tensor(n::kPositions, Scalar::I64, {S}, ArgRole::Input, "i64 [S]: each row's position"),
      tensor(n::kSlots, Scalar::I64, {S}, ArgRole::Input, "i64 [S]: each row's cache slot (-1: padded)"),
      tensor(n::kIndexSlots, Scalar::I64, {S}, ArgRole::Input, "i64 [S]: each row's index-cache slot (vllm)"),
      tensor(n::kSeqLens, Scalar::I32, {S}, ArgRole::Input, "i32 [S]: the keys each row attends (its position + 1)"),
      tensor(n::kBlockTables, Scalar::I32, {S, 0}, ArgRole::Input,
             "i32 [S, table_stride]: each row's block-table row (vllm: 2 kvHeads x the block id; atom: the id)"),
      tensor(n::kKCache, Scalar::I8, {0}, ArgRole::Input,
             atom ? "e4m3 [pages, 16, head_dim]: the K cache (the caller's blocks), read and appended"
                  : "e4m3: the packed main cache, K then V half a block (the caller's blocks), read and appended"),
  };
  // the caches are the host's state: read (the context) and appended to, so Input
  if (atom)
    args.push_back(tensor(n::kVCache, Scalar::I8, {0}, ArgRole::Input, "e4m3 [pages, head_dim, 16]: the V cache, read and appended"));
  args.push_back(tensor(n::kKScale, Scalar::F32, {atom ? 0 : 1}, ArgRole::Input,
                        atom ? "f32 [pages x 16]: K's per-token scales, read and appended" : "f32 [1]: K's scale"));
  args.push_back(tensor(n::kVScale, Scalar::F32, {atom ? 0 : 1}, ArgRole::Input,
                        atom ? "f32 [pages x 16]: V's per-token scales, read and appended" : "f32 [1]: V's scale"));
  args.push_back(tensor(n::kIndexCache, Scalar::I8, {0}, ArgRole::Input,
                        "e4m3 [blocks, block, index_dim]: the index-key cache, read and appended"));
  args.push_back(tensor(n::kQ, Scalar::BF16, {S, sh.qHeads, sh.headDim}, ArgRole::Output,
                        "bf16 [S, q heads, head_dim]: q after norm + RoPE, as the split reads it"));
  if (!v.knobs.fullLayer)
    args.push_back(tensor(n::kIq, Scalar::BF16, {S, sh.indexHeads, sh.indexDim}, ArgRole::Output,
                          "bf16 [S, index heads, index_dim]: the index q as the indexer scores with it (vllm: "
                          "through E4M3 at unit scale)"));
  if (!atom && !v.knobs.fullLayer)
    args.push_back(tensor(n::kIndexTables, Scalar::I32, {S, 0}, ArgRole::Input,
                          "i32 [S, table_stride]: each row's index block-table row (physical index pages)"));
  args.push_back(tensor(n::kAttn, Scalar::BF16, {S, sh.attnWidth()}, ArgRole::Output,
                        "bf16 [S, q heads x head_dim]: the attention rows (the attn.rR slice o_proj reads)"));
  KernelArg err = tensor(n::kErr, Scalar::I32, {2}, ArgRole::Control,
                         "i32 [2]: the error word (first failure: site | token << 16) and the failure count; zero it once");
  err.align = 4;
  args.push_back(err);
  KernelArg cnt = tensor(n::kHeadsCount, Scalar::I32, {S}, ArgRole::Control,
                         "i32 [S]: attn_heads' tasks done a row, 0 between launches (the last resets it); zero it once");
  cnt.align = 4;
  args.push_back(cnt);
  for (auto [name, elem, doc] : {std::tuple{n::kTag, Scalar::I32, "i32: this launch's tag, 1 .. 2^30, a new one each launch"},
                                 std::tuple{n::kWaitTicks, Scalar::I64, "i64: a wait's bound in 100 MHz realtime ticks"},
                                 std::tuple{n::kTableStride, Scalar::I32, "i32: block_tables' row stride in entries"}}) {
    KernelArg a;
    a.name = name;
    a.isPointer = false;
    a.elem = elem;
    a.role = ArgRole::Control;
    a.align = elem == Scalar::I64 ? 8 : 4;
    a.doc = doc;
    args.push_back(a);
  }
  return args;
}

}  // namespace

ir::Plan buildAttentionPlan(const ModelConfig& cfg, const ir::Key& key) {
  return buildAttentionPlan(AttentionVariant::make(cfg, key));
}

ir::Plan buildAttentionPlan(const AttentionVariant& v) {
  const AttentionLaunchLayout& L = v.layout;
  ir::Plan plan;
  plan.key = v.key;
  plan.ranks = L.tp;
  plan.grid = ir::Grid{L.blocks, L.threads};
  plan.args = attentionArgs(v);
  plan.regions.push_back(ir::MemRegion{"X8", attn_arg::kScratch, L.x8Offset, int64_t{L.rows} * L.hidden,
                                       "E4M3 [S, hidden]: the quantized normed rows"});
  plan.regions.push_back(ir::MemRegion{"XSCALE", attn_arg::kScratch, L.xScaleOffset, 4 * int64_t{L.rows},
                                       "f32 [S]: each row's quant scale"});
  plan.regions.push_back(ir::MemRegion{"RSTD", attn_arg::kScratch, L.rstdOffset, 4 * int64_t{L.rows},
                                       "f32 [S]: each row's input-norm rstd"});
  plan.regions.push_back(ir::MemRegion{"QKV", attn_arg::kScratch, L.qkvOffset, 2 * int64_t{L.rows} * L.qkvRows,
                                       "bf16 [S, w_qkv rows]: the GEMV's rows"});
  plan.regions.push_back(ir::MemRegion{"XRDY", attn_arg::kScratch, L.xrdyOffset, 8 * int64_t{L.rows},
                                       "pairs [S]: a row's x8, x_scale and rstd are written"});
  plan.regions.push_back(ir::MemRegion{"QRDY", attn_arg::kScratch, L.qrdyOffset, 8 * int64_t{L.qkvTiles},
                                       "pairs [w_qkv tiles]: a 16-row tile of QKV is written"});
  plan.regions.push_back(ir::MemRegion{"SPLIT_O", attn_arg::kScratch, L.splitOOffset,
                                       2 * int64_t{L.splitTasks} * L.shape.qGroup * L.shape.headDim,
                                       "bf16 [S x kvHeads x 8, qGroup, headDim]: each split's o / l"});
  plan.regions.push_back(ir::MemRegion{"SPLIT_M", attn_arg::kScratch, L.splitMOffset,
                                       4 * int64_t{L.splitTasks} * L.shape.qGroup, "f32 [splits, qGroup]: each split's m"});
  plan.regions.push_back(ir::MemRegion{"SPLIT_L", attn_arg::kScratch, L.splitLOffset,
                                       4 * int64_t{L.splitTasks} * L.shape.qGroup, "f32 [splits, qGroup]: each split's l"});
  plan.regions.push_back(ir::MemRegion{"HRDY", attn_arg::kScratch, L.hrdyOffset, 8 * int64_t{L.rows},
                                       "pairs [S]: a row's q, index q and cache inserts are written"});
  plan.regions.push_back(ir::MemRegion{"SRDY", attn_arg::kScratch, L.srdyOffset, 8 * int64_t{L.splitTasks},
                                       "pairs [splits]: a split's o, m, l are written"});
  plan.regions.push_back(ir::MemRegion{"SEL", attn_arg::kScratch, L.selOffset,
                                       4 * int64_t{L.rows} * L.shape.kvHeads * kSelWords,
                                       "i32 [S x kvHeads][32]: each selection's blocks in slot order, then its length"});
  plan.regions.push_back(ir::MemRegion{"IRDY", attn_arg::kScratch, L.irdyOffset, 8 * int64_t{L.rows} * L.shape.kvHeads,
                                       "pairs [S x kvHeads]: a selection is written"});
  if (L.ardyOffset >= 0) {  // the layer launch's
    plan.regions.push_back(ir::MemRegion{"ARDY", attn_arg::kScratch, L.ardyOffset, 8 * int64_t{L.rows},
                                         "pairs [S]: a row's attention row is written"});
    plan.flags.push_back(ir::FlagArray{"ARDY", "ARDY", L.rows, false, "attn_merge's rows (the layer launch)", false});
  }
  if (L.indexShare.tasks > 0) {
    plan.regions.push_back(ir::MemRegion{"CAND", attn_arg::kScratch, L.candOffset,
                                         8 * L.indexShare.tasks * L.shape.topk,
                                         "i32 pairs [S x kvHeads][8][topk]: each share's best (key, block) by rank"});
    plan.regions.push_back(ir::MemRegion{"CRDY", attn_arg::kScratch, L.crdyOffset, 8 * L.indexShare.tasks,
                                         "pairs [S x kvHeads x 8]: a share's sort keys or candidates are written"});
    plan.regions.push_back(ir::MemRegion{"ISCORE", attn_arg::kScratch, L.iscoreOffset,
                                         4 * L.index.tasks * int64_t{kLongFromBlocks},
                                         "i32 [S x kvHeads][blocks]: a scored row's sort keys a block (the shares', "
                                         "up to the long path's blocks)"});
  }
  if (L.iqCpOffset >= 0)  // indexer context parallelism
    plan.regions.push_back(ir::MemRegion{"IQCP", attn_arg::kScratch, L.iqCpOffset,
                                         2 * int64_t{L.rows} * L.shape.cpHeads * L.shape.indexDim,
                                         "bf16 [S][other index heads][index_dim]: the other ranks' index heads' q, "
                                         "as iq holds the rank's own (global order, the own skipped)"});
  if (L.selCpOffset >= 0) {  // indexer CP in the layer launch: the candidates, in the symmetric buffer
    plan.regions.push_back(ir::MemRegion{"SEL_CP", arg::kSym, L.selCpOffset, 8 * L.selCpPairs,
                                         "pairs [parity][S][kvHeads][src rank][part][topk][key, block]: the "
                                         "candidates every rank's attn_index_share mails to a head's owner"});
    plan.flags.push_back(ir::FlagArray{"SEL_CP", "SEL_CP", L.selCpPairs, true,
                                       "attn_index_share's candidates for the owners' attn_index (a CP row's)", true});
  }
  plan.flags.push_back(ir::FlagArray{"XRDY", "XRDY", L.rows, false, "attn_norm's rows", false});
  plan.flags.push_back(ir::FlagArray{"QRDY", "QRDY", L.qkvTiles, false, "attn_gemv's tiles", false});
  plan.flags.push_back(ir::FlagArray{"HRDY", "HRDY", L.rows, false, "attn_heads' rows (the last task of a row publishes)", false});
  if (L.index.tasks > 0)
    plan.flags.push_back(ir::FlagArray{"IRDY", "IRDY", L.index.tasks, false, "attn_index's selections", false});
  if (L.indexShare.tasks > 0)
    plan.flags.push_back(ir::FlagArray{"CRDY", "CRDY", L.indexShare.tasks, false, "attn_index_share's sort keys or candidates",
                                       false});
  plan.flags.push_back(ir::FlagArray{"SRDY", "SRDY", L.splitTasks, false, "attn_split's splits", false});
  plan.pools.push_back(ir::LdsPool{"red", 0, L.ldsBytes, "",
                                   "f32: the norm's group sums and wave maxima; the GEMV's wave accumulators "
                                   "[waves][16][16]; the split's wave maxima, l sums, P8 and PV"});
  plan.ldsBytes = L.ldsBytes;
  // a stage without tasks at this variant (attn_index on full layers) is left out
  for (const AttentionStageDef* d : attentionStages())
    if (d->placement(L).tasks > 0) plan.stages.push_back(d->record(L));
  plan.facts = {
      {"hidden", std::to_string(L.hidden)},
      {"S", std::to_string(L.rows)},
      {"TP", std::to_string(L.tp)},
      {"cache mode", cacheModeName(v.knobs.mode)},
      {"layer", v.knobs.fullLayer ? "full" : "sparse"},
      {"heads a rank", fmt::format("{} q, {} KV, {} index", L.shape.qHeads, L.shape.kvHeads, L.shape.indexHeads)},
      {"w_qkv rows a rank", std::to_string(L.qkvRows)},
      {"head units a row", fmt::format("{} in {} tasks of {} waves", L.headUnits, L.headTasks, L.waves)},
  };
  if (v.knobs.indexCp())
    plan.facts.push_back({"indexer CP", fmt::format("rows past {} blocks; {} other index heads' q rows from w_qkv row {}",
                                                    v.knobs.indexCpFrom, L.shape.cpHeads, L.shape.cpOff)});
  plan.kernel.name = "monogen_minimax_m3_attention";
  ir::Builder b(plan.kernel);
  AttentionContext c(v, plan, b);
  for (const AttentionStageDef* d : attentionStages())
    if (d->placement(L).tasks > 0) c.stage(plan.stageIndex(d->placement(L).name), [&] { d->body(c); });
  return plan;
}

}  // namespace monogen::specs::minimax_m3
