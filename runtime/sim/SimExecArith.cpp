// The interpreter's arithmetic class: constants and ids, integer and float arithmetic, compares
// and selects, vector element ops and pointer offsets (their numerics: docs/sim.md).
#include <cmath>

#include "runtime/sim/SimLanes.h"
#include "runtime/sim/SimLaunch.h"

namespace monogen::runtime {

using namespace simlanes;
using ir::OpCode;
using ir::Scalar;

namespace {

// Elementwise integer binary op over every active lane's elements.
template <class U, class F>
inline void intBinT(uint64_t exec, int L, uint8_t* R, const uint8_t* A, const uint8_t* B, uint64_t mask, F&& f) {
  FOR_LANES(exec, l) {
    for (int e = 0; e < L; ++e) {
      const size_t o = (static_cast<size_t>(l) * L + e) * sizeof(U);
      st<U>(R + o, static_cast<U>(f(static_cast<uint64_t>(ld<U>(A + o)), static_cast<uint64_t>(ld<U>(B + o)), l) & mask));
    }
  }
}
template <class F>
inline void intBin(const SimInst& in, uint64_t exec, uint8_t* fr, F&& f) {
  const int L = in.rt.lanes, eb = in.rt.elemBytes();
  const uint64_t mask = lowMask(in.rt.elemBits());
  uint8_t* R = fr + in.res;
  const uint8_t* A = fr + in.opd[0];
  const uint8_t* B = fr + in.opd[1];
  switch (eb) {
    case 1: intBinT<uint8_t>(exec, L, R, A, B, mask, f); break;
    case 2: intBinT<uint16_t>(exec, L, R, A, B, mask, f); break;
    case 4: intBinT<uint32_t>(exec, L, R, A, B, mask, f); break;
    default: intBinT<uint64_t>(exec, L, R, A, B, mask, f); break;
  }
}

// Elementwise float binary op (f32, or bf16 computed in f32) over every active lane's elements.
template <class F>
inline void fltBin(const SimInst& in, uint64_t exec, uint8_t* fr, F&& f) {
  const int L = in.rt.lanes;
  uint8_t* R = fr + in.res;
  const uint8_t* A = fr + in.opd[0];
  const uint8_t* B = fr + in.opd[1];
  if (in.rt.scalar == Scalar::F32) {
    FOR_LANES(exec, l) {
      for (int e = 0; e < L; ++e) {
        const size_t o = (static_cast<size_t>(l) * L + e) * 4;
        st<float>(R + o, f(ld<float>(A + o), ld<float>(B + o)));
      }
    }
  } else {
    FOR_LANES(exec, l) {
      for (int e = 0; e < L; ++e) {
        const size_t o = (static_cast<size_t>(l) * L + e) * 2;
        stF(R + o, true, f(ldF(A + o, true), ldF(B + o, true)));
      }
    }
  }
}

inline bool cmpInt(ir::CmpPred p, uint64_t a, uint64_t b, int bits) {
  const int64_t sa = sx(a, bits), sb = sx(b, bits);
  switch (p) {
    case ir::CmpPred::Eq: return a == b;
    case ir::CmpPred::Ne: return a != b;
    case ir::CmpPred::Slt: return sa < sb;
    case ir::CmpPred::Sle: return sa <= sb;
    case ir::CmpPred::Sgt: return sa > sb;
    case ir::CmpPred::Sge: return sa >= sb;
    case ir::CmpPred::Ult: return a < b;
    case ir::CmpPred::Ule: return a <= b;
    case ir::CmpPred::Ugt: return a > b;
    case ir::CmpPred::Uge: return a >= b;
    default: return false;
  }
}
inline bool cmpFlt(ir::CmpPred p, float a, float b) {
  const bool uno = std::isnan(a) || std::isnan(b);
  switch (p) {
    case ir::CmpPred::Oeq: return !uno && a == b;
    case ir::CmpPred::One: return !uno && a != b;
    case ir::CmpPred::Olt: return !uno && a < b;
    case ir::CmpPred::Ole: return !uno && a <= b;
    case ir::CmpPred::Ogt: return !uno && a > b;
    case ir::CmpPred::Oge: return !uno && a >= b;
    case ir::CmpPred::Uno: return uno;
    case ir::CmpPred::Ord: return !uno;
    default: return false;
  }
}

}  // namespace

SimLaunch::Status SimLaunch::visitValue(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  const ir::Op& op = *in.op;
  switch (static_cast<OpCode>(in.code)) {
    case OpCode::ConstInt: {
      const int n = in.rt.bytes();
      const uint64_t v = static_cast<uint64_t>(op.attrs.imm) & lowMask(in.rt.elemBits());
      for (int l = 0; l < 64; ++l) stN(fr + in.res + n * l, n, v);
      break;
    }
    case OpCode::ConstFloat: {
      const float f = static_cast<float>(op.attrs.fimm);
      const bool bf = in.rt.scalar == Scalar::BF16;
      for (int l = 0; l < 64; ++l) stF(fr + in.res + (bf ? 2 : 4) * l, bf, f);
      break;
    }
    case OpCode::ThreadId:
      for (int l = 0; l < 64; ++l) st<int32_t>(fr + in.res + 4 * l, w.wave * 64 + l);
      break;
    case OpCode::LaneId:
      for (int l = 0; l < 64; ++l) st<int32_t>(fr + in.res + 4 * l, l);
      break;
    case OpCode::WaveId:
      for (int l = 0; l < 64; ++l) st<int32_t>(fr + in.res + 4 * l, w.wave);
      break;
    case OpCode::BlockId:
      for (int l = 0; l < 64; ++l) st<int32_t>(fr + in.res + 4 * l, w.cta);
      break;
    case OpCode::Arg: {
      const uint64_t v = args_[w.rank - opts_.firstRank][static_cast<size_t>(op.attrs.imm)] & lowMask(in.rt.elemBits());
      const int n = in.rt.bytes();
      for (int l = 0; l < 64; ++l) stN(fr + in.res + n * l, n, v);
      break;
    }
    default: cannotRun(w, in);
  }
  ++w.pc;
  return kContinue;
}

SimLaunch::Status SimLaunch::visitArith(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  const uint64_t exec = w.exec;
  const bool flt = in.rt.isFloat();
  const int bits = in.rt.elemBits();
  switch (static_cast<OpCode>(in.code)) {
    case OpCode::Add:
      if (flt) fltBin(in, exec, fr, [](float a, float b) { return a + b; });
      else intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a + b; });
      break;
    case OpCode::Sub:
      if (flt) fltBin(in, exec, fr, [](float a, float b) { return a - b; });
      else intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a - b; });
      break;
    case OpCode::Mul:
      if (flt) fltBin(in, exec, fr, [](float a, float b) { return a * b; });
      else intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a * b; });
      break;
    case OpCode::And: intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a & b; }); break;
    case OpCode::Or: intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a | b; }); break;
    case OpCode::Xor: intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a ^ b; }); break;
    case OpCode::Shl: intBin(in, exec, fr, [bits](uint64_t a, uint64_t b, int) { return a << (b % bits); }); break;
    case OpCode::LShr: intBin(in, exec, fr, [bits](uint64_t a, uint64_t b, int) { return a >> (b % bits); }); break;
    case OpCode::AShr:
      intBin(in, exec, fr, [bits](uint64_t a, uint64_t b, int) { return static_cast<uint64_t>(sx(a, bits) >> (b % bits)); });
      break;
    case OpCode::Min:
    case OpCode::Max: {
      const bool mx = in.code == static_cast<uint16_t>(OpCode::Max);
      if (flt && mx) fltBin(in, exec, fr, [](float a, float b) { return ir::num::maxNum(a, b); });
      else if (flt) fltBin(in, exec, fr, [](float a, float b) { return ir::num::minNum(a, b); });
      else intBin(in, exec, fr, [bits, mx](uint64_t a, uint64_t b, int) { return (sx(a, bits) < sx(b, bits)) != mx ? a : b; });
      break;
    }
    case OpCode::UMin: intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a < b ? a : b; }); break;
    case OpCode::UMax: intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a > b ? a : b; }); break;
    case OpCode::Fma:
      FOR_LANES(exec, l) {
        const float a = ld<float>(fr + in.opd[0] + 4 * l), b = ld<float>(fr + in.opd[1] + 4 * l),
                    c = ld<float>(fr + in.opd[2] + 4 * l);
        st<float>(fr + in.res + 4 * l, std::fma(a, b, c));
      }
      break;
    default: cannotRun(w, in);
  }
  ++w.pc;
  return kContinue;
}

