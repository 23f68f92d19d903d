// The bench tables' bytes columns: KiB with one decimal, and a run's heaviest stages by bytes read.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/sim/SimDevice.h"

namespace monogen::tools {

inline std::string kib(int64_t bytes) { return fmt::format("{:.1f}", static_cast<double>(bytes) / 1024.0); }

/// The stages' global bytes loaded as (bytes, stage), heaviest first.
inline std::vector<std::pair<int64_t, std::string>> stagesByBytes(const runtime::SimStats& stats) {
  std::vector<std::pair<int64_t, std::string>> byStage;
  for (const auto& [name, b] : stats.bytesLoadedByStage) byStage.push_back({b, name});
  std::sort(byStage.rbegin(), byStage.rend());
  return byStage;
}

/// "stage P%, ..." for the `n` stages that loaded the most global bytes, heaviest first.
inline std::string topStagesByBytes(const runtime::SimStats& stats, size_t n = 3) {
  const auto byStage = stagesByBytes(stats);
  std::string top;
  for (size_t k = 0; k < byStage.size() && k < n; ++k)
    top += fmt::format("{}{} {:.0f}%", k ? ", " : "", byStage[k].second,
                       100.0 * static_cast<double>(byStage[k].first) /
                           static_cast<double>(std::max<int64_t>(1, stats.globalBytesLoaded)));
  return top;
}

}  // namespace monogen::tools
