// The seeded generator every test-input builder draws from: splitmix64 with exact f32
// conversions only, so a seed gives the same numbers on every host.
#pragma once
#include <cstdint>

#include "runtime/sim/SimRng.h"

namespace monogen::specs::minimax_m3 {

class InputRng {
 public:
  explicit InputRng(uint64_t seed) : s_(seed) {}
  /// Not copyable: a copy replays its source's numbers (two inputs drawn from copies are equal).
  InputRng(const InputRng&) = delete;
  InputRng& operator=(const InputRng&) = delete;
  uint64_t next() { return runtime::splitMix64Mix(s_ += 0x9e3779b97f4a7c15ull); }
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1), exact
  /// Irwin-Hall(4) scaled to unit variance: about normal. (The draws are sequenced: the operands
  /// of one expression may be evaluated in any order, and compilers differ.)
  float normal() {
    const float a = uniform(), b = uniform(), c = uniform(), d = uniform();
    return ((a + b) + (c + d) - 2.0f) * 1.7320508f;
  }
  /// Uniform in [-a, a).
  float sym(float a) { return (uniform() * 2.0f - 1.0f) * a; }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  uint32_t ubelow(uint32_t n) { return static_cast<uint32_t>(next() % n); }
  uint32_t bit() { return static_cast<uint32_t>(next() >> 63); }

 private:
  uint64_t s_;
};

}  // namespace monogen::specs::minimax_m3