SimLaunch::Status SimLaunch::visitDivide(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  const uint64_t exec = w.exec;
  const bool rem = in.code == static_cast<uint16_t>(OpCode::Rem) || in.code == static_cast<uint16_t>(OpCode::URem);
  const bool isUnsigned = in.code == static_cast<uint16_t>(OpCode::UDiv) || in.code == static_cast<uint16_t>(OpCode::URem);
  if (isUnsigned) {
    intBin(in, exec, fr, [&](uint64_t a, uint64_t b, int l) -> uint64_t {
      if (b == 0) fail(w, in, l, "integer division by zero");
      return rem ? a % b : a / b;
    });
  } else if (in.rt.isFloat()) {
    if (!rem) fltBin(in, exec, fr, [](float a, float b) { return a / b; });
    else fltBin(in, exec, fr, [](float a, float b) { return std::fmod(a, b); });
  } else {
    const int bits = in.rt.elemBits();
    intBin(in, exec, fr, [&](uint64_t a, uint64_t b, int l) -> uint64_t {
      const int64_t sa = sx(a, bits), sb = sx(b, bits);
      if (sb == 0) fail(w, in, l, "integer division by zero");
      if (sb == -1) return rem ? 0 : static_cast<uint64_t>(0) - a;  // INT_MIN / -1 wraps
      return static_cast<uint64_t>(rem ? sa % sb : sa / sb);
    });
  }
  ++w.pc;
  return kContinue;
}

