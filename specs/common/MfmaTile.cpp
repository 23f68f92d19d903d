#include "specs/common/MfmaTile.h"

#include <fmt/format.h>

#include "ir/Error.h"

namespace monogen::specs {

using ir::Type;
using ir::Val;

MfmaTile MfmaTile::of(ir::MfmaKind kind, int chain) {
  namespace mf = ir::mfma;
  const std::string where = fmt::format("MfmaTile({})", ir::mfmaKindName(kind));
  MfmaTile t;
  t.kind = kind;
  t.shape = mf::shapeOf(kind);
  t.chain = chain;
  const mf::Shape& s = t.shape;
  if (s.m != 16 || s.n != 16 || s.abPerLane < 1 || s.accPerLane < 1)
    throw IrError(where, fmt::format("expected a 16 x 16 MFMA kind of ir/Mfma.h, got M x N = {} x {}", s.m, s.n));
  if (chain < 1) throw IrError(where, fmt::format("a step chains 1 or more MFMAs, got {}", chain));
  const int groups = mf::kWave / s.m;
  t.groupK = mf::aCol(kind, s.m, 0) - mf::aCol(kind, 0, 0);
  t.accRows = mf::dRow(s.m, 0) - mf::dRow(0, 0);
  if (t.groupK * groups != s.k || t.accRows * groups != s.m || s.accPerLane != t.accRows)
    throw IrError(where, fmt::format("the declared layout's K groups ({} K x {}) or accumulator rows ({} x {}) do "
                                     "not tile the {} x {} x {} shape",
                                     t.groupK, groups, t.accRows, groups, s.m, s.n, s.k));
  // The tile form, element by element, against the declared layout (one MFMA: kOf with d = 0).
  for (int l = 0; l < mf::kWave; ++l) {
    for (int e = 0; e < s.abPerLane; ++e) {
      const int k = t.groupK * (l / s.m) + e;
      if (mf::aRow(kind, l, e) != l % s.m || mf::aCol(kind, l, e) != k || mf::bRow(kind, l, e) != k ||
          mf::bCol(kind, l, e) != l % s.n)
        throw IrError(where, fmt::format("lane {} element {}: the declared A[{}][{}], B[{}][{}] is not the tile "
                                         "form A[{}][{}], B[{}][{}] (ir/Mfma.h)",
                                         l, e, mf::aRow(kind, l, e), mf::aCol(kind, l, e), mf::bRow(kind, l, e),
                                         mf::bCol(kind, l, e), l % s.m, k, k, l % s.n));
    }
    for (int i = 0; i < s.accPerLane; ++i)
      if (mf::dRow(l, i) != t.accRows * (l / s.m) + i || mf::dCol(l, i) != l % s.n)
        throw IrError(where, fmt::format("lane {} accumulator element {}: the declared D[{}][{}] is not the tile "
                                         "form D[{}][{}] (ir/Mfma.h)",
                                         l, i, mf::dRow(l, i), mf::dCol(l, i), t.accRows * (l / s.m) + i, l % s.n));
  }
  return t;
}

MfmaTile MfmaTile::at(Val lane, ir::MfmaKind kind, int chain) {
  MfmaTile t = of(kind, chain);
  ir::Builder& b = *lane.b;
  t.group = lane / b.i32(t.shape.m);
  t.col = lane % b.i32(t.shape.m);
  return t;
}

Val MfmaTile::laneK0() const { return group * group.b->i32(laneRunK()); }

Val MfmaTile::accRow(int i) const {
  ir::Builder& b = *group.b;
  return group * b.i32(accRows) + b.i32(i);
}

std::vector<Val> MfmaTile::load(Type operand, const std::function<Val(int)>& ptrOf) const {
  ir::Builder& b = *group.b;
  std::vector<Val> v;
  for (int d = 0; d < chain; ++d) v.push_back(b.load(operand, ptrOf(kOffset(d))));
  return v;
}

std::vector<Val> MfmaTile::load(Type operand, const std::function<Val(int)>& ptrOf, Val live) const {
  ir::Builder& b = *group.b;
  auto zero = [&] {  // +0 of the operand's type
    const Type e = operand.elem();
    Val z = !e.isFloat() ? b.constInt(e, 0) : e.scalar == ir::Scalar::BF16 ? b.bf16(0.0) : b.f32(0.0);
    return operand.isVector() ? b.splat(z, operand.lanes) : z;
  };
  std::vector<Val> v;
  for (int d = 0; d < chain; ++d) {
    Val x = b.load(operand, ptrOf(kOffset(d)));
    v.push_back(b.select(live, x, zero()));
  }
  return v;
}

Val MfmaTile::step(Val acc, const std::function<Val(int)>& a, const std::function<Val(int)>& bOp) const {
  ir::Builder& b = *acc.b;
  for (int d = 0; d < chain; ++d) {
    Val bd = bOp(d);  // B's ops first, then A's (the order the stages emitted them in)
    acc = b.mfma(kind, a(d), bd, acc);
  }
  return acc;
}

Val MfmaTile::step(Val acc, const std::vector<Val>& a, const std::vector<Val>& bOp) const {
  if (static_cast<int>(a.size()) != chain || static_cast<int>(bOp.size()) != chain)
    throw IrError(fmt::format("MfmaTile({}).step", ir::mfmaKindName(kind)),
                  fmt::format("expected {} A and B operands (one an MFMA of the chain), got {} and {}", chain,
                              a.size(), bOp.size()));
  return step(acc, [&](int d) { return a[static_cast<size_t>(d)]; }, [&](int d) { return bOp[static_cast<size_t>(d)]; });
}

void MfmaTile::storeAcc(Val acc, Val base, const std::function<Val(int)>& index) const {
  ir::Builder& b = *acc.b;
  const int64_t bytes = acc.type().elemBytes();
  for (int i = 0; i < shape.accPerLane; ++i) {
    Val at = index(i);
    b.store(b.ptrAdd(base, at * b.i32(bytes)), b.extract(acc, i));
  }
}

void MfmaTile::storeAcc(Val acc, const std::function<Val(int)>& ptrOf) const {
  ir::Builder& b = *acc.b;
  for (int i = 0; i < shape.accPerLane; ++i) {
    Val p = ptrOf(i);
    b.store(p, b.extract(acc, i));
  }
}

}  // namespace monogen::specs
