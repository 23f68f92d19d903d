// The layer launch under moe=a8w4 on the Sim: up and down as chains of scaled MFMAs over the
// tokens as MXFP8 (staged in LDS) and the MXFP4 weights, every rank's mids and output bit for bit
// against layerReference(.., MoeQuant::A8w4).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "codegen/Compiler.h"
#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/LayerSpec.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/kernel/WeightContract.h"
#include "specs/minimax_m3/testing/LayerSim.h"
#include "specs/minimax_m3/testing/MoeInputs.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

namespace {

struct Cell {
  int S = 1, TP = 1;
  bool full = false;
  bool share = false;
  int padded = 0;  // the last rows get slot -1
  int agRsFrom = LayerPlacementKnobs{}.agRsFrom;
  int wideFrom = LayerPlacementKnobs{}.wideFrom;  // down's wide form from this S (17: never)
};

struct Verdicts {
  std::string a8w4;   // against the A8W4 reference
  std::string a16w4;  // the same run against the A16W4 reference
};

// The A16W4 reference on the A8W4 one's attention: the FFN reference alone is recomputed.
LayerReference underA16w4(const ModelConfig& cfg, const LayerInputs& in, const LayerReference& a8w4) {
  const int S = in.attention.S, TP = in.attention.TP;
  LayerReference ref;
  ref.attention = a8w4.attention;
  runtime::TensorMap m = in.ffn;
  for (int r = 0; r < TP; ++r) {
    const std::vector<uint16_t>& rows = ref.attention.ranks[static_cast<size_t>(r)].attn;
    m[rankName(arg::kAttn, r)] =
        runtime::HostTensor::of(runtime::DType::BF16, {S, static_cast<int64_t>(rows.size()) / S}, rows, "a8w4 test");
  }
  m[arg::kResIn] = runtime::HostTensor::of(runtime::DType::BF16, {S, cfg.hidden}, ref.attention.h, "a8w4 test");
  rederiveDerivedInputs(cfg, S, TP, FfnInput::Attn, m, RefNumerics::Ir);
  ref.ffn = launchReferenceOutputs(cfg, S, TP, m, MoeExperts::All, MoeQuant::A16w4, RefNumerics::Ir);
  return ref;
}

// One run of the cell; against the A16W4 reference too when `a16w4` (its attention shared).
Verdicts runCell(const Cell& k, const runtime::SimOptions& opts, runtime::SimStats* stats = nullptr,
                 bool a16w4 = false) {
  const ModelConfig cfg = ModelConfig::reduced();
  AttentionKnobs knobs;
  knobs.fullLayer = k.full;
  const LayerVariant v =
      LayerVariant::make(cfg, makeLayerKey(cfg, k.S, k.TP, knobs, {.wideFrom = k.wideFrom, .agRsFrom = k.agRsFrom}, MoeQuant::A8w4));
  const ir::Plan plan = buildLayerPlan(v);
  ir::verify(plan);
  AttentionInputOptions o;
  o.fullLayer = k.full;
  o.shareSequence = k.share;
  o.paddedRows = k.padded;
  const LayerInputs in = makeLayerInputs(cfg, k.S, k.TP, 7 + k.S + 16 * k.TP, o);
  const LayerSimRun run = runLayerOnSim(plan, v, in, opts);
  if (stats) *stats = run.ffn.stats;
  const LayerReference ref = layerReference(cfg, in, MoeQuant::A8w4);
  return {layerVerdict(cfg, in, ref, run), a16w4 ? layerVerdict(cfg, in, underA16w4(cfg, in, ref), run) : ""};
}

std::string cellName(const Cell& k) {
  return "S " + std::to_string(k.S) + " TP " + std::to_string(k.TP) + (k.full ? " full" : " sparse") +
         (k.share ? " shared" : "") + " padded " + std::to_string(k.padded) + " ag_rs_from " +
         std::to_string(k.agRsFrom) + " wide_from " + std::to_string(k.wideFrom);
}

}  // namespace

// Narrow (wide_from past every S): each down task's waves quantize their slots' MID columns.
TEST_CASE("layer A8W4: the narrow form bit-exact with the A8W4 reference at S 1 3 4 x TP 2 4",
          "[layer_launch][a8w4]") {
  for (int S : {1, 3, 4})
    for (int TP : {2, 4}) {
      const Cell k{S, TP, false, S == 4, S == 3 ? 1 : 0, LayerPlacementKnobs{}.agRsFrom, 17};
      INFO(cellName(k));
      const ModelConfig cfg = ModelConfig::reduced();
      CHECK_FALSE(LayerVariant::make(cfg, makeLayerKey(cfg, S, TP, {}, {.wideFrom = 17}, MoeQuant::A8w4)).ffn.layout.moeWide);
      // S 3 TP 2 under the race and uninitialized-read detector
      runtime::SimOptions opts;
      opts.races = S == 3 && TP == 2;
      opts.seed = 5;
      runtime::SimStats stats;
      const Verdicts got = runCell(k, opts, &stats, /*a16w4=*/true);
      CHECK(got.a8w4 == "bit-exact");
      // the A16W4 reference's mids are not these: the check can tell the two numerics apart
      CHECK_THAT(got.a16w4, Catch::StartsWith("MISMATCH: mid.r"));
      for (const std::string& f : stats.races) UNSCOPED_INFO(f);
      for (const std::string& f : stats.uninit) UNSCOPED_INFO(f);
      CHECK(stats.findings() == 0);
    }
}

