// The one-launch decoder layer on the Sim: the attention stages and the FFN stages in one Plan and
// one kernel, every rank, bit for bit against the attention reference followed by the FFN launch's
// reference (o_proj path) on its rows and residual.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/Compiler.h"
#include "ir/Error.h"
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
  int agRsFrom = LayerPlacementKnobs{}.agRsFrom;  // the key's ag_rs_from: the all-reduces are reduce-scattered from this S
  int cpFrom = 0;  // the key's index_cp_from (indexer context parallelism; 0: off)
};

/// Indexer CP: rank r's other index heads' q (IQCP) are their owners' iq, bit for bit; the
/// count of differing channels.
long iqCpDiffs(const ModelConfig& cfg, const Cell& k, const LayerReference& ref, const LayerSimRun& run) {
  long bad = 0;
  for (int r = 0; r < k.TP; ++r) {
    const AttentionShape sh = AttentionShape::make(cfg, k.TP, r, "test", true);
    const std::vector<uint16_t>& got = run.attention.ranks[r].iqCp;
    if (got.size() != size_t(k.S) * sh.cpHeads * sh.indexDim) return -1;
    for (int j = 0; j < sh.cpHeads; ++j) {
      const int g = sh.cpHeadOf(j);
      for (int o = 0; o < k.TP; ++o) {
        const AttentionShape so = AttentionShape::make(cfg, k.TP, o, "test");
        if (g < so.firstKvHead || g >= so.firstKvHead + so.indexHeads) continue;
        for (int t = 0; t < k.S; ++t)
          for (int d = 0; d < sh.indexDim; ++d)
            bad += ref.attention.ranks[o].iq[(size_t(t) * so.indexHeads + g - so.firstKvHead) * sh.indexDim + d] !=
                   got[(size_t(t) * sh.cpHeads + j) * sh.indexDim + d];
      }
    }
  }
  return bad;
}

/// The cell's launch on `cfg` on the Sim under `opts` and its verdict against the reference.
std::string runCellOn(const ModelConfig& cfg, const Cell& k, const runtime::SimOptions& opts,
                      runtime::SimStats* stats = nullptr) {
  AttentionKnobs knobs;
  knobs.mode = k.mode;
  knobs.fullLayer = k.full;
  knobs.indexCpFrom = k.cpFrom;
  const LayerVariant v = LayerVariant::make(cfg, makeLayerKey(cfg, k.S, k.TP, knobs, {.agRsFrom = k.agRsFrom}));
  const ir::Plan plan = buildLayerPlan(v);
  ir::verify(plan);
  if (v.ffn.layout.ffnReduceScatter != (k.S >= k.agRsFrom)) return "the all-reduce form is not the knob's";
  AttentionInputOptions o;
  o.mode = k.mode;
  o.fullLayer = k.full;
  o.context = k.context;
  o.shareSequence = k.share;
  o.paddedRows = k.padded;
  o.indexCp = k.cpFrom > 0;
  const LayerInputs in = makeLayerInputs(cfg, k.S, k.TP, 11 + k.S + 16 * k.TP, o);
  const LayerReference ref = layerReference(cfg, in);
  const LayerSimRun run = runLayerOnSim(plan, v, in, opts);
  if (stats) *stats = run.ffn.stats;
  if (k.cpFrom > 0)
    if (const long bad = iqCpDiffs(cfg, k, ref, run); bad != 0) return fmt::format("IQCP: {} channels differ", bad);
  return layerVerdict(cfg, in, ref, run);
}

