// The MiniMax-M3 attention launch on the Sim against the native reference, bit for bit: the new
// residual, the norm's x8 / x_scale / rstd, q after norm + RoPE, and every byte and scale of the
// caches after the appends (docs/attention.md, "The launch").
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "test_attention_hostile.h"
#include "test_attention_nan.h"
#include "test_attention_util.h"
#include "test_shell.h"

using namespace attention_test;

TEST_CASE("attention launch: its own key and plan and the FFN key unchanged", "[attention_launch]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const ir::Key k = makeAttentionKey(cfg, 8, 4);
  CHECK(k.spec == kAttentionSpecId);
  CHECK(k.knobs.empty());
  CHECK(makeKey(cfg, 8, 4).spec != k.spec);
  AttentionKnobs atom;
  atom.mode = CacheMode::Atom;
  atom.fullLayer = true;
  CHECK(atom.canonical() == "cache=atom,layer=full");
  CHECK(AttentionKnobs::parse(atom.canonical(), "t").canonical() == atom.canonical());
  CHECK_THROWS_AS(AttentionKnobs::parse("cache=paged", "t"), InputError);
  ir::Key bad = k;
  bad.knobs = "layer=half";
  CHECK_THROWS_AS(AttentionVariant::make(cfg, bad), InputError);
  const ir::Plan plan = buildAttentionPlan(cfg, k);
  ir::verify(plan);
  REQUIRE(plan.stages.size() == 7);
  CHECK(plan.stages[0].name == "attn_norm");
  CHECK(plan.stages[1].name == "attn_gemv");
  CHECK(plan.stages[2].name == "attn_heads");
  CHECK(plan.stages[3].name == "attn_index_share");
  CHECK(plan.stages[4].name == "attn_index");
  CHECK(plan.stages[5].name == "attn_split");
  CHECK(plan.stages[6].name == "attn_merge");
}

TEST_CASE("attention launch: bit-exact on the Sim for S x TP in vllm mode across a block edge", "[attention_launch]") {
  // each S and each TP once (the cross product is in the slow matrix)
  for (auto [S, TP] : {std::pair{1, 1}, std::pair{3, 8}, std::pair{8, 4}}) {
    Case k;
    k.S = S;
    k.TP = TP;
    k.context = 128 - S / 2;  // the rows' positions straddle the first block edge
    DYNAMIC_SECTION("S" << S << " TP" << TP) { runCase(k); }
  }
}

TEST_CASE("attention launch: bit-exact on the Sim when the merge loops over batches of cells", "[attention_launch]") {
  // more query heads than the reduced 16: 8 and 10 merge cells a thread at TP 1 (4 a batch), so
  // the merge's whole batches run as a loop (the full dims do at TP 1 and 2), the rest unrolled
  Case k;
  k.S = 2;
  SECTION("64 heads: a loop of 2 batches") {
    k.dims = [](ModelConfig& c) { c.heads = 64; };
    runCase(k);
  }
  SECTION("80 heads: a loop of 2 batches and 2 cells after it") {
    k.dims = [](ModelConfig& c) {
      c.heads = 80;
      c.kvHeads = c.indexHeads = 8;
    };
    runCase(k);
  }
}

