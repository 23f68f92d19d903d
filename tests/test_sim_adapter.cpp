// The Sim device behind the Device interface: memory round trips and a checked launch of a
// small kernel whose arguments arrive through launch packing.
#include <catch2/catch.hpp>

#include "ir/Builder.h"
#include "ir/Error.h"
#include "runtime/sim/SimDeviceAdapter.h"

using namespace monogen;
using namespace monogen::runtime;
using ir::Type;

namespace {

/// out[block * threads + tid] = tid + k, for a grid of 2 x 64; TP = tp.
ir::Plan storePlan(int tp) {
  ir::Plan p;
  p.key.spec = "test.adapter";
  p.key.params = {{"S", 1}, {"TP", tp}};
  p.key.target = ir::gfx950();
  p.ranks = tp;
  p.grid.blocks = 2;
  p.grid.threads = 64;
  p.kernel.name = "adapter_test";
  ir::KernelArg out;
  out.name = "out";
  out.elem = ir::Scalar::I32;
  out.shape = {128};
  out.role = ir::ArgRole::Output;
  ir::KernelArg k;
  k.name = "k";
  k.isPointer = false;
  k.elem = ir::Scalar::I32;
  k.role = ir::ArgRole::Control;
  p.args = {out, k};
  ir::Stage s;
  s.name = "store";
  s.tasks = 2;
  s.everyCta = true;
  p.stages = {s};
  ir::Builder b(p.kernel);
  b.stage(0, [&] {
    auto ptr = b.arg(0, Type::ptr(ir::AddrSpace::Global), "out");
    auto kv = b.arg(1, Type::i32(), "k");
    auto idx = b.binary(ir::OpCode::Add, b.binary(ir::OpCode::Mul, b.block(), b.i32(64)), b.tid());
    auto off = b.zext(b.binary(ir::OpCode::Mul, idx, b.i32(4)), Type::i64());
    b.store(b.ptrAdd(ptr, off), b.binary(ir::OpCode::Add, b.tid(), kv));
  });
  return p;
}

}  // namespace

TEST_CASE("sim adapter: put/get round trip through SimMemory") {
  SimDeviceAdapter d;
  CHECK(d.name() == "sim");
  HostTensor t = HostTensor::zeros(DType::U8, {300});
  for (int i = 0; i < 300; ++i) t.data[i] = static_cast<uint8_t>(i * 3);
  const uint64_t a = d.put(1, t, "bytes", 256);
  CHECK(a % 256 == 0);
  CHECK(d.get(1, a, DType::U8, {300}).data == t.data);
  CHECK_THROWS(d.get(1, a, DType::U8, {301}));  // past the allocation: the sim bounds-checks
  CHECK_THROWS_AS(d.alloc(8, 16, "too-far"), RuntimeError);
}

TEST_CASE("sim adapter: a checked launch runs the kernel IR on every rank, ignoring the code object") {
  const int tp = 2;
  const ir::Plan plan = storePlan(tp);
  SimDeviceAdapter d;
  std::vector<RankArgs> ranks(tp);
  std::vector<uint64_t> outs;
  for (int r = 0; r < tp; ++r) {
    outs.push_back(d.alloc(r, 128 * 4, "out"));
    ranks[r]["out"] = LaunchArg::tensor(outs[r], DType::I32, {128});
    ranks[r]["k"] = LaunchArg::scalar(100 * (r + 1));
  }
  d.launch(plan, /*code object, unused*/ {}, ranks);
  CHECK(d.lastStats().steps > 0);
  for (int r = 0; r < tp; ++r) {
    HostTensor o = d.get(r, outs[r], DType::I32, {128});
    for (int i = 0; i < 128; ++i) {
      INFO("rank " << r << " element " << i);
      REQUIRE(o.as<int32_t>()[i] == (i % 64) + 100 * (r + 1));
    }
  }
  // A bad argument never reaches the sim.
  ranks[1]["k"] = LaunchArg::tensor(outs[1], DType::I32, {128});
  CHECK_THROWS_AS(d.launch(plan, {}, ranks), InputError);
}
