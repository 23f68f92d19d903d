// The launch API: every kind of bad argument is rejected before anything runs; good arguments
// are packed as raw values and as a kernarg segment laid out as the Plan says.
#include <catch2/catch.hpp>
#include <cstring>

#include "ir/Error.h"
#include "runtime/Launch.h"

using namespace monogen;
using namespace monogen::runtime;

namespace {

ir::KernelArg ptrArg(const char* name, ir::Scalar elem, std::vector<int64_t> shape, ir::ArgRole role, int align = 16) {
  ir::KernelArg a;
  a.name = name;
  a.isPointer = true;
  a.elem = elem;
  a.shape = std::move(shape);
  a.role = role;
  a.align = align;
  return a;
}

ir::KernelArg scalarArg(const char* name, ir::Scalar elem) {
  ir::KernelArg a;
  a.name = name;
  a.isPointer = false;
  a.elem = elem;
  a.role = ir::ArgRole::Control;
  return a;
}

/// A hand-made plan: x bf16 [4, 8], w u8 [16], y f32 [4], peers u64 [TP], n i32, epoch i64.
ir::Plan makePlan(int tp = 2) {
  ir::Plan p;
  p.key.params = {{"S", 4}, {"TP", tp}};
  p.key.target = ir::gfx950();
  p.ranks = tp;
  p.args.push_back(ptrArg("x", ir::Scalar::BF16, {4, 8}, ir::ArgRole::Input));
  p.args.push_back(ptrArg("w", ir::Scalar::I8, {16}, ir::ArgRole::Weight, 256));
  p.args.push_back(ptrArg("y", ir::Scalar::F32, {4}, ir::ArgRole::Output));
  p.args.push_back(ptrArg("peers", ir::Scalar::Ptr, {tp}, ir::ArgRole::Peers, 8));
  p.args.push_back(scalarArg("n", ir::Scalar::I32));
  p.args.push_back(scalarArg("epoch", ir::Scalar::I64));
  return p;
}

uint64_t base(int r) { return 0x7000'0000ull + static_cast<uint64_t>(r) * 0x100'0000ull; }

std::vector<uint64_t> peerAddrs(int tp) {
  std::vector<uint64_t> v;
  for (int r = 0; r < tp; ++r) v.push_back(base(r) + 0x8000);
  return v;
}

std::vector<RankArgs> goodArgs(int tp = 2) {
  std::vector<RankArgs> ranks(tp);
  for (int r = 0; r < tp; ++r) {
    ranks[r]["x"] = LaunchArg::tensor(base(r) + 0x000, DType::BF16, {4, 8});
    ranks[r]["w"] = LaunchArg::tensor(base(r) + 0x100, DType::U8, {16});
    ranks[r]["y"] = LaunchArg::tensor(base(r) + 0x200, DType::F32, {4});
    ranks[r]["peers"] = LaunchArg::peerTable(base(r) + 0x300, peerAddrs(tp));
    ranks[r]["n"] = LaunchArg::scalar(3 + r);
    ranks[r]["epoch"] = LaunchArg::scalar(-2);
  }
  return ranks;
}

/// packLaunch must throw an InputError whose message contains every one of `parts`.
void expectRejected(const ir::Plan& plan, const std::vector<RankArgs>& ranks, std::vector<std::string> parts) {
  try {
    packLaunch(plan, ranks);
    FAIL("accepted; expected an InputError mentioning " << parts.front());
  } catch (const InputError& e) {
    const std::string msg = e.what();
    INFO(msg);
    for (const auto& p : parts) CHECK_THAT(msg, Catch::Contains(p));
  }
}

}  // namespace

TEST_CASE("launch: good arguments pack as raw values and as the kernarg segment") {
  const ir::Plan plan = makePlan(2);
  const PackedLaunch pk = packLaunch(plan, goodArgs(2));
  REQUIRE(pk.values.size() == 2);
  REQUIRE(pk.kernargs.size() == 2);
  CHECK(plan.kernargBytes() == 48);
  for (int r = 0; r < 2; ++r) {
    const auto& v = pk.values[r];
    REQUIRE(v.size() == 6);
    CHECK(v[0] == base(r));
    CHECK(v[1] == base(r) + 0x100);
    CHECK(v[2] == base(r) + 0x200);
    CHECK(v[3] == base(r) + 0x300);
    CHECK(v[4] == static_cast<uint64_t>(3 + r));
    CHECK(v[5] == static_cast<uint64_t>(int64_t{-2}));
    const auto& k = pk.kernargs[r];
    REQUIRE(k.size() == 48);
    uint64_t p0, p3, e;
    int32_t n;
    std::memcpy(&p0, k.data() + 0, 8);
    std::memcpy(&p3, k.data() + 24, 8);
    std::memcpy(&n, k.data() + 32, 4);
    std::memcpy(&e, k.data() + 40, 8);
    CHECK(p0 == base(r));
    CHECK(p3 == base(r) + 0x300);
    CHECK(n == 3 + r);
    CHECK(static_cast<int64_t>(e) == -2);
    CHECK(k[36] == 0);  // padding before the 8-aligned i64 stays zero
  }
}

