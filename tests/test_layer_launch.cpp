// The one-launch decoder layer on the Sim: the attention stages and the FFN stages in one Plan and
// one kernel, every rank, bit for bit against the attention reference followed by the FFN launch's
// reference (o_proj path) on its rows and residual.
#include <catch2/catch.hpp>

#include <array>
#include <string>
#include <vector>

#include "codegen/Compiler.h"
#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/LayerSpec.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/testing/LayerSim.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

namespace {

struct Cell {
  int S = 1, TP = 1;
  bool full = false;
  bool share = false;
  CacheMode mode = CacheMode::Vllm;
  int context = 129;
  int padded = 0;  // the last rows get slot -1 (both launches' padded rows)
  bool modelDims = false;  // the model's own dims (256 CTAs) instead of the reduced config
};

/// The cell's launch on the Sim under `opts` and its verdict against the reference.
std::string runCell(const Cell& k, const runtime::SimOptions& opts, runtime::SimStats* stats = nullptr) {
  const ModelConfig cfg = k.modelDims ? ModelConfig() : ModelConfig::reduced();
  AttentionKnobs knobs;
  knobs.mode = k.mode;
  knobs.fullLayer = k.full;
  const LayerVariant v = LayerVariant::make(cfg, makeLayerKey(cfg, k.S, k.TP, knobs));
  const ir::Plan plan = buildLayerPlan(v);
  ir::verify(plan);
  AttentionInputOptions o;
  o.mode = k.mode;
  o.fullLayer = k.full;
  o.context = k.context;
  o.shareSequence = k.share;
  o.paddedRows = k.padded;
  const LayerInputs in = makeLayerInputs(cfg, k.S, k.TP, 11 + k.S + 16 * k.TP, o);
  const LayerReference ref = layerReference(cfg, in);
  const LayerSimRun run = runLayerOnSim(plan, v, in, opts);
  if (stats) *stats = run.ffn.stats;
  return layerVerdict(cfg, in, ref, run);
}

}  // namespace

TEST_CASE("layer launch: attention then the FFN in one kernel bit-exact with the composed references",
          "[layer_launch]") {
  const Cell cells[] = {
      {1, 1, false, false},                       // sparse, S 1
      {4, 4, false, true},                        // sparse, 4 rows of one sequence
      {8, 4, true, false, CacheMode::Atom, 300},  // full layer, atom, 2 tiles
      {4, 1, true, true},                         // full layer, one sequence, TP 1
      {3, 2, false, false, CacheMode::Vllm, 129, 1},  // sparse, a padded row
  };
  for (const Cell& k : cells) {
    INFO("S " << k.S << " TP " << k.TP << (k.full ? " full" : " sparse") << (k.share ? " shared" : "") << " padded "
                << k.padded);
    CHECK(runCell(k, {}) == "bit-exact");
  }
}

TEST_CASE("layer launch: the race detector finds nothing under two schedules", "[layer_launch]") {
  for (uint64_t seed : {1, 2}) {
    runtime::SimOptions opts;
    opts.races = true;
    opts.seed = seed;
    runtime::SimStats stats;
    INFO("seed " << seed);
    CHECK(runCell({4, 2, false, true}, opts, &stats) == "bit-exact");
    for (const std::string& f : stats.races) UNSCOPED_INFO(f);
    for (const std::string& f : stats.uninit) UNSCOPED_INFO(f);
    CHECK(stats.findings() == 0);
  }
}

TEST_CASE("layer launch: the Plan verifies and compiles for gfx950 within its limits at full dims", "[layer_launch]") {
  const ModelConfig cfg;  // the model's dims, 256 CTAs
  const ir::Plan plan = buildLayerPlan(cfg, makeLayerKey(cfg, 8, 4));
  ir::verify(plan);  // the pools (the FFN's past the attention's here), flags, waits at these dims
  const codegen::CodeObject co = codegen::compile(plan);  // throws past the VGPR, LDS or scratch limits
  CHECK(co.info.scratchBytes == 0);
  CHECK(co.info.vgprSpills == 0);
  CHECK(co.info.ldsBytes == plan.ldsBytes);
}

namespace {

constexpr std::array kMatrixRows = {1, 3, 4, 5, 8, 9, 16};
constexpr std::array kMatrixTps = {1, 2, 4, 8};
constexpr std::array kMatrixContexts = {0, 128, 129, 300};  // 1 key; a block's edge; past it; 2 atom tiles

/// Every S x TP x layer type on the reduced config; the cache mode, context, sequence sharing and
/// a padded row rotate with the cell so that each occurs with every S.
std::vector<Cell> layerMatrix() {
  std::vector<Cell> cells;
  for (size_t s = 0; s < kMatrixRows.size(); ++s)
    for (size_t t = 0; t < kMatrixTps.size(); ++t)
      for (int f = 0; f < 2; ++f) {
        const int S = kMatrixRows[s];
        const size_t r = s + t + size_t(f);
        Cell k;
        k.S = S;
        k.TP = kMatrixTps[t];
        k.full = f == 1;
        k.mode = r % 2 ? CacheMode::Atom : CacheMode::Vllm;
        k.context = kMatrixContexts[(s + 2 * t + size_t(f)) % kMatrixContexts.size()];
        k.share = S > 1 && (s + t) % 2 == 0;
        k.padded = S > 1 && r % 3 == 2 ? 1 : 0;
        cells.push_back(k);
      }
  return cells;
}

}  // namespace

TEST_CASE("layer matrix: every S x TP x layer type bit-exact on the reduced config", "[layer_launch][.slow]") {
  int n = 0;
  for (const Cell& k : layerMatrix()) {
    INFO("S " << k.S << " TP " << k.TP << (k.full ? " full " : " sparse ") << cacheModeName(k.mode) << " context "
              << k.context << (k.share ? " shared" : " batch") << " padded " << k.padded);
    CHECK(runCell(k, {}) == "bit-exact");
    ++n;
  }
  CHECK(n == int(kMatrixRows.size() * kMatrixTps.size() * 2));
}

TEST_CASE("layer matrix: the model's dims at S 2 and S 8 TP 4 bit-exact", "[layer_launch][.slow][full_dims]") {
  // about 9 GB of Sim memory and minutes of CPU a cell
  for (int S : {2, 8}) {
    Cell k;
    k.S = S;
    k.TP = 4;
    k.context = 2047;
    k.share = S == 8;
    k.modelDims = true;
    INFO("S " << S);
    CHECK(runCell(k, {}) == "bit-exact");
  }
}
