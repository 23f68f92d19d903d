#include "specs/minimax_m3/kernel/LayerPlacement.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/Error.h"

namespace monogen::specs::minimax_m3 {

namespace {

constexpr int kSplitKeys = 256;  // keys a split task attends (one 256-key tile)
constexpr int kORows = 32;       // hidden rows an o_proj task produces
constexpr int kUgRows = 16;      // mid rows a routed up / gate task produces
constexpr int kShRows = 8;       // mid rows a shared-expert half task produces
constexpr int kDownRows = 32;    // hidden rows a down task produces
constexpr int kRowPadWords = 4;  // LDS row pad against 16-way bank conflicts
constexpr int64_t kAlign = 256;
constexpr int64_t kPairBytes = 8;

int64_t alignedPairBytes(int64_t pairs) { return (pairs * kPairBytes + kAlign - 1) / kAlign * kAlign; }

void require(bool ok, const std::string& where, const std::string& what) {
  if (!ok) throw InputError(where, what);
}

}  // namespace

int LayerPlacement::ugTasksOf(int cta) const {
  const int perRow = topk * ugPerSlot;
  if (!ugCtasPerRow) return (perRow * rows - cta + blocks - 1) / blocks;
  const int c = *ugCtasPerRow;
  return (perRow - cta % c + c - 1) / c;
}

std::vector<int> LayerPlacement::sharedWindowCost(int base) const {
  int most = 0;
  for (int c = 0; c < blocks; ++c) most = std::max(most, ugTasksOf(c));
  int busiest = 0, inRouter = 0, inDown = 0;
  const int routers = nRouter * rows;
  for (int j = 0; j < shTasks; ++j) {
    const int c = (base + j) % blocks;
    busiest = std::max(busiest, ugTasksOf(c));
    inRouter += ((c - routerBase) % blocks + blocks) % blocks < routers;
    inDown += c >= downBase && c < downBase + nDown;
  }
  return {busiest, busiest == most ? inRouter : 0, inDown, inRouter};
}

LayerPlacement LayerPlacement::make(const ModelConfig& cfg, int rows, int tp, LayerPlacementKnobs knobs,
                                    int splitFrom) {
  const std::string where = "minimax_m3 layer placement";
  cfg.validate(where);
  require(rows >= 1 && rows <= cfg.maxRows, where, fmt::format("S = {} rows: expected 1..{}", rows, cfg.maxRows));
  require(tp == 1 || tp == 2 || tp == 4 || tp == 8, where, fmt::format("TP = {}: expected one of 1, 2, 4, 8", tp));
  for (auto [name, v] : {std::pair{"wide_from", knobs.wideFrom}, std::pair{"ag_rs_from", knobs.agRsFrom}})
    require(v >= 1 && v <= cfg.maxRows + 1, where,
            fmt::format("{} = {}: expected 1..{} (past {} rows: never)", name, v, cfg.maxRows + 1, cfg.maxRows));
  const int waves = cfg.threads / 64;
  const int inter = cfg.interPerRank(tp);
  require(cfg.hidden % kORows == 0, where, fmt::format("hidden {} is not a multiple of {} (an o / down task's rows)", cfg.hidden, kORows));
  require(cfg.experts % waves == 0, where,
          fmt::format("{} routed experts do not divide into {} waves (a router task: one expert a wave)", cfg.experts, waves));
  require(inter % kUgRows == 0 && inter % 32 == 0, where,
          fmt::format("I / TP = {} is not a multiple of 32 (up / gate tasks of {} mid rows, MXFP8 blocks of 32)", inter, kUgRows));
  require(cfg.indexTopk * cfg.indexBlock % kSplitKeys == 0, where,
          fmt::format("top-{} x {}-key blocks is not a multiple of {} keys (a split task's tile)", cfg.indexTopk,
                      cfg.indexBlock, kSplitKeys));

  LayerPlacement p;
  p.rows = rows;
  p.tp = tp;
  p.blocks = cfg.blocks;
  p.waves = waves;
  p.topk = cfg.topk;
  p.knobs = knobs;
  p.nSplit = cfg.indexTopk * cfg.indexBlock / kSplitKeys;
  p.nMerge = rows > 1 ? rows : 0;
  p.nO = cfg.hidden / kORows;
  p.nRouter = cfg.experts / waves;
  p.ugPerSlot = inter / kUgRows;
  p.shTasks = inter / kShRows;
  p.nDown = cfg.hidden / kDownRows;

  const int kvPerRank = std::max(1, cfg.kvHeads / tp);  // a KV head on TP / kvHeads ranks past kvHeads
  const int splits = p.splitTasks = p.nSplit * kvPerRank * rows;
  p.splitBase = splitFrom >= 0 && splitFrom + splits <= p.blocks ? splitFrom : 0;
  p.mergeBase = p.splitBase + splits;
  p.oBase = p.mergeBase + p.nMerge;
  p.routerBase = (p.oBase + p.nO) % p.blocks;
  p.ugBase = 0;
  p.downBase = p.mergeBase;
  if (rows >= 4 && p.blocks % rows == 0) p.ugCtasPerRow = p.blocks / rows;

  int fewest = p.ugTasksOf(0), most = fewest;
  for (int c = 1; c < p.blocks; ++c) {
    fewest = std::min(fewest, p.ugTasksOf(c));
    most = std::max(most, p.ugTasksOf(c));
  }
  p.sharedAfterRouting = fewest == most;
  std::vector<int> best = p.sharedWindowCost(0);
  for (int b = 1; b < p.blocks; ++b) {
    std::vector<int> cost = p.sharedWindowCost(b);
    if (cost < best) best = std::move(cost), p.sharedBase = b;  // the lowest base among equals
  }

  p.wideMoe = rows >= knobs.wideFrom;
  p.reduceScatter = rows >= knobs.agRsFrom;
  const int64_t oK = cfg.attnWidth(tp);
  const int64_t xn8Row = cfg.hidden / 4 + kRowPadWords, xscRow = cfg.hidden / 32 + kRowPadWords;
  const int64_t midRow = inter / 4 + kRowPadWords, midScRow = inter / 32 + kRowPadWords;
  const int64_t slots = cfg.topk + cfg.sharedExperts;
  if (!p.wideMoe)
    p.poolWords = static_cast<int64_t>(cfg.hidden) / 2 * rows;
  else
    p.poolWords = std::max({waves * oK, rows * (xn8Row + xscRow + cfg.experts) + waves * 64 * 4,
                            (slots * rows + 1) * (midRow + midScRow)});

  const int64_t partialPairs = static_cast<int64_t>(tp) * cfg.maxRows * cfg.hidden / 2;
  const int64_t gatherPairs = static_cast<int64_t>(cfg.maxRows) * cfg.hidden / 2;
  // sel_cp: [parity][row][owned index head][src rank x part: 8][topk][key, block] (TP 2 owns two heads)
  const int64_t candidatePairs = int64_t{2} * cfg.maxRows * kvPerRank * 8 * cfg.indexTopk * 2;
  for (auto [name, pairs] : {std::pair{"attn", partialPairs}, std::pair{"ffn", partialPairs},
                             std::pair{"a_ag", gatherPairs}, std::pair{"ffn_ag", gatherPairs},
                             std::pair{"sel_cp", candidatePairs}}) {
    p.sym.push_back({name, p.symBytes, pairs});
    p.symBytes += alignedPairBytes(pairs);
  }
  return p;
}

std::string LayerPlacement::describe() const {
  std::string s = fmt::format("layer placement: S = {}, TP = {}, {} CTAs x {} waves\n", rows, tp, blocks, waves);
  // A stage's CTAs: a range, a range that wraps past the last CTA, or the whole grid from its base.
  auto stage = [&](const char* name, int tasks, int base, const std::string& what) {
    base %= blocks;  // a base past the grid (the rows' splits outnumber the CTAs) wraps too
    std::string ctas = "-";
    const int last = (base + tasks - 1) % blocks;
    if (tasks >= blocks)
      ctas = fmt::format("all, from {} ({} .. {} a CTA)", base, tasks / blocks, (tasks + blocks - 1) / blocks);
    else if (tasks > 0)
      ctas = last < base ? fmt::format("{} .. {}, 0 .. {}", base, blocks - 1, last) : fmt::format("{} .. {}", base, last);
    s += fmt::format("  {:<7} {:>5}  {:<32}  {}\n", name, tasks, ctas, what);
  };
  s += fmt::format("  {:<7} {:>5}  {:<32}  {}\n", "stage", "tasks", "CTAs", "each task");
  stage("split", splitTasks, splitBase,
        fmt::format("{} a (row, KV head): {} attended keys, online softmax", nSplit, kSplitKeys));
  stage("merge", nMerge, mergeBase, nMerge > 0 ? "a row" : "none: each o task's CTA merges the row's splits");
  stage("o", nO, oBase,
        fmt::format("{} hidden rows of o_proj{}", kORows, nMerge > 0 ? "" : ", on the row it merged in LDS"));
  stage("router", nRouter * rows, routerBase, fmt::format("{} a row: one expert a wave", nRouter));
  stage("shared", shTasks, sharedBase,
        fmt::format("{} mid rows of the shared expert, {}", kShRows,
                    sharedAfterRouting ? "after the CTA's routing" : "before the routing lands"));
  const std::string ugWhat = fmt::format("{} mid rows of a routed expert; {} a row", kUgRows, topk * ugPerSlot);
  if (ugCtasPerRow)
    s += fmt::format("  {:<7} {:>5}  {:<32}  {}\n", "ug", topk * ugPerSlot * rows,
                     fmt::format("row k on k x {} .. (k + 1) x {} - 1 ({} .. {} a CTA)", *ugCtasPerRow, *ugCtasPerRow,
                                 ugTasksOf(*ugCtasPerRow - 1), ugTasksOf(0)),
                     ugWhat);
  else
    s += fmt::format("  {:<7} {:>5}  {:<32}  {}\n", "ug", topk * ugPerSlot * rows,
                     fmt::format("round-robin from {} ({} .. {} a CTA)", ugBase, ugTasksOf(blocks - 1), ugTasksOf(0)),
                     ugWhat);
  stage("down", nDown, downBase, fmt::format("{} hidden rows", kDownRows));
  s += fmt::format("  moe {} (wide from S = {}); all-reduce {} (reduce-scatter + all-gather from S = {})\n",
                   wideMoe ? "wide" : "narrow", knobs.wideFrom, reduceScatter ? "reduce-scatter + all-gather" : "one-shot push",
                   knobs.agRsFrom);
  s += fmt::format("  the launch's all-reduces (o_proj's, the FFN output's): {}\n",
                   reduceScatter ? "reduce-scatter to the row's owner + all-gather (A_AG, FFN_AG)" : "one-shot push");
  s += fmt::format("  LDS pool: {} words ({} B), {}\n", poolWords, poolWords * 4,
                   wideMoe ? "the largest of the split's partials, the up / gate and the down operands"
                           : "every row's bf16 xn");
  s += fmt::format("  symmetric regions a rank, {} B:\n", symBytes);
  for (const auto& r : sym)
    s += fmt::format("    {:<7} bytes {:>9} .. {:>9}  {} pairs\n", r.name, r.offset, r.offset + r.pairs * kPairBytes - 1,
                     r.pairs);
  return s;
}

}  // namespace monogen::specs::minimax_m3
