// The MiniMax-M3 attention reference (specs/minimax_m3/reference/Attention*): its model config and
// cache contract, its agreement with the float64 model over S x TP x cache mode x layer type,
// the selection's tie / pin / NaN rules, short == long and context parallelism's selection, the hostile-input errors, a row seeing
// its launch's earlier keys, and a NaN cache entry reaching only the rows that read it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "specs/minimax_m3/kernel/AttentionLayout.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/AttentionFloat64.h"
#include "specs/minimax_m3/reference/AttentionIndexer.h"
#include "specs/minimax_m3/reference/AttentionNumerics.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "test_attention_hostile.h"
#include "test_attention_nan.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
namespace num = monogen::ir::num;

namespace {

using attention_test::inputErrorOf;

/// Relative L2 distance of the reference's bf16 rows from the float64 model, per (row, q head).
struct Agreement {
  double worst = 0, mean = 0;
  int heads = 0, skipped = 0;  // skipped: heads whose double scores select other blocks
  double worstTie = 0;         // their largest -margin / the row's largest |score|
};
Agreement agreement(const ModelConfig& cfg, const AttentionLaunch& in, const AttentionResult& ref,
                    const AttentionFloat64Result& f) {
  Agreement a;
  for (int r = 0; r < in.TP; ++r) {
    const AttentionShape sh = AttentionShape::make(cfg, in.TP, r, "test");
    const int D = sh.headDim;
    for (int t = 0; t < in.S; ++t) {
      if (!in.rows.live(t)) continue;
      for (int h = 0; h < sh.qHeads; ++h) {
        const size_t sel = static_cast<size_t>(t) * sh.kvHeads + sh.kvOfQ(h);
        if (!f.ranks[r].sameSelection[sel]) {
          // the double scores rank other blocks: only a near tie may do that (kNearTie)
          a.worstTie = std::max(a.worstTie, -f.ranks[r].margin[sel] / f.ranks[r].scoreScale[sel]);
          ++a.skipped;
          continue;
        }
        double e2 = 0, n2 = 0;
        for (int d = 0; d < D; ++d) {
          const size_t i = static_cast<size_t>(t) * sh.attnWidth() + static_cast<size_t>(h) * D + d;
          const double x = num::bf16ToF32(ref.ranks[r].attn[i]), y = f.ranks[r].attn[i];
          e2 += (x - y) * (x - y);
          n2 += y * y;
        }
        const double rel = std::sqrt(e2 / n2);
        a.worst = std::max(a.worst, std::isnan(rel) ? 1e9 : rel);
        a.mean += rel;
        ++a.heads;
      }
    }
  }
  if (a.heads) a.mean /= a.heads;
  return a;
}

// The tolerance (docs/attention.md, "Float64 check"): each of the ~6 E4M3 roundings on a value's
// path (x8, q8, the new k8 and v8, P8) is a relative error of RMS 2^-4 / sqrt(3) = 3.6%; their
// root sum is 9%, the softmax's exp turns a score error of that size into about as much in P.
// A head's relative L2 error past 4 x that (0.35) is a broken reference, not rounding.
constexpr double kWorstRel = 0.35, kMeanRel = 0.12;
// A selection the double scores disagree with must be a near tie: the block it keeps scores
// within 10 % of the row's largest |score| below the one it drops. The reference's scores carry
// x8's and (vllm) the index q's E4M3 roundings, 3.6 % RMS each: 5 % together, twice that.
constexpr double kNearTie = 0.10;

void checkAgreement(const ModelConfig& cfg, int S, int TP, CacheMode mode, bool full, int context, bool share,
                    int padded = 0, uint64_t seed = 7) {
  AttentionInputOptions o;
  o.mode = mode;
  o.fullLayer = full;
  o.context = context;
  o.shareSequence = share;
  o.paddedRows = padded;
  const AttentionLaunch in = makeAttentionLaunch(cfg, S, TP, seed, o);
  const AttentionResult ref = attentionReference(cfg, in);
  const AttentionFloat64Result f = attentionFloat64(cfg, in, ref);
  const Agreement a = agreement(cfg, in, ref, f);
  INFO(o.describe() << " S=" << S << " TP=" << TP << ": worst " << a.worst << " mean " << a.mean << " over "
                    << a.heads << " heads, " << a.skipped << " skipped (worst tie " << a.worstTie << ")");
  REQUIRE(a.heads > 0);
  CHECK(a.worstTie <= kNearTie);
  CHECK(a.worst < kWorstRel);
  CHECK(a.mean < kMeanRel);
  for (int t = 0; t < S; ++t) {
    if (!in.rows.live(t)) {
      for (const auto& rr : ref.ranks)
        for (int i = 0; i < static_cast<int>(rr.attn.size()) / S; ++i) REQUIRE(rr.attn[t * (rr.attn.size() / S) + i] == 0);
      continue;
    }
    CHECK(std::fabs(ref.rstd[t] - f.rstd[t]) <= 1e-5 * f.rstd[t]);
  }
}

}  // namespace

