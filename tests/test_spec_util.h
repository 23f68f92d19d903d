// Shared by the spec tests that run launches on the Sim device.
#pragma once
#include <cstdint>

#include "runtime/SimDevice.h"

/// Scheduler seed s; the quantum (ops a wave runs before the scheduler picks again) cycles
/// through fine and coarse interleavings with the seed.
inline monogen::runtime::SimOptions schedSeed(uint64_t s) {
  static constexpr int kQuantum[] = {32, 1, 7, 32, 2, 16, 3, 64};
  monogen::runtime::SimOptions o;
  o.seed = s;
  o.maxQuantum = kQuantum[s % 8];
  return o;
}
