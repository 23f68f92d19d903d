// The stages of the MiniMax-M3 FFN kernel, one function a stage (one file each). A stage
// function emits one task's body; Spec.cpp runs it in the stage's task loop.
#pragma once
#include <vector>

#include "ir/Builder.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/kernel/stages/StageDef.h"

namespace monogen::specs::minimax_m3 {

/// push: pairs 16 task .. of this rank's o_proj partial to every rank's ATTN.
void stagePush(KernelContext& c, ir::Val task);
/// One thread's push of bf16 pair `pair` (an i32 word) of row t to pair [my rank][t][pair] of every
/// rank's ATTN, rank order, relaxed at system scope (the pair carries its tag).
void pushPair(KernelContext& c, ir::Val t, ir::Val pair, ir::Val word);
/// push with o_proj in the launch (input=attn, StageOproj.cpp), once a CTA that has push tasks,
/// before them: every row's per-token quant scale and its inverse (LDS). `rowLds`: the one row in
/// LDS (the layer at S = 1, merged on the CTA), else the rows from `attn`.
void oprojTokenScales(KernelContext& c, ir::Val rowLds = {});
/// push task `task` with o_proj in the launch: the rowwise-FP8 GEMM of columns 32 task .. for every
/// row, its bf16 partial to OPART and, as pairs, to every rank's ATTN.
/// `weights`: the task's oprojWeights, loaded earlier (the layer issues them before its ARDY wait).
void stageOprojPush(KernelContext& c, ir::Val task, const std::vector<ir::Val>* weights = nullptr);
/// A wave's o_proj weight words of push task `task`, one i64 a K step, as stageOprojPush loads them.
std::vector<ir::Val> oprojWeights(KernelContext& c, ir::Val task);
/// What an o_proj task needs before its attention rows: the wave's weight words (oprojWeights) and
/// the thread's two w_o scales (channels 2 (tid % 16) ..).
struct OprojEarly {
  std::vector<ir::Val> w;
  std::vector<ir::Val> ws;
};
OprojEarly oprojEarly(KernelContext& c, ir::Val task);
/// The layer's push, once the rows are ready: the token scales with the first K group's row runs in
/// flight, then tasks[i] on early[i] in one pass (the row runs converted once for every task; tasks
/// past the first are skipped past the stage's count). Same bits as stageOprojPush task by task.
/// `rowLds` as oprojTokenScales'. `secondSumsAt` >= 0 (two tasks): the second task's sums at that
/// LDS byte, so both tasks' epilogues share one sync.
void oprojPushTasks(KernelContext& c, const std::vector<ir::Val>& tasks, const std::vector<OprojEarly>& early,
                    ir::Val rowLds = {}, int secondSumsAt = -1);
/// o_proj's LDS bytes from 0 in its push (the sums, the token scales): the layer's merge at S = 1
/// puts its weights and row past them.
int oprojLdsBytes();
/// One task's sums' LDS bytes (f32 [K parts][32 channels][16 tokens]).
int oprojSumsBytes();
/// reduce: the ranks' pairs 16 task .. in rank order + residual -> res_out, SRES, SSQ.
void stageReduce(KernelContext& c, ir::Val task);
/// norm: row `task`'s SSQ parts -> rstd, XN (bf16), XRDY.
void stageNorm(KernelContext& c, ir::Val task);
/// The RMSNorm's rstd from a row's SSQ total, 1 / sqrt(total / hidden + eps): the norm's and the
/// router's one formula (the router sums the SSQ parts itself, in blockSum's order).
ir::Val rstdOf(KernelContext& c, ir::Val total);
/// router: tile task / parts, K part task % parts -> LOGIT parts of every row.
void stageRouter(KernelContext& c, ir::Val task);
/// route: row `task`'s LOGIT parts -> picks and weights (ROUTE).
void stageRoute(KernelContext& c, ir::Val task);
/// table (every CTA, once): ROUTE -> the slot table in LDS (CTA 0 also dumps it to TABDUMP).
void stageTable(KernelContext& c);
/// A wave's w13 / s13 operands of one up unit (StageUp.cpp): made once a stage, loaded a unit
/// ahead.
struct UpWeights {
  std::vector<ir::Var> w4, scale;  // [2 step + h]: i32x4 fp4x2 rows, i32 e8m0 byte
};
UpWeights makeUpWeights(KernelContext& c);
/// Issues task's weight loads into w (nothing for a task past the table's units).
void loadUpWeights(KernelContext& c, ir::Val task, UpWeights& w);
/// A16W4's MFMA tile (4 chained bf16 16x16x32 MFMAs a K step, a lane group's 32 K the e8m0 block)
/// and one step of it (StageUp.cpp): acc + A x B over the step, A the fp4x2 dwords `w4` scaled by
/// e8m0 `scaleByte`, B the lane's bf16 operands x[d]. Up and down run their GEMVs on them.
MfmaTile a16w4Tile(KernelContext& c);
ir::Val a16w4Step(const MfmaTile& t, ir::Val acc, ir::Val w4, ir::Val scaleByte, const std::vector<ir::Val>& x);
/// Row t's pair `pair` of every rank's partial in `area` (sym, [TP][S][hidden / 2] pairs), in rank
/// order, each awaited at system scope (`order`; `site`, the error code naming the rank that owes it).
std::vector<ir::Val> awaitRankPairs(KernelContext& c, const Area& area, ir::Val t, ir::Val pair, int site,
                                    ir::MemOrder order = ir::MemOrder::Acquire);
/// Rank src's pair `pair` of row t in `area` (src an i32 value), awaited as awaitRankPairs does.
ir::Val awaitRankPair(KernelContext& c, const Area& area, ir::Val src, ir::Val t, ir::Val pair, int site,
                      ir::MemOrder order);
/// awaitRankPairs for pair 16 task + tid % 16 of row tid / 16 (threads tid < 16 S), every CTA
/// thread calling it: the TP waits run at once over the CTA's threads (each waits one rank's
/// pair), their words meet in LDS red [TP][16 S] after a barrier. red must be free; its words are
/// read back when it returns, so a barrier must come before red's next writes.
std::vector<ir::Val> awaitRankPairsAtOnce(KernelContext& c, const Area& area, ir::Val task, int site,
                                          ir::MemOrder order);
/// The ranks' bf16 halves at bit `shift` of their pairs, summed in rank order in f32.
ir::Val sumRanksF32(ir::Builder& b, const std::vector<ir::Val>& word, ir::Val shift);
/// Reduce-scattered: row t's owner rank t % TP alone awaits every rank's pair in `from` (`site`),
/// sums them in rank order in f32, rounds once to bf16 and publishes it to every rank's `to`.
void reduceToOwner(KernelContext& c, ir::Val task, const Area& from, const Area& to, int site);
/// The CTA's first up task: up's tasks run round-robin from its base (task t on CTA (base + t) %
/// blocks, a CTA's next task t + blocks); slot 0, the shared expert, is tasks 0 .. upTiles - 1.
ir::Val upFirstTask(KernelContext& c);
/// up's prologue when L.xnInLds (S <= 8): the CTA copies the XN rows its up tasks (from `first`)
/// read to LDS.
void stageXnToLds(KernelContext& c, ir::Val first);
/// up: slot task / upTiles, tile pair task % upTiles (a task past the slots does nothing but
/// the CTA's barriers) -> MID, UPF.
void stageUp(KernelContext& c, ir::Val task, UpWeights& cur, UpWeights& next);
/// up's SwiGLU-OAI: thread (r, cc) of a unit (slot u, tile pair j), when column cc < cnt, stores
/// MID[u][cc][16 j + r] = bf16(SwiGLU-OAI(gate, up)) (the f32 gate and up rows' dots).
void storeUpMid(KernelContext& c, ir::Val u, ir::Val j, ir::Val cnt, ir::Val r, ir::Val cc, ir::Val gate, ir::Val up);
/// up's end of a unit: the CTA's barrier (drained), then thread 0 of a valid task publishes UPF.
void publishUp(KernelContext& c, ir::Val valid, ir::Val task);
/// up under A8W4 (StageUpA8w4.cpp): the same unit as stageUp, gate and up each one wave's chain of
/// scaled MFMAs over hidden (the CTA's XN rows staged in LDS as MXFP8), 4 units at once -> MID, UPF.
void stageUpA8w4(KernelContext& c, ir::Val task);
/// down under A8W4 (StageDownA8w4.cpp), the stage's body: awaitUp, then each task's slots a chain
/// of scaled MFMAs over I/TP (the MID columns as MXFP8 in LDS), a wave's first weights a chain ahead.
void stageDownA8w4(KernelContext& c);
/// down's combine of a group's nTasks (1 or 2) tasks' CONTRIB rows (the first task's in CONTRIB,
/// the second's, group + blocks, in red) and its push to the FFN pairs (StageDown.cpp).
void combineDown(KernelContext& c, ir::Val group, ir::Val nTasks);
/// A wave's w2 / s2 operands of the first K steps (at most kDownStepsAhead) of one slot GEMV
/// (StageDown.cpp): made once a stage, loaded a GEMV ahead (the first before awaitUp).
struct DownWeights {
  std::vector<ir::Var> w4, scale;  // [step]: i32x4 fp4x2 rows, i32 e8m0 byte
};
/// down: hidden rows 16 task .. of every slot for the group's tasks (group, and group + blocks
/// when two run at once), the combine -> every rank's FFN. cur holds a GEMV's first steps; the
/// wave's next GEMV loads into next while it computes.
void stageDown(KernelContext& c, ir::Val group, DownWeights& cur, DownWeights& next);
/// down's wait: UPF of every slot's tile pairs (once a CTA, before its down tasks).
void awaitUp(KernelContext& c);
/// final: pairs 16 task .. of the ranks' FFN partials in rank order -> out.
void stageFinal(KernelContext& c, ir::Val task);

/// The finish stages' control arguments (StageFinish.cpp): epoch, handshake, inject, and the
/// trace buffer when the trace knob is on (its stage count is set by addFinishStages).
std::vector<ir::KernelArg> finishArgs(const FfnVariant& v);
/// mark (every CTA): puts the stage first in the Plan and emits it; call it before any other
/// stage is emitted.
void addMarkStage(KernelContext& c, ir::Plan& plan);
/// done (every CTA, the step's last launch), epoch (CTA 0), handshake (CTA 0, the step's last
/// launch): appends the three stages to the Plan and emits them. The last step of buildPlan: it
/// also sets the trace's stage count, so every stage must be in the Plan before it.
void addFinishStages(KernelContext& c, ir::Plan& plan);

}  // namespace monogen::specs::minimax_m3
