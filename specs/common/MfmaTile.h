// A wave's tile view of a 16 x 16 MFMA kind (ir/Mfma.h), the lane arithmetic every GEMM stage
// of every spec reads its operands and accumulators through.
#pragma once
#include <functional>
#include <vector>

#include "ir/Builder.h"
#include "ir/Mfma.h"

namespace monogen::specs {

/// One wave's tile view of a 16 x 16 MFMA kind over a K step of `chain` chained MFMAs: the lane's
/// A row, K and accumulator (row, column), so stages never spell out lane arithmetic. of() checks
/// ir/Mfma.h's declared layout has the tile form (IrError otherwise); docs/minimax-m3-kernel.md.
struct MfmaTile {
  ir::MfmaKind kind = ir::MfmaKind::None;
  ir::mfma::Shape shape{};  // M x N x K, elements a lane of A/B and of the accumulator
  int chain = 1;            // MFMAs a step, chained through the accumulator
  int groupK = 0;           // K a lane group holds of one MFMA (8: 16x16x32 bf16 / fp8; 1: 16x16x4 f32)
  int accRows = 0;          // accumulator rows a lane group holds (4)
  ir::Val group;            // (IR) lane / 16: the lane's K group of A and B, its accumulator row block
  ir::Val col;              // (IR) lane % 16: the lane's A row, B column and accumulator column

  /// The host-side constants of `kind`'s tile form (no IR: group and col stay unset), checked
  /// against ir/Mfma.h; throws IrError when the declared layout is not the tile form or chain < 1.
  static MfmaTile of(ir::MfmaKind kind, int chain);
  /// of(kind, chain), then emits group = lane / 16 and col = lane % 16, in that order.
  static MfmaTile at(ir::Val lane, ir::MfmaKind kind, int chain);

  /// K a step covers: chain x K.
  int stepK() const { return chain * shape.k; }
  /// Contiguous K a lane holds in a step: chain x groupK.
  int laneRunK() const { return chain * groupK; }
  /// Offset in the lane's run of MFMA d's first element: groupK x d.
  int kOffset(int d) const { return groupK * d; }
  /// Host mirror for references and tests: the step K (from the step's start) of lane `lane`'s
  /// element e of MFMA d.
  int kOf(int lane, int d, int e) const { return laneRunK() * (lane / shape.m) + kOffset(d) + e; }

  /// (IR) The lane's A row, B column and accumulator column: all lane % 16 (no op emitted).
  ir::Val aRow() const { return col; }
  ir::Val bCol() const { return col; }
  ir::Val accCol() const { return col; }
  /// (IR) The first K of the lane's run from the step's start: group x laneRunK().
  ir::Val laneK0() const;
  /// (IR) The accumulator row of the lane's element i: group x accRows + i.
  ir::Val accRow(int i) const;

  /// (IR) The lane's operands of one step, MFMA d = 0 .. chain - 1 in order: a load of `operand`
  /// (one MFMA's lane elements, e.g. <8 x bf16>, f32) at ptrOf(kOffset(d)), ptrOf giving the
  /// address of the lane's run's element at that offset (K laneK0() + offset of its row).
  std::vector<ir::Val> load(ir::Type operand, const std::function<ir::Val(int kOffset)>& ptrOf) const;
  /// load(), each operand then select(live, loaded, 0): a lane whose run lies past the matrix
  /// (live false; ptrOf must still give an address it may read) gets +0 elements.
  std::vector<ir::Val> load(ir::Type operand, const std::function<ir::Val(int kOffset)>& ptrOf, ir::Val live) const;
  /// (IR) One step: acc = mfma(kind, a(d), b(d), acc) for d = 0 .. chain - 1 in order (the
  /// accumulator chain); returns the last accumulator. a(d) / b(d) give MFMA d's lane operands
  /// (they may emit ops: a dequantized A, a normalized B; b(d) is called before a(d)).
  ir::Val step(ir::Val acc, const std::function<ir::Val(int d)>& a, const std::function<ir::Val(int d)>& b) const;
  /// step() over loaded operands: a[d], b[d].
  ir::Val step(ir::Val acc, const std::vector<ir::Val>& a, const std::vector<ir::Val>& b) const;
  /// (IR) Stores the lane's accumulator elements in order, element i at ptrOf(i) (ptrOf places
  /// element i at its (accRow(i), accCol()); called before the element is extracted).
  void storeAcc(ir::Val acc, const std::function<ir::Val(int i)>& ptrOf) const;
  /// storeAcc() into an array of the accumulator's elements (f32) at `base`: element i at
  /// base + index(i) x 4 bytes, index(i) its (accRow(i), accCol())'s place in the array.
  void storeAcc(ir::Val acc, ir::Val base, const std::function<ir::Val(int i)>& index) const;
};

}  // namespace monogen::specs