TEST_CASE("attention: the E4M3 conversion is the IR's", "[attention]") {
  std::vector<float> xs = {0.0f, -0.0f, 448.0f, 449.0f, 464.0f, 465.0f, -464.0f, 1e-3f, 0.0009765625f, 0.00048828125f,
                           std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  uint64_t s = 1;
  for (int i = 0; i < 200000; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t bits = static_cast<uint32_t>(s >> 32);
    // sign, exponent 2^-12 .. 2^9 (subnormal codes to past 464), any mantissa; midpoints below
    xs.push_back(std::bit_cast<float>((bits & 0x807fffffu) | ((115u + (bits >> 23) % 22u) << 23)));
  }
  for (int c = 0; c < 0x7e; ++c) xs.push_back((num::fp8E4m3ToF32(c) + num::fp8E4m3ToF32(c + 1)) / 2);
  for (int c = 0; c < 256; ++c) {  // every code and the midpoints around it
    const float v = num::fp8E4m3ToF32(c);
    xs.push_back(v);
    xs.push_back(std::nextafter(v, 0.0f));
    xs.push_back(std::nextafter(v, 1e9f));
  }
  for (float x : xs) {
    INFO(x);
    REQUIRE(e4m3Saturating(x) == num::f32ToFp8E4m3(x));
    const uint8_t n = e4m3(x);
    if (std::isinf(x) || std::fabs(x) > 464.0f) REQUIRE((n & 0x7f) == 0x7f);
    else REQUIRE(n == num::f32ToFp8E4m3(x));
  }
}

TEST_CASE("attention: the model config's attention fields", "[attention]") {
  const ModelConfig full = ModelConfig::flash(), red = ModelConfig::reduced();
  CHECK(full.kvHeads == 4);
  CHECK(full.rotaryDim == 64);
  CHECK(full.indexHeads == 4);
  CHECK(full.indexHeadDim == 128);
  CHECK(full.indexTopk == 16);
  CHECK(full.isFullAttention(0));
  CHECK_FALSE(full.isFullAttention(3));
  full.validateAttention("full");
  red.validateAttention("reduced");
  CHECK(red.rotaryDim * 2 == red.headDim);
  CHECK(full.attentionCanonical().find(full.canonical()) == 0);

  const std::string base =
      R"("hidden_size": 1536, "num_local_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 768,
         "num_hidden_layers": 4, "num_attention_heads": 16, "head_dim": 64)";
  auto parse = [&](const std::string& extra) { return ModelConfig::fromHfJsonText("{" + base + extra, "cfg"); };
  const ModelConfig c = parse(R"(, "num_key_value_heads": 2, "rotary_dim": 32, "rope_theta": 10000.0,
      "layer_types": ["full_attention", "minimax_m3_sparse", "minimax_m3_sparse", "full_attention"],
      "sparse_attention_config": {"sparse_num_index_heads": 2, "sparse_index_dim": 64, "sparse_block_size": 128,
                                  "sparse_topk_blocks": 16, "sparse_local_block": 1,
                                  "sparse_attention_freq": [0, 1, 1, 0]}})");
  CHECK(c.kvHeads == 2);
  CHECK(c.indexHeads == 2);
  CHECK(c.indexHeadDim == 64);
  CHECK(c.ropeTheta == 10000.0);
  CHECK(c.fullAttention == std::vector<bool>{true, false, false, true});
  c.validateAttention("cfg");

  CHECK_THAT(inputErrorOf([&] { parse(R"(, "sparse_attention_config": {"sparse_block_size": 64}})"); }),
             Catch::Contains("'sparse_block_size' = 64") && Catch::Contains("require 128"));
  CHECK_THAT(inputErrorOf([&] { parse(R"(, "sparse_attention_config": {"sparse_topk_blocks": "16"}})"); }),
             Catch::Contains("'sparse_topk_blocks'"));
  CHECK_THAT(inputErrorOf([&] { parse(R"(, "sparse_attention_config": 3})"); }), Catch::Contains("an object"));
  CHECK_THAT(inputErrorOf([&] { parse(R"(, "rotary_dim": 12})"); }), Catch::Contains("'rotary_dim' = 12"));
  CHECK_THAT(inputErrorOf([&] { parse(R"(, "layer_types": ["full_attention"]})"); }), Catch::Contains("layer_types"));
  CHECK_THAT(inputErrorOf([&] { parse(R"(, "layer_types": ["full_attention", "x", "full_attention", "full_attention"]})"); }),
             Catch::Contains("layer_types[1]"));
  CHECK_THAT(inputErrorOf([&] {
               parse(R"(, "layer_types": ["full_attention", "minimax_m3_sparse", "minimax_m3_sparse", "full_attention"],
                     "sparse_attention_config": {"sparse_attention_freq": [0, 1, 0, 0]}})");
             }),
             Catch::Contains("disagree at layer 2"));
  CHECK_THAT(inputErrorOf([&] { parse(R"(, "num_key_value_heads": 3})").validateAttention("cfg"); }),
             Catch::Contains("a divisor of num_attention_heads = 16"));
  CHECK_THAT(inputErrorOf([&] {
               parse(R"(, "num_key_value_heads": 2, "sparse_attention_config": {"sparse_num_index_heads": 4}})")
                   .validateAttention("cfg");
             }),
             Catch::Contains("one index head a KV head"));
}