/// The same on the reduced config, or the model's own dims.
std::string runCell(const Cell& k, const runtime::SimOptions& opts, runtime::SimStats* stats = nullptr) {
  return runCellOn(k.modelDims ? ModelConfig() : ModelConfig::reduced(), k, opts, stats);
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

/// The reduced config on 64 CTAs: o_proj's 48 push tasks no longer cover the grid.
ModelConfig reduced64() {
  ModelConfig cfg = ModelConfig::reduced();
  cfg.blocks = 64;
  return cfg;
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
TEST_CASE("layer launch: the stages run from the serving stack's bases (LayerPlacement)", "[layer_launch]") {
  for (const ModelConfig& cfg : {ModelConfig::reduced(), reduced64(), ModelConfig{}})
    for (int TP : {2, 4})
      for (int S = 1; S <= 16; ++S) {
        CAPTURE(cfg.blocks, TP, S);
        const LayerVariant v = LayerVariant::make(cfg, makeLayerKey(cfg, S, TP));
        const LayerPlacement& P = v.placement;
        const AttentionLaunchLayout& A = v.attention.layout;
        const Layout& F = v.ffn.layout;
        // the splits where the attention launch alone puts them: past its index and share tasks
        // where they fit; the merges and o_proj right after them
        const AttentionVariant alone = AttentionVariant::make(cfg, makeAttentionKey(cfg, S, TP));
        CHECK(P.splitBase == alone.layout.split.base);
        CHECK(P.mergeBase % cfg.blocks == alone.layout.merge.base);
        CHECK(A.split.base == P.splitBase % cfg.blocks);
        CHECK(A.merge.base == P.mergeBase % cfg.blocks);
        CHECK(A.merge.tasks == P.nMerge);  // S = 1: none, the o_proj CTAs merge
        CHECK(F.push.base == P.oBase % cfg.blocks);
        CHECK(F.reduce.base == F.push.base);  // a CTA reduces the columns it pushed
        CHECK(F.router.base == P.routerBase % cfg.blocks);
        CHECK(F.up.base == P.sharedBase);  // slot 0, the shared expert, first: in the shared window
        CHECK(F.down.base == P.downBase % cfg.blocks);
      }
  // the Plan's stage records carry them: S 2 TP 2 on the reduced config
  const ModelConfig cfg = ModelConfig::reduced();
  const ir::Plan plan = buildLayerPlan(cfg, makeLayerKey(cfg, 2, 2));
  const LayerPlacement P = LayerVariant::make(cfg, makeLayerKey(cfg, 2, 2)).placement;
  const std::pair<const char*, int> want[] = {{"attn_split", P.splitBase}, {"attn_merge", P.mergeBase % 32},
                                              {"push", P.oBase % 32},      {"reduce", P.oBase % 32},
                                              {"router", P.routerBase},    {"up", P.sharedBase},
                                              {"down", P.downBase % 32}};
  for (const auto& [name, base] : want) {
    CAPTURE(name);
    CHECK(plan.stages.at(plan.stageIndex(name)).base == base);
  }
}

TEST_CASE("layer launch: o_proj's token scales on push CTAs past CTA 0's range (64 CTAs)", "[layer_launch]") {
  // S 2: push tasks 0..47 on CTAs 18..63, 0..1, so CTAs 48..63 quantize the rows too and XSCALE
  // (xscale.rR, checked) is task 0's CTA's; S 5 TP 1: CTAs 45..63, 0..28.
  const Cell cells[] = {{2, 2, false, false}, {5, 1, true, false}};
  for (const Cell& k : cells) {
    INFO("S " << k.S << " TP " << k.TP);
    CHECK(runCellOn(reduced64(), k, {}) == "bit-exact");
  }
}

TEST_CASE("layer launch: at S = 1 each o_proj CTA merges the row's splits itself", "[layer_launch]") {
  // no attn_merge task, no ARDY; push waits for the splits (SRDY); `attn` (compared) from push
  // task 0's CTA. TP 4: 48 tasks on 32 CTAs (two a CTA); 64 CTAs: CTAs 48..63 run no push task.
  for (int TP : {2, 4}) {
    const ModelConfig cfg = ModelConfig::reduced();
    const LayerVariant v = LayerVariant::make(cfg, makeLayerKey(cfg, 1, TP));
    const ir::Plan plan = buildLayerPlan(v);
    CHECK(v.attention.layout.merge.tasks == 0);
    CHECK(v.attention.layout.ardyOffset < 0);
    CHECK(plan.stageIndex("attn_merge") < 0);
    const auto& waits = plan.stages.at(plan.stageIndex("push")).waits;
    CHECK(std::any_of(waits.begin(), waits.end(), [](const ir::FlagUse& u) { return u.flag == "attn_SRDY"; }));
  }
  const Cell cells[] = {{1, 4, false, false, CacheMode::Vllm, 2048}, {1, 2, true, false, CacheMode::Atom, 300}};
  for (const Cell& k : cells) {
    INFO("S 1 TP " << k.TP);
    CHECK(runCell(k, {}) == "bit-exact");
  }
  CHECK(runCellOn(reduced64(), {1, 2, false, false, CacheMode::Vllm, 129}, {}) == "bit-exact");
  runtime::SimOptions opts;
  opts.races = true;
  opts.seed = 5;
  runtime::SimStats stats;
  CHECK(runCellOn(reduced64(), {1, 4, false, false}, opts, &stats) == "bit-exact");
  for (const std::string& f : stats.races) UNSCOPED_INFO(f);
  for (const std::string& f : stats.uninit) UNSCOPED_INFO(f);
  CHECK(stats.findings() == 0);
}

TEST_CASE("layer launch: the race detector finds nothing on the serving stack's placement", "[layer_launch]") {
  // 64 CTAs, S 2 TP 2: the merges on CTAs 16, 17 beside the splits' 0..31, push from CTA 18, the
  // router past it (CTA 2), down from 16: attention and FFN stages share CTAs.
  runtime::SimOptions opts;
  opts.races = true;
  opts.seed = 3;
  runtime::SimStats stats;
  CHECK(runCellOn(reduced64(), {2, 2, false, true}, opts, &stats) == "bit-exact");
  for (const std::string& f : stats.races) UNSCOPED_INFO(f);
  for (const std::string& f : stats.uninit) UNSCOPED_INFO(f);
  CHECK(stats.findings() == 0);
}

TEST_CASE("layer launch: the FFN output's all-reduce as reduce-scatter + all-gather bit-exact", "[layer_launch]") {
  // ag_rs_from 1 forces the form at small S; the outputs are the one-shot form's, bit for bit
  const Cell cells[] = {
      {3, 4, false, false, CacheMode::Vllm, 129, 1, false, 1},  // sparse, a padded row, rank 3 owns none
      {4, 2, true, true, CacheMode::Vllm, 129, 0, false, 1},    // full layer, one sequence
  };
  for (const Cell& k : cells) {
    INFO("S " << k.S << " TP " << k.TP << (k.full ? " full" : " sparse") << " ag_rs_from " << k.agRsFrom);
    CHECK(runCell(k, {}) == "bit-exact");
  }
}

TEST_CASE("layer launch: the reduce-scatter form's race detector finds nothing", "[layer_launch]") {
  runtime::SimOptions opts;
  opts.races = true;
  runtime::SimStats stats;
  CHECK(runCell({4, 2, false, true, CacheMode::Vllm, 129, 0, false, 1}, opts, &stats) == "bit-exact");
  for (const std::string& f : stats.races) UNSCOPED_INFO(f);
  for (const std::string& f : stats.uninit) UNSCOPED_INFO(f);
  CHECK(stats.findings() == 0);
}

TEST_CASE("layer matrix: the reduce-scatter form, S 1, 3, 4, 5 x TP 2, 4, 8, and from 12 at S 12, 16",
          "[layer_launch][.slow]") {
  std::vector<Cell> cells;
  for (int S : {1, 3, 4, 5})
    for (int TP : {2, 4, 8})
      for (bool full : {false, true}) cells.push_back({S, TP, full, S % 2 == 1, CacheMode::Vllm, 129, 0, false, 1});
  // the serving stack's ag_rs_from 12: reduce-scattered from S 12
  cells.push_back({12, 4, false, false, CacheMode::Vllm, 129, 0, false, 12});
  cells.push_back({16, 4, true, false, CacheMode::Atom, 300, 0, false, 12});
  for (const Cell& k : cells) {
    INFO("S " << k.S << " TP " << k.TP << (k.full ? " full" : " sparse") << " ag_rs_from " << k.agRsFrom);
    CHECK(runCell(k, {}) == "bit-exact");
  }
}

TEST_CASE("layer launch: the moe= knob takes a8w4 and refuses the default and unknown values", "[layer_launch][knobs]") {
  const ModelConfig cfg = ModelConfig::reduced();
  auto message = [&](const std::string& knobs) -> std::string {
    ir::Key k = makeLayerKey(cfg, 2, 2);
    k.knobs = knobs;
    try {
      LayerVariant::make(cfg, k);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(message("") == "");
  CHECK(LayerVariant::make(cfg, makeLayerKey(cfg, 2, 2)).moe == MoeQuant::A16w4);
  CHECK(message("moe=a8w4") == "");
  CHECK(message("cache=atom,moe=a8w4") == "");
  CHECK(LayerVariant::make(cfg, makeLayerKey(cfg, 2, 2, {}, {}, MoeQuant::A8w4)).moe == MoeQuant::A8w4);
  CHECK(LayerVariant::make(cfg, makeLayerKey(cfg, 2, 2, {}, {}, MoeQuant::A8w4)).ffn.layout.moe == MoeQuant::A8w4);
  CHECK(LayerVariant::make(cfg, makeLayerKey(cfg, 2, 2)).ffn.layout.moe == MoeQuant::A16w4);
  CHECK_THAT(message("moe=a8w4,cache=atom"), Catch::Contains("are not canonical"));
  CHECK_THAT(message("moe=a16w4"), Catch::Contains("is the default"));
  CHECK_THAT(message("moe=a4w4"), Catch::Contains("moe=a4w4: expected a16w4 or a8w4"));
  CHECK_THAT(message("moe=bogus,moe=a8w4"), Catch::Contains("expected a16w4 or a8w4"));
  AttentionKnobs atom;
  atom.mode = CacheMode::Atom;
  CHECK(makeLayerKey(cfg, 2, 2, {}, {}, MoeQuant::A8w4).knobs == "moe=a8w4");
  CHECK(makeLayerKey(cfg, 2, 2, atom, {}, MoeQuant::A8w4).knobs == "cache=atom,moe=a8w4");
  CHECK(makeLayerKey(cfg, 2, 2, atom).knobs == "cache=atom");
  CHECK(message(makeLayerKey(cfg, 2, 2, atom, {}, MoeQuant::A8w4).knobs) == "");
  LayerPlacementKnobs rs;
  rs.agRsFrom = 1;
  CHECK(makeLayerKey(cfg, 2, 2, atom, rs, MoeQuant::A8w4).knobs == "cache=atom,moe=a8w4,ag_rs_from=1");
  CHECK_THAT(message("ag_rs_from=1,moe=a8w4"), Catch::Contains("are not canonical"));
  CHECK_THAT(message("ag_rs_from=1,cache=atom"), Catch::Contains("are not canonical"));
}

TEST_CASE("layer launch: the layout's moe is the FFN knob's and a layout that differs is refused", "[layer_launch][knobs]") {
  const ModelConfig cfg = ModelConfig::reduced();
  LayerVariant v = LayerVariant::make(cfg, makeLayerKey(cfg, 2, 2, {}, {}, MoeQuant::A8w4));
  CHECK(v.ffn.knobs.moe == MoeQuant::A8w4);
  CHECK(v.ffn.layout.moe == MoeQuant::A8w4);
  CHECK_NOTHROW(buildLayerPlan(v));
  v.ffn.layout.moe = MoeQuant::A16w4;
  CHECK_THROWS_WITH(buildLayerPlan(v), Catch::Contains("the layout's moe a16w4: expected the knob's, a8w4"));
}

TEST_CASE("layer launch: a mismatch names the stage that writes it (the all-gather when reduce-scattered)",
          "[layer_launch]") {
  const ModelConfig cfg = ModelConfig::reduced();
  std::vector<std::string> scattered, oneShot;
  for (const ir::Stage& s : buildLayerPlan(cfg, makeLayerKey(cfg, 3, 4, {}, {.agRsFrom = 1})).stages)
    scattered.push_back(s.name);
  for (const ir::Stage& s : buildLayerPlan(cfg, makeLayerKey(cfg, 3, 4)).stages) oneShot.push_back(s.name);
  for (const OutputWriter& w : kGatherWriters) {
    INFO(w.output);
    CHECK(std::find(scattered.begin(), scattered.end(), w.stage) != scattered.end());
  }
  CHECK(writerStage("out.r0", scattered) == "final_ag");
  CHECK(writerStage("res_out.r3", scattered) == "reduce_ag");
  CHECK(writerStage("mid.r0", scattered) == "up");
  CHECK(writerStage("out.r0", oneShot) == "final");
  CHECK(writerStage("res_out.r3", oneShot) == "reduce");
  CHECK(writerStage("err.r0", scattered).empty());
  const auto bf16 = [](uint16_t bits) {
    return runtime::HostTensor::of(runtime::DType::BF16, {1, 2}, std::vector<uint16_t>{0, bits}, "test");
  };
  const auto m = firstMismatch({{"out.r0", bf16(0x3fe4)}}, {{"out.r0", bf16(0x3fe3)}}, scattered);
  REQUIRE(m.has_value());
  CHECK(describe(*m) == "out.r0[1]: got 0x3fe4 (1.78125), want 0x3fe3 (1.7734375) (written by stage 'final_ag')");
}

TEST_CASE("layer launch: indexer context parallelism bit-exact at 20 .. 40 blocks, TP 2, 4, 8", "[layer_launch][index_cp]") {
  // index_cp_from 17: rows of 18 .. 40 blocks scored a slice a rank (b = rank mod TP) for every
  // index head, each run's best 16 mailed to the head's owner (SEL_CP), merged there; the tail
  // block cut mid-block, n mod TP of several residues, CP rows beside rows of <= 17 blocks
  struct CpCell {
    int S, TP, context;
    bool share;
  };
  const CpCell cells[] = {
      {2, 2, 20 * 128 + 5, false},   // 21 blocks: 11 / 10 a rank, 4 runs of <= 3
      {3, 4, 17 * 128 - 2, true},    // rows of 17 (not CP), 18, 18 blocks
      {1, 8, 40 * 128 - 77, false},  // 40 blocks, 5 a rank, both owners of a head
      {2, 4, 33 * 128 + 60, false},  // 34 blocks: n mod 4 = 2
      {2, 8, 36 * 128 + 1, true},    // 37 and 37 blocks, n mod 8 = 5, a tail of 2 and 3 keys
      {1, 2, 27 * 128 + 100, false}, // 28 blocks
  };
  for (const CpCell& c : cells) {
    Cell k;
    k.S = c.S;
    k.TP = c.TP;
    k.context = c.context;
    k.share = c.share;
    k.cpFrom = 17;
    INFO("S " << k.S << " TP " << k.TP << " context " << k.context << (k.share ? " shared" : ""));
    CHECK(runCell(k, {}) == "bit-exact");
  }
}

TEST_CASE("layer launch: indexer context parallelism's mail under the race detector", "[layer_launch][index_cp]") {
  // S 2 TP 4 at 21 blocks: every rank mails 8 runs a row to the owners' SEL_CP (peer pairs)
  Cell k;
  k.S = 2;
  k.TP = 4;
  k.context = 20 * 128 + 5;
  k.cpFrom = 17;
  runtime::SimOptions opts;
  opts.races = true;
  opts.seed = 2;
  runtime::SimStats stats;
  CHECK(runCell(k, opts, &stats) == "bit-exact");
  for (const std::string& f : stats.races) UNSCOPED_INFO(f);
  for (const std::string& f : stats.uninit) UNSCOPED_INFO(f);
  CHECK(stats.findings() == 0);
}
