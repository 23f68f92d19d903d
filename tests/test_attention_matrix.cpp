// The attention launch's coverage matrix on the Sim, each cell bit for bit against the reference:
// S {1, 3, 8, 9, 16} x TP {1, 2, 4, 8} x both cache modes x both layer types, contexts across the
// block edges, the 16-block scoring threshold and past 512 blocks, rows sharing a sequence or a
// batch, padded rows (docs/attention.md, "Tests"). A quick subset runs by default.
#include <catch2/catch.hpp>

#include <algorithm>

#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "test_attention_util.h"

using namespace attention_test;

namespace {

/// A row's keys: the first row of a cell attends this many (its position + 1); rows sharing its
/// sequence take the next positions.
constexpr std::array kKeys = {1, 127, 128, 129, 2047, 2048, 2049};
constexpr int kPast512Blocks = 512 * 128 + 1;  // 513 blocks: the long path's requests
constexpr std::array kRows = {1, 3, 8, 9, 16};
constexpr std::array kTps = {1, 2, 4, 8};

Case cellOf(int S, int TP, CacheMode mode, bool full, int keys, bool share, int padded) {
  Case k;
  k.S = S;
  k.TP = TP;
  k.mode = mode;
  k.full = full;
  k.context = keys - 1;  // the keys cached before the launch: the first row's position
  k.share = share;
  k.padded = padded;
  return k;
}

std::string nameOf(const Case& k) {
  return fmt::format("{} {} S{} TP{} keys {} {}{}", cacheModeName(k.mode), k.full ? "full" : "sparse", k.S, k.TP,
                     k.context + 1, k.share ? "shared" : "batch", k.padded ? fmt::format(" padded {}", k.padded) : "");
}

/// The whole matrix: every (mode, layer, S, keys), the TP rotating with S and keys so that every
/// (mode, layer, S, TP) occurs; sharing alternates within each (mode, layer, S), a padded row at
/// every third context; and one cell past 512 blocks a (mode, layer).
std::vector<Case> matrix() {
  std::vector<Case> cells;
  for (int m = 0; m < 2; ++m)
    for (int f = 0; f < 2; ++f) {
      const CacheMode mode = m ? CacheMode::Atom : CacheMode::Vllm;
      for (size_t s = 0; s < kRows.size(); ++s)
        for (size_t c = 0; c < kKeys.size(); ++c) {
          const int S = kRows[s];
          cells.push_back(cellOf(S, kTps[(s + c) % kTps.size()], mode, f == 1, kKeys[c], S > 1 && (s + c + m + f) % 2 == 0,
                                 S > 1 && c % 3 == 2 ? 1 : 0));
        }
    }
  cells.push_back(cellOf(8, 4, CacheMode::Vllm, false, kPast512Blocks, true, 0));
  cells.push_back(cellOf(1, 2, CacheMode::Vllm, true, kPast512Blocks, false, 0));
  cells.push_back(cellOf(9, 1, CacheMode::Atom, false, kPast512Blocks, false, 1));
  cells.push_back(cellOf(3, 8, CacheMode::Atom, true, kPast512Blocks, true, 0));
  return cells;
}

}  // namespace

TEST_CASE("attention matrix: every S x TP x mode x layer occurs", "[attention_matrix]") {
  // the rotation above covers the cross product (a check of the generator, no launch)
  std::vector<int> seen(2 * 2 * kRows.size() * kTps.size(), 0);
  int keysSeen = 0, shared = 0, batch = 0, padded = 0;
  for (const Case& k : matrix()) {
    size_t s = 0, t = 0;
    while (kRows[s] != k.S) ++s;
    while (kTps[t] != k.TP) ++t;
    ++seen[((size_t(k.mode == CacheMode::Atom) * 2 + size_t(k.full)) * kRows.size() + s) * kTps.size() + t];
    keysSeen |= k.context + 1 == kPast512Blocks ? 1 : 0;
    if (k.S > 1) (k.share ? shared : batch) += 1;
    padded += k.padded;
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    INFO("cell " << i);
    CHECK(seen[i] > 0);
  }
  CHECK(keysSeen == 1);
  CHECK(shared > 0);
  CHECK(batch > 0);
  CHECK(padded > 0);
}