TEST_CASE("attention: a rank's heads, w_qkv rows and attention rows", "[attention]") {
  const ModelConfig full = ModelConfig::flash(), red = ModelConfig::reduced();
  // TP 4 is the serving stack's: 16 q heads, one KV head, one index head, 2560 w_qkv rows
  const AttentionShape s4 = AttentionShape::make(full, 4, 2, "t");
  CHECK(s4.qHeads == 16);
  CHECK(s4.kvHeads == 1);
  CHECK(s4.indexHeads == 1);
  CHECK(s4.firstKvHead == 2);
  CHECK(s4.rows == 2560);
  CHECK(s4.rowsOf(true) == 2304);
  for (const ModelConfig& cfg : {full, red})
    for (int tp : {1, 2, 4, 8})
      for (int r = 0; r < tp; ++r) {
        const AttentionShape s = AttentionShape::make(cfg, tp, r, "t");
        CHECK(s.attnWidth() == cfg.attnWidth(tp));     // the attn.rR slice o_proj reads
        CHECK(s.firstQHead * cfg.headDim == r * cfg.attnWidth(tp));
        CHECK(s.qGroup * s.kvHeads == s.qHeads);
        // a query head's KV head is the model's: global q / (heads / kvHeads)
        for (int q = 0; q < s.qHeads; ++q)
          CHECK(s.firstKvHead + s.kvOfQ(q) == (s.firstQHead + q) / (cfg.heads / cfg.kvHeads));
        CHECK(qkvRowOf(s, s.ikOff).kind == QkvRow::IndexK);
        CHECK(qkvRowOf(s, s.kOff).head == s.firstKvHead);
      }
  const AttentionShape s8 = AttentionShape::make(full, 8, 5, "t");  // each KV head on two ranks
  CHECK(s8.qHeads == 8);
  CHECK(s8.kvHeads == 1);
  CHECK(s8.firstKvHead == 2);
  CHECK(AttentionShape::make(full, 1, 0, "t").kvHeads == 4);
  CHECK(AttentionShape::make(full, 2, 1, "t").qGroup == 16);
  CHECK_THAT(inputErrorOf([&] { AttentionShape::make(full, 3, 0, "t"); }), Catch::Contains("TP = 3"));
}