TEST_CASE("attention launch: bit-exact on the Sim in atom mode and a full layer and a padded batch", "[attention_launch]") {
  Case k;
  k.S = 3;
  k.TP = 4;
  k.mode = CacheMode::Atom;
  k.context = 127;
  SECTION("atom") { runCase(k); }
  SECTION("atom full layer TP 1 over 2 tiles") {
    k.TP = 1;
    k.full = true;
    k.context = 300;  // the spans cross the 256-key tile edge: online softmax
    runCase(k);
  }
  SECTION("vllm full layer S 1 TP 8 over 2 tiles") {
    k.mode = CacheMode::Vllm;
    k.S = 1;
    k.TP = 8;
    k.full = true;
    k.context = 383;
    runCase(k);
  }
  SECTION("atom sparse TP 4 over 2 tiles") {
    k.context = 300;  // 3 blocks: every block, tiles 0 and 1 (split 2 and later past n)
    runCase(k);
  }
  SECTION("vllm batch with a padded row TP 8") {
    k.mode = CacheMode::Vllm;
    k.TP = 8;
    k.share = false;
    k.padded = 1;
    runCase(k);
  }
  SECTION("vllm scales small enough that the writers give NaN past 464") {
    k.mode = CacheMode::Vllm;
    k.kvScale = 0.25f / 448.0f;
    runCase(k);
  }
  SECTION("vllm sparse past 16 blocks S 3 TP 4") {
    k.mode = CacheMode::Vllm;
    k.context = 2049;  // 17 blocks: scored, the local block pinned, the top 16 (the tail last)
    runCase(k);
  }
  SECTION("atom race detector S 2 TP 8 past 16 blocks") {
    k.S = 2;
    k.TP = 8;
    k.context = 2100;
    k.races = true;
    runCase(k);
  }
  SECTION("vllm full layer race detector S 3 TP 4 over 2 tiles") {
    k.mode = CacheMode::Vllm;
    k.full = true;
    k.context = 300;
    k.races = true;
    runCase(k);
  }
}

TEST_CASE("attention launch: the indexer CP knob and its variant's w_qkv rows", "[attention_launch]") {
  const ModelConfig cfg = ModelConfig::reduced();
  AttentionKnobs cp;
  cp.indexCpFrom = 17;
  CHECK(cp.canonical() == "index_cp_from=17");
  CHECK(AttentionKnobs::parse("cache=atom,index_cp_from=17", "t").indexCpFrom == 17);
  CHECK(AttentionKnobs{}.canonical().empty());
  for (const char* bad : {"index_cp_from=0", "index_cp_from=-3", "index_cp_from=x", "index_cp_from=17x"})
    CHECK_THROWS_AS(AttentionKnobs::parse(bad, "t"), InputError);
  // refused in the attention launch alone (no peer memory for the candidates), and, in the layer
  // launch, at TP 1, on a full layer and below top-k blocks
  CHECK_THROWS_WITH(AttentionVariant::make(cfg, makeAttentionKey(cfg, 2, 4, cp)),
                    Catch::Contains("it is a knob of the layer launch (--launch layer)"));
  CHECK_THROWS_AS(buildAttentionPlan(cfg, makeAttentionKey(cfg, 2, 4, cp)), InputError);
  CHECK_THROWS_AS(AttentionVariant::make(cfg, makeAttentionKey(cfg, 1, 1, cp), true), InputError);
  AttentionKnobs full = cp;
  full.fullLayer = true;
  CHECK_THROWS_AS(AttentionVariant::make(cfg, makeAttentionKey(cfg, 1, 4, full), true), InputError);
  AttentionKnobs low = cp;
  low.indexCpFrom = cfg.indexTopk - 1;
  CHECK_THROWS_AS(AttentionVariant::make(cfg, makeAttentionKey(cfg, 1, 4, low), true), InputError);
  // the other heads' q rows follow the index key; the default rows are unchanged
  for (int tp : {2, 4, 8})
    for (int r = 0; r < tp; ++r) {
      INFO("TP " << tp << " rank " << r);
      const AttentionShape off = AttentionShape::make(cfg, tp, r, "t"), on = AttentionShape::make(cfg, tp, r, "t", true);
      CHECK(off.cpHeads == 0);
      CHECK(on.cpHeads == cfg.indexHeads - on.indexHeads);
      CHECK(on.rows == off.rows + on.cpHeads * on.indexDim);
      for (int row = 0; row < off.rows; ++row) {
        const QkvRow a = qkvRowOf(off, row), b = qkvRowOf(on, row);
        CHECK((a.kind == b.kind && a.head == b.head && a.channel == b.channel));
      }
      std::vector<int> heads;
      for (int row = off.rows; row < on.rows; row += on.indexDim) {
        const QkvRow q = qkvRowOf(on, row);
        CHECK(q.kind == QkvRow::IndexQ);
        CHECK(q.channel == 0);
        heads.push_back(q.head);
      }
      for (int h = 0; h < on.indexHeads; ++h) heads.push_back(on.firstKvHead + h);
      std::sort(heads.begin(), heads.end());
      CHECK(heads == std::vector<int>{0, 1, 2, 3});  // every index head once
    }
  // the knob off leaves the key's knob text, and so the variant's code, as it was
  CHECK(makeAttentionKey(cfg, 2, 4).knobs.empty());
  const AttentionVariant v = AttentionVariant::make(cfg, makeAttentionKey(cfg, 2, 4, cp), true);
  CHECK(v.layout.qkvRows == v.layout.shape.rows);
  CHECK(v.layout.iqCpOffset >= 0);
  CHECK(AttentionVariant::make(cfg, makeAttentionKey(cfg, 2, 4)).layout.iqCpOffset == -1);
}

