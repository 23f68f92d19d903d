// The one-launch layer's placement (specs/minimax_m3/kernel/LayerPlacement): the serving stack's
// task counts and stage bases at full dims, the routed up / gate tasks' conservation and balance,
// the shared expert's window, the LDS pool and the symmetric regions, worked out by hand here
// from the placement rules (docs/layer.md), and the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/LayerPlacement.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

TEST_CASE("layer placement: the serving stack's task counts at full dims, TP 4", "[layer_placement]") {
  const auto p = LayerPlacement::make(ModelConfig{}, 1, 4);
  // LAYER-FRAMEWORKS.md's placement constants: N_SPLIT 8, N_O 192, N_ROUTER 16, UG_PER_SLOT 48,
  // SH_TASKS 96, N_DN 192, 256 CTAs of 8 waves.
  CHECK(p.blocks == 256);
  CHECK(p.waves == 8);
  CHECK(p.nSplit == 8);
  CHECK(p.nO == 192);
  CHECK(p.nRouter == 16);
  CHECK(p.ugPerSlot == 48);
  CHECK(p.shTasks == 96);
  CHECK(p.nDown == 192);
}

TEST_CASE("layer placement: stage bases past the rows' split CTAs", "[layer_placement]") {
  // split 0; merge 8 S (S > 1: S merges); o past the merges; router past o's 192, mod 256.
  struct Want { int rows, merge, o, router, down; };
  for (Want w : {Want{1, 8, 8, 200, 8}, Want{2, 16, 18, 210, 16}, Want{4, 32, 36, 228, 32},
                 Want{16, 128, 144, 80, 128}}) {
    CAPTURE(w.rows);
    const auto p = LayerPlacement::make(ModelConfig{}, w.rows, 4);
    CHECK(p.splitBase == 0);
    CHECK(p.nMerge == (w.rows > 1 ? w.rows : 0));
    CHECK(p.mergeBase == w.merge);
    CHECK(p.oBase == w.o);
    CHECK(p.routerBase == w.router);
    CHECK(p.ugBase == 0);
    CHECK(p.downBase == w.down);
  }
}

TEST_CASE("layer placement: the splits from splitFrom where they fit, else from 0", "[layer_placement]") {
  // full dims, TP 4, S 2: 16 splits from CTA 13; merges 29, 30; o and down past them
  const auto p = LayerPlacement::make(ModelConfig{}, 2, 4, {}, 13);
  CHECK(p.splitTasks == 16);
  CHECK(p.splitBase == 13);
  CHECK(p.mergeBase == 29);
  CHECK(p.oBase == 31);
  CHECK(p.routerBase == 223);
  CHECK(p.downBase == 29);
  CHECK(LayerPlacement::make(ModelConfig{}, 2, 4, {}, 240).splitBase == 240);  // 240 + 16 = 256: fits
  CHECK(LayerPlacement::make(ModelConfig{}, 2, 4, {}, 241).splitBase == 0);
  // the reduced config at TP 2: two KV heads a rank, 16 splits a row; the merges past them all
  const auto r = LayerPlacement::make(ModelConfig::reduced(), 1, 2, {}, 11);
  CHECK(r.splitTasks == 16);
  CHECK(r.splitBase == 11);
  CHECK(r.oBase == 27);
  CHECK(LayerPlacement::make(ModelConfig::reduced(), 2, 2, {}, 11).splitBase == 0);  // 11 + 32 > 32
}

TEST_CASE("layer placement: every routed up / gate task runs once, balanced", "[layer_placement]") {
  for (int tp : {1, 2, 4, 8})
    for (int rows = 1; rows <= 16; ++rows) {
      CAPTURE(tp, rows);
      const auto p = LayerPlacement::make(ModelConfig{}, rows, tp);
      int total = 0, fewest = 1 << 30, most = 0;
      for (int c = 0; c < p.blocks; ++c) {
        total += p.ugTasksOf(c);
        fewest = std::min(fewest, p.ugTasksOf(c));
        most = std::max(most, p.ugTasksOf(c));
      }
      CHECK(total == p.topk * p.ugPerSlot * rows);
      CHECK(most - fewest <= 1);
      CHECK(p.sharedAfterRouting == (fewest == most));
      // a row on CTAs of its own from S = 4 when S divides the grid
      CHECK(p.ugCtasPerRow.has_value() == (rows >= 4 && 256 % rows == 0));
    }
  // TP 4: S = 4 gives each of a row's 64 CTAs 192 / 64 = 3 tasks (the serving stack's case for
  // routing first); S = 2 is 384 tasks round-robin: CTAs 0 .. 127 run 2, the others 1.
  CHECK(LayerPlacement::make(ModelConfig{}, 4, 4).sharedAfterRouting);
  const auto two = LayerPlacement::make(ModelConfig{}, 2, 4);
  CHECK_FALSE(two.sharedAfterRouting);
  CHECK(two.ugTasksOf(127) == 2);
  CHECK(two.ugTasksOf(128) == 1);
}

