// The weight contract of the MiniMax-M3 FFN launch: the tensors a serving framework already
// holds for one rank, their shapes and dtypes, the AITER (16,16) shuffle of the MXFP4 data,
// and the check run at launch.
//
// A rank's tensors (E routed experts, the shared expert fused as expert E; I the expert
// intermediate size, I / TP rows of it on a rank; "fp4x2" and "e8m0" are U8 bytes):
//
//   w13       U8   [E+1, 2 I/TP, hidden/2]  fp4x2, AITER (16,16)-shuffled; rows 0 .. I/TP-1 the
//                                           rank's gate rows, I/TP .. 2 I/TP-1 its up rows
//   s13       U8   [E+1, 2 I/TP, P(hidden/32)] e8m0, one scale a row per 32 K, e8m0_shuffle'd
//                                           (the default; see "Scales" below)
//   w2        U8   [E+1, hidden, I/TP/2]    fp4x2, AITER (16,16)-shuffled
//   s2        U8   [E+1, hidden, P(I/TP/32)] e8m0, e8m0_shuffle'd
//   router_w  F32  [E, hidden]
//   bias      F32  [E]                      e_score_correction_bias (selection only)
//   norm_w    BF16 [hidden]                 Gemma RMSNorm weight (the norm scales by 1 + w)
//
// P(n) = n rounded up to a multiple of 8 for the e8m0_shuffle layout (AITER's column padding),
// n for the row-major one (the `scales` knob picks the layout; see "Scales").
//
// Rank r holds intermediate rows r I/TP .. (r+1) I/TP - 1 of every expert: its gate rows, its
// up rows, and the same columns of w2.
//
// fp4x2: a byte holds K 2j in its low nibble and K 2j+1 in its high nibble (e2m1 codes).
//
// AITER's shuffle_weight(x, layout=(16, 16)) on fp4x2 bytes [N, Kb] (Kb = K / 2 bytes) views
// the matrix as [N/16, 16, Kb/32, 2, 16] (row tile, row, 32-byte K tile, 16-byte half, byte)
// and makes it contiguous in the order [N/16, Kb/32, 2, 16, 16]: each tile of 16 rows x 32
// bytes (64 K) is 512 contiguous bytes, first its 16 rows' low 16-byte halves (K 0..31 of the
// tile), then their high halves (K 32..63), a row's 16 bytes at a time. Tiles go K-tile-minor
// within a row tile. (Established from AITER's aiter/ops/shuffle.py: BK = 2 * IK = 32 bytes,
// K = 16 / element_size = 16 bytes, permute(0, 1, 3, 4, 2, 5).)
// AITER refuses Kb % 32 != 0. The reduced test config needs I / TP = 96 (Kb = 48) at TP 8, so
// this contract extends the layout: a last K tile of only 16 bytes is one 256-byte half
// (its 16 rows' 16 bytes), i.e. the same formula with the one half. Not AITER's (it has none).
//
// Scales: AITER's MXFP4 MoE path (vLLM / SGLang process_weights_after_loading) also shuffles
// the e8m0 scales, with e8m0_shuffle over the experts' rows flattened to [(E+1) N, K/32]:
// pad to (rows multiple of 256, columns multiple of 8), view [m/32, 2, 16, n/8, 2, 4],
// permute (0, 3, 5, 2, 4, 1). See "DECISION" at the end of this comment for what is read.
//
// WHAT THE FRAMEWORKS HOLD on gfx950 after loading an MXFP4 MoE checkpoint (read from their
// sources; Quark OCP-MX checkpoints, the AITER MoE backend):
//  - vLLM, vllm/model_executor/layers/quantization/quark/quark_moe.py (commit 004b19de),
//    QuarkOCP_MX_MoEMethod.process_weights_after_loading: scales e8m0_shuffle'd over the
//    experts' rows flattened ([s0 * s1, K/32], viewed back as [s0, s1, -1]); weights
//    rocm_aiter_ops.shuffle_weights(w13, w2), i.e. AITER shuffle_weight(layout=(16, 16)); w13 is
//    [E, 2 I/TP, K/2] with the gate rows before the up rows (concatenated, not interleaved).
//  - SGLang, python/sglang/srt/layers/quantization/quark/schemes/quark_w4a4_mxfp4_moe.py (commit
//    0007e654), QuarkW4A4MXFp4MoE.process_weights_after_loading, the default path: the same
//    e8m0_shuffle of s13 / s2, and on gfx95 (`_is_shuffle_moe_mxfp4 = is_gfx95_supported()`)
//    shuffle_weight(w, (16, 16)) of w13 and w2, w13 gate|up concatenated "as loaded". Only with
//    SGLANG_USE_AITER_MOE_GU_ITLV=1 does it switch to the a16w4 "klane-inner" layouts
//    (shuffle_weight_a16w4_sep_fp4 / shuffle_scale_a16w4_sep_fp4, or the gate/up-interleaved
//    *_gui_fp4 with AITER_FP4BF16_USE_ITLV=1).
//  - AITER, aiter/utility/fp4_utils.py e8m0_shuffle: pad to (rows % 256, cols % 8), view
//    [m/32, 2, 16, n/8, 2, 4], permute (0, 3, 5, 2, 4, 1) (what e8m0Shuffle below implements);
//    aiter/ops/shuffle.py shuffle_weight_a16w4(src [E, N, K/2], NLane, gate_up): KPack 16 bytes,
//    KLane = 64 / NLane, view [E, 2, N/2/NLane, NLane, K0, KLane, KPack] permuted to
//    [E, N0, 2, K0, KLane, NLane, KPack] (gate and up interleaved a NLane-row block at a time);
//    its callers pass NLane 16 with shuffle_scale_a16w4 for the scales. vLLM uses that layout for
//    gpt-oss-style interleaved checkpoints and its own A16W4 kernels, not for Quark MiniMax.
//  - ATOM's MiniMax-M3 mono (ROCm/ATOM atom/models/minimax_m3/mono/library_validation.py,
//    commit 0ca214f9) borrows the framework's tensors "without converting their storage" and
//    checks only shapes at TP 4: w13 [129, 1536, 3072] fp4x2, s13 [129, 1536, 192], w2
//    [129, 6144, 384], s2 [129, 6144, 24] uint8 (unpadded shapes: e8m0_shuffle pads nothing there).
// So the weights as held match this contract's (16,16) w13 / w2 (gate rows first): a direct read.
// The scales are held e8m0_shuffle'd.
//
// DECISION: the kernel reads the frameworks' e8m0_shuffle'd s13 / s2 directly (the `scales`
// knob, default e8m0_shuffle; `scales=rowmajor` keeps the plain row-major layout as a second
// variant, generated and tested alike). Why not a one-time repack at load: it would cost one pass
// over s13 + s2 (129 x 6144 x (192 + 96) / TP bytes, about 57 MB at TP 4, microseconds of HBM
// time), but in place it would leave the framework's own AITER MoE kernels (prefill, the layers
// this kernel does not run) reading the wrong layout, so it would need a private copy of every
// layer's scales (another 57 MB a layer at TP 4). Reading the shuffled bytes loads the same
// bytes (one scale byte a lane a K step either way); only the address arithmetic differs
// (KernelContext::scaleByte: on gfx950-run, reduced S=8 TP=2, 3.83 M wave-instructions against
// row-major's 3.51 M, a 24288-byte code object against 23872; that arithmetic is not folded yet).
// The layout read: scaleIndex(layout, row, kb, kBlocks) below, the e8m0 offset of (expert N +
// row, kb) in the flattened [(E+1) N, pn] matrix minus the expert's base e N pn. A 32-row
// group never straddles two experts (N = 2 I/TP and hidden are multiples of 32), so an
// expert's scales are one contiguous N x pn slab and an expert's slab is e8m0_shuffle of its
// own [N, K/32] (there a row's K blocks j .. j+3 sit 64 bytes apart, blocks j+4 .. j+7 start 2
// bytes after them, the next 8 blocks 256 bytes on; rows i and i+1 are 4 bytes apart).
// Padding, as held: columns to pn = K/32 rounded up to 8, so the declared shape is
// [E+1, N, pn] (s2 at TP 8 of the full model: I/TP/32 = 12 -> [129, 6144, 16]; the reduced
// config: s2 [17, 1536, 16] at TP 2, [.., 8] at TP 4 and 8). Rows are padded to 256 only past
// the last expert ((E+1) N not a multiple of 256: never at the full model's dims, the reduced
// config's s13 at TP 4 and 8), and every byte there is 0 (a real row i < (E+1) N lands below
// (E+1) N pn, since (E+1) N is a multiple of 32), so the contract does not hold that zero tail
// (the kernel never reads it): a framework passes the first (E+1) N pn bytes.
// checkContract cannot tell shuffled from row-major scales by shape (they are the same at
// TP 1..4), so declaring the layout is mandatory: a scale tensor's HostTensor::layout (host
// maps: checkContract, the harnesses' uploads) or LaunchArg::layout (a launch's RankArgs:
// runtime::packRank against Spec.h's argLayouts, through Generator::launch and RankRuntime::bind)
// must name the variant's layout ("e8m0_shuffle" or "rowmajor"; the frameworks set `is_shuffled`
// on the weight), and an undeclared or other one is an InputError naming the tensor, the
// expected layout and the given one, before anything runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

