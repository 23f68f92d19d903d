#include "tools/SimAttention.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "ir/Error.h"
#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/AttentionSpec.h"
#include "specs/minimax_m3/reference/AttentionPre.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSave.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
#include "specs/minimax_m3/testing/SaveLaunch.h"
#include "tools/Variant.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

namespace {

/// "" when a and b hold the same bits, else what differs first: "name[i]".
template <class T>
std::string diff(const char* name, int rank, const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return fmt::format("{}.r{}: {} elements, expected {}", name, rank, a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return fmt::format("{}.r{}[{}]", name, rank, i);
  return "";
}

/// The first output of the run that is not the reference's, or "".
std::string firstMismatch(const mm::AttentionLaunch& in, const mm::AttentionResult& ref,
                          const mm::AttentionSimRun& run, int hidden, float eps) {
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    const int R = static_cast<int>(r);
    const mm::AttentionSimRank& got = run.ranks[r];
    const mm::AttentionRankResult& want = ref.ranks[r];
    for (const std::string& d :
         {diff("res_out", R, got.h, ref.h), diff("rstd", R, got.rstd, ref.rstd), diff("x_scale", R, got.xScale, ref.xScale),
          diff("qkv", R, got.qkv, want.qkv), diff("q", R, got.q, want.q),
          diff("iq", R, got.iq, in.fullLayer ? got.iq : want.iq), diff("k_cache", R, got.caches.k, want.caches.k),
          diff("v_cache", R, got.caches.v, want.caches.v), diff("k_scale", R, got.caches.kScale, want.caches.kScale),
          diff("v_scale", R, got.caches.vScale, want.caches.vScale),
          diff("index_cache", R, got.caches.indexKeys, want.caches.indexKeys)})
      if (!d.empty()) return d;
    if (const std::string d = diff("attn", R, got.attn, want.attn); !d.empty()) return d;
    for (size_t i = 0; i < want.selections.size(); ++i)
      if (!want.selections[i].blocks.empty() &&
          (got.selections[i].blocks != want.selections[i].blocks || got.selections[i].nCtx != want.selections[i].nCtx))
        return fmt::format("selection.r{}[{}]", R, i);
    for (size_t i = 0; i < want.splits.size(); ++i)
      if (!want.splits[i].o.empty())
        for (const std::string& d : {diff("split_o", R, got.splits[i].o, want.splits[i].o),
                                     diff("split_m", R, got.splits[i].m, want.splits[i].m),
                                     diff("split_l", R, got.splits[i].l, want.splits[i].l)})
          if (!d.empty()) return fmt::format("{} of split {}", d, i);
    for (int t = 0; t < in.S; ++t) {
      if (!in.rows.live(t)) continue;
      const mm::NormedRow nr = mm::normRow(&in.x[size_t(t) * hidden], &in.res[size_t(t) * hidden],
                                           in.weights.gIn.data(), hidden, eps);
      if (std::memcmp(&got.x8[size_t(t) * hidden], nr.x8.data(), size_t(hidden)) != 0)
        return fmt::format("x8.r{} row {}", R, t);
    }
  }
  return "";
}

}  // namespace

std::string attentionVerdict(const mm::AttentionLaunch& in, const mm::AttentionResult& ref,
                             const mm::AttentionSimRun& run, const mm::ModelConfig& cfg) {
  for (size_t r = 0; r < run.errorWords.size(); ++r)
    if (run.errorWords[r] != 0)
      return fmt::format("INVALID: rank {}: error word {:#x}: {}", r, run.errorWords[r],
                         mm::attentionErrorMeaning(run.errorWords[r]));
  const std::string m = firstMismatch(in, ref, run, cfg.hidden, static_cast<float>(cfg.rmsEps));
  return m.empty() ? "bit-exact" : "MISMATCH: " + m;
}

int simAttention(const mm::ModelConfig& cfg, const SimAttentionOptions& o) {
  const mm::AttentionKnobs knobs = attentionKnobsOf(o.cache, o.layer);
  const mm::AttentionVariant v = mm::AttentionVariant::make(cfg, mm::makeAttentionKey(cfg, o.rows, o.tp, knobs));
  const ir::Plan plan = mm::buildAttentionPlan(v);
  ir::verify(plan);
  mm::AttentionInputOptions io;
  io.mode = knobs.mode;
  io.fullLayer = knobs.fullLayer;
  io.context = o.context;
  io.shareSequence = o.share;
  io.paddedRows = o.paddedRows;
  if (!o.save.empty()) mm::checkSaveDir(o.save, "--save");  // before the launch, not after it
  fmt::print("{} on the Sim device: {} ranks x {} CTAs x {} threads\n", plan.key.variantName(), o.tp, cfg.blocks,
             cfg.threads);
  const mm::AttentionLaunch in = mm::makeAttentionLaunch(cfg, o.rows, o.tp, o.seed, io);
  const mm::AttentionResult ref = mm::attentionReference(cfg, in);
  fmt::print("inputs: seed {}, {}\n", o.seed, io.describe());
  std::fflush(stdout);
  int bad = 0;
  std::optional<mm::AttentionSimRun> saved;  // the first failing run, else the last
  std::string savedVerdict;
  uint64_t savedSeed = 0;
  for (int i = 0; i < o.seeds; ++i) {
    runtime::SimOptions so;
    so.seed = o.seed + static_cast<uint64_t>(i);
    so.races = o.races;
    const auto t0 = std::chrono::steady_clock::now();
    const mm::AttentionSimRun run = mm::runAttentionOnSim(plan, v, in, so);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string verdict = attentionVerdict(in, ref, run, cfg);
    if (run.stats.findings() > 0)
      verdict = fmt::format("{}: {} racing op pairs, {} ops reading uninitialized memory (outputs: {})",
                            run.stats.raceCount > 0 ? "RACE" : "UNINIT", run.stats.raceCount, run.stats.uninitCount,
                            verdict);
    fmt::print("  seed {:<4} {:>10} ops {:>8} ticks {:6.2f} s  {}\n", so.seed, run.stats.steps, run.stats.ticks, sec,
               verdict);
    for (const std::string& r : run.stats.races) fmt::print("    {}\n", r);
    for (const std::string& r : run.stats.uninit) fmt::print("    {}\n", r);
    if (verdict != "bit-exact") ++bad;
    if (!saved || savedVerdict == "bit-exact") {
      saved = run;
      savedVerdict = verdict;
      savedSeed = so.seed;
    }
  }
  const std::string overall = bad ? fmt::format("MISMATCH or INVALID under {} of {} seeds", bad, o.seeds)
                                  : fmt::format("bit-exact under {} seed{}", o.seeds, o.seeds > 1 ? "s" : "");
  if (!o.save.empty()) {
    mm::saveAttentionLaunch(o.save, cfg, in, *saved, ref,
                            {{"seed", std::to_string(o.seed)},
                             {"inputs", io.describe()},
                             {"variant", plan.key.variantName()},
                             {"sched_seed", std::to_string(savedSeed)},
                             {"verdict", savedVerdict},
                             {"seeds_verdict", overall}});
    fmt::print("saved the launch (inputs, the caches' touched blocks, scheduler seed {}'s outputs: {}; reference) to "
               "{}\n",
               savedSeed, savedVerdict.substr(0, savedVerdict.find(':')), o.save);
  }
  fmt::print("verdict: {}\n", overall);
  return bad ? 1 : 0;
}

}  // namespace monogen::tools
