// The Sim device's random numbers: splitmix64 seeding a xoshiro256**. Both are fixed integer
// recurrences, so a seed gives the same sequence on every platform and standard library (the
// scheduler never uses std:: distributions).
#pragma once
#include <cstdint>

namespace monogen::runtime {

/// splitmix64's finalizer: a 64-bit mix, also usable as a hash.
inline uint64_t splitMix64Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// splitmix64: one step of the sequence (the Sim's seeding, the specs' input streams).
inline uint64_t simSplitMix64(uint64_t& state) { return splitMix64Mix(state += 0x9e3779b97f4a7c15ull); }

/// xoshiro256**, seeded from splitmix64(seed).
class SimRng {
 public:
  explicit SimRng(uint64_t seed) {
    uint64_t sm = seed;
    for (uint64_t& w : s_) w = simSplitMix64(sm);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// A number in [0, n) for n >= 1 (multiply-shift; the tiny bias does not matter here).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace monogen::runtime
