#include "specs/minimax_m3/testing/AttentionBytesModel.h"

#include <set>
#include <utility>

#include "specs/minimax_m3/kernel/AttentionLayout.h"

namespace monogen::specs::minimax_m3 {

MinimumBytes attentionMinimumBytes(const ModelConfig& cfg, const AttentionLaunch& in, const AttentionResult& ref,
                                   int rank) {
  const AttentionShape sh = AttentionShape::make(cfg, in.TP, rank, "attention minimum bytes");
  const AttentionRows& r = in.rows;
  const KvCacheGeometry& g = in.caches.at(rank).kv;
  const bool sparse = !in.fullLayer, vllm = in.mode == CacheMode::Vllm;
  const int block = cfg.indexBlock, H = cfg.hidden;
  const auto& sels = ref.ranks.at(rank).selections;
  int live = 0;
  std::set<int64_t> positions, appended;  // the live rows' positions and slots (this launch's keys)
  for (int t = 0; t < in.S; ++t)
    if (r.live(t)) ++live, positions.insert(r.positions[t]), appended.insert(r.slots[t]);
  // The keys each (row, local KV head) attends, as (slot, head): the union over the rows is what
  // a rank reads once; the keys this launch appends are not counted (they need not come back).
  std::set<std::pair<int64_t, int>> kv;
  std::set<int64_t> indexSlots;
  int64_t tableEntries = 0, indexTableEntries = 0;
  for (int t = 0; t < in.S; ++t) {
    if (!r.live(t)) continue;
    const int64_t seq = r.seqLens[t];
    const int nBlk = static_cast<int>((seq + block - 1) / block);
    std::set<int> blocksRead;
    const auto slotOf = [&](int64_t p) {
      return g.slotOf(g.blockOfEntry(r.tables[static_cast<size_t>(t) * r.tableWidth + p / block], "minimum bytes"),
                      static_cast<int>(p % block));
    };
    for (int h = 0; h < sh.kvHeads; ++h) {
      const Selection* sel = sparse ? &sels.at(static_cast<size_t>(t) * sh.kvHeads + h) : nullptr;
      const int64_t n = sel ? sel->nCtx : seq;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t p = sel ? int64_t{sel->blocks[i / block]} * block + i % block : i;
        blocksRead.insert(static_cast<int>(p / block));
        const int64_t slot = slotOf(p);
        if (!appended.count(slot)) kv.insert({slot, h});
      }
    }
    if (sparse && nBlk > cfg.indexTopk)  // the scored blocks: all but the pinned ones, every key before seq
      for (int b = cfg.indexInit; b < nBlk - cfg.indexLocal; ++b) {
        if (vllm) ++indexTableEntries;
        else blocksRead.insert(b);  // atom scores through the main table
        const int64_t base = indexBlockOf(r, in.mode, t, b) * block;
        for (int j = 0; j < block && int64_t{b} * block + j < seq; ++j) indexSlots.insert(base + j);
      }
    tableEntries += static_cast<int64_t>(blocksRead.size());
  }
  for (int t = 0; t < in.S; ++t)
    if (r.live(t)) indexSlots.erase(r.indexSlots[t]);

  MinimumBytes m;
  m.rows = in.S;
  m.tp = in.TP;
  const auto add = [&](const char* tensor, const char* stage, int64_t bytes) {
    if (bytes > 0) m.items.push_back({tensor, stage, bytes});
  };
  add("x", "attn_norm", int64_t{live} * H * 2);
  add("res", "attn_norm", int64_t{live} * H * 2);
  add("g_in", "attn_norm", int64_t{H} * 2);
  add("w_qkv", "attn_gemv", int64_t{sh.rowsOf(in.fullLayer)} * H);
  add("s_qkv", "attn_gemv", int64_t{sh.rowsOf(in.fullLayer)} * 4);
  add("g_q + g_k", "attn_heads", int64_t{sh.headDim} * 2 * 2);
  if (sparse) add("g_iq + g_ik", "attn_heads", int64_t{sh.indexDim} * 2 * 2);
  add("cos_sin", "attn_heads", static_cast<int64_t>(positions.size()) * cfg.rotaryDim * 2);
  add("positions + slots", "attn_heads", int64_t{live} * 8 * (sparse && vllm ? 3 : 2));
  add("seq_lens", "attn_split", int64_t{live} * 4);
  add("block_tables", "attn_split", tableEntries * 4);
  add("index_tables", "attn_index", vllm ? indexTableEntries * 4 : 0);
  add("index_cache", "attn_index", static_cast<int64_t>(indexSlots.size()) * sh.indexDim);
  add("k_cache", "attn_split", static_cast<int64_t>(kv.size()) * sh.headDim);
  add("v_cache", "attn_split", static_cast<int64_t>(kv.size()) * sh.headDim);
  add("k_scale + v_scale", "attn_split", vllm ? 8 : static_cast<int64_t>(kv.size()) * 8);
  return m;
}

}  // namespace monogen::specs::minimax_m3
