#include "specs/minimax_m3/kernel/LaunchArgs.h"

namespace monogen::specs::minimax_m3 {

std::string rankName(const std::string& base, int rank) { return base + ".r" + std::to_string(rank); }

std::string launchTensorName(const std::string& name, int rank) {
  for (const char* own : {arg::kPart, arg::kAttn, arg::kWo, arg::kW13, arg::kS13, arg::kW2, arg::kS2})
    if (name == own) return rankName(name, rank);
  return name;
}

}  // namespace monogen::specs::minimax_m3