TEST_CASE("attention launch: the race detector on the long path's shares", "[attention_launch]") {
  Case k;
  k.S = 2;
  k.TP = 4;
  k.context = 512 * 128;  // 513 blocks: the shares' candidates (CAND, CRDY), then their ranking
  k.races = true;
  runCase(k);
}

TEST_CASE("attention launch: the full dims at 3000 keys with S 8 sharing a sequence at TP 4", "[attention_launch][.slow]") {
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom}) {
    Case k;
    k.flashDims = true;
    k.S = 8;
    k.TP = 4;
    k.mode = mode;
    k.context = 3000;  // 24 blocks: scored; the rows at 3001 .. 3008 keys
    DYNAMIC_SECTION(cacheModeName(mode)) { runCase(k); }
  }
}

TEST_CASE("attention launch: a NaN V byte reaches only the row and heads that read it", "[attention_launch]") {
  // a full layer, a batch (each row its own sequence): V of key 5, channel 3 of row 0's sequence
  // on rank 1 (its KV head) := NaN reaches exactly channel 3 of row 0's query heads on rank 1
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 4;
  AttentionKnobs knobs;
  knobs.fullLayer = true;
  const AttentionVariant v = AttentionVariant::make(cfg, makeAttentionKey(cfg, S, TP, knobs));
  const ir::Plan plan = buildAttentionPlan(v);
  AttentionInputOptions o;
  o.fullLayer = true;
  o.context = 130;
  AttentionLaunch in = makeAttentionLaunch(cfg, S, TP, 11, o);
  const AttentionResult clean = attentionReference(cfg, in);
  AttentionCaches& c = in.caches[1];
  const auto pt = c.kv.pageOfKey(in.rows.tables[0], 5, 0);
  c.vView()[c.kv.vByte(pt.page, pt.token, 3)] = 0x7f;
  const AttentionResult ref = attentionReference(cfg, in);
  const AttentionSimRun run = runAttentionOnSim(plan, v, in);
  const int D = cfg.headDim, width = v.layout.shape.attnWidth();
  for (int r = 0; r < TP; ++r) {
    INFO("rank " << r);
    CHECK(firstDiff(run.ranks[r].attn, ref.ranks[r].attn) == -1);
    for (int t = 0; t < S; ++t)
      for (int i = 0; i < width; ++i) {
        const bool reached = r == 1 && t == 0 && i % D == 3;
        const uint16_t got = run.ranks[r].attn[size_t(t) * width + i], was = clean.ranks[r].attn[size_t(t) * width + i];
        INFO("row " << t << " column " << i);
        if (reached) CHECK((got & 0x7fff) > 0x7f80);  // NaN
        else if (got != was) CHECK(got == was);  // one CHECK a changed cell
      }
  }
}