TEST_CASE("attention: the cache addressing of both modes", "[attention]") {
  // one KV head at full dims (ATOM's TP 4): vllm's main block = 16 page-16s, K then V
  KvCacheGeometry v{CacheMode::Vllm, 1, 128, 128, 10};
  CHECK(v.slotOf(3, 37) == 256 * 3 + 37);
  CHECK(v.pageOfSlot(256 * 3 + 37, 0).page == 16 * 3 + 2);
  CHECK(v.tableEntry(3) == 6);
  CHECK(v.pageOfKey(6, 128 * 5 + 37, 0).page == 6 * 8 + 2);
  CHECK(v.vViewOffset() == 16384);
  CHECK(v.kBytes() == 10 * 2 * 128 * 128);
  CHECK(v.kByte(5, 3, 37) == 5 * 2048 + 2 * 256 + 3 * 16 + 5);
  CHECK(v.vByte(5, 3, 37) == 5 * 2048 + 37 * 16 + 3);
  KvCacheGeometry a{CacheMode::Atom, 1, 128, 128, 10};
  CHECK(a.slotOf(3, 37) == 3 * 128 + 37);
  CHECK(a.pageOfSlot(3 * 128 + 37, 0).page == (3 * 128 + 37) / 16);
  CHECK(a.pageOfSlot(3 * 128 + 37, 0).token == 37 % 16);
  CHECK(a.tableEntry(3) == 3);
  CHECK_THAT(inputErrorOf([&] { v.blockOfEntry(7, "t"); }), Catch::Contains("a multiple of 2"));
  CHECK_THAT(inputErrorOf([&] { a.blockOfEntry(10, "t"); }), Catch::Contains("0..9"));
  // every (block, token, head, channel) has its own K and V byte, inside the tensors, and the
  // slot / table routes agree
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom})
    for (int H : {1, 2, 4}) {
      KvCacheGeometry g{mode, H, 64, 128, 3};
      std::set<int64_t> kb, vb;
      for (int m = 0; m < 3; ++m)
        for (int i = 0; i < 128; ++i)
          for (int h = 0; h < H; ++h) {
            const auto p = g.pageOfSlot(g.slotOf(m, i), h);
            const auto q = g.pageOfKey(g.tableEntry(m), 128 * 7 + i, h);
            REQUIRE((p.page == q.page && p.token == q.token));
            for (int d = 0; d < 64; ++d) {
              const int64_t k = g.kByte(p.page, p.token, d), vv = g.vViewOffset() + g.vByte(p.page, p.token, d);
              REQUIRE((k >= 0 && k < g.kBytes() && vv >= 0 && vv < g.kBytes()));
              REQUIRE(kb.insert(k).second);
              REQUIRE(vb.insert(vv).second);
              if (mode == CacheMode::Vllm) REQUIRE(vb.count(k) + kb.count(vv) == 0);
            }
          }
    }
}

TEST_CASE("attention: the selection's tie, pin and NaN rules, short == long", "[attention]") {
  // ties go to the higher block id; the tail block (the row's own) is pinned and placed last
  std::vector<int32_t> keys(40);
  for (int b = 0; b < 40; ++b) keys[b] = indexSortKey(b, 1.0f, 40, 0, 1);  // every score equal
  const Selection s = selectBlocks(keys, 40 * 128 - 5, 128, 16, false);
  CHECK(s.blocks.back() == 39);
  for (int i = 0; i < 15; ++i) CHECK(s.blocks[i] == 38 - i);
  CHECK(s.nCtx == 15 * 128 + 128 - 5);
  // order-preserving key: -0 == 0, NaN below -inf, the local block above everything
  CHECK(indexSortKey(1, -0.0f, 40, 0, 1) == indexSortKey(1, 0.0f, 40, 0, 1));
  CHECK(indexSortKey(1, NAN, 40, 0, 1) < indexSortKey(2, -INFINITY, 40, 0, 1));
  CHECK(indexSortKey(1, -2.0f, 40, 0, 1) < indexSortKey(2, -1.0f, 40, 0, 1));
  CHECK(indexSortKey(39, NAN, 40, 0, 1) > indexSortKey(2, 1e28f, 40, 0, 1));
  CHECK(indexSortKey(0, -5.0f, 40, 1, 1) > indexSortKey(39, -5.0f, 40, 1, 1));  // init pinned above local
  // a context of <= 16 blocks keeps every block in id order
  std::vector<int32_t> few(5);
  for (int b = 0; b < 5; ++b) few[b] = -b;
  const Selection f = selectBlocks(few, 5 * 128 - 100, 128, 16, false);
  CHECK(f.blocks[0] == 0);
  CHECK(f.blocks[4] == 4);
  CHECK(f.blocks[5] == -1);
  CHECK(f.nCtx == 5 * 128 - 100);
  // short == long on random scores with ties and NaNs, for contexts across the share sizes
  uint64_t st = 11;
  for (int nBlk : {17, 100, 513, 700, 1500}) {
    std::vector<int32_t> k(static_cast<size_t>(nBlk));
    for (int b = 0; b < nBlk; ++b) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      const int r = static_cast<int>(st >> 60);
      const float sc = r == 0 ? NAN : r == 1 ? -INFINITY : static_cast<float>((st >> 40) % 7);  // many ties
      k[b] = indexSortKey(b, sc, nBlk, 0, 1);
    }
    const Selection a = selectBlocks(k, nBlk * 128, 128, 16, false), b = selectBlocks(k, nBlk * 128, 128, 16, true);
    CHECK(a.blocks == b.blocks);
    CHECK(a.nCtx == b.nCtx);
    CHECK(a.blocks.back() == nBlk - 1);
    std::set<int> distinct(a.blocks.begin(), a.blocks.end());
    CHECK(distinct.size() == 16);
  }
}

