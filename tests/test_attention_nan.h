// Shared by the attention tests: one NaN V byte in a block some rows' selections hold and others
// do not, and the check that it reaches exactly the (row, query head)s whose selection reads it.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "ir/Numerics.h"
#include "specs/minimax_m3/kernel/AttentionLayout.h"
#include "specs/minimax_m3/reference/AttentionReference.h"

namespace attention_test {

/// Where the NaN went: a KV head of a rank and a block of row 0's sequence (block -1: none).
struct NanSite {
  int rank = 0, head = 0, block = -1;
  static constexpr int kKey = 5, kChannel = 3;  // the key of the block, the V channel
};

/// Finds, on `rank`, a block some live rows' selections (`clean`, the reference's) hold at a KV
/// head and others do not, and sets V byte (key kKey of it, kChannel) of that head to NaN in `in`.
inline NanSite poisonSharedBlock(monogen::specs::minimax_m3::AttentionLaunch& in,
                                 const monogen::specs::minimax_m3::AttentionResult& clean, int rank, int block) {
  const auto& sels = clean.ranks[rank].selections;
  const int S = in.S, kvHeads = static_cast<int>(sels.size()) / S;
  NanSite site;
  site.rank = rank;
  const int nBlk = in.rows.seqLens[0] / block;
  for (int b = 0; b < nBlk && site.block < 0; ++b)
    for (int h = 0; h < kvHeads && site.block < 0; ++h) {
      int holders = 0;
      for (int t = 0; t < S; ++t)
        for (int x : sels[size_t(t) * kvHeads + h].blocks) holders += x == b;
      if (holders > 0 && holders < S) site.block = b, site.head = h;
    }
  if (site.block < 0) return site;
  monogen::specs::minimax_m3::AttentionCaches& c = in.caches[rank];
  const auto pt = c.kv.pageOfKey(in.rows.tables[site.block], int64_t{site.block} * block + NanSite::kKey, site.head);
  c.vView()[c.kv.vByte(pt.page, pt.token, NanSite::kChannel)] = 0x7f;
  return site;
}

/// Checks rank `rank`'s attention rows `hit` against `clean`: a query head of a (row, KV head)
/// whose clean selection holds the site's block is NaN at kChannel; every other head is unchanged.
/// Returns the (row, KV head)s that read it.
inline int checkNanReach(const monogen::specs::minimax_m3::AttentionShape& sh, int S, int rank,
                         const std::vector<monogen::specs::minimax_m3::Selection>& sels,
                         const std::vector<uint16_t>& clean, const std::vector<uint16_t>& hit, const NanSite& site) {
  int reading = 0, changed = 0;
  for (int t = 0; t < S; ++t)
    for (int h = 0; h < sh.kvHeads; ++h) {
      bool reads = false;
      if (rank == site.rank && h == site.head)
        for (int x : sels[size_t(t) * sh.kvHeads + h].blocks) reads |= x == site.block;
      for (int q = h * sh.qGroup; q < (h + 1) * sh.qGroup; ++q) {
        const size_t at = static_cast<size_t>(t) * sh.attnWidth() + static_cast<size_t>(q) * sh.headDim;
        bool same = true;
        for (int d = 0; d < sh.headDim; ++d) same &= hit[at + d] == clean[at + d];
        const bool nan = std::isnan(monogen::ir::num::bf16ToF32(hit[at + NanSite::kChannel]));
        INFO("rank " << rank << " row " << t << " head " << q << " reads " << reads);
        CHECK(same == !reads);
        CHECK(nan == reads);
        changed += !same;
      }
      reading += reads;
    }
  CHECK(changed == reading * sh.qGroup);
  return reading;
}

}  // namespace attention_test
