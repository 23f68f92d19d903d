#include "specs/minimax_m3/kernel/Layout.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/Error.h"

namespace monogen::specs::minimax_m3 {

namespace {

int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// Hands out aligned byte ranges of one buffer, in order.
class AreaAlloc {
 public:
  explicit AreaAlloc(std::string buffer) : buffer_(std::move(buffer)) {}
  Area bytes(std::string name, int64_t bytes, std::string doc) {
    Area a{std::move(name), buffer_, end_, bytes, 0, false, std::move(doc)};
    end_ = alignUp(end_ + bytes, kRegionAlign);
    return a;
  }
  Area pairs(std::string name, int64_t pairs, bool peer, std::string doc) {
    Area a = bytes(std::move(name), pairs * kPairBytes, std::move(doc));
    a.pairs = pairs;
    a.peer = peer;
    return a;
  }
  /// Two parity halves of `pairsPerHalf` pairs each (a launch uses half tag & 1).
  Area parityPairs(std::string name, int64_t pairsPerHalf, bool peer, std::string doc) {
    Area a = pairs(std::move(name), 2 * pairsPerHalf, peer, std::move(doc));
    a.parity = true;
    return a;
  }
  int64_t end() const { return end_; }

 private:
  std::string buffer_;
  int64_t end_ = 0;
};

}  // namespace

std::vector<Area> Layout::areas() const {
  std::vector<Area> a{sres, ssq, xn, rstd, xrdy, logit, routeA, mid, upf, tabDump, marks, done, attn, ffn, faults};
  if (oproj) a.insert(a.begin() + 12, {opart, xscale});  // after DONE, the last scratch areas
  if (attnReduceScatter) a.push_back(attnAg);
  if (ffnReduceScatter) a.push_back(ffnAg);
  return a;
}
std::vector<Pool> Layout::pools() const {
  std::vector<Pool> p{red, tab, contrib};
  if (bstage.bytes > 0) p.push_back(bstage);
  return p;
}
std::vector<Placement> Layout::placements() const { return {push, reduce, norm, router, route, table, up, down, final}; }

Layout Layout::make(const ModelConfig& cfg, int rows, int tp, FfnInput input) {
  const std::string where = "minimax_m3 layout";
  cfg.validate(where);
  if (rows < 1 || rows > cfg.maxRows)
    throw InputError(where, fmt::format("S = {} rows: expected 1..{}", rows, cfg.maxRows));
  bool tpOk = false;
  for (int t : kAllowedTp) tpOk = tpOk || t == tp;
  if (!tpOk) throw InputError(where, fmt::format("TP = {}: expected one of 1, 2, 4, 8", tp));
  if (cfg.hidden % kTaskColumns != 0)
    throw InputError(where, fmt::format("hidden {} is not a multiple of {} (a push / reduce task's columns)",
                                        cfg.hidden, kTaskColumns));
  if (rows * kTaskPairs > cfg.threads)
    throw InputError(where, fmt::format("S = {} rows x {} pairs a task need more than the CTA's {} threads",
                                        rows, kTaskPairs, cfg.threads));

  Layout L;
  L.rows = rows;
  L.tp = tp;
  L.hidden = cfg.hidden;
  L.blocks = cfg.blocks;
  L.threads = cfg.threads;
  L.waves = cfg.threads / 64;

  // Push and reduce run task t on the same CTA: a CTA pushes its columns, then reduces them.
  const int64_t taskCount = cfg.hidden / kTaskColumns;
  L.push = Placement{"push", taskCount, 0};
  L.reduce = Placement{"reduce", taskCount, 0};

  if (input == FfnInput::Attn) {
    const int width = cfg.heads * cfg.headDim;
    if (width % tp != 0)
      throw InputError(where, fmt::format("o_proj in the launch: heads x head_dim = {} x {} = {} does not divide by "
                                          "TP = {}",
                                          cfg.heads, cfg.headDim, width, tp));
    if ((width / tp) % 128 != 0)
      throw InputError(where, fmt::format("o_proj in the launch: heads x head_dim / TP = {} is not a multiple of 128 "
                                          "(the GEMM's 4 K parts of 32-K MFMA steps)",
                                          width / tp));
    L.oproj = true;
    L.attnWidth = width / tp;
  }

  AreaAlloc scratch("scratch");
  L.sres = scratch.bytes("SRES", int64_t{rows} * cfg.hidden * 4,
                         "f32 [S][hidden]: the all-reduced bf16 + residual in f32, the norm's input");
  L.ssq = scratch.pairs("SSQ", int64_t{rows} * taskCount, false,
                        "pairs [S][reduce tasks]: a reduce task's f32 sum of squares of its 32 columns, a row");

  // --- the MoE (norm, router, route, table, up, down, final) ---
  const MoeTiling T = MoeTiling::derive(cfg, tp, where);
  L.tiling = T;
  L.experts = cfg.experts;
  L.topk = cfg.topk;
  // the norm's rows on the last CTAs, off the router's and route's first ones: a router task
  // then waits for SSQ alone, not behind its own CTA's XN stores
  L.norm = Placement{"norm", rows, cfg.blocks - rows};
  L.router = Placement{"router", int64_t{T.routerTiles} * T.routerParts, 0};
  L.route = Placement{"route", rows, 0};
  L.table = Placement{"table", cfg.blocks, 0};
  // The table makes at most 1 + min(experts, S topk) slots (the shared one, one a picked expert):
  // up's CTAs loop over that bound, not maxSlots' (sized for maxRows), so fewer pass empty tasks.
  L.up = Placement{"up", (1 + std::min<int64_t>(cfg.experts, int64_t{rows} * cfg.topk)) * T.upTiles, 0};
  L.down = Placement{"down", T.downTasks, 0};
  L.final = Placement{"final", taskCount, 0};
  L.xn = scratch.bytes("XN", int64_t{rows} * cfg.hidden * 2, "bf16 [S][hidden]: the norm's output, the GEMVs' X");
  L.rstd = scratch.pairs("RSTD", rows, false,
                         "pairs [S]: row t's rstd = 1 / sqrt(var + eps) (f32 bits), published by the norm before "
                         "it writes XN (a checked output; the router computes its own from SSQ)");
  L.xrdy = scratch.pairs("XRDY", rows, false, "pairs [S]: XN of row t is written (after the norm CTA's stores)");
  L.logit = scratch.pairs("LOGIT", int64_t{rows} * cfg.experts * T.routerParts, false,
                          "pairs [S][E][router parts]: a router part's f32 logit partial");
  L.routeA = scratch.pairs("ROUTE", int64_t{rows} * 2 * cfg.topk, false,
                           "pairs [S][2 topk]: row t's picks (expert, -1 for a padded row), then their f32 weights");
  L.mid = scratch.bytes("MID", int64_t{T.maxSlots} * 16 * T.interPerRank * 2,
                        "bf16 [maxSlots][16][I/TP]: SwiGLU-OAI of a slot column's gate and up rows");
  L.upf = scratch.pairs("UPF", int64_t{T.maxSlots} * T.upTiles, false,
                        "pairs [maxSlots][upTiles]: MID tile pair j of slot u is written");
  L.tabDumpWords = 1 + 2 * int64_t{T.maxSlots} + 2 * int64_t{T.maxSlots} * 16;
  L.tabDump = scratch.bytes("TABDUMP", L.tabDumpWords * 4,
                            "i32: CTA 0's slot table (count, expert[], count[], row[][16], pick[][16]) for checks");
  L.marks = scratch.pairs("MARKS", cfg.blocks, false,
                          "pairs [blocks]: CTA b's mark (value and tag: the launch's tag) once it has read the epoch");
  L.done = scratch.pairs("DONE", cfg.blocks, false,
                         "pairs [blocks]: CTA b's work is done (value and tag: the launch's tag), the step's last "
                         "launch only");
  // last, so that every other area has the same offset with either input
  if (L.oproj)
    L.opart = scratch.bytes("OPART", int64_t{rows} * cfg.hidden * 2,
                            "bf16 [S][hidden]: this rank's o_proj partial as push sent it (for checks)");
  if (L.oproj)
    L.xscale = scratch.bytes("XSCALE", int64_t{rows} * 4,
                             "f32 [S]: row t's per-token FP8 scale, amax x f32(1/448), as CTA 0's quant computed it "
                             "(for checks)");
  L.scratchBytes = scratch.end();

  AreaAlloc sym("sym");
  L.attn = sym.parityPairs("ATTN", int64_t{tp} * rows * (cfg.hidden / 2), true,
                           "pairs [parity][src rank][S][hidden / 2]: each rank's o_proj partial as bf16 pairs, "
                           "pushed by the source rank into half (tag & 1)");
  L.ffn = sym.parityPairs("FFN", int64_t{tp} * rows * (cfg.hidden / 2), true,
                          "pairs [parity][src rank][S][hidden / 2]: each rank's combined MoE partial as bf16 "
                          "pairs, into half (tag & 1): a rank a launch ahead never overwrites what a slow peer "
                          "still waits for");
  L.faults = sym.parityPairs("FAULTS", tp, true,
                             "pairs [parity][src rank]: the handshake's failure flags, each rank's error word "
                             "(0: no failure), published by the source rank at the step's last launch");
  L.symBytes = sym.end();

  // red: the block sums' words, WAVES a slot (block_sum: each wave's butterfly, then the waves
  // in order). One slot: the norm's sum of squares.
  // The router's and up's wave partials use it too: 256 f32 a wave (router), 2 x 256 (up).
  L.redSlots = 1;
  const int64_t redBytes = std::max<int64_t>(int64_t{L.redSlots} * L.waves * 4, int64_t{2} * L.waves * 256 * 4);
  L.red = Pool{"red", 0, redBytes,
               "f32: a block sum's per-wave partials (norm); the router's and up's per-wave 16x16 tiles"};
  {
    auto& w = L.tw;
    int at = 0;
    const int n = cfg.maxRows * cfg.topk;
    w.pickE = at, at += n;
    w.pickW = at, at += n;
    w.mask = at, at += cfg.experts;
    w.eslot = at, at += cfg.experts;
    w.slotE = at, at += T.maxSlots;
    w.slotMask = at, at += T.maxSlots;
    w.slotRow = at, at += T.maxSlots * 16;
    w.slotPick = at, at += T.maxSlots * 16;
    w.misc = at, at += 2 + L.waves;
    w.words = at;
  }
  L.tab = Pool{"tab", alignUp(L.red.offset + L.red.bytes, kRegionAlign), int64_t{L.tw.words} * 4,
               "i32: the slot table (picks, weights, expert masks, slots, their rows and picks)"};
  L.contrib = Pool{"contrib", alignUp(L.tab.offset + L.tab.bytes, kRegionAlign), int64_t{T.contribPicks} * 16 * 4,
                   "f32 [contribPicks][16]: a down task's GEMV of each pick's row"};
  {
    // gfx950's 160 KiB a CTA (the verifier checks the Plan against its target's size again).
    constexpr int64_t kLdsLimit = 160 * 1024;
    const int64_t at = alignUp(L.contrib.offset + L.contrib.bytes, kRegionAlign), room = kLdsLimit - at;
    const int64_t xnBytes = int64_t{rows} * cfg.hidden * 2;
    L.midWaveBytes = int64_t{rows} * T.interPerRank * 2;
    L.xnInLds = rows <= 8 && xnBytes <= room;
    L.midInLds = L.waves * L.midWaveBytes <= room;
    const int64_t bytes = std::max(L.xnInLds ? xnBytes : 0, L.midInLds ? L.waves * L.midWaveBytes : 0);
    L.bstage = Pool{"bstage", at, bytes,
                    "bf16: up's B operands, XN [S][hidden] (S <= 8); down's, a wave's slot's MID columns [S][I/TP] "
                    "a wave"};
  }
  L.ldsBytes = L.bstage.bytes > 0 ? L.bstage.offset + L.bstage.bytes : L.contrib.offset + L.contrib.bytes;
  return L;
}

}  // namespace monogen::specs::minimax_m3
