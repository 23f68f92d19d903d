// Shared helpers for the Sim device tests: a minimal Plan built by hand with ir::Builder.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ir/Builder.h"
#include "ir/Plan.h"
#include "runtime/sim/SimDevice.h"

namespace simtest {

using namespace monogen;
using ir::Type;
using ir::Val;

/// A plan (grid, LDS, stages "first" and "second") and a Sim device with its memory.
struct Kit {
  ir::Plan plan;
  ir::Builder b{plan.kernel};
  runtime::SimDevice dev;

  Kit(int blocks, int threads, int64_t ldsBytes = 0) {
    plan.key.spec = "test.sim";
    plan.key.params = {{"S", 1}, {"TP", 1}};  // messages name "test.sim-S1-TP1"
    plan.key.target = ir::gfx950();
    plan.grid.blocks = blocks;
    plan.grid.threads = threads;
    plan.ldsBytes = ldsBytes;
    plan.kernel.name = "test";
    ir::Stage s0, s1;
    s0.name = "first";
    s1.name = "second";
    plan.stages = {s0, s1};
  }
  /// A Sim allocation: poisoned, as hipMalloc's memory is uninitialized (SimMemory::alloc).
  uint64_t alloc(int64_t bytes, const std::string& name, int rank = 0) {
    return dev.memory().alloc(bytes, rank, name);
  }
  /// alloc, then zeroed by the host (a hipMemset): for the words a kernel needs 0 at its start
  /// (an error word, a counter, flag pairs).
  uint64_t zeroed(int64_t bytes, const std::string& name, int rank = 0) {
    const uint64_t a = alloc(bytes, name, rank);
    std::memset(dev.memory().host(a, bytes), 0, static_cast<size_t>(bytes));
    return a;
  }
  template <class T>
  std::vector<T> read(uint64_t addr, size_t n) {
    std::vector<T> v(n);
    std::memcpy(v.data(), dev.memory().host(addr, static_cast<int64_t>(n * sizeof(T))), n * sizeof(T));
    return v;
  }
  template <class T>
  void write(uint64_t addr, const std::vector<T>& v) {
    std::memcpy(dev.memory().host(addr, static_cast<int64_t>(v.size() * sizeof(T))), v.data(), v.size() * sizeof(T));
  }
  Val gptr(int arg) { return b.arg(arg, Type::ptr(ir::AddrSpace::Global), "p" + std::to_string(arg)); }
  runtime::SimStats run(const std::vector<std::vector<uint64_t>>& args, uint64_t seed = 1) {
    runtime::SimOptions o;
    o.seed = seed;
    return dev.run(plan, args, o);
  }
  /// run() with the race detector on (SimOptions::races).
  runtime::SimStats runRaces(const std::vector<std::vector<uint64_t>>& args, uint64_t seed = 1) {
    runtime::SimOptions o;
    o.seed = seed;
    o.races = true;
    return dev.run(plan, args, o);
  }
};

constexpr float f32FromBits(uint32_t u) { return std::bit_cast<float>(u); }
constexpr uint32_t bitsOf(float f) { return std::bit_cast<uint32_t>(f); }
static_assert(bitsOf(f32FromBits(0x3f9e0419u) ) == 0x3f9e0419u && bitsOf(-2.f) == 0xc0000000u);

}  // namespace simtest