TEST_CASE("layer placement: the shared expert's window", "[layer_placement]") {
  // S = 2, TP 4: a window of 96 CTAs wholly on the one-task CTAs 128 .. 255 (the busiest window CTA
  // carries 1, not the grid's 2, so the router term is 0); down runs on CTAs 16 .. 207, so the
  // window meets down least at 160 .. 255 (48 CTAs), the only such window: base 160; it holds all
  // 32 router CTAs, 210 .. 241.
  const auto two = LayerPlacement::make(ModelConfig{}, 2, 4);
  CHECK(two.sharedBase == 160);
  CHECK(two.sharedWindowCost(160) == std::vector<int>{1, 0, 48, 32});
  // Whatever S, no base ranks below the chosen one.
  for (int rows : {1, 3, 4, 8, 16}) {
    CAPTURE(rows);
    const auto p = LayerPlacement::make(ModelConfig{}, rows, 4);
    for (int b = 0; b < p.blocks; ++b) CHECK_FALSE(p.sharedWindowCost(b) < p.sharedWindowCost(p.sharedBase));
  }
}

TEST_CASE("layer placement: the MoE's and the all-reduce's forms, the LDS pool", "[layer_placement]") {
  // narrow (below wide_from; the serving stack's 5): every row's bf16 xn, 6144 / 2 words a row
  CHECK(LayerPlacement::make(ModelConfig{}, 4, 4, {.wideFrom = 5}).poolWords == 4 * 3072);
  CHECK_FALSE(LayerPlacement::make(ModelConfig{}, 4, 4, {.wideFrom = 5}).wideMoe);
  // wide by default at every S; TP 4: max(8 waves x 2048 PV words, S (1540 + 196 + 128) + 2048,
  // (5 S + 1)(196 + 28))
  CHECK(LayerPlacement::make(ModelConfig{}, 1, 4).wideMoe);
  const auto five = LayerPlacement::make(ModelConfig{}, 5, 4, {.wideFrom = 5});
  CHECK(five.wideMoe);
  CHECK(five.poolWords == 16384);  // 11368 and 5824 are smaller
  CHECK(LayerPlacement::make(ModelConfig{}, 16, 4).poolWords == 16 * 1864 + 2048);  // 31872 > 18144
  // reduce-scatter + all-gather from ag_rs_from (the serving stack's 12); by default at no S
  CHECK_FALSE(LayerPlacement::make(ModelConfig{}, 11, 4, {.agRsFrom = 12}).reduceScatter);
  CHECK(LayerPlacement::make(ModelConfig{}, 12, 4, {.agRsFrom = 12}).reduceScatter);
  CHECK_FALSE(LayerPlacement::make(ModelConfig{}, 16, 4).reduceScatter);
  // the knobs move the thresholds
  const auto knobbed = LayerPlacement::make(ModelConfig{}, 3, 4, {.wideFrom = 3, .agRsFrom = 17});
  CHECK(knobbed.wideMoe);
  CHECK_FALSE(LayerPlacement::make(ModelConfig{}, 16, 4, {.wideFrom = 17}).wideMoe);
  CHECK_FALSE(LayerPlacement::make(ModelConfig{}, 16, 4, {.wideFrom = 5, .agRsFrom = 17}).reduceScatter);
}

TEST_CASE("layer placement: the symmetric peer regions", "[layer_placement]") {
  // TP 4, 16 rows at most: attn and ffn 4 x 16 x 3072 pairs (1572864 B), a_ag and ffn_ag
  // 16 x 3072 (393216 B), sel_cp 2 parity halves x 16 rows x 1 owned head x 8 (ranks x parts) x
  // 16 x 2 = 8192 pairs (65536 B)
  const auto p = LayerPlacement::make(ModelConfig{}, 1, 4);
  REQUIRE(p.sym.size() == 5);
  const char* names[] = {"attn", "ffn", "a_ag", "ffn_ag", "sel_cp"};
  const int64_t offsets[] = {0, 1572864, 3145728, 3538944, 3932160};
  for (int i = 0; i < 5; ++i) {
    CHECK(p.sym[i].name == names[i]);
    CHECK(p.sym[i].offset == offsets[i]);
  }
  CHECK(p.sym[4].pairs == 8192);
  CHECK(p.symBytes == 3997696);
  CHECK(LayerPlacement::make(ModelConfig{}, 1, 2).sym[4].pairs == 16384);  // TP 2: two owned heads
}