TEST_CASE("attention launch: hostile inputs are refused on the host before the launch", "[attention_launch]") {
  // each gets validateAttentionLaunch's error from the launch itself, before any buffer or CTA
  const ModelConfig cfg = ModelConfig::reduced();
  const AttentionLaunch good = hostileBase(cfg);
  const AttentionVariant v = AttentionVariant::make(cfg, makeAttentionKey(cfg, good.S, good.TP));
  const ir::Plan plan = buildAttentionPlan(v);
  for (const HostileEdit& h : hostileEdits()) {
    INFO(h.what);
    AttentionLaunch bad = good;
    h.edit(bad);
    runtime::SimOptions opts;
    opts.maxSteps = 1;  // a launch that started would stop at its first op with another error
    const std::string e = inputErrorOf([&] { runAttentionOnSim(plan, v, bad, opts); });
    for (const std::string& part : h.says) CHECK_THAT(e, Catch::Contains(part));
  }
}

TEST_CASE("attention launch: a NaN V byte on a sparse layer reaches only the rows whose selection reads it",
          "[attention_launch]") {
  // 41 blocks a row, 4 rows sharing the sequence: each (row, KV head) picks its own 16; the NaN
  // sits on rank 1 in a block some of them hold
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 4, TP = 2;
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom}) {
    INFO(cacheModeName(mode));
    AttentionKnobs knobs;
    knobs.mode = mode;
    const AttentionVariant v = AttentionVariant::make(cfg, makeAttentionKey(cfg, S, TP, knobs));
    const ir::Plan plan = buildAttentionPlan(v);
    AttentionInputOptions o;
    o.mode = mode;
    o.context = 40 * 128;
    o.shareSequence = true;
    AttentionLaunch in = makeAttentionLaunch(cfg, S, TP, 9, o);
    const AttentionResult clean = attentionReference(cfg, in);
    const NanSite site = poisonSharedBlock(in, clean, 1, cfg.indexBlock);
    REQUIRE(site.block >= 0);
    const AttentionResult ref = attentionReference(cfg, in);
    const AttentionSimRun run = runAttentionOnSim(plan, v, in);
    int reading = 0;
    for (int r = 0; r < TP; ++r) {
      INFO("rank " << r);
      CHECK(run.errorWords[r] == 0);
      CHECK(firstDiff(run.ranks[r].attn, ref.ranks[r].attn) == -1);
      reading += checkNanReach(v.layout.shape, S, r, clean.ranks[r].selections, clean.ranks[r].attn,
                               run.ranks[r].attn, site);
    }
    CHECK(reading > 0);
  }
}

TEST_CASE("attention launch: the slow matrix", "[attention_launch][.slow]") {
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom})
    for (bool full : {false, true})
      for (int S : {1, 2, 9, 16})
        for (int TP : {1, 2, 4, 8})
          for (int context : {1, 126, 255, 383, 2047, 2300}) {
            Case k;
            k.S = S;
            k.TP = TP;
            k.mode = mode;
            k.full = full;
            k.context = context;
            k.share = S % 2 == 0;
            k.padded = S > 2 ? 1 : 0;
            DYNAMIC_SECTION(cacheModeName(mode) << (full ? " full" : " sparse") << " S" << S << " TP" << TP << " ctx"
                                                << context) {
              runCase(k);
            }
          }
}

TEST_CASE("attention launch: monogen sim --launch attention prints the verdict line", "[attention_launch]") {
  const std::string monogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";
  int code = -1;
  const std::string out =
      runShell(monogen + " sim --launch attention --config reduced --rows 2 --tp 4 --context 129", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("minimax_m3.attention-S2-TP4 on the Sim device") != std::string::npos);
  CHECK(out.find("verdict: bit-exact under 1 seed") != std::string::npos);
  const std::string bad = runShell(monogen + " sim --launch attention --config reduced --experts 4", code);
  CHECK(code != 0);
  CHECK(bad.find("is an option of the FFN launch") != std::string::npos);
  runShell(monogen + " sim --config reduced --rows 1 --tp 1 --context 5", code);
  CHECK(code != 0);
}
