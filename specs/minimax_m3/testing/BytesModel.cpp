#include "specs/minimax_m3/testing/BytesModel.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/Error.h"
#include "specs/minimax_m3/testing/MoeInputs.h"

namespace monogen::specs::minimax_m3 {

int64_t MinimumBytes::total() const {
  int64_t t = 0;
  for (const BytesItem& i : items) t += i.bytes;
  return t;
}

int64_t MinimumBytes::totalOf(const std::vector<std::string>& stages) const {
  int64_t t = 0;
  for (const BytesItem& i : items)
    if (std::find(stages.begin(), stages.end(), i.stage) != stages.end()) t += i.bytes;
  return t;
}

std::string MinimumBytes::describe() const {
  std::string s;
  for (const BytesItem& i : items) s += fmt::format("{:<18} {:<7} {:>14}\n", i.tensor, i.stage, i.bytes);
  s += fmt::format("{:<18} {:<7} {:>14}\n", "total", "", total());
  return s;
}

MinimumBytes minimumBytes(const ModelConfig& cfg, int S, int TP, int distinctRouted, FfnInput input) {
  const char* where = "minimum bytes";
  if (S < 1 || S > cfg.maxRows) throw InputError(where, fmt::format("S = {}: expected 1..{}", S, cfg.maxRows));
  if (TP < 1 || cfg.intermediate % TP != 0)
    throw InputError(where, fmt::format("TP = {}: expected a divisor of I = {}", TP, cfg.intermediate));
  if (distinctRouted < 0 || distinctRouted > std::min(cfg.experts, S * cfg.topk))
    throw InputError(where, fmt::format("{} distinct routed experts: expected 0..min(experts {}, S x top-k {})",
                                        distinctRouted, cfg.experts, S * cfg.topk));
  const int64_t H = cfg.hidden, E = cfg.experts, IP = cfg.interPerRank(TP), rows = S;
  const int64_t experts = 1 + distinctRouted;  // the shared expert, always
  MinimumBytes m;
  m.rows = S;
  m.tp = TP;
  m.routedExperts = distinctRouted;
  const int64_t w13 = 2 * IP * (H / 2), s13 = 2 * IP * (H / 32), w2 = H * (IP / 2), s2 = H * (IP / 32);
  m.perExpert = w13 + s13 + w2 + s2;
  m.items = {
      {"part", "push", rows * H * 2},
      {"res_in", "reduce", rows * H * 2},
      {"peer part pairs", "reduce", (TP - 1) * rows * (H / 2) * 8},
      {"norm_w", "norm", H * 2},
      {"router_w", "router", E * H * 4},
      {"bias", "route", E * 4},
      {"slots", "table", rows * 8},
      {"w13", "up", experts * w13},
      {"s13", "up", experts * s13},
      {"w2", "down", experts * w2},
      {"s2", "down", experts * s2},
      {"peer final pairs", "final", (TP - 1) * rows * (H / 2) * 8},
  };
  if (input == FfnInput::Attn) {
    const int64_t A = cfg.attnWidth(TP);
    m.items[0] = {"attn", "push", rows * A * 2};
    m.items.insert(m.items.begin() + 1, {{"wo", "push", H * A}, {"wo_scale", "push", H * 4}});
  }
  return m;
}

MinimumBytes minimumBytes(const ModelConfig& cfg, int S, int TP, const runtime::HostTensor& picks, FfnInput input) {
  return minimumBytes(cfg, S, TP, static_cast<int>(distinctPicked(picks).size()), input);
}

}  // namespace monogen::specs::minimax_m3
