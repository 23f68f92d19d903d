#include "specs/minimax_m3/kernel/AttentionLayout.h"

#include <fmt/format.h>

#include "ir/Error.h"

namespace monogen::specs::minimax_m3 {

const char* cacheModeName(CacheMode m) { return m == CacheMode::Atom ? "atom" : "vllm"; }

CacheMode cacheModeOf(const std::string& name, const std::string& where) {
  if (name == "vllm") return CacheMode::Vllm;
  if (name == "atom") return CacheMode::Atom;
  throw InputError(where, fmt::format("cache mode \"{}\": expected \"vllm\" (ABI 1: scalar K/V scales, its own "
                                      "index addressing; the default) or \"atom\" (per-token K/V scales)",
                                      name));
}

AttentionShape AttentionShape::make(const ModelConfig& cfg, int tp, int rank, const std::string& where,
                                    bool indexCp) {
  cfg.validateAttention(where);
  if (tp != 1 && tp != 2 && tp != 4 && tp != 8)
    throw InputError(where, fmt::format("TP = {}: expected 1, 2, 4 or 8", tp));
  if (rank < 0 || rank >= tp) throw InputError(where, fmt::format("rank {}: expected 0..{}", rank, tp - 1));
  if (cfg.heads % tp != 0)
    throw InputError(where, fmt::format("num_attention_heads = {} does not divide by TP = {}", cfg.heads, tp));
  if (cfg.kvHeads % tp != 0 && tp % cfg.kvHeads != 0)
    throw InputError(where, fmt::format("num_key_value_heads = {} and TP = {}: expected one to divide the other "
                                        "(KV heads split over the ranks, or each on TP / kv_heads ranks)",
                                        cfg.kvHeads, tp));
  AttentionShape s;
  s.tp = tp;
  s.rank = rank;
  s.hidden = cfg.hidden;
  s.headDim = cfg.headDim;
  s.indexDim = cfg.indexHeadDim;
  s.rotaryDim = cfg.rotaryDim;
  s.block = cfg.indexBlock;
  s.topk = cfg.indexTopk;
  s.qHeads = cfg.heads / tp;
  s.firstQHead = rank * s.qHeads;
  if (cfg.kvHeads >= tp) {
    s.kvHeads = cfg.kvHeads / tp;
    s.firstKvHead = rank * s.kvHeads;
  } else {  // each KV head on tp / kvHeads ranks
    s.kvHeads = 1;
    s.firstKvHead = rank / (tp / cfg.kvHeads);
  }
  s.indexHeads = s.kvHeads;
  s.qGroup = s.qHeads / s.kvHeads;
  s.qOff = 0;
  s.kOff = s.qHeads * s.headDim;
  s.vOff = s.kOff + s.kvHeads * s.headDim;
  s.iqOff = s.vOff + s.kvHeads * s.headDim;
  s.ikOff = s.iqOff + s.indexHeads * s.indexDim;
  s.cpOff = s.ikOff + s.indexDim;
  s.cpHeads = indexCp ? cfg.indexHeads - s.indexHeads : 0;
  s.rows = s.cpOff + s.cpHeads * s.indexDim;
  if (s.rows % 16 != 0)
    throw InputError(where, fmt::format("w_qkv has {} rows a rank: expected a multiple of 16 (the (16,16) shuffle's "
                                        "row tiles)",
                                        s.rows));
  return s;
}

QkvRow qkvRowOf(const AttentionShape& s, int r) {
  if (r < 0 || r >= s.rows)
    throw InputError("w_qkv", fmt::format("local row {}: expected 0..{}", r, s.rows - 1));
  if (r < s.kOff) return {QkvRow::Q, s.firstQHead + r / s.headDim, r % s.headDim};
  if (r < s.vOff) return {QkvRow::K, s.firstKvHead + (r - s.kOff) / s.headDim, (r - s.kOff) % s.headDim};
  if (r < s.iqOff) return {QkvRow::V, s.firstKvHead + (r - s.vOff) / s.headDim, (r - s.vOff) % s.headDim};
  if (r < s.ikOff)
    return {QkvRow::IndexQ, s.firstKvHead + (r - s.iqOff) / s.indexDim, (r - s.iqOff) % s.indexDim};
  if (r < s.cpOff) return {QkvRow::IndexK, 0, r - s.ikOff};
  return {QkvRow::IndexQ, s.cpHeadOf((r - s.cpOff) / s.indexDim), (r - s.cpOff) % s.indexDim};
}

int64_t KvCacheGeometry::pages() const { return blocks * kvHeads * pagesPerBlock(); }

int64_t KvCacheGeometry::kBytes() const {
  return (mode == CacheMode::Vllm ? 2 : 1) * pages() * pageBytes();
}

int64_t KvCacheGeometry::tableEntry(int64_t m) const { return mode == CacheMode::Vllm ? 2 * kvHeads * m : m; }

int64_t KvCacheGeometry::blockOfEntry(int64_t e, const std::string& where) const {
  const int64_t step = mode == CacheMode::Vllm ? 2 * kvHeads : 1;
  if (e < 0 || e % step != 0 || e / step >= blocks)
    throw InputError(where, fmt::format("block-table entry {}: expected {} (the {} physical blocks{})", e,
                                        step == 1 ? fmt::format("0..{}", blocks - 1)
                                                  : fmt::format("a multiple of {} in 0..{}", step, step * (blocks - 1)),
                                        blocks, step == 1 ? "" : fmt::format(", {} x the block id", step)));
  return e / step;
}

int64_t KvCacheGeometry::slotOf(int64_t m, int i) const {
  if (mode == CacheMode::Atom) return m * block + i;
  return int64_t{kPage16} * (2 * kvHeads * pagesPerBlock() * m + i / kPage16) + i % kPage16;
}

KvCacheGeometry::PageToken KvCacheGeometry::pageOfSlot(int64_t slot, int h) const {
  if (mode == CacheMode::Atom) {
    const int64_t m = slot / block, i = slot % block;
    return {(m * kvHeads + h) * pagesPerBlock() + i / kPage16, static_cast<int>(i % kPage16)};
  }
  return {slot / kPage16 + int64_t{h} * pagesPerBlock(), static_cast<int>(slot % kPage16)};
}

KvCacheGeometry::PageToken KvCacheGeometry::pageOfKey(int64_t entry, int64_t key, int h) const {
  const int64_t i = key % block;
  if (mode == CacheMode::Atom) return {(entry * kvHeads + h) * pagesPerBlock() + i / kPage16, static_cast<int>(i % kPage16)};
  return {(entry + h) * pagesPerBlock() + i / kPage16, static_cast<int>(i % kPage16)};
}

int64_t KvCacheGeometry::vViewOffset() const {
  return mode == CacheMode::Vllm ? int64_t{kvHeads} * pagesPerBlock() * pageBytes() : 0;
}

}  // namespace monogen::specs::minimax_m3
