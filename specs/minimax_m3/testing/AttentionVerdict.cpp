#include "specs/minimax_m3/testing/AttentionVerdict.h"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "specs/minimax_m3/reference/AttentionPre.h"

namespace monogen::specs::minimax_m3 {

namespace {

/// "" when a and b hold the same bits, else what differs first: "name[i]".
template <class T>
std::string diff(const char* name, int rank, const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return fmt::format("{}.r{}: {} elements, expected {}", name, rank, a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return fmt::format("{}.r{}[{}]", name, rank, i);
  return "";
}

/// The first of rank R's outputs that is not the reference's, or "".
std::string rankMismatch(const AttentionLaunch& in, const AttentionResult& ref, const AttentionSimRank& got, int R,
                         int hidden, float eps) {
  const AttentionRankResult& want = ref.ranks.at(R);
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
    const NormedRow nr = normRow(&in.x[size_t(t) * hidden], &in.res[size_t(t) * hidden], in.weights.gIn.data(),
                                 hidden, eps);
    if (std::memcmp(&got.x8[size_t(t) * hidden], nr.x8.data(), size_t(hidden)) != 0)
      return fmt::format("x8.r{} row {}", R, t);
  }
  return "";
}

/// The first output of the run that is not the reference's, or "".
std::string firstMismatch(const AttentionLaunch& in, const AttentionResult& ref,
                          const AttentionSimRun& run, int hidden, float eps) {
  for (size_t r = 0; r < run.ranks.size(); ++r)
    if (std::string d = rankMismatch(in, ref, run.ranks[r], static_cast<int>(r), hidden, eps); !d.empty()) return d;
  return "";
}

}  // namespace

std::string attentionVerdict(const AttentionLaunch& in, const AttentionResult& ref,
                             const AttentionSimRun& run, const ModelConfig& cfg) {
  for (size_t r = 0; r < run.errorWords.size(); ++r)
    if (run.errorWords[r] != 0)
      return fmt::format("INVALID: rank {}: error word {:#x}: {}", r, run.errorWords[r],
                         attentionErrorMeaning(run.errorWords[r]));
  const std::string m = firstMismatch(in, ref, run, cfg.hidden, static_cast<float>(cfg.rmsEps));
  return m.empty() ? "bit-exact" : "MISMATCH: " + m;
}

std::string attentionRankMismatch(const AttentionLaunch& in, const AttentionResult& ref, const AttentionSimRank& got,
                                  int r, const ModelConfig& cfg) {
  return rankMismatch(in, ref, got, r, cfg.hidden, static_cast<float>(cfg.rmsEps));
}

}  // namespace monogen::specs::minimax_m3