TEST_CASE("launch: a Peers argument may be given as a u64 [TP] tensor") {
  const ir::Plan plan = makePlan(2);
  auto a = goodArgs(2);
  for (int r = 0; r < 2; ++r) a[r]["peers"] = LaunchArg::tensor(base(r) + 0x300, DType::U64, {2});
  CHECK_NOTHROW(packLaunch(plan, a));
}

TEST_CASE("launch: the dtype map from the Plan's element types") {
  CHECK(dtypeFor(ir::Scalar::BF16) == DType::BF16);
  CHECK(dtypeFor(ir::Scalar::F32) == DType::F32);
  CHECK(dtypeFor(ir::Scalar::I32) == DType::I32);
  CHECK(dtypeFor(ir::Scalar::I64) == DType::I64);
  CHECK(dtypeFor(ir::Scalar::I8) == DType::U8);
  CHECK(dtypeFor(ir::Scalar::Ptr) == DType::U64);
  CHECK_FALSE(dtypeFor(ir::Scalar::I1).has_value());
}

TEST_CASE("launch: a wrong dtype is rejected") {
  auto a = goodArgs();
  a[1]["x"].dtype = DType::F32;
  expectRejected(makePlan(), a, {"rank 1", "'x'", "dtype is F32", "expected BF16"});
}

TEST_CASE("launch: a wrong shape is rejected") {
  auto a = goodArgs();
  a[0]["y"].shape = {4, 1};
  expectRejected(makePlan(), a, {"rank 0", "'y'", "shape is [4, 1]", "expected [4]"});
}

TEST_CASE("launch: a misaligned pointer is rejected") {
  auto a = goodArgs();
  a[1]["w"].addr = base(1) + 0x140;  // 64-aligned, the plan asks for 256
  expectRejected(makePlan(), a, {"rank 1", "'w'", "misaligned", "multiple of 256"});
}

TEST_CASE("launch: a null pointer is rejected") {
  auto a = goodArgs();
  a[0]["x"].addr = 0;
  expectRejected(makePlan(), a, {"rank 0", "'x'", "null"});
}

TEST_CASE("launch: the rank count must be TP") {
  auto a = goodArgs(2);
  a.pop_back();
  expectRejected(makePlan(2), a, {"1 ranks", "TP = 2"});
  auto b = goodArgs(2);
  b.push_back(b.back());
  expectRejected(makePlan(2), b, {"3 ranks", "TP = 2"});
}

TEST_CASE("launch: the peer table must have exactly TP entries") {
  SECTION("table too short") {
    auto a = goodArgs(4);
    a[2]["peers"].peers.pop_back();
    expectRejected(makePlan(4), a, {"rank 2", "'peers'", "3 entries", "TP = 4"});
  }
  SECTION("table too long") {
    auto a = goodArgs(2);
    a[0]["peers"].peers.push_back(base(0) + 0x9000);
    expectRejected(makePlan(2), a, {"rank 0", "'peers'", "3 entries", "TP = 2"});
  }
  SECTION("as a tensor") {
    auto a = goodArgs(2);
    a[1]["peers"] = LaunchArg::tensor(base(1) + 0x300, DType::U64, {4});
    expectRejected(makePlan(2), a, {"rank 1", "'peers'", "4 entries", "TP = 2"});
  }
  SECTION("a null entry") {
    auto a = goodArgs(2);
    a[1]["peers"].peers[1] = 0;
    expectRejected(makePlan(2), a, {"rank 1", "'peers'", "entry 1", "null"});
  }
}

TEST_CASE("launch: a missing argument is rejected") {
  auto a = goodArgs();
  a[1].erase("epoch");
  expectRejected(makePlan(), a, {"rank 1", "'epoch'", "missing", "I64 scalar"});
}

TEST_CASE("launch: an unknown argument is rejected") {
  auto a = goodArgs();
  a[0]["bias"] = LaunchArg::tensor(base(0), DType::F32, {4});
  expectRejected(makePlan(), a, {"rank 0", "'bias'", "unknown", "x, w, y, peers, n, epoch"});
}

TEST_CASE("launch: a tensor for a scalar, a scalar for a tensor, an out-of-range scalar") {
  auto a = goodArgs();
  a[0]["n"] = LaunchArg::tensor(base(0), DType::I32, {});
  expectRejected(makePlan(), a, {"'n'", "expected a I32 scalar", "given a tensor"});
  auto b = goodArgs();
  b[0]["x"] = LaunchArg::scalar(5);
  expectRejected(makePlan(), b, {"'x'", "given a scalar"});
  auto c = goodArgs();
  c[1]["n"] = LaunchArg::scalar(int64_t{1} << 40);
  expectRejected(makePlan(), c, {"rank 1", "'n'", "does not fit"});
  auto d = goodArgs();
  d[0]["x"] = LaunchArg::peerTable(base(0), peerAddrs(2));
  expectRejected(makePlan(), d, {"'x'", "given a peer table"});
}