// ---------------------------------------------------------------- the (16,16) shuffle
/// THE definition of the shuffled layout: the byte offset, in an AITER (16,16)-shuffled
/// fp4x2 matrix of `rows` x `kBytes`, of row-major byte (row, byteCol). rows % 16 == 0,
/// kBytes % 16 == 0 (a last K tile of 16 bytes: see above).
inline int64_t shuffledOffset16x16(int64_t row, int64_t byteCol, int64_t kBytes) {
  const int64_t rowTile = row / 16, r = row % 16;
  const int64_t kTile = byteCol / 32, half = (byteCol / 16) % 2, b = byteCol % 16;
  return rowTile * 16 * kBytes + kTile * 512 + half * 256 + r * 16 + b;
}
/// Row-major fp4x2 [rows, kBytes] -> AITER (16,16)-shuffled. Throws InputError on bad dims.
std::vector<uint8_t> shuffle16x16(const uint8_t* rowMajor, int64_t rows, int64_t kBytes);
/// The inverse: shuffled -> row-major.
std::vector<uint8_t> unshuffle16x16(const uint8_t* shuffled, int64_t rows, int64_t kBytes);

/// (The `input` knob, Knobs.h.) The launch's input (issue 12): Attn, the attention rows (bf16 [S, heads head_dim / TP]) with
/// the rowwise-FP8 o_proj weight, o_proj's per-token quant and GEMM run on the push CTAs
/// (StageOproj.cpp); Part, the old input, this rank's unreduced o_proj partial (bf16 [S, hidden]).
enum class FfnInput { Part = 0, Attn = 1 };
const char* ffnInputName(FfnInput i);  // "part", "attn"
/// What an input may be named, for messages.
inline constexpr const char* kFfnInputsAllowed =
    "expected \"attn\" (the attention rows, o_proj in the launch; the default) or \"part\" (the o_proj partial)";
