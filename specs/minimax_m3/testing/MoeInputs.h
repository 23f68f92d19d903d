// Seeded, platform-independent inputs for the whole MiniMax-M3 FFN launch (all-reduce + MoE)
// on every rank of a TP group, in the weight contract's layout, with the routing steered to a
// chosen number of distinct experts when asked. One function (makeLaunchInputs) with one options
// struct (LaunchInputOptions) for every caller: the CLI, the executor checks, the Sim tests.
//
// The tensors (names as moeReference's `in` and the Sim harness take them):
//   part.rR   BF16 [S, hidden]   rank R's o_proj partial (R = 0 .. TP-1); with opt.oproj derived
//                                from attn.rR, wo.rR, wo_scale (OprojReference.h)
//   res_in    BF16 [S, hidden]   the residual
//   slots     I64  [S]           a valid row's slot (its row index); padded rows -1
//   sres      F32  [S, hidden]   \ what push + reduce leave (referenceAllReduce of the parts and
//   ssq       F32  [S, hidden/32] / the residual): moeReference's inputs, derived, not free
//   norm_w    BF16 [hidden]      Gemma RMSNorm weight (small: the norm scales by 1 + w)
//   router_w  F32  [E, hidden]
//   bias      F32  [E]           e_score_correction_bias (selection only)
//   w13.rR, s13.rR, w2.rR, s2.rR rank R's contract tensors (WeightContract.h): AITER
//                                (16,16)-shuffled MXFP4, e8m0 scales in the layout the options
//                                name (LaunchInputOptions::scales; declared in their `layout`)
//
// Two kinds of values (LaunchInputOptions::values), each a stream of its own:
// - Natural (the default): activations about N(0, 1/4), router rows with about unit-variance
//   logits, expert weights a function of (seed, tensor, expert, logical row, logical 8-byte
//   group) alone, so every TP splits the same logical model; scales put gate / up / down values
//   at O(1) with some past the SwiGLU clamp (7). The routing can be steered (below).
// - EdgeCases: the all-reduce's awkward values (makeInputs: sums on bf16 ties, residual adds on
//   bf16 ties, negative zeros, large magnitudes that cancel across ranks, subnormal and tiny
//   values), then norm_w, router_w, bias and the logical MXFP4 weights from one sequential
//   stream (scales near 2^0, so the GEMVs' sums stay finite), split per rank like Natural's.
//   The Sim tests' inputs: the kernel against the reference where rounding is hardest.
// Sizes: the reduced config (hidden 1536, 16 experts, I 768) holds 17 x 1.88 MB = 32 MB of
// expert weights across the ranks together; the full config (hidden 6144, 128 experts, I 3072)
// 129 x 30.1 MB = 3.9 GB, whatever the TP.
//
// Routing (LaunchInputOptions), Natural values:
// - natural (distinctExperts = 0): router rows with about unit-variance logits, a small bias;
// - distinctExperts = N (topk <= N <= min(E, valid rows x topk)): a seeded set C of N experts
//   gets bias 2 + [0, 1/16), every other expert a bias in [-1/16, 1/16), so C outscores the
//   rest in sigmoid + bias (sigmoid is in [0, 1]). Valid row v is assigned the topk experts
//   C[(v topk + j) % N], j < topk, which together cover C; row v's residual carries +4 on its
//   own block of hidden / 16 columns (block v), and a C expert's router row holds +0.08 on
//   block v where the expert is row v's and -0.08 where it is not, so within C a row's own
//   experts score sigmoid ~ 1 and the others ~ 0 (logits about +-25 at the reduced config,
//   +-100 at the full one, against a noise of about 2 and 4).
// - sameExpert: every valid row picks the same topk experts (N = topk).
// - distinctPerToken: no two valid rows share an expert (N = valid rows x topk <= E).
// - ties: experts come in groups of topk - 1 (topk + 1 when topk <= 2) with the same router
//   row and bias: sigmoid + bias ties exactly in every row, and a row's last pick falls inside
//   a group, so the top-k's tie rule (the lower expert) decides it. Natural routing only.
// - nanLogits: a NaN in the router rows of max(1, E / 8) experts (outside C when steering), so
//   their logits are NaN in every row (never picked; the route maps them to -inf).
// EdgeCases values (no steering: distinctExperts and distinctPerToken throw):
// - sameExpert: bias 4 on the topk experts (3 + 5 i) % E, 0 elsewhere;
// - ties: zero router weights and bias, so every logit ties (the picks are experts 0 .. topk-1);
// - nanLogits: a NaN router weight in experts e % 5 == 1 (logit NaN) and a NaN bias in experts
//   e % 7 == 3 (selection value NaN: never preferred).
// Either kind:
// - paddedRows = P: the last P rows are padded (slot -1); picks and N count valid rows only.
// - paddedAt: these rows are padded too, wherever they are (not with steering).
// Combinations that contradict each other throw InputError.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/kernel/WeightContract.h"
#include "specs/minimax_m3/reference/RefNumerics.h"

namespace monogen::specs::minimax_m3 {

/// Which stream the values come from (see the header comment).
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

/// The whole launch's inputs for S rows on TP ranks (see the header comment). Throws
/// InputError naming the option when the options cannot be met (e.g. N > valid rows x topk).
runtime::TensorMap makeLaunchInputs(const ModelConfig& cfg, int S, int TP, uint64_t seed,
                                    const LaunchInputOptions& opt = {});

/// part.rR := the o_proj partial (OprojReference.h: the quant, then the GEMM) of attn.rR, wo.rR
/// and wo_scale in m, every rank: for a check that edits the attention rows of makeLaunchInputs's
/// oproj inputs (then sres / ssq in m no longer follow; the checks feed the kernel's).
void rederiveOprojPartials(const ModelConfig& cfg, int S, int TP, runtime::TensorMap& m,
                           RefNumerics numerics = RefNumerics::Ir);

/// The all-reduce's inputs alone, EdgeCases values: part.rR and res_in, the same tensors as in
/// makeLaunchInputs's EdgeCases map for the same arguments (the input=part variant's: the edge
/// cases are in the partials). With input Attn also o_proj's inputs (attn.rR, wo.rR, wo_scale),
/// part.rR then their o_proj partial (no longer edge cases). Validates S and TP (Layout::make).
runtime::TensorMap makeInputs(const ModelConfig& cfg, int rows, int tp, uint64_t seed,
                              FfnInput input = FfnInput::Part);

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
