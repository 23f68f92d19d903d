// Accesses to Sim memory that other processes map and write at once (SimMemory::attachShared):
// every byte moves through a C++ atomic, so no access is a data race. docs/sim.md has the units.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>

namespace monogen::runtime::simshared {

static_assert(std::atomic_ref<uint64_t>::is_always_lock_free && std::atomic_ref<uint32_t>::is_always_lock_free &&
                  std::atomic_ref<uint16_t>::is_always_lock_free && std::atomic_ref<uint8_t>::is_always_lock_free,
              "shared Sim memory needs address-free (lock-free) atomics");

template <class T>
inline T loadT(const uint8_t* p, std::memory_order o) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(const_cast<uint8_t*>(p))).load(o);
}
template <class T>
inline void storeT(uint8_t* p, T v, std::memory_order o) {
  std::atomic_ref<T>(*reinterpret_cast<T*>(p)).store(v, o);
}

/// The widest naturally aligned unit at p that fits in n bytes.
inline int unitAt(const uint8_t* p, int n) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (n >= 8 && a % 8 == 0) return 8;
  if (n >= 4 && a % 4 == 0) return 4;
  if (n >= 2 && a % 2 == 0) return 2;
  return 1;
}

/// dst (private) := shared src[0, n).
inline void load(uint8_t* dst, const uint8_t* src, int64_t n, std::memory_order o = std::memory_order_relaxed) {
  for (int64_t i = 0; i < n;) {
    const int u = unitAt(src + i, static_cast<int>(n - i < 8 ? n - i : 8));
    switch (u) {
      case 8: { const uint64_t v = loadT<uint64_t>(src + i, o); std::memcpy(dst + i, &v, 8); break; }
      case 4: { const uint32_t v = loadT<uint32_t>(src + i, o); std::memcpy(dst + i, &v, 4); break; }
      case 2: { const uint16_t v = loadT<uint16_t>(src + i, o); std::memcpy(dst + i, &v, 2); break; }
      default: dst[i] = loadT<uint8_t>(src + i, o);
    }
    i += u;
  }
}

/// shared dst[0, n) := src (private).
inline void store(uint8_t* dst, const uint8_t* src, int64_t n, std::memory_order o = std::memory_order_relaxed) {
  for (int64_t i = 0; i < n;) {
    const int u = unitAt(dst + i, static_cast<int>(n - i < 8 ? n - i : 8));
    switch (u) {
      case 8: { uint64_t v; std::memcpy(&v, src + i, 8); storeT<uint64_t>(dst + i, v, o); break; }
      case 4: { uint32_t v; std::memcpy(&v, src + i, 4); storeT<uint32_t>(dst + i, v, o); break; }
      case 2: { uint16_t v; std::memcpy(&v, src + i, 2); storeT<uint16_t>(dst + i, v, o); break; }
      default: storeT<uint8_t>(dst + i, src[i], o);
    }
    i += u;
  }
}

/// A (value, tag) pair at p (8-byte aligned): value in the low word, tag in the high one.
inline uint64_t loadPair(const uint8_t* p) { return loadT<uint64_t>(p, std::memory_order_acquire); }
inline void storePair(uint8_t* p, int32_t value, int32_t tag) {
  const uint64_t v = static_cast<uint32_t>(value) | static_cast<uint64_t>(static_cast<uint32_t>(tag)) << 32;
  storeT<uint64_t>(p, v, std::memory_order_release);
}

/// An n-byte (4 or 8) read-modify-write at p: *p := f(old); returns old.
template <class F>
inline uint64_t rmw(uint8_t* p, int n, F&& f) {
  if (n == 8) {
    std::atomic_ref<uint64_t> a(*reinterpret_cast<uint64_t*>(p));
    uint64_t old = a.load();
    while (!a.compare_exchange_weak(old, f(old))) {}
    return old;
  }
  std::atomic_ref<uint32_t> a(*reinterpret_cast<uint32_t*>(p));
  uint32_t old = a.load();
  while (!a.compare_exchange_weak(old, static_cast<uint32_t>(f(old)))) {}
  return old;
}

/// An n-byte (4 or 8) compare-exchange at p; returns the old value.
inline uint64_t cas(uint8_t* p, int n, uint64_t expected, uint64_t desired) {
  if (n == 8) {
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p)).compare_exchange_strong(expected, desired);
    return expected;
  }
  uint32_t e = static_cast<uint32_t>(expected);
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(p)).compare_exchange_strong(e, static_cast<uint32_t>(desired));
  return e;
}

}  // namespace monogen::runtime::simshared