/// The input `name` names ("attn" or "part"); InputError at `where` naming what was given and both.
FfnInput ffnInputOf(const std::string& name, const std::string& where);

// ---------------------------------------------------------------- scales
/// The storage layout of the e8m0 scales s13 / s2 (the `scales` knob; see the header comment).
enum class ScaleLayout { E8m0Shuffle = 0, RowMajor = 1 };
/// "e8m0_shuffle", "rowmajor": the knob's values and the names HostTensor::layout declares.
const char* scaleLayoutName(ScaleLayout l);
/// The layout named `name` ("e8m0_shuffle" or "rowmajor"); InputError at `where` otherwise.
ScaleLayout scaleLayoutOf(const std::string& name, const std::string& where);
/// The layout a tensor declares: InputError at "weight contract: <name>" unless t.layout names one.
ScaleLayout declaredScaleLayout(const runtime::HostTensor& t, const std::string& name);
/// InputError at "weight contract: <name>" naming the tensor, layout l (expected) and the one t
/// declares (or that it declares none) unless t.layout is l's name.
void checkDeclaredScales(const runtime::HostTensor& t, const std::string& name, ScaleLayout l);
/// The columns a layout holds for kBlocks K blocks a row: kBlocks rounded up to 8 for
/// e8m0_shuffle (AITER's column padding), kBlocks for row-major.
inline int64_t heldScaleColumns(int64_t kBlocks, ScaleLayout l) {
  return l == ScaleLayout::E8m0Shuffle ? (kBlocks + 7) / 8 * 8 : kBlocks;
}
/// AITER's e8m0_shuffle (padded) output offset of scale (i, j) of a matrix with pn columns
/// (pn % 8 == 0): view (pm/32, 2, 16, pn/8, 2, 4) -> permute (0, 3, 5, 2, 4, 1).
inline int64_t e8m0ShuffledOffset(int64_t i, int64_t j, int64_t pn) {
  const int64_t a = i / 32, b = (i / 16) % 2, c = i % 16;
  const int64_t d = j / 8, e = (j / 4) % 2, f = j % 4;
  return ((((a * (pn / 8) + d) * 4 + f) * 16 + c) * 2 + e) * 2 + b;
}
/// THE definition of the contract's scale layouts: the index of row `row`'s scale for K block
/// `kBlock` in one expert's slab of its scales (kBlocks logical K blocks a row; the slab is
/// rows x heldScaleColumns(kBlocks, l) bytes, rows % 32 == 0). KernelContext::scaleByte is the
/// same formula in the IR.
inline int64_t scaleIndex(ScaleLayout l, int64_t row, int64_t kBlock, int64_t kBlocks) {
  if (l == ScaleLayout::E8m0Shuffle) return e8m0ShuffledOffset(row, kBlock, heldScaleColumns(kBlocks, l));
  return row * kBlocks + kBlock;
}
/// AITER's e8m0_shuffle of a [m, n] scale matrix (padded to m % 256 == 0, n % 8 == 0; the
/// result has the padded shape [pm, pn]; padding bytes are 0).
std::vector<uint8_t> e8m0Shuffle(const uint8_t* scales, int64_t m, int64_t n, int64_t* pm, int64_t* pn);
/// Inverse of e8m0Shuffle: the shuffled [>= m rounded up to 32, pn] -> row-major [m, n].
std::vector<uint8_t> e8m0Unshuffle(const uint8_t* shuffled, int64_t m, int64_t n);
/// Logical row-major scales U8 [E+1, N, kBlocks] (N % 32 == 0) as the contract holds them in
/// layout l: e8m0_shuffle over the experts' rows flattened ([E+1, N, pn], the zero row-padding
/// tail dropped, see the header comment) or a copy; its `layout` declares l.
runtime::HostTensor holdScales(const runtime::HostTensor& logical, ScaleLayout l);

