// The weight contract of the MiniMax-M3 FFN launch: the tensors a serving framework holds for one
// rank, the AITER (16,16) shuffle of the MXFP4 data, the e8m0 scale layouts and the launch check.
// The layouts, the frameworks' sources and the scales decision: docs/weight-contract.md.
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
/// kBytes % 16 == 0 (a last K tile of 16 bytes: docs/weight-contract.md, "An extension").
inline int64_t shuffledOffset16x16(int64_t row, int64_t byteCol, int64_t kBytes) {
  const int64_t rowTile = row / 16, r = row % 16;
  const int64_t kTile = byteCol / 32, half = (byteCol / 16) % 2, b = byteCol % 16;
  return rowTile * 16 * kBytes + kTile * 512 + half * 256 + r * 16 + b;
}
/// Row-major fp4x2 [rows, kBytes] -> AITER (16,16)-shuffled. Throws InputError on bad dims.
std::vector<uint8_t> shuffle16x16(const uint8_t* rowMajor, int64_t rows, int64_t kBytes);
/// The inverse: shuffled -> row-major.
std::vector<uint8_t> unshuffle16x16(const uint8_t* shuffled, int64_t rows, int64_t kBytes);

/// The launch's input (the `input` knob, Knobs.h): Attn, the attention rows (bf16 [S, heads
/// head_dim / TP]) with o_proj's quant and GEMM on the push CTAs (StageOproj.cpp); Part, this
/// rank's unreduced o_proj partial (bf16 [S, hidden]).
enum class FfnInput { Part = 0, Attn = 1 };
const char* ffnInputName(FfnInput i);  // "part", "attn"
/// What an input may be named, for messages.
inline constexpr const char* kFfnInputsAllowed =
    "expected \"attn\" (the attention rows, o_proj in the launch; the default) or \"part\" (the o_proj partial)";
/// The input `name` names ("attn" or "part"); InputError at `where` naming what was given and both.
FfnInput ffnInputOf(const std::string& name, const std::string& where);

// ---------------------------------------------------------------- scales
/// The storage layout of the e8m0 scales s13 / s2 (the `scales` knob; docs/weight-contract.md).
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
/// tail dropped: docs/weight-contract.md) or a copy; its `layout` declares l.
runtime::HostTensor holdScales(const runtime::HostTensor& logical, ScaleLayout l);

// ---------------------------------------------------------------- the contract
struct ContractEntry {
  std::string name;
  runtime::DType dtype;
  std::vector<int64_t> shape;
};
/// The tensors of one rank's contract with scales in layout l, in docs/weight-contract.md's order;
/// with input Attn also o_proj's rowwise-FP8 copy: wo U8 [hidden, heads head_dim / TP] (e4m3fn,
/// (16,16)-shuffled: this rank's K columns) and wo_scale F32 [hidden].
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
