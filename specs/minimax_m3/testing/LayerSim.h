// The MiniMax-M3 one-launch decoder layer on the Sim (every rank at once), its inputs and its
// reference: the attention launch's inputs and reference (AttentionInputs.h, AttentionReference.h)
// followed by the FFN launch's (MoeInputs.h, SimHarness.h) on the attention rows and residual.
#pragma once
#include <cstdint>
#include <string>

#include "ir/Plan.h"
#include "runtime/Tensor.h"
#include "runtime/sim/SimDevice.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
#include "specs/minimax_m3/testing/SimHarness.h"

namespace monogen::specs::minimax_m3 {

struct LayerInputs {
  AttentionLaunch attention;
  /// makeLaunchInputs's (o_proj in the launch) with the attention rows' slots; its attn.rR and
  /// res_in are the launch's own outputs (layerReference replaces them with the reference's).
  runtime::TensorMap ffn;
};
/// Seeded inputs for S rows on TP ranks: the attention launch's (options `o`) and the FFN's.
LayerInputs makeLayerInputs(const ModelConfig& cfg, int S, int TP, uint64_t seed, const AttentionInputOptions& o);

struct LayerReference {
  AttentionResult attention;
  runtime::TensorMap ffn;  // launchReferenceOutputs on attn.rR := the rows, res_in := h
};
/// The attention reference, then the FFN launch's reference on its rows and residual, both under
/// `numerics` (RefNumerics.h: Ir for the Sim, Gfx950Run for the executor), the experts under `quant`.
LayerReference layerReference(const ModelConfig& cfg, const LayerInputs& in, MoeQuant quant = MoeQuant::A16w4,
                              RefNumerics numerics = RefNumerics::Ir);

struct LayerSimRun {
  AttentionSimRun attention;  // its error words are the launch's (one error word a rank)
  SimRun ffn;
  std::vector<std::string> stages;  // the Plan's stage names: which stage writes a mismatching output
};
/// One launch of `plan` (buildLayerPlan(v)) on a fresh Sim device.
LayerSimRun runLayerOnSim(const ir::Plan& plan, const LayerVariant& v, const LayerInputs& in,
                          const runtime::SimOptions& opts, int32_t tag = 0x2a5eed01);
/// The same launch on any fresh device (the Sim's adapter, gfx950-run): `code` is the Plan's code
/// object, required by a device that runs code objects; `opts` steer a Sim device only.
LayerSimRun runLayer(runtime::Device& dev, const runtime::CodeObjectBytes& code, const ir::Plan& plan,
                     const LayerVariant& v, const LayerInputs& in, const runtime::SimOptions& opts = {},
                     int32_t tag = 0x2a5eed01);

/// attentionVerdict on the attention outputs, then, when bit-exact, the FFN's: "bit-exact",
/// "INVALID: ..." or "MISMATCH: <the first output that differs>".
std::string layerVerdict(const ModelConfig& cfg, const LayerInputs& in, const LayerReference& ref,
                         const LayerSimRun& run);

}  // namespace monogen::specs::minimax_m3