// ---------------------------------------------------------------- the contract
struct ContractEntry {
  std::string name;
  runtime::DType dtype;
  std::vector<int64_t> shape;
};
/// The tensors of one rank's contract with scales in layout l, in the order of the header comment.
/// With o_proj in the launch (input Attn) also o_proj's rowwise-FP8 copy, SGLang's _ptpc_weight /
/// _ptpc_scale:
///   wo        U8   [hidden, heads head_dim / TP]  e4m3fn (OCP), AITER (16,16)-shuffled as its
///                                                 smallm_fp8_gemm takes it: the same byte layout
///                                                 as fp4x2's (shuffledOffset16x16 with kBytes = K;
///                                                 one 16 x 32-byte tile is one FP8 MFMA step's A)
///   wo_scale  F32  [hidden]                       the scale per output channel (every rank alike)
/// Rank r holds columns r K .. (r + 1) K - 1 of the logical weight (K = heads head_dim / TP).
std::vector<ContractEntry> contractEntries(const ModelConfig& cfg, int tp, ScaleLayout l,
                                           FfnInput input = FfnInput::Part);
/// Checks `w` holds every contract tensor with its dtype, shape and byte size, and that s13 and
/// s2 declare layout l (HostTensor::layout). Throws InputError (where = "weight contract:
/// <tensor>") naming the tensor, expected and given; a missing wo / wo_scale says the layer has
/// no rowwise-FP8 o_proj copy.
void checkContract(const ModelConfig& cfg, int tp, const runtime::TensorMap& w, ScaleLayout l,
                   FfnInput input = FfnInput::Part);
