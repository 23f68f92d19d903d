// The minimum global-memory bytes one rank's FFN launch must read, for (cfg, S, TP, the picked
// experts): the floor the bench (monogen bench) holds the Sim device's byte counters against.
//
// Counted once each, per rank:
//   up    w13 + s13 rows of this rank (2 I/TP rows: gate and up) of the shared expert and of
//         each distinct picked routed expert: 2 I/TP x hidden/2 + 2 I/TP x hidden/32 bytes each
//   down  w2 + s2 of this rank (hidden x I/TP/2 + hidden x I/TP/32 bytes), the same experts
//   router router_w (E x hidden x 4): every rank routes every row itself
//   route  bias (E x 4)
//   norm   norm_w (hidden x 2)
//   table  slots (S x 8)
//   push   part: this rank's o_proj partial (S x hidden x 2); with o_proj in the launch
//          (input=attn) instead attn, the attention rows (S x heads head_dim / TP x 2), wo, the
//          rank's rowwise-FP8 o_proj weight (hidden x heads head_dim / TP, a byte each), and
//          wo_scale (hidden x 4), each once (the push CTAs' redundant reads of attn are overhead)
//   reduce res_in (S x hidden x 2), and the TP - 1 peers' partials as the (value, tag) pairs
//          they push (8 bytes a bf16 pair: S x hidden x 4 a peer)
//   final  the TP - 1 peers' MoE partials, as pairs too (S x hidden x 4 a peer)
// Not counted: what the launch writes and reads back itself (SRES, XN, MID, CONTRIB, flags
// beyond the peer pairs, its own pushes): an ideal launch keeps those on chip, so they are
// the overhead the bench's ratio shows. The pairs' tags are counted because the design's
// flags-in-data scheme needs them (half of each pair; the payload alone is half the bytes).
// All S rows' activations count (padded rows included); only valid rows' picks count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

struct BytesItem {
  std::string tensor;  // "w13", "s13", "w2", "s2", "router_w", "bias", "norm_w", "slots",
                       // "part", "res_in", "peer part pairs", "peer final pairs"
  std::string stage;   // the stage that reads it: push, reduce, norm, router, route, table, up,
                       // down, final
  int64_t bytes = 0;
};

struct MinimumBytes {
  int rows = 0, tp = 0;
  int routedExperts = 0;       // distinct picked routed experts
  int64_t perExpert = 0;       // w13 + s13 + w2 + s2 bytes of one expert on one rank
  std::vector<BytesItem> items;
  int64_t total() const;
  /// The bytes of the items whose stage is in `stages` (e.g. the stages a kernel has today).
  int64_t totalOf(const std::vector<std::string>& stages) const;
  /// "tensor bytes" lines, one an item.
  std::string describe() const;
};

/// The minimum for `distinctRouted` distinct picked routed experts (the shared expert is always
/// read). Throws InputError on S, TP or an expert count out of range.
MinimumBytes minimumBytes(const ModelConfig& cfg, int S, int TP, int distinctRouted,
                          FfnInput input = FfnInput::Attn);
/// The same, counting the distinct experts of picks (I32 [S, topk], -1 entries ignored).
MinimumBytes minimumBytes(const ModelConfig& cfg, int S, int TP, const runtime::HostTensor& picks,
                          FfnInput input = FfnInput::Attn);

}  // namespace monogen::specs::minimax_m3
