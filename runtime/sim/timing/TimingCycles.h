// The timing parameters as the model uses them: every time in engine cycles, every bandwidth in
// bytes a cycle (hbmBandwidth scaled by eta and split over the XCDs is HbmPerXcd()).
#pragma once
#include <string>

#include "runtime/sim/timing/TimingParams.h"

namespace monogen::runtime::timing {

/// gfx950's chip shape the model places CTAs on: XCDs, CUs an XCD, SIMDs a CU.
constexpr int kXcds = 8;
constexpr int kCusPerXcd = 32;
constexpr int kSimdsPerCu = 4;
constexpr int kLineBytes = 128;  // an L2 line

struct TimingCycles {
#define TIMING_PARAM(id, value, unit, kind, lo, hi, source) double id = 0;
#include "runtime/sim/timing/Gfx950Timing.def"
#undef TIMING_PARAM

  explicit TimingCycles(const TimingParams& p) {
    for (const TimingParamInfo& row : p.rows()) {
      const double c = p.cycles(row);
#define TIMING_PARAM(id_, value, unit, kind, lo, hi, source) \
  if (std::string(row.id) == #id_) id_ = c;
#include "runtime/sim/timing/Gfx950Timing.def"
#undef TIMING_PARAM
    }
  }
  /// One XCD's share of the streamed HBM bandwidth, bytes a cycle.
  double hbmPerXcd() const { return eta * hbmBandwidth / kXcds; }
  /// Cycles -> realtime ticks (s_memrealtime's clock).
  double ticksPerCycle() const { return realtimeHz / clock; }
};

}  // namespace monogen::runtime::timing