/// The same check on a launch's map: rank `rank`'s expert tensors (and wo) under their rank names
/// ("w13.r<rank>" ..), the shared ones (router_w, bias, norm_w, wo_scale) under their own. Nothing
/// is copied.
void checkContract(const ModelConfig& cfg, int tp, const runtime::TensorMap& launch, int rank, ScaleLayout l,
                   FfnInput input = FfnInput::Part);
/// The o_proj part alone (wo.r<rank>, wo_scale) of that check: what a launch with o_proj inside
/// needs even when the harness zeroes missing expert weights.
void checkOprojCopy(const ModelConfig& cfg, int tp, const runtime::TensorMap& launch, int rank);
/// The scale layout rank `rank`'s s13 declares in a launch's map (declaredScaleLayout); the
/// references read whichever is declared and checkContract then holds s2 to the same.
ScaleLayout launchScaleLayout(const runtime::TensorMap& launch, int rank);

/// One expert's matrix of a contract pair (w13/s13 or w2/s2), unshuffled.
struct ExpertMatrix {
  int64_t rows = 0, k = 0;       // K values a row
  std::vector<uint8_t> codes;    // row-major fp4x2 [rows, k / 2]
  std::vector<uint8_t> scales;   // row-major e8m0 [rows, k / 32] (unshuffled: the logical values)
  /// The e2m1 code of (row, kk): low nibble for even kk.
  uint32_t code(int64_t row, int64_t kk) const {
    const uint8_t b = codes[static_cast<size_t>(row * (k / 2) + kk / 2)];
    return (kk & 1) ? (b >> 4) : (b & 0xf);
  }
  uint32_t scale(int64_t row, int64_t kk) const {
    return scales[static_cast<size_t>(scaleIndex(ScaleLayout::RowMajor, row, kk / 32, k / 32))];
  }
  /// The dequantized weight fp4 x e8m0 in f32 (exact; NaN for scale 255).
  float value(int64_t row, int64_t kk) const;
};
/// Expert `expert` of a contract pair, read in the layout `s` declares (declaredScaleLayout).
ExpertMatrix expertMatrix(const runtime::HostTensor& w, const runtime::HostTensor& s, int expert);

/// Logical (TP-independent, unshuffled) MXFP4 weights of all E+1 experts:
///   "w13" U8 [E+1, 2 I, hidden/2] (gate rows 0 .. I-1, up rows I .. 2I-1), "s13" [E+1, 2 I, hidden/32],
///   "w2"  U8 [E+1, hidden, I/2], "s2" [E+1, hidden, I/32]
/// -> rank `rank`'s contract tensors w13, s13, w2, s2 for TP `tp` (sliced, shuffled; the scales
/// held in layout l, holdScales).
runtime::TensorMap rankExpertTensors(const ModelConfig& cfg, int tp, int rank, const runtime::TensorMap& logical,
                                     ScaleLayout l);

}  // namespace monogen::specs::minimax_m3