// Down's wide form (every pick's MID column staged once a CTA) against the same reference: by
// default at every S, and from the knob's S; padded rows leave shared picks out of the pool.
TEST_CASE("layer A8W4: the wide down bit-exact at S 1 4 5 8 and by the knob at S 3", "[layer_launch][a8w4]") {
  const std::vector<Cell> cells = {{1, 4},
                                   {4, 2, true},
                                   {5, 2, false, false, 1},
                                   {8, 4, false, true, 0},
                                   {3, 4, false, false, 1, LayerPlacementKnobs{}.agRsFrom, 3}};
  for (const Cell& k : cells) {
    INFO(cellName(k));
    const ModelConfig cfg = ModelConfig::reduced();
    CHECK(LayerVariant::make(cfg, makeLayerKey(cfg, k.S, k.TP, {}, {.wideFrom = k.wideFrom}, MoeQuant::A8w4))
              .ffn.layout.moeWide);
    // S 5 TP 2 under the race and uninitialized-read detector
    runtime::SimOptions opts;
    opts.races = k.S == 5;
    opts.seed = 5;
    runtime::SimStats stats;
    CHECK(runCell(k, opts, &stats).a8w4 == "bit-exact");
    for (const std::string& f : stats.races) UNSCOPED_INFO(f);
    for (const std::string& f : stats.uninit) UNSCOPED_INFO(f);
    CHECK(stats.findings() == 0);
  }
}

TEST_CASE("layer A8W4: the Plan compiles for gfx950 with no spill on the reduced config", "[layer_launch][a8w4]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int S : {1, 16}) {  // S 1 narrow, S 16 wide
    INFO("S " << S);
    const ir::Plan plan = buildLayerPlan(cfg, makeLayerKey(cfg, S, 4, {}, {.wideFrom = 16}, MoeQuant::A8w4));
    ir::verify(plan);
    const codegen::CodeObject co = codegen::compile(plan);
    CHECK(co.info.scratchBytes == 0);
    CHECK(co.info.vgprSpills == 0);
  }
}

TEST_CASE("layer A8W4 matrix: S 1 to 16 x TP 1 to 8 x sparse and full bit-exact",
          "[layer_launch][a8w4][.slow]") {
  std::vector<Cell> cells;
  int i = 0;
  for (int S : {1, 3, 4, 5, 8, 9, 16})
    for (int TP : {1, 2, 4, 8})
      for (bool full : {false, true}) {
        ++i;
        // below S 5 half the TPs narrow (wide_from 17; S 1 3: TP 2 8, S 4: TP 1 4), the rest wide
        const int wideFrom = S < 5 && ((i - 1) / 2 + S) % 2 == 0 ? 17 : LayerPlacementKnobs{}.wideFrom;
        cells.push_back({S, TP, full, S > 1 && i % 2 == 0, S > 1 && i % 3 == 2 ? 1 : 0, LayerPlacementKnobs{}.agRsFrom, wideFrom});
      }
  cells.push_back({4, 2, false, true, 0, 1});  // the FFN's all-reduce reduce-scattered
  cells.push_back({5, 4, true, false, 1, 1});
  for (const Cell& k : cells) {
    INFO(cellName(k));
    CHECK(runCell(k, {}).a8w4 == "bit-exact");
  }
}

// Up's chains run K ascending from +0, the reference's order, which bf16 mids hide at an ulp. Here
// every shared-expert gate row's scale codes make K steps 0, 1 and the last add about FLT_MAX
// (code 248) and the others next to nothing (code 0): whether a gate overflows to -Inf (a NaN
// mid) depends on the order of the three.
TEST_CASE("layer A8W4: up's K chain order shows under overflowing gate steps", "[layer_launch][a8w4]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 2, TP = 2;
  const LayerVariant v = LayerVariant::make(cfg, makeLayerKey(cfg, S, TP, {}, {}, MoeQuant::A8w4));
  const ir::Plan plan = buildLayerPlan(v);
  LayerInputs in = makeLayerInputs(cfg, S, TP, 11, {});
  const int64_t IP = cfg.interPerRank(TP), kBlocks = cfg.hidden / 32, lastStep = cfg.hidden / 128 - 1;
  for (int r = 0; r < TP; ++r) {
    runtime::HostTensor& s13 = in.ffn.at(rankName("s13", r));
    const ScaleLayout l = declaredScaleLayout(s13, "s13");
    const int64_t slab = 2 * IP * heldScaleColumns(kBlocks, l), e = cfg.experts;  // the shared expert
    for (int64_t row = 0; row < IP; ++row)
      for (int64_t k = 0; k < kBlocks; ++k) {
        const int64_t step = k / 4;
        s13.data[static_cast<size_t>(e * slab + scaleIndex(l, row, k, kBlocks))] =
            step == 0 || step == 1 || step == lastStep ? 248 : 0;
      }
  }
  const LayerSimRun run = runLayerOnSim(plan, v, in, {});
  CHECK(layerVerdict(cfg, in, layerReference(cfg, in, MoeQuant::A8w4), run) == "bit-exact");
}