TEST_CASE("attention: context parallelism's selection equals the unsplit one", "[attention]") {
  // rank r scores the blocks b = r (mod TP), each of its runs mails its best 16 to the head's
  // owner, which ranks them: the same blocks, slots and sparse length as every block ranked at
  // once, on random contexts (tails mid-block, n mod TP every residue), ties across the slices,
  // NaN / -0 / +-inf scores, the pinned init and local blocks
  uint64_t st = 29;
  auto next = [&st] { return st = st * 6364136223846793005ull + 1442695040888963407ull, st >> 33; };
  int edgeTiesAcross = 0, nanSelected = 0, zeroTies = 0, oneRank = 0, cases = 0;
  for (int i = 0; i < 600; ++i) {
    const int tp = 2 << (next() % 3), parts = std::max(1, (8 / tp) >> (next() % 2));
    const int nBlk = i % 10 == 0 ? 1 + static_cast<int>(next() % 16) : 17 + static_cast<int>(next() % (i % 7 == 0 ? 1400 : 300));
    const int seq = nBlk * 128 - static_cast<int>(next() % 128);
    const int init = static_cast<int>(next() % 3), local = 1 + static_cast<int>(next() % 2);
    const int mode = static_cast<int>(next() % 4);
    const int pick = next() % 2 ? (nBlk - 1) % tp : static_cast<int>(next() % tp);  // often the tail's rank
    std::vector<int32_t> keys(static_cast<size_t>(nBlk));
    std::vector<float> score(static_cast<size_t>(nBlk));
    for (int b = 0; b < nBlk; ++b) {
      const int r = static_cast<int>(next() % 16);
      float sc = mode == 2 ? static_cast<float>(next() % 100000) * 0.37f - 1000.0f
                           : static_cast<float>(static_cast<int>(next() % 5) - 2);  // many ties
      if (mode != 2 && r == 0) sc = NAN;
      if (mode != 2 && r == 1) sc = -0.0f;
      if (mode != 2 && r == 2) sc = -INFINITY;
      if (mode != 2 && r == 3) sc = INFINITY;
      if (mode == 1 && next() % 32 != 0) sc = NAN;  // NaN blocks selected
      if (mode == 3) sc = b % tp == pick ? 3.0f : sc > 2.0f ? 2.0f : sc;  // the top on one rank
      score[b] = sc;
      keys[b] = nBlk <= 16 ? -b : indexSortKey(b, sc, nBlk, init, local);
    }
    const Selection whole = selectBlocks(keys, seq, 128, 16, false);
    const Selection cp = mergeCpCandidates(cpCandidates(keys, 16, tp, parts), nBlk, seq, 128, 16);
    INFO("case " << i << ": " << nBlk << " blocks, seq " << seq << ", TP " << tp << ", parts " << parts);
    CHECK(cp.blocks == whole.blocks);
    CHECK(cp.nCtx == whole.nCtx);
    ++cases;
    // what the cases covered: a tie at the top-16 edge between blocks of two ranks, NaN blocks
    // selected, a -0 block tied with a 0 one, 14 or more of the top 16 on one rank
    if (nBlk <= 16) continue;
    std::vector<RankedBlock> all;
    for (int b = 0; b < nBlk; ++b) all.push_back({keys[b], b});
    std::sort(all.begin(), all.end(), [](const RankedBlock& a, const RankedBlock& b) { return beats(a, b); });
    if (all[15].key == all[16].key && all[15].block % tp != all[16].block % tp) ++edgeTiesAcross;
    int onPick = 0;
    for (int k = 0; k < 16; ++k) onPick += all[k].block % tp == pick ? 1 : 0;
    oneRank += onPick >= 14 ? 1 : 0;
    for (int k = 0; k < 16; ++k) nanSelected += all[k].key == std::numeric_limits<int32_t>::min() ? 1 : 0;
    for (int k = 0; k < 16; ++k)
      zeroTies += std::signbit(score[all[k].block]) && score[all[k].block] == 0.0f &&
                          all[k].key == all[k + 1].key
                      ? 1
                      : 0;
  }
  CAPTURE(edgeTiesAcross, nanSelected, zeroTies, oneRank);
  CHECK(cases == 600);
  CHECK(edgeTiesAcross > 50);
  CHECK(nanSelected > 300);
  CHECK(zeroTies > 20);
  CHECK(oneRank > 50);
  CHECK(inputErrorOf([] { cpCandidates({1, 2, 3}, 16, 4, 0); }).find("parts = 0") != std::string::npos);
}

