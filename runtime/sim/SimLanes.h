// The interpreter's lane helpers (internal to runtime/sim/SimExec*.cpp): element loads and stores
// in a wave's frame, sign extension, and FOR_LANES over the active lanes of an exec mask.
#pragma once
#include <cstdint>
#include <cstring>

#include "ir/Numerics.h"

namespace monogen::runtime::simlanes {

template <class T>
inline T ld(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
inline void st(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

/// An n-byte (1, 2, 4 or 8) unsigned element at p.
inline uint64_t ldN(const uint8_t* p, int n) {
  switch (n) {
    case 1: return *p;
    case 2: return ld<uint16_t>(p);
    case 4: return ld<uint32_t>(p);
    default: return ld<uint64_t>(p);
  }
}
inline void stN(uint8_t* p, int n, uint64_t v) {
  switch (n) {
    case 1: *p = static_cast<uint8_t>(v); break;
    case 2: st<uint16_t>(p, static_cast<uint16_t>(v)); break;
    case 4: st<uint32_t>(p, static_cast<uint32_t>(v)); break;
    default: st<uint64_t>(p, v); break;
  }
}
/// v's low `bits` bits, sign-extended.
inline int64_t sx(uint64_t v, int bits) {
  if (bits >= 64) return static_cast<int64_t>(v);
  const int s = 64 - bits;
  return static_cast<int64_t>(v << s) >> s;
}
inline uint64_t lowMask(int bits) { return bits >= 64 ? ~0ull : ((1ull << bits) - 1); }

/// memcpy of a register element: fixed sizes compile to plain moves.
inline void copyN(uint8_t* d, const uint8_t* s, int n) {
  switch (n) {
    case 1: *d = *s; break;
    case 2: std::memcpy(d, s, 2); break;
    case 4: std::memcpy(d, s, 4); break;
    case 8: std::memcpy(d, s, 8); break;
    case 16: std::memcpy(d, s, 16); break;
    default: std::memcpy(d, s, static_cast<size_t>(n)); break;
  }
}

/// A float element: bf16 (widened exactly) or f32; a store rounds to bf16 with RNE.
inline float ldF(const uint8_t* p, bool bf) { return bf ? ir::num::bf16ToF32(ld<uint16_t>(p)) : ld<float>(p); }
inline void stF(uint8_t* p, bool bf, float v) {
  if (bf) st<uint16_t>(p, ir::num::f32ToBf16(v));
  else st<float>(p, v);
}

}  // namespace monogen::runtime::simlanes

/// The body runs once for each set bit l of exec, lowest first.
#define FOR_LANES(exec, l) \
  for (uint64_t m_ = (exec); m_; m_ &= m_ - 1) \
    if (const int l = __builtin_ctzll(m_); true)
