// Co-residency (runtime/CoResidency.h): the kernel descriptor reader on real compiled variants,
// checked against codegen's metadata read-back, and checkCoResidency against fake device
// attributes: an MI355X that fits, and devices with too few CUs, too little LDS, too few
// registers, the wrong wavefront size, CTAs too large. Every refusal names what did not fit, what
// the kernel needs and what the device has.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <string>

#include "codegen/Compiler.h"
#include "ir/Error.h"
#include "runtime/CoResidency.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/Spec.h"

using namespace monogen;
namespace mm = monogen::specs::minimax_m3;
using runtime::DeviceLimits;
using runtime::KernelResources;

namespace {

struct Compiled {
  ir::Plan plan;
  codegen::CodeObject co;
};
const Compiled& variant(bool full) {
  static const Compiled reduced = [] {
    const auto cfg = mm::ModelConfig::reduced();
    ir::Plan p = mm::verifiedPlan(cfg, mm::makeKey(cfg, 2, 2));
    return Compiled{p, codegen::compile(p)};
  }();
  static const Compiled flash = [] {
    const auto cfg = mm::ModelConfig::flash();
    ir::Plan p = mm::verifiedPlan(cfg, mm::makeKey(cfg, 8, 4));
    return Compiled{p, codegen::compile(p)};
  }();
  return full ? flash : reduced;
}

/// An MI355X as HIP reports it (CLR: registers = 512 VGPRs a SIMD x 4 SIMDs x 64 lanes).
DeviceLimits mi355x() {
  DeviceLimits d;
  d.name = "fake HIP device 0 (gfx950)";
  d.computeUnits = 256;
  d.ldsPerCu = 160 * 1024;
  d.ldsPerBlock = 160 * 1024;
  d.registersPerCu = 512 * 4 * 64;
  d.maxThreadsPerCu = 2048;
  d.maxThreadsPerBlock = 1024;
  d.warpSize = 64;
  return d;
}

std::string refusal(const Compiled& c, const DeviceLimits& d) {
  try {
    checkCoResidency(runtime::readKernelResources(c.co.bytes), c.plan.grid.blocks, c.plan.grid.threads, d,
                     "hip launch of " + c.plan.key.variantName() + ", rank 0");
  } catch (const RuntimeError& e) {
    CHECK(e.where() == "hip launch of " + c.plan.key.variantName() + ", rank 0");
    return e.what();
  }
  FAIL("expected a co-residency refusal on " << d.name);
  return {};
}

int alignTo(int v, int a) { return (v + a - 1) / a * a; }

}  // namespace

TEST_CASE("the kernel descriptor says what the metadata says", "[coresidency]") {
  for (bool full : {false, true}) {
    const Compiled& c = variant(full);
    const KernelResources k = runtime::readKernelResources(c.co.bytes);
    const codegen::CodeObjectInfo& m = c.co.info;
    INFO(c.plan.key.variantName() << ": vgprs " << m.vgprs << " agprs " << m.agprs << " sgprs " << m.sgprs << " lds "
                                  << m.ldsBytes);
    CHECK(k.symbol == m.kernelSymbol);
    CHECK(k.symbol == codegen::kernelSymbol(c.plan));
    CHECK(k.symbol != c.plan.kernel.name);  // the plan's name is not the symbol HipDevice must look up
    CHECK(k.ldsBytes == m.ldsBytes);
    CHECK(k.scratchBytes == m.scratchBytes);
    CHECK(k.wavefrontSize == m.wavefrontSize);
    // gfx90a+: AGPRs start at accum_offset (VGPRs rounded up to 4); the total is granulated by 8.
    const int accum = alignTo(std::max(m.vgprs, 1), 4);
    CHECK(k.archVgprs == accum);
    CHECK(k.vgprsPerWave == alignTo(m.agprs > 0 ? accum + m.agprs : m.vgprs, 8));
    // SGPRs: granule 16, and LLVM raises the descriptor's count to the most that keeps the
    // occupancy the kernel's other limits allow (AMDGPUAsmPrinter's NumSGPRsForWavesPerEU):
    // more than the metadata's .sgpr_count, never fewer.
    CHECK(k.sgprsPerWave >= m.sgprs);
    CHECK(k.sgprsPerWave % 16 == 0);
  }
}

