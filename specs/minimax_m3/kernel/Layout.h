// Where the MiniMax-M3 FFN launch puts its tasks and data for one (S, TP): the grid, each stage's
// tasks and base (task t on CTA (base + t) % blocks), scratch and peer regions, flag arrays and LDS
// pools, offsets aligned to 256. Plain C++ at build time: spec, stages, harness and tests share it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/kernel/MoeQuant.h"
#include "specs/minimax_m3/kernel/MoeTiling.h"

namespace monogen::specs::minimax_m3 {

/// The TP sizes the launch is built for.
inline constexpr int kAllowedTp[] = {1, 2, 4, 8};
/// Columns a push / reduce task covers (every row), as bf16 pairs.
inline constexpr int kTaskColumns = 32;
inline constexpr int kTaskPairs = kTaskColumns / 2;
/// Byte alignment of every region and pool.
inline constexpr int64_t kRegionAlign = 256;
/// Bytes of one (value, tag) pair.
inline constexpr int64_t kPairBytes = 8;

/// A stage's placement: `tasks` tasks, task t on CTA (base + t) % blocks.
struct Placement {
  std::string name;
  int64_t tasks = 0;
  int base = 0;
  int ctaOf(int64_t t, int blocks) const { return static_cast<int>((base + t) % blocks); }
};

/// A named byte range of a buffer argument ("scratch": per rank; "sym": the symmetric peer buffer).
struct Area {
  std::string name;
  std::string buffer;
  int64_t offset = 0;
  int64_t bytes = 0;
  int64_t pairs = 0;  // (value, tag) pairs when it is a flag array, else 0
  bool peer = false;  // a flag array other ranks write
  std::string doc;
  bool parity = false;  // two halves of pairs / 2 pairs; a launch uses half (tag & 1)
  int64_t publishedPairs = 0;  // a peer array a launch fills only in part: its pairs, every rank (else 0)
};

/// An LDS pool.
struct Pool {
  std::string name;
  int64_t offset = 0;
  int64_t bytes = 0;
  std::string doc;
};

struct Layout {
  // --- the variant ---
  int rows = 1;     // S
  int tp = 1;       // TP
  int hidden = 0;
  int blocks = 0;   // CTAs of the persistent grid
  int threads = 0;  // threads a CTA
  int waves = 0;    // waves a CTA

  // --- placements, in launch order ---
  Placement push;    // hidden / 32 tasks: this rank's partial -> every rank's ATTN
  Placement reduce;  // hidden / 32 tasks: ATTN in rank order + residual -> res_out, SRES, SSQ
  Placement norm;    // S tasks on the last S CTAs: SSQ -> rstd, XN (bf16), XRDY
  Placement router;  // routerTiles x routerParts tasks: LOGIT parts
  Placement route;   // S tasks: LOGIT -> ROUTE (picks, weights)
  Placement table;   // every CTA: ROUTE -> the slot table in LDS
  Placement up;      // slots x upTiles tasks (a runtime count, at most (1 + min(E, S topk)) x upTiles): MID, UPF
  Placement down;    // downTasks tasks: every slot's GEMV of MID + the combine -> every rank's FFN
  Placement final;   // hidden / 32 tasks: FFN in rank order -> out
  MoeTiling tiling;
  // The experts' numerics, a copy of the FFN knob moe (FfnKnobs::moe, the one source; KernelContext
  // checks they agree): under A8W4 up and down multiply MXFP8 tokens by the MXFP4 weights on the scaled MFMA.
  MoeQuant moe = MoeQuant::A16w4;