TEST_CASE("attention: hostile launch inputs get clear errors", "[attention]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const AttentionLaunch good = attention_test::hostileBase(cfg);
  validateAttentionLaunch(cfg, good, "t");
  for (const attention_test::HostileEdit& h : attention_test::hostileEdits()) {
    INFO(h.what);
    AttentionLaunch bad = good;
    h.edit(bad);
    const std::string e = attention_test::inputErrorOf([&] { validateAttentionLaunch(cfg, bad, "t"); });
    for (const std::string& part : h.says) CHECK_THAT(e, Catch::Contains(part));
  }
  // the same through the reference: it validates before it computes
  AttentionLaunch bad = good;
  bad.rows.seqLens[0] = 0;
  CHECK_THROWS_AS(attentionReference(cfg, bad), InputError);
}

// A short context (2 blocks: every block kept) keeps the 32 launches a mode quick; the scored
// contexts are the block-edge case's and the [.slow] matrix's.
TEST_CASE("attention: the reference agrees with float64 over S x TP x layer, vllm", "[attention]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (bool full : {false, true})
    for (int S : {1, 3, 8, 16})
      for (int TP : {1, 2, 4, 8}) checkAgreement(cfg, S, TP, CacheMode::Vllm, full, 129, S % 2 == 1, S == 8 ? 2 : 0);
}

TEST_CASE("attention: the reference agrees with float64 over S x TP x layer, atom", "[attention]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (bool full : {false, true})
    for (int S : {1, 3, 8, 16})
      for (int TP : {1, 2, 4, 8}) checkAgreement(cfg, S, TP, CacheMode::Atom, full, 129, S % 2 == 1, S == 8 ? 2 : 0);
}

TEST_CASE("attention: float64 agreement over S x TP past 16 blocks", "[attention][.slow]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom})
    for (bool full : {false, true})
      for (int S : {1, 3, 8, 16})
        for (int TP : {1, 2, 4, 8}) checkAgreement(cfg, S, TP, mode, full, 2049 + S, S % 2 == 1, S == 8 ? 2 : 0);
}

TEST_CASE("attention: the reference agrees with float64 across the block edges", "[attention]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom})
    for (bool full : {false, true})
      for (int ctx : {0, 126, 127, 128, 2046, 2047, 2048}) checkAgreement(cfg, 2, 2, mode, full, ctx, false);
}

TEST_CASE("attention: float64 agreement at every S x TP and context", "[attention][.slow]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom})
    for (bool full : {false, true})
      for (int S : {1, 3, 8, 16})
        for (int TP : {1, 2, 4, 8})
          for (int ctx : {0, 126, 127, 128, 2046, 2047, 2048}) checkAgreement(cfg, S, TP, mode, full, ctx, S > 1);
}

TEST_CASE("attention: past 512 blocks the long path selects", "[attention][.slow]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom}) checkAgreement(cfg, 8, 4, mode, false, 513 * 128, true);
}

TEST_CASE("attention: the seeded norm weights are drawn apart: a swapped one shows", "[attention]") {
  // A kernel that reads g_iq for g_ik (or g_q for g_k) matches the reference only if the two are
  // equal: no two weights' common prefix may be equal.
  const ModelConfig cfg = ModelConfig::reduced();
  const AttentionLaunch in = makeAttentionLaunch(cfg, 2, 2, 1, AttentionInputOptions{});
  const AttentionWeights& W = in.weights;
  const std::vector<const std::vector<uint16_t>*> g = {&W.gIn, &W.gQ, &W.gK, &W.gIq, &W.gIk};
  for (size_t i = 0; i < g.size(); ++i)
    for (size_t j = i + 1; j < g.size(); ++j) {
      const size_t n = std::min(g[i]->size(), g[j]->size());
      INFO("weights " << i << " and " << j << " over " << n);
      CHECK(!std::equal(g[i]->begin(), g[i]->begin() + n, g[j]->begin()));
    }
}

