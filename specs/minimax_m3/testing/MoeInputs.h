// Seeded, platform-independent inputs for the whole MiniMax-M3 FFN launch on every rank of a TP
// group, in the weight contract's layout, optionally with steered routing: makeLaunchInputs and
// LaunchInputOptions. Tensors, value kinds and routing options: docs/minimax-m3-kernel.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/FfnVariant.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/kernel/WeightContract.h"
#include "specs/minimax_m3/reference/RefNumerics.h"

namespace monogen::specs::minimax_m3 {

/// Which stream the values come from (docs/minimax-m3-kernel.md, "The inputs").
enum class InputValues { Natural, EdgeCases };

struct LaunchInputOptions {
  InputValues values = InputValues::Natural;
  int distinctExperts = 0;  // 0: natural routing
  int paddedRows = 0;       // the last paddedRows rows get slot -1
  std::vector<int> paddedAt;  // these rows get slot -1 as well (0 .. S-1, any order)
  bool ties = false;
  bool nanLogits = false;
  bool sameExpert = false;
  bool distinctPerToken = false;
  /// false: leave out w13 / s13 / w2 / s2 (routing-only inputs: the bytes model or the routing
  /// at the full config without generating its 3.9 GB of expert weights). Not in describe().
  bool expertWeights = true;
  /// The layout s13.rR / s2.rR are held in (and declare): the variant's scales knob. The values
  /// are the same logical model either way. Not in describe() (the saved launch names it apart).
  ScaleLayout scales = ScaleLayout::E8m0Shuffle;
  /// o_proj in the launch (input=attn, the default variant's): adds attn.rR BF16 [S, heads
  /// head_dim / TP], wo.rR U8 [hidden, heads head_dim / TP] (e4m3fn, (16,16)-shuffled) and
  /// wo_scale F32 [hidden], and part.rR becomes their o_proj partial (OprojReference.h), so
  /// sres / ssq and every reference downstream follow the chain quant -> GEMM -> the rest.
  /// false (the input=part variant's): part.rR is drawn directly; in describe() as "input=part".
  bool oproj = true;
  /// The numerics the o_proj partial (oproj) is derived under. Not in describe().
  RefNumerics numerics = RefNumerics::Ir;
  /// Holds the tensors as the variant of `k` reads them: scales in k.scales, and the o_proj
  /// inputs (oproj) when k.input is Attn.
  void matchVariant(const FfnKnobs& k) {
    scales = k.scales;
    oproj = k.input == FfnInput::Attn;
  }
  /// "natural", "experts=8 padded=2 ties ...", "edge-cases padded-at=0,3" (for messages and
  /// safetensors metadata).
  std::string describe() const;
};

/// The whole launch's inputs for S rows on TP ranks (docs/minimax-m3-kernel.md). Throws
/// InputError naming the option when the options cannot be met (e.g. N > valid rows x topk).
runtime::TensorMap makeLaunchInputs(const ModelConfig& cfg, int S, int TP, uint64_t seed,
                                    const LaunchInputOptions& opt = {});

/// part.rR := the o_proj partial (OprojReference.h: the quant, then the GEMM) of attn.rR, wo.rR
/// and wo_scale in m, every rank: for a check that edits the attention rows of makeLaunchInputs's
/// oproj inputs (then sres / ssq in m no longer follow; the checks feed the kernel's).
void rederiveOprojPartials(const ModelConfig& cfg, int S, int TP, runtime::TensorMap& m,
                           RefNumerics numerics = RefNumerics::Ir);

/// A saved launch's derived tensors made again from what the kernel reads, so a replay's reference
/// follows an edited input: with input Attn, part.rR from attn.rR, wo.rR and wo_scale (as above);
/// then sres and ssq (when m holds them) from part.rR and res_in. Returns the names of the tensors
/// whose bits changed (empty when m was consistent).
std::vector<std::string> rederiveDerivedInputs(const ModelConfig& cfg, int S, int TP, FfnInput input,
                                               runtime::TensorMap& m, RefNumerics numerics = RefNumerics::Ir);

/// The all-reduce's inputs alone, EdgeCases values: part.rR and res_in, the same tensors as in
/// makeLaunchInputs's EdgeCases map for the same arguments (the input=part variant's: the edge
/// cases are in the partials). With input Attn also o_proj's inputs (attn.rR, wo.rR, wo_scale),
/// part.rR then their o_proj partial (no longer edge cases). Validates S and TP (Layout::make).
runtime::TensorMap makeInputs(const ModelConfig& cfg, int rows, int tp, uint64_t seed,
                              FfnInput input = FfnInput::Part);
/// The same for v's config, S, TP and input knob.
runtime::TensorMap makeInputs(const FfnVariant& v, uint64_t seed);

/// The expert set C the inputs were steered to (ascending), as makeLaunchInputs chose it for these
/// arguments; empty for natural routing (EdgeCases values: sameExpert's biased experts). (Recomputed
/// from the seed; costs no weights.)
std::vector<int> steeredExperts(const ModelConfig& cfg, int S, int TP, uint64_t seed, const LaunchInputOptions& opt);

/// Rank `rank`'s weight-contract map (w13, s13, w2, s2, router_w, bias, norm_w) out of a
/// makeLaunchInputs map, named as checkContract expects. Copies the tensors.
runtime::TensorMap rankContract(const runtime::TensorMap& in, int rank);

/// The routing alone of moeReference on `in` (norm from sres / ssq, the router's logits in the
/// reference's sum order, the top-k of sigmoid + bias): "logits" F32 [S, E], "picks" I32
/// [S, topk] (-1 for padded rows), "weights" F32 [S, topk]. Bit-identical to moeReference's
/// tensors of the same names (tests/test_spec_inputs.cpp checks it) without the expert GEMVs,
/// so it is cheap at the full config. Reads sres, ssq, norm_w, router_w, bias, slots.
runtime::TensorMap moeRouting(const ModelConfig& cfg, int S, int TP, const runtime::TensorMap& in);

/// The distinct routed experts among picks (I32 [S, topk]; -1 entries ignored), ascending.
std::vector<int> distinctPicked(const runtime::HostTensor& picks);

}  // namespace monogen::specs::minimax_m3