// What the launch's own quick cases leave out: S 9 and 16, TP 2, one key, the rows crossing the
// scoring threshold in one launch, a full layer sharing a sequence across a block edge, and a
// request past 512 blocks (about 30 s of CPU together).
TEST_CASE("attention matrix: a quick subset", "[attention_matrix]") {
  const Case cells[] = {
      cellOf(9, 2, CacheMode::Vllm, false, 1, false, 1),
      cellOf(9, 1, CacheMode::Atom, false, 2045, true, 0),  // rows at 2045 .. 2053 keys: 16, then 17 blocks
      cellOf(16, 2, CacheMode::Vllm, true, 128, false, 1),
      cellOf(8, 2, CacheMode::Atom, true, 124, true, 0),  // 124 .. 131 keys: across the first block edge
      cellOf(3, 2, CacheMode::Atom, false, 129, false, 0),
      cellOf(1, 1, CacheMode::Vllm, false, kPast512Blocks, false, 0),
  };
  for (const Case& k : cells)
    DYNAMIC_SECTION(nameOf(k)) { runCase(k); }
}

// The long path's shares (65 blocks each at 513) with a tie across them at the top-16 edge: the
// index keys of head 0's last selected full block copied into 3 unselected blocks of 3 other
// shares, so 4 blocks of 4 shares score alike and only the highest id is selected.
TEST_CASE("attention matrix: a tie across the long path's shares at the top-16 edge", "[attention_matrix]") {
  Case k = cellOf(1, 1, CacheMode::Vllm, false, kPast512Blocks, false, 0);
  std::vector<int> tied;
  k.edit = [&](const ModelConfig& cfg, AttentionLaunch& in) {
    const AttentionRows& rows = in.rows;
    const int block = cfg.indexBlock, nBlk = (rows.seqLens[0] + block - 1) / block;
    const int span = (nBlk + kAttnSplits - 1) / kAttnSplits;
    const Selection before = attentionReference(cfg, in).ranks[0].selections[0];
    const int a = before.blocks[cfg.indexTopk - 2];  // the last full block by rank (the tail is last)
    auto selected = [&](const Selection& s, int b) {
      return std::find(s.blocks.begin(), s.blocks.end(), b) != s.blocks.end();
    };
    tied = {a};
    for (int q = 1; q < kAttnSplits && tied.size() < 4; q += 2) {
      int b = ((a / span + q) % kAttnSplits) * span + a % span;
      while (b >= nBlk - 1 || selected(before, b)) b = (b + 1) % (nBlk - 1);
      tied.push_back(b);
    }
    const auto& tab = in.mode == CacheMode::Vllm ? rows.indexTables : rows.tables;
    AttentionCaches& c = in.caches[0];
    for (size_t j = 1; j < tied.size(); ++j)
      for (int i = 0; i < block; ++i)
        for (int d = 0; d < c.index.indexDim; ++d)
          c.indexKeys[c.index.byteOf(c.index.slotOf(tab[tied[j]], i), d)] =
              c.indexKeys[c.index.byteOf(c.index.slotOf(tab[a], i), d)];
    const Selection after = attentionReference(cfg, in).ranks[0].selections[0];
    REQUIRE(after.longPath);
    int in16 = 0, shares = 0;
    for (int b : tied) in16 += selected(after, b) ? 1 : 0;
    for (int p = 0; p < kAttnSplits; ++p)
      shares += std::any_of(tied.begin(), tied.end(), [&](int b) { return b / span == p; }) ? 1 : 0;
    CHECK(in16 == 1);  // the tie decides at the edge
    CHECK(selected(after, *std::max_element(tied.begin(), tied.end())));
    CHECK(shares == 4);
  };
  runCase(k);
}

TEST_CASE("attention matrix: the whole matrix", "[attention_matrix][.slow]") {
  for (const Case& k : matrix())
    DYNAMIC_SECTION(nameOf(k)) { runCase(k); }
}
