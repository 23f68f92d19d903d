// The minimum global-memory bytes one rank's FFN launch must read, for (cfg, S, TP, the picked
// experts): the floor `monogen bench` holds the Sim device's byte counters against. What is
// counted, tensor by tensor, and what is not: docs/minimax-m3-kernel.md, "The bytes floor".
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