SimLaunch::Status SimLaunch::visitSelect(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  const uint64_t exec = w.exec;
  if (in.code == static_cast<uint16_t>(OpCode::Cmp)) {
    const int L = in.t0.lanes, eb = in.t0.elemBytes(), bits = in.t0.elemBits();
    const ir::CmpPred p = in.op->attrs.pred;
    const bool flt = in.t0.isFloat(), bf = in.t0.scalar == Scalar::BF16;
    FOR_LANES(exec, l) for (int e = 0; e < L; ++e) {
      const size_t o = (static_cast<size_t>(l) * L + e) * eb;
      fr[in.res + l * L + e] = flt ? cmpFlt(p, ldF(fr + in.opd[0] + o, bf), ldF(fr + in.opd[1] + o, bf))
                                   : cmpInt(p, ldN(fr + in.opd[0] + o, eb), ldN(fr + in.opd[1] + o, eb), bits);
    }
  } else if (in.t0.lanes == 1) {  // one condition a lane
    const int n = in.rt.bytes();
    FOR_LANES(exec, l) {
      const uint32_t src = fr[in.opd[0] + l] ? in.opd[1] : in.opd[2];
      copyN(fr + in.res + n * l, fr + src + n * l, n);
    }
  } else {  // one condition an element
    const int L = in.rt.lanes, eb = in.rt.elemBytes();
    FOR_LANES(exec, l) for (int e = 0; e < L; ++e) {
      const uint32_t src = fr[in.opd[0] + l * L + e] ? in.opd[1] : in.opd[2];
      const size_t o = (static_cast<size_t>(l) * L + e) * eb;
      copyN(fr + in.res + o, fr + src + o, eb);
    }
  }
  ++w.pc;
  return kContinue;
}

SimLaunch::Status SimLaunch::visitVector(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  const uint64_t exec = w.exec;
  const int i = static_cast<int>(in.op->attrs.imm);
  switch (static_cast<OpCode>(in.code)) {
    case OpCode::Extract: {
      const int eb = in.rt.bytes(), L = in.t0.lanes;
      FOR_LANES(exec, l) copyN(fr + in.res + eb * l, fr + in.opd[0] + (static_cast<size_t>(l) * L + i) * eb, eb);
      break;
    }
    case OpCode::Insert: {
      const int n = in.rt.bytes(), eb = in.rt.elemBytes();
      FOR_LANES(exec, l) {
        copyN(fr + in.res + n * l, fr + in.opd[0] + n * l, n);
        copyN(fr + in.res + n * l + eb * i, fr + in.opd[1] + eb * l, eb);
      }
      break;
    }
    case OpCode::Splat: {
      const int eb = in.rt.elemBytes(), L = in.rt.lanes;
      FOR_LANES(exec, l) for (int e = 0; e < L; ++e)
        copyN(fr + in.res + (static_cast<size_t>(l) * L + e) * eb, fr + in.opd[0] + eb * l, eb);
      break;
    }
    case OpCode::PtrAdd: {  // an LDS pointer is 4 bytes a lane, a global one 8; the offset i32 (signed) or i64
      const bool off64 = in.t1.scalar == Scalar::I64;
      if (in.t0.space == ir::AddrSpace::Lds) {
        FOR_LANES(exec, l) {
          const uint32_t off = off64 ? static_cast<uint32_t>(ld<uint64_t>(fr + in.opd[1] + 8 * l))
                                     : ld<uint32_t>(fr + in.opd[1] + 4 * l);
          st<uint32_t>(fr + in.res + 4 * l, ld<uint32_t>(fr + in.opd[0] + 4 * l) + off);
        }
      } else {
        FOR_LANES(exec, l) {
          const uint64_t off = off64 ? ld<uint64_t>(fr + in.opd[1] + 8 * l)
                                     : static_cast<uint64_t>(static_cast<int64_t>(ld<int32_t>(fr + in.opd[1] + 4 * l)));
          st<uint64_t>(fr + in.res + 8 * l, ld<uint64_t>(fr + in.opd[0] + 8 * l) + off);
        }
      }
      break;
    }
    default: cannotRun(w, in);
  }
  ++w.pc;
  return kContinue;
}

}  // namespace monogen::runtime
