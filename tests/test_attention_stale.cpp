// Garbage selections on the Sim device: a selection attn_split takes (its IRDY pair carrying the
// tag, or a wait past its bound) whose length or block ids are out of range must not reach an
// address. The Sim bounds-checks every access (a SimError), so a launch that ends touched nothing
// out of bounds; the error word names the site.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test_attention_util.h"

using namespace attention_test;

namespace {

/// Selection `i`'s garbage (kSelWords words): a length past every bound, a block past any table,
/// a negative block, a zero length, a length past the blocks it names.
std::vector<int32_t> garbageSelection(int64_t i, int topk, int block) {
  std::vector<int32_t> w(kSelWords, 0);
  for (int j = 0; j < topk; ++j) w[j] = j;
  switch (i % 5) {
    case 0: w[topk] = std::numeric_limits<int32_t>::max(); break;
    case 1: w[topk] = 3 * block, w[1] = 1 << 20; break;
    case 2: w[topk] = block, w[0] = -5; break;
    case 3: w[topk] = 0; break;
    default: w[topk] = topk * block + 1; break;
  }
  return w;
}

/// Every selection of every rank: its garbage words, its IRDY pair {1, tag(i)}.
ScratchPlant plantSelections(const AttentionLaunchLayout& L, const std::function<int32_t(int64_t)>& tag) {
  return [&L, tag](runtime::Device& dev, int rank, uint64_t scratch) {
    const int64_t sels = int64_t{L.rows} * L.shape.kvHeads;
    for (int64_t i = 0; i < sels; ++i) {
      const std::vector<int32_t> w = garbageSelection(i, L.shape.topk, L.shape.block);
      dev.upload(rank, scratch + L.selOffset + 4 * kSelWords * i, w.data(), 4 * kSelWords);
      const int32_t pair[2] = {1, tag(i)};
      dev.upload(rank, scratch + L.irdyOffset + 8 * i, pair, 8);
    }
  };
}

struct Planted {
  AttentionVariant v;
  ir::Plan plan;
  AttentionLaunch in;
};

Planted plantedCell(int S, int TP, CacheMode mode, int context) {
  const ModelConfig cfg = ModelConfig::reduced();
  AttentionKnobs knobs;
  knobs.mode = mode;
  Planted p{AttentionVariant::make(cfg, makeAttentionKey(cfg, S, TP, knobs)), {}, {}};
  p.plan = buildAttentionPlan(p.v);
  AttentionInputOptions o;
  o.mode = mode;
  o.context = context;
  p.in = makeAttentionLaunch(cfg, S, TP, 11 + S, o);
  return p;
}

/// Runs, turning a SimError (an access out of bounds) into a failed check with its text.
AttentionSimRun launchChecked(const Planted& p, const runtime::SimOptions& o, int32_t tag, int64_t waitTicks,
                              const ScratchPlant& plant) {
  try {
    return runAttentionOnSim(p.plan, p.v, p.in, o, tag, waitTicks, plant);
  } catch (const std::exception& e) {
    FAIL("the launch touched memory out of bounds: " << e.what());
  }
  return {};
}

}  // namespace

TEST_CASE("attention stale: a selection that comes with its tag and garbage attends nothing and names its site",
          "[attention_stale]") {
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom})
    for (uint64_t sched : {1, 2}) {
      const int S = 3, TP = 2;
      INFO(fmt::format("{} S={} TP={} scheduler seed {}", cacheModeName(mode), S, TP, sched));
      const Planted p = plantedCell(S, TP, mode, 2049);  // scored: the index is slow to overwrite SEL
      const int32_t tag = 0x2a5eed01;
      runtime::SimOptions o;
      o.seed = sched;
      const AttentionSimRun run =
          launchChecked(p, o, tag, 100'000'000, plantSelections(p.v.layout, [&](int64_t) { return tag; }));
      REQUIRE(run.errorWords.size() == size_t(TP));
      for (int r = 0; r < TP; ++r) {
        const int32_t w = run.errorWords[r];
        INFO("rank " << r << ": " << attentionErrorMeaning(w));
        CHECK((w & 0xff) == kSiteAttnSelRange);
        CHECK(((w >> 16) & 0xffff) < S * p.v.layout.shape.kvHeads);
        CHECK(attentionErrorMeaning(w).find("out of range") != std::string::npos);
      }
    }
}

TEST_CASE("attention stale: garbage selections under a near tag and a tiny bound reach no address",
          "[attention_stale]") {
  const int S = 2, TP = 2;
  const Planted p = plantedCell(S, TP, CacheMode::Vllm, 2049);
  const int32_t tag = 0x2a5eed01;
  const int32_t near[] = {tag - 2, tag + 2, tag ^ (1 << 29)};
  const AttentionSimRun run =
      launchChecked(p, {}, tag, 1, plantSelections(p.v.layout, [&](int64_t i) { return near[i % 3]; }));
  REQUIRE(run.errorWords.size() == size_t(TP));
  for (int r = 0; r < TP; ++r) {
    const int32_t w = run.errorWords[r];
    INFO("rank " << r << ": " << attentionErrorMeaning(w));
    CHECK((w & 0xff) >= kSiteAttnGemv);
    CHECK((w & 0xff) <= kSiteAttnSelRange);
    CHECK(attentionErrorMeaning(w).find("unknown") == std::string::npos);
  }
}