TEST_CASE("attention: a row sees the keys its launch appends for earlier positions", "[attention]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom}) {
    AttentionInputOptions o;
    o.mode = mode;
    o.context = 2100;  // scored: the last rows' selections read blocks the earlier rows write into
    o.shareSequence = true;
    const int S = 8, TP = 2;
    const AttentionLaunch in = makeAttentionLaunch(cfg, S, TP, 5, o);
    const AttentionResult ref = attentionReference(cfg, in);
    // row 7 alone, over the caches the launch left (rows 0..6's keys cached before it)
    AttentionLaunch one = in;
    one.S = 1;
    const int H = cfg.hidden, W = in.rows.tableWidth;
    one.x.assign(in.x.begin() + 7 * H, in.x.begin() + 8 * H);
    one.res.assign(in.res.begin() + 7 * H, in.res.begin() + 8 * H);
    auto pick = [](auto v, size_t at, size_t n) { return decltype(v)(v.begin() + at * n, v.begin() + (at + 1) * n); };
    one.rows.S = 1;
    one.rows.positions = pick(in.rows.positions, 7, 1);
    one.rows.seqLens = pick(in.rows.seqLens, 7, 1);
    one.rows.slots = pick(in.rows.slots, 7, 1);
    one.rows.indexSlots = pick(in.rows.indexSlots, 7, 1);
    one.rows.tables = pick(in.rows.tables, 7, W);
    if (mode == CacheMode::Vllm) one.rows.indexTables = pick(in.rows.indexTables, 7, W);
    one.rows.requestLast = {0};
    for (int r = 0; r < TP; ++r) one.caches[r] = ref.ranks[r].caches;
    const AttentionResult alone = attentionReference(cfg, one);
    for (int r = 0; r < TP; ++r) {
      const size_t w = ref.ranks[r].attn.size() / S;
      const std::vector<uint16_t> row7(ref.ranks[r].attn.begin() + 7 * w, ref.ranks[r].attn.end());
      CHECK(row7 == alone.ranks[r].attn);
    }
    // and without the earlier rows' keys (their slots back to the launch's inputs) it differs
    for (int r = 0; r < TP; ++r) one.caches[r] = in.caches[r];
    const AttentionResult blind = attentionReference(cfg, one);
    bool differs = false;
    for (int r = 0; r < TP; ++r) {
      const size_t w = ref.ranks[r].attn.size() / S;
      const std::vector<uint16_t> row7(ref.ranks[r].attn.begin() + 7 * w, ref.ranks[r].attn.end());
      differs |= row7 != blind.ranks[r].attn;
    }
    CHECK(differs);
  }
}

TEST_CASE("attention: a NaN cache entry reaches only the rows whose selection reads it", "[attention]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom}) {
    AttentionInputOptions o;
    o.mode = mode;
    o.context = 40 * 128;  // 41 blocks a row: each (row, KV head) picks its own 16
    o.shareSequence = true;
    const int S = 4, TP = 1;
    AttentionLaunch in = makeAttentionLaunch(cfg, S, TP, 9, o);
    const AttentionResult ref = attentionReference(cfg, in);
    const AttentionShape sh = AttentionShape::make(cfg, TP, 0, "t");
    const attention_test::NanSite site = attention_test::poisonSharedBlock(in, ref, 0, cfg.indexBlock);
    REQUIRE(site.block >= 0);
    const AttentionResult hit = attentionReference(cfg, in);
    CHECK(attention_test::checkNanReach(sh, S, 0, ref.ranks[0].selections, ref.ranks[0].attn, hit.ranks[0].attn,
                                        site) > 0);
  }
}

TEST_CASE("attention: the full dims, several thousand keys", "[attention][.slow]") {
  const ModelConfig cfg = ModelConfig::flash();
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom}) checkAgreement(cfg, 8, 4, mode, false, 3000, true);
  checkAgreement(cfg, 2, 8, CacheMode::Vllm, true, 3000, false);
}
