#include "specs/minimax_m3/reference/AttentionIndexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/AttentionLayout.h"
#include "specs/minimax_m3/reference/AttentionNumerics.h"

namespace monogen::specs::minimax_m3 {

int32_t indexSortKey(int b, float score, int nBlocks, int init, int local) {
  float sc = b < init ? 1e30f : score;
  sc = b >= nBlocks - local ? 1e29f : sc;
  int32_t bits = std::bit_cast<int32_t>(sc);
  if (bits == std::numeric_limits<int32_t>::min()) bits = 0;  // -0 -> +0
  const int32_t key = bits < 0 ? bits ^ 0x7fffffff : bits;
  return (bits & 0x7fffffff) > 0x7f800000 ? std::numeric_limits<int32_t>::min() : key;
}

std::vector<std::pair<RankedBlock, int>> topRanked(const std::vector<RankedBlock>& entries, int n) {
  std::vector<std::pair<RankedBlock, int>> out;
  for (const RankedBlock& e : entries) {
    int rank = 0;
    for (const RankedBlock& o : entries) rank += beats(o, e) ? 1 : 0;
    if (rank < n) out.push_back({e, rank});
  }
  return out;
}

namespace {

/// The placement of the chosen (entry, rank) pairs: the full blocks by rank, the tail block last.
Selection place(const std::vector<std::pair<RankedBlock, int>>& chosen, int nBlocks, int seqLen, int block,
                int topk, bool longPath) {
  const int nSel = std::min(nBlocks, topk);
  Selection s;
  s.longPath = longPath;
  s.blocks.assign(static_cast<size_t>(topk), -1);
  const int tail = nBlocks - 1;
  bool tailSel = false;
  RankedBlock tailEntry{0, tail};
  for (const auto& [e, r] : chosen)
    if (e.block == tail) tailSel = true, tailEntry = e;
  const int nFull = nSel - (tailSel ? 1 : 0);
  for (const auto& [e, r] : chosen) {
    const int slot = e.block == tail ? nFull : r - (tailSel && beats(tailEntry, e) ? 1 : 0);
    s.blocks[slot] = e.block;
  }
  s.nCtx = tailSel ? nFull * block + seqLen - tail * block : std::min(nSel * block, seqLen);
  return s;
}

}  // namespace

Selection selectBlocks(const std::vector<int32_t>& keys, int seqLen, int block, int topk, bool longPath) {
  const int nBlocks = static_cast<int>(keys.size());
  const int nSel = std::min(nBlocks, topk);
  std::vector<RankedBlock> all;
  for (int b = 0; b < nBlocks; ++b) all.push_back({keys[b], b});
  std::vector<std::pair<RankedBlock, int>> chosen;
  if (!longPath) {
    chosen = topRanked(all, nSel);
  } else {
    const int span = (nBlocks + kAttnSplits - 1) / kAttnSplits;
    std::vector<RankedBlock> cand;
    for (int p = 0; p < kAttnSplits; ++p) {
      const int lo = p * span, hi = std::min(lo + span, nBlocks);
      if (lo >= hi) continue;
      std::vector<RankedBlock> share(all.begin() + lo, all.begin() + hi);
      for (const auto& [e, r] : topRanked(share, topk)) cand.push_back(e);
    }
    chosen = topRanked(cand, nSel);
  }
  return place(chosen, nBlocks, seqLen, block, topk, longPath);
}

std::vector<RankedBlock> cpCandidates(const std::vector<int32_t>& keys, int topk, int tp, int parts) {
  if (tp < 1 || parts < 1 || topk < 1)
    throw InputError("cpCandidates", fmt::format("tp = {}, parts = {}, topk = {}: expected each >= 1", tp, parts, topk));
  const int nBlocks = static_cast<int>(keys.size());
  std::vector<RankedBlock> mail(static_cast<size_t>(tp) * parts * topk, kNoCandidate);
  for (int r = 0; r < tp; ++r) {
    std::vector<RankedBlock> slice;
    for (int b = r; b < nBlocks; b += tp) slice.push_back({keys[b], b});
    const int len = static_cast<int>(slice.size()), span = (len + parts - 1) / parts;
    for (int q = 0; q < parts; ++q) {
      const int lo = std::min(q * span, len), hi = std::min(lo + span, len);
      const std::vector<RankedBlock> run(slice.begin() + lo, slice.begin() + hi);
      for (const auto& [e, rank] : topRanked(run, topk))
        mail[(static_cast<size_t>(r) * parts + q) * topk + rank] = e;
    }
  }
  return mail;
}

Selection mergeCpCandidates(const std::vector<RankedBlock>& mail, int nBlocks, int seqLen, int block, int topk) {
  return place(topRanked(mail, std::min(nBlocks, topk)), nBlocks, seqLen, block, topk, true);
}

}  // namespace monogen::specs::minimax_m3
