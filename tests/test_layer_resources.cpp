// The one-launch layer's registers: every reduced variant compiles for gfx950 with no scratch
// and no spilled register (compile only; the runs are test_layer_launch's and the executor's).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/Compiler.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

namespace {

struct Variant {
  int S = 1, TP = 1;
  bool full = false;
  CacheMode mode = CacheMode::Vllm;
  int agRsFrom = LayerPlacementKnobs{}.agRsFrom;
};

/// Compiles the variant's verified Plan without the limit check, prints its registers, and
/// checks what checkLimits refuses: scratch and spills.
void checkResources(const ModelConfig& cfg, const Variant& k) {
  AttentionKnobs knobs;
  knobs.mode = k.mode;
  knobs.fullLayer = k.full;
  const ir::Plan plan = verifiedLayerPlan(cfg, makeLayerKey(cfg, k.S, k.TP, knobs, {.agRsFrom = k.agRsFrom}));
  codegen::CompileOptions opts;
  opts.checkLimits = false;
  const codegen::CodeObjectInfo info = codegen::compile(plan, opts).info;
  const std::string name = fmt::format("S {:2} TP {} {:6} {:4}", k.S, k.TP, k.full ? "full" : "sparse",
                                       cacheModeName(k.mode));
  fmt::print("layer resources: {}  {:3} VGPRs {:3} AGPRs {:3} SGPRs  spilled {} VGPRs {} SGPRs  scratch {} B\n", name,
             info.vgprs, info.agprs, info.sgprs, info.vgprSpills, info.sgprSpills, info.scratchBytes);
  INFO(name);
  CHECK(info.scratchBytes == 0);
  CHECK(info.sgprSpills == 0);
  CHECK(info.vgprSpills == 0);
  CHECK_NOTHROW(codegen::checkLimits(info, plan));
}

}  // namespace

TEST_CASE("layer resources: S 12 TP 1 and S 4 TP 2 sparse compile with no scratch and no spill",
          "[layer_resources]") {
  const ModelConfig cfg = ModelConfig::reduced();
  checkResources(cfg, {12, 1, false, CacheMode::Vllm});
  checkResources(cfg, {4, 2, false, CacheMode::Vllm});
}

TEST_CASE("layer resources: every reduced S x TP x layer type x cache mode, no scratch and no spill",
          "[.slow][layer_resources]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (CacheMode mode : {CacheMode::Vllm, CacheMode::Atom})
    for (int full = 0; full < 2; ++full)
      for (int TP : {1, 2, 4, 8})
        for (int S = 1; S <= cfg.maxRows; ++S) checkResources(cfg, {S, TP, full == 1, mode});
}

TEST_CASE("layer resources: S 12..16, the all-reduces reduce-scattered from 12, no scratch and no spill",
          "[.slow][layer_resources][ag_rs]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int full = 0; full < 2; ++full)
    for (int TP : {1, 2, 4, 8})
      for (int S = 12; S <= std::min(16, cfg.maxRows); ++S) checkResources(cfg, {S, TP, full == 1, CacheMode::Vllm, 12});
}