TEST_CASE("layer placement: bad rows, TP and knobs are errors naming the value", "[layer_placement]") {
  auto message = [](auto f) -> std::string {
    try {
      f();
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(message([] { LayerPlacement::make(ModelConfig{}, 0, 4); }), Catch::Contains("S = 0 rows: expected 1..16"));
  CHECK_THAT(message([] { LayerPlacement::make(ModelConfig{}, 1, 3); }), Catch::Contains("TP = 3"));
  CHECK_THAT(message([] { LayerPlacement::make(ModelConfig{}, 1, 4, {.wideFrom = 0}); }),
             Catch::Contains("wide_from = 0: expected 1..17"));
}

TEST_CASE("layer placement: the reduced config and the description", "[layer_placement]") {
  const auto p = LayerPlacement::make(ModelConfig::reduced(), 3, 2);
  CHECK(p.blocks == ModelConfig::reduced().blocks);
  const std::string d = p.describe();
  for (const char* stage : {"split", "merge", "o ", "router", "shared", "ug", "down", "moe wide", "one-shot push"})
    CHECK_THAT(d, Catch::Contains(stage));
}

namespace {

/// The CTA column describe() should print for `tasks` tasks from `base` (task t on CTA
/// (base + t) % blocks), worked out by counting each CTA's tasks.
std::string ctasByCounting(int tasks, int base, int blocks) {
  if (tasks == 0) return "-";
  std::vector<int> count(static_cast<size_t>(blocks), 0);
  for (int t = 0; t < tasks; ++t) ++count[static_cast<size_t>((base + t) % blocks)];
  const auto [lo, hi] = std::minmax_element(count.begin(), count.end());
  if (*lo > 0) return "all, from " + std::to_string(base % blocks) + " (" + std::to_string(*lo) + " .. " + std::to_string(*hi) + " a CTA)";
  std::vector<std::pair<int, int>> runs;  // maximal runs of busy CTAs, ascending
  for (int c = 0; c < blocks; ++c)
    if (count[static_cast<size_t>(c)] > 0) {
      if (!runs.empty() && runs.back().second == c - 1) runs.back().second = c;
      else runs.push_back({c, c});
    }
  if (runs.size() == 2) std::swap(runs[0], runs[1]);  // a wrapped range starts at its base
  std::string s;
  for (const auto& [a, b] : runs) s += (s.empty() ? "" : ", ") + std::to_string(a) + " .. " + std::to_string(b);
  return s;
}

/// describe()'s CTA column of the stage line named `stage`.
std::string ctaColumn(const std::string& text, const std::string& stage) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("  " + stage + " ", 0) == 0) {
      std::string rest = line.substr(2 + 7 + 1 + 5 + 2, 32);
      return rest.substr(0, rest.find_last_not_of(' ') + 1);
    }
  return "(no line)";
}

}  // namespace

TEST_CASE("layer placement: the description's CTA ranges are the CTAs the tasks land on", "[layer_placement]") {
  for (const auto& [cfg, tp] : {std::pair{ModelConfig{}, 4}, std::pair{ModelConfig::reduced(), 2}})
    for (int S = 1; S <= cfg.maxRows; ++S) {
      const auto p = LayerPlacement::make(cfg, S, tp);
      const std::string d = p.describe();
      INFO("S = " << S << ", TP = " << tp << "\n" << d);
      CHECK(ctaColumn(d, "split") == ctasByCounting(p.splitTasks, p.splitBase, p.blocks));
      CHECK(ctaColumn(d, "merge") == ctasByCounting(p.nMerge, p.mergeBase, p.blocks));
      CHECK(ctaColumn(d, "o      ") == ctasByCounting(p.nO, p.oBase, p.blocks));
      CHECK(ctaColumn(d, "router") == ctasByCounting(p.nRouter * S, p.routerBase, p.blocks));
      CHECK(ctaColumn(d, "shared") == ctasByCounting(p.shTasks, p.sharedBase, p.blocks));
      CHECK(ctaColumn(d, "down   ") == ctasByCounting(p.nDown, p.downBase, p.blocks));
    }
}