  // --- o_proj in the launch (input=attn, StageOproj.cpp): the attention rows are attnWidth
  // (heads x head_dim / TP) wide; OPART, bf16 [S][hidden] in scratch, holds this rank's o_proj
  // partial as push computed and sent it, XSCALE, f32 [S], each row's per-token FP8 scale as
  // CTA 0's quant computed it (both for checks: nothing reads them back) ---
  bool oproj = false;
  int attnWidth = 0;
  Area opart, xscale;
  // --- per-rank scratch ("scratch"): SRES f32 [S][hidden], SSQ pairs [S][reduce tasks] ---
  Area sres, ssq;
  int64_t scratchBytes = 0;
  // --- the symmetric peer buffer ("sym"): ATTN pairs [src rank][S][hidden / 2] ---
  Area attn;
  // MoE scratch: XN bf16 [S][hidden], RSTD f32 [S], XRDY pairs [S], LOGIT pairs [S][E][parts],
  // ROUTE pairs [S][2 topk] (picks, then weights), MID bf16 [maxSlots][16][I/TP],
  // UPF pairs [maxSlots][upTiles], TABDUMP i32 (CTA 0's slot table, for the harness)
  Area xn, rstd, xrdy, logit, routeA, mid, upf, tabDump;
  // the MoE's peer region: FFN pairs [src rank][S][hidden / 2]
  Area ffn;
  // The FFN output's all-reduce as reduce-scatter + all-gather (the layer launch from its
  // ag_rs_from): down pushes row t to its owner rank t % TP alone; final there sums the ranks in
  // rank order and publishes the row to every rank's FFN_AG pairs [S][hidden / 2] (in sym).
  bool ffnReduceScatter = false;
  Area ffnAg;
  // o_proj's all-reduce in the same form: push sends row t to rank t % TP's ATTN alone; reduce
  // there sums it and publishes the bf16 row to every rank's A_AG pairs [S][hidden / 2] (in sym).
  bool attnReduceScatter = false;
  Area attnAg;
  int64_t symBytes = 0;
  // --- the finish stages (StageFinish.cpp): MARKS pairs [blocks] in scratch (a CTA has read the
  // epoch), DONE pairs [blocks] in scratch (a CTA's work is done, the step's last launch), FAULTS
  // pairs [src rank] in sym (the handshake's failure flags, parity halves) ---
  Area marks, done, faults;
  // --- LDS: red, the block sums' words (WAVES words a slot) ---
  Pool red;
  int redSlots = 0;
  // LDS: the slot table (i32 words at the offsets below), CONTRIB f32 [contribPicks][16]
  Pool tab, contrib;
  struct TableWords {
    int pickE = 0, pickW = 0, mask = 0, eslot = 0, slotE = 0, slotMask = 0, slotRow = 0, slotPick = 0,
        misc = 0, words = 0;  // misc: [0] slot count, [1] valid-row mask, [2..] per-wave counts
  } tw;
  // LDS: the GEMVs' B operands staged, one pool the two stages use apart: XN's rows
  // for up when xnInLds (S <= 8 and they fit: the CTA copies them once after XRDY), and each
  // wave's slot's MID columns for down when midInLds (a wave region of midWaveBytes: S columns
  // of I/TP bf16). Otherwise the stage reads its B operands from global memory.
  Pool bstage;
  bool xnInLds = false, midInLds = false;
  // A8W4's wide down (the layer from wide_from): bstage holds every pick's MID column as MXFP8,
  // staged once a CTA, instead of a wave's slot's columns a task.
  bool moeWide = false;
  int64_t midWaveBytes = 0;
  int64_t ldsBytes = 0;
  // TABDUMP's i32 words: [0] slot count, then expert [maxSlots], count [maxSlots], row [maxSlots][16],
  // pick [maxSlots][16]
  int64_t tabDumpWords = 0;

  /// Every area and pool in allocation order (for the Plan and the overlap checks).
  std::vector<Area> areas() const;
  std::vector<Pool> pools() const;
  std::vector<Placement> placements() const;

  /// Pair index in ATTN of source rank `src`, row t, bf16 pair `pair` (columns 2 pair, 2 pair + 1).
  int64_t attnPair(int src, int t, int64_t pair) const {
    return (static_cast<int64_t>(src) * rows + t) * (hidden / 2) + pair;
  }
  /// Pair index in SSQ of row t, reduce task `task`.
  int64_t ssqPair(int t, int64_t task) const { return static_cast<int64_t>(t) * reduce.tasks + task; }
  /// Pair index in LOGIT of row t, expert e, router part p.
  int64_t logitPair(int t, int e, int p) const {
    return (static_cast<int64_t>(t) * experts + e) * tiling.routerParts + p;
  }
  int experts = 0, topk = 0;

  /// The layout of (S, TP) on cfg. Throws InputError listing the allowed values on a bad S or TP
  /// (S in 1..cfg.maxRows, TP in {1, 2, 4, 8}) or a config the tiling does not fit; with
  /// input Attn, also when heads x head_dim does not divide by TP or its share is not a multiple
  /// of 128 (the o_proj GEMM's 4 K parts of 32-K MFMA steps).
  static Layout make(const ModelConfig& cfg, int rows, int tp, FfnInput input);
};

}  // namespace monogen::specs::minimax_m3