TEST_CASE("both variants fit an MI355X, one CTA a CU", "[coresidency]") {
  for (bool full : {false, true}) {
    const Compiled& c = variant(full);
    CHECK_NOTHROW(checkCoResidency(runtime::readKernelResources(c.co.bytes), c.plan.grid.blocks, c.plan.grid.threads,
                                   mi355x(), "test"));
  }
}

TEST_CASE("too few CUs: the grid, the CU count and the need are named", "[coresidency]") {
  DeviceLimits d = mi355x();
  d.name = "fake HIP device 1 (gfx950, 240 CUs)";
  d.computeUnits = 240;
  const std::string m = refusal(variant(true), d);
  INFO(m);
  CHECK_THAT(m, Catch::Contains("the grid is 256 CTAs, one a CU, but the device has 240 CUs (need at least 256)"));
  CHECK_THAT(m, Catch::Contains("fake HIP device 1"));
  CHECK_THAT(m, Catch::Contains("monogen_"));
  CHECK_THAT(m, Catch::Contains("a persistent launch would spin forever"));
}

TEST_CASE("too much LDS: the CTA's bytes and the device's are named", "[coresidency]") {
  const Compiled& c = variant(true);
  DeviceLimits d = mi355x();
  d.ldsPerCu = d.ldsPerBlock = 64 * 1024;  // a gfx942's LDS
  const std::string m = refusal(c, d);
  INFO(m);
  CHECK_THAT(m, Catch::Contains(fmt::format("a CTA takes {} bytes of LDS, the device has 65536 a CU and 65536 a block",
                                            c.co.info.ldsBytes)));
}

TEST_CASE("too many VGPRs: the wave's registers and the SIMD's are named", "[coresidency]") {
  const Compiled& c = variant(true);
  const KernelResources k = runtime::readKernelResources(c.co.bytes);
  DeviceLimits d = mi355x();
  d.registersPerCu = 256 * 4 * 64;  // 256 VGPRs a SIMD: two waves of more than 128 do not fit
  REQUIRE(k.vgprsPerWave > 128);
  const std::string m = refusal(c, d);
  INFO(m);
  CHECK_THAT(m, Catch::Contains(fmt::format("a wave takes {} VGPRs + AGPRs and 2 waves share a SIMD ({} VGPRs), but a "
                                            "SIMD has 256",
                                            k.vgprsPerWave, 2 * k.vgprsPerWave)));
}

TEST_CASE("wavefront size, CTA size and wave slots are checked, and every problem is listed", "[coresidency]") {
  DeviceLimits d = mi355x();
  d.warpSize = 32;
  d.maxThreadsPerBlock = 256;
  d.maxThreadsPerCu = 256;
  d.maxWavesPerSimd = 1;
  d.computeUnits = 8;
  const std::string m = refusal(variant(false), d);
  INFO(m);
  CHECK_THAT(m, Catch::Contains("the kernel runs 64-lane waves, the device's wavefront is 32 lanes"));
  CHECK_THAT(m, Catch::Contains("a CTA is 512 threads, the device allows 256 a block"));
  CHECK_THAT(m, Catch::Contains("a CTA is 512 threads, a CU holds 256 threads"));
  CHECK_THAT(m, Catch::Contains("a CTA is 8 waves, 2 a SIMD, a SIMD holds 1 waves"));
  CHECK_THAT(m, Catch::Contains("the grid is 32 CTAs, one a CU, but the device has 8 CUs"));
}

TEST_CASE("a file that is not a code object is a clear error", "[coresidency]") {
  std::vector<uint8_t> junk(100, 0x42);
  try {
    runtime::readKernelResources(junk);
    FAIL("expected a RuntimeError");
  } catch (const RuntimeError& e) {
    CHECK(e.where() == "code object");
    CHECK_THAT(e.what(), Catch::Contains("not a 64-bit little-endian ELF file"));
  }
  std::vector<uint8_t> cut(variant(false).co.bytes.begin(), variant(false).co.bytes.begin() + 200);
  CHECK_THROWS_AS(runtime::readKernelResources(cut), RuntimeError);
}
