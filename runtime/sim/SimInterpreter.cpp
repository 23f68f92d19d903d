// The Sim device's interpreter: SimLaunch::step, one flat instruction of one wave (the per-op
// switch), and the numeric helpers it computes with (element loads and stores, the lane loops of
// integer and float ops, compares, conversions). The scheduler that calls it is SimScheduler.cpp;
// the memory accesses it makes go through SimAccess.cpp.
//
// Numerics (the executable definition of ir/Op.h):
// - ints wrap (two's complement); shift amounts are taken modulo the bit width; signed division
//   truncates, INT_MIN / -1 wraps to INT_MIN (remainder 0); division by zero is a SimError.
// - f32 is IEEE binary32 with round-to-nearest-even; Div and Sqrt are correctly rounded, Fma has
//   one rounding. Rcp, Rsq and Exp2 are ir/Numerics.h's declared models (num::rcp, rsq, exp2): this
//   is the declared model; the hardware's v_rcp_f32 / v_rsq_f32 / v_exp_f32 are approximations
//   within 1 ulp of it. Min/Max on floats are ir::num::minNum/maxNum (a NaN operand, quiet or
//   signalling, yields the other; of two equal operands, +-0 included, the first).
// - bf16 arithmetic computes in f32 and rounds the result with ir::num::f32ToBf16 (RNE).
// - FPToSI truncates toward zero, saturates out-of-range values and maps NaN to 0 (as
//   v_cvt_i32_f32 does; LLVM calls it poison).
// - Cmp predicates are LLVM's: ordered ones are false on a NaN, Uno is true if either is NaN.
// - Mfma ignores the exec mask like the hardware: it reads and writes all 64 lanes.
// - ConstInt/ConstFloat/ids/Arg write every lane (they are wave-uniform); other ops write only
//   the active lanes.
#include "runtime/sim/SimLaunch.h"
#include "runtime/sim/SimShared.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "ir/Error.h"
#include "ir/Mfma.h"
#include "ir/Numerics.h"

namespace monogen::runtime {

using ir::OpCode;
using ir::Scalar;

namespace {

template <class T>
inline T ld(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
inline void st(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

inline uint64_t ldN(const uint8_t* p, int n) {
  switch (n) {
    case 1: return *p;
    case 2: return ld<uint16_t>(p);
    case 4: return ld<uint32_t>(p);
    default: return ld<uint64_t>(p);
  }
}
inline void stN(uint8_t* p, int n, uint64_t v) {
  switch (n) {
    case 1: *p = static_cast<uint8_t>(v); break;
    case 2: st<uint16_t>(p, static_cast<uint16_t>(v)); break;
    case 4: st<uint32_t>(p, static_cast<uint32_t>(v)); break;
    default: st<uint64_t>(p, v); break;
  }
}
inline int64_t sx(uint64_t v, int bits) {
  if (bits >= 64) return static_cast<int64_t>(v);
  const int s = 64 - bits;
  return static_cast<int64_t>(v << s) >> s;
}
inline uint64_t lowMask(int bits) { return bits >= 64 ? ~0ull : ((1ull << bits) - 1); }

// memcpy of a register element: fixed sizes compile to plain moves.
inline void copyN(uint8_t* d, const uint8_t* s, int n) {
  switch (n) {
    case 1: *d = *s; break;
    case 2: std::memcpy(d, s, 2); break;
    case 4: std::memcpy(d, s, 4); break;
    case 8: std::memcpy(d, s, 8); break;
    case 16: std::memcpy(d, s, 16); break;
    default: std::memcpy(d, s, static_cast<size_t>(n)); break;
  }
}

#define FOR_LANES(exec, l) \
  for (uint64_t m_ = (exec); m_; m_ &= m_ - 1) \
    if (const int l = __builtin_ctzll(m_); true)

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

inline float ldF(const uint8_t* p, bool bf) { return bf ? ir::num::bf16ToF32(ld<uint16_t>(p)) : ld<float>(p); }
inline void stF(uint8_t* p, bool bf, float v) {
  if (bf) st<uint16_t>(p, ir::num::f32ToBf16(v));
  else st<float>(p, v);
}

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

template <class F>
inline void fltUn(const SimInst& in, uint64_t exec, uint8_t* fr, F&& f) {
  const bool bf = in.rt.scalar == Scalar::BF16;
  const int L = in.rt.lanes, eb = bf ? 2 : 4;
  uint8_t* R = fr + in.res;
  const uint8_t* A = fr + in.opd[0];
  FOR_LANES(exec, l) {
    for (int e = 0; e < L; ++e) {
      const size_t o = (static_cast<size_t>(l) * L + e) * eb;
      stF(R + o, bf, f(ldF(A + o, bf)));
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

inline int64_t fpToInt(float f, int bits) {
  if (std::isnan(f)) return 0;
  const double t = std::trunc(static_cast<double>(f));
  const double lo = -std::ldexp(1.0, bits - 1), hi = std::ldexp(1.0, bits - 1);
  if (t < lo) return bits == 64 ? INT64_MIN : static_cast<int64_t>(lo);
  if (t >= hi) return bits == 64 ? INT64_MAX : static_cast<int64_t>(hi) - 1;
  return static_cast<int64_t>(t);
}

inline int64_t satAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The interpreter: one instruction of one wave.

SimLaunch::Status SimLaunch::step(SimWave& w) {
  const SimInst& in = prog_.insts[w.pc];
  uint8_t* const fr = w.frame;
  const uint64_t exec = w.exec;
  const ir::Op& op = *in.op;
  const int stageSlot = in.stage >= 0 ? in.stage : static_cast<int>(plan_.stages.size());

  switch (in.code) {
    // --- control flow -----------------------------------------------------------------------
    case kSimIfBegin: {
      uint64_t c = 0;
      FOR_LANES(exec, l) if (fr[in.opd[0] + l]) c |= 1ull << l;
      uint64_t* ms = reinterpret_cast<uint64_t*>(fr + prog_.maskBase) + 2 * in.depth;
      ms[0] = exec;
      ms[1] = exec & ~c;
      w.exec = c;
      w.pc = c ? w.pc + 1 : in.target;
      return kContinue;
    }
    case kSimElse: {
      const uint64_t* ms = reinterpret_cast<uint64_t*>(fr + prog_.maskBase) + 2 * in.depth;
      w.exec = ms[1];
      w.pc = w.exec ? w.pc + 1 : in.target;
      return kContinue;
    }
    case kSimEndIf:
    case kSimLoopEnd: {
      w.exec = reinterpret_cast<uint64_t*>(fr + prog_.maskBase)[2 * in.depth];
      ++w.pc;
      return kContinue;
    }
    case kSimForInit: {
      reinterpret_cast<uint64_t*>(fr + prog_.maskBase)[2 * in.depth] = exec;
      FOR_LANES(exec, l) st<int32_t>(fr + in.res + 4 * l, ld<int32_t>(fr + in.opd[0] + 4 * l));
      ++w.pc;
      return kContinue;
    }
    case kSimForCheck: {
      uint64_t keep = 0;
      FOR_LANES(exec, l) {
        const int32_t iv = ld<int32_t>(fr + in.opd[0] + 4 * l), hi = ld<int32_t>(fr + in.opd[1] + 4 * l),
                      stp = ld<int32_t>(fr + in.opd[2] + 4 * l);
        if (stp > 0 ? iv < hi : iv > hi) keep |= 1ull << l;
      }
      w.exec = keep;
      w.pc = keep ? w.pc + 1 : in.target;
      return kContinue;
    }
    case kSimForStep: {
      FOR_LANES(exec, l) {
        const uint32_t iv = ld<uint32_t>(fr + in.opd[0] + 4 * l), stp = ld<uint32_t>(fr + in.opd[1] + 4 * l);
        st<uint32_t>(fr + in.res + 4 * l, iv + stp);
      }
      w.pc = in.target;
      return kContinue;
    }
    case kSimLoopBegin: {
      reinterpret_cast<uint64_t*>(fr + prog_.maskBase)[2 * in.depth] = exec;
      ++w.pc;
      return kContinue;
    }
    case kSimWhileCheck: {
      uint64_t keep = 0;
      FOR_LANES(exec, l) if (fr[in.opd[0] + l]) keep |= 1ull << l;
      w.exec = keep;
      w.pc = keep ? w.pc + 1 : in.target;
      return kContinue;
    }
    case kSimJump: {
      w.pc = in.target;
      return kContinue;
    }
    default: break;
  }

  switch (static_cast<OpCode>(in.code)) {
    // --- values -----------------------------------------------------------------------------
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

    // --- integer / float arithmetic -----------------------------------------------------------
    case OpCode::Add:
      if (in.rt.isFloat()) fltBin(in, exec, fr, [](float a, float b) { return a + b; });
      else intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a + b; });
      break;
    case OpCode::Sub:
      if (in.rt.isFloat()) fltBin(in, exec, fr, [](float a, float b) { return a - b; });
      else intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a - b; });
      break;
    case OpCode::Mul:
      if (in.rt.isFloat()) fltBin(in, exec, fr, [](float a, float b) { return a * b; });
      else intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a * b; });
      break;
    case OpCode::Div:
    case OpCode::Rem: {
      if (in.rt.isFloat()) {
        if (in.code == static_cast<uint16_t>(OpCode::Div)) fltBin(in, exec, fr, [](float a, float b) { return a / b; });
        else fltBin(in, exec, fr, [](float a, float b) { return std::fmod(a, b); });
        break;
      }
      const int bits = in.rt.elemBits();
      const bool rem = in.code == static_cast<uint16_t>(OpCode::Rem);
      intBin(in, exec, fr, [&](uint64_t a, uint64_t b, int l) -> uint64_t {
        const int64_t sa = sx(a, bits), sb = sx(b, bits);
        if (sb == 0) fail(w, in, l, "integer division by zero");
        if (sb == -1) return rem ? 0 : static_cast<uint64_t>(0) - a;  // INT_MIN / -1 wraps
        return static_cast<uint64_t>(rem ? sa % sb : sa / sb);
      });
      break;
    }
    case OpCode::UDiv:
    case OpCode::URem: {
      const bool rem = in.code == static_cast<uint16_t>(OpCode::URem);
      intBin(in, exec, fr, [&](uint64_t a, uint64_t b, int l) -> uint64_t {
        if (b == 0) fail(w, in, l, "integer division by zero");
        return rem ? a % b : a / b;
      });
      break;
    }
    case OpCode::And: intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a & b; }); break;
    case OpCode::Or: intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a | b; }); break;
    case OpCode::Xor: intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a ^ b; }); break;
    case OpCode::Shl: {
      const int bits = in.rt.elemBits();
      intBin(in, exec, fr, [bits](uint64_t a, uint64_t b, int) { return a << (b % bits); });
      break;
    }
    case OpCode::LShr: {
      const int bits = in.rt.elemBits();
      intBin(in, exec, fr, [bits](uint64_t a, uint64_t b, int) { return a >> (b % bits); });
      break;
    }
    case OpCode::AShr: {
      const int bits = in.rt.elemBits();
      intBin(in, exec, fr, [bits](uint64_t a, uint64_t b, int) {
        return static_cast<uint64_t>(sx(a, bits) >> (b % bits));
      });
      break;
    }
    case OpCode::Min:
    case OpCode::Max: {
      const bool mx = in.code == static_cast<uint16_t>(OpCode::Max);
      if (in.rt.isFloat()) {
        if (mx) fltBin(in, exec, fr, [](float a, float b) { return ir::num::maxNum(a, b); });
        else fltBin(in, exec, fr, [](float a, float b) { return ir::num::minNum(a, b); });
        break;
      }
      const int bits = in.rt.elemBits();
      intBin(in, exec, fr, [bits, mx](uint64_t a, uint64_t b, int) {
        const bool lt = sx(a, bits) < sx(b, bits);
        return (lt != mx) ? a : b;
      });
      break;
    }
    case OpCode::UMin: intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a < b ? a : b; }); break;
    case OpCode::UMax: intBin(in, exec, fr, [](uint64_t a, uint64_t b, int) { return a > b ? a : b; }); break;
    case OpCode::Fma: {
      FOR_LANES(exec, l) {
        const float a = ld<float>(fr + in.opd[0] + 4 * l), b = ld<float>(fr + in.opd[1] + 4 * l),
                    c = ld<float>(fr + in.opd[2] + 4 * l);
        st<float>(fr + in.res + 4 * l, std::fma(a, b, c));
      }
      break;
    }
    case OpCode::Cmp: {
      const int L = in.t0.lanes, eb = in.t0.elemBytes(), bits = in.t0.elemBits();
      const ir::CmpPred p = op.attrs.pred;
      if (in.t0.isFloat()) {
        const bool bf = in.t0.scalar == Scalar::BF16;
        FOR_LANES(exec, l) for (int e = 0; e < L; ++e) {
          const size_t o = (static_cast<size_t>(l) * L + e) * eb;
          fr[in.res + l * L + e] = cmpFlt(p, ldF(fr + in.opd[0] + o, bf), ldF(fr + in.opd[1] + o, bf));
        }
      } else {
        FOR_LANES(exec, l) for (int e = 0; e < L; ++e) {
          const size_t o = (static_cast<size_t>(l) * L + e) * eb;
          fr[in.res + l * L + e] = cmpInt(p, ldN(fr + in.opd[0] + o, eb), ldN(fr + in.opd[1] + o, eb), bits);
        }
      }
      break;
    }
    case OpCode::Select: {
      const int n = in.rt.bytes(), L = in.rt.lanes, eb = in.rt.elemBytes();
      const ir::Type ct = in.t0;
      if (ct.lanes == 1) {
        FOR_LANES(exec, l) {
          const uint32_t src = fr[in.opd[0] + l] ? in.opd[1] : in.opd[2];
          copyN(fr + in.res + n * l, fr + src + n * l, n);
        }
      } else {
        FOR_LANES(exec, l) for (int e = 0; e < L; ++e) {
          const uint32_t src = fr[in.opd[0] + l * L + e] ? in.opd[1] : in.opd[2];
          const size_t o = (static_cast<size_t>(l) * L + e) * eb;
          copyN(fr + in.res + o, fr + src + o, eb);
        }
      }
      break;
    }

    // --- conversions ------------------------------------------------------------------------
    case OpCode::Bitcast:
    case OpCode::PtrToInt:
    case OpCode::IntToPtr: {
      const int n = in.rt.bytes();
      const bool boolSide = in.rt.scalar == Scalar::I1 || in.t0.scalar == Scalar::I1;
      if (!boolSide) {
        FOR_LANES(exec, l) copyN(fr + in.res + n * l, fr + in.opd[0] + n * l, n);
        break;
      }
      // i1 vectors pack one bit an element (element 0 in bit 0).
      const int totalBits = in.rt.lanes * in.rt.elemBits();
      const int sn = in.t0.bytes();
      FOR_LANES(exec, l) {
        uint8_t bitsBuf[64] = {};
        const uint8_t* s = fr + in.opd[0] + sn * l;
        if (in.t0.scalar == Scalar::I1) {
          for (int e = 0; e < in.t0.lanes; ++e)
            if (s[e] & 1) bitsBuf[e / 8] |= static_cast<uint8_t>(1u << (e % 8));
        } else {
          std::memcpy(bitsBuf, s, sn);
        }
        uint8_t* d = fr + in.res + n * l;
        if (in.rt.scalar == Scalar::I1) {
          for (int e = 0; e < in.rt.lanes; ++e) d[e] = (bitsBuf[e / 8] >> (e % 8)) & 1;
        } else {
          std::memcpy(d, bitsBuf, (totalBits + 7) / 8);
        }
      }
      break;
    }
    case OpCode::Trunc:
    case OpCode::ZExt:
    case OpCode::SExt: {
      const int L = in.rt.lanes, reb = in.rt.elemBytes(), seb = in.t0.elemBytes(), sbits = in.t0.elemBits();
      const uint64_t mask = lowMask(in.rt.elemBits());
      const bool sign = in.code == static_cast<uint16_t>(OpCode::SExt);
      FOR_LANES(exec, l) for (int e = 0; e < L; ++e) {
        const uint64_t v = ldN(fr + in.opd[0] + (static_cast<size_t>(l) * L + e) * seb, seb);
        const uint64_t r = sign ? static_cast<uint64_t>(sx(v, sbits)) : (v & lowMask(sbits));
        stN(fr + in.res + (static_cast<size_t>(l) * L + e) * reb, reb, r & mask);
      }
      break;
    }
    case OpCode::SIToFP:
      FOR_LANES(exec, l) st<float>(fr + in.res + 4 * l, static_cast<float>(ld<int32_t>(fr + in.opd[0] + 4 * l)));
      break;
    case OpCode::UIToFP:
      FOR_LANES(exec, l) st<float>(fr + in.res + 4 * l, static_cast<float>(ld<uint32_t>(fr + in.opd[0] + 4 * l)));
      break;
    case OpCode::FPToSI: {
      const int bits = in.rt.elemBits(), n = in.rt.bytes();
      FOR_LANES(exec, l) {
        const int64_t v = fpToInt(ld<float>(fr + in.opd[0] + 4 * l), bits);
        stN(fr + in.res + n * l, n, static_cast<uint64_t>(v) & lowMask(bits));
      }
      break;
    }
    case OpCode::BF16ToF32: {
      const int L = in.rt.lanes;
      FOR_LANES(exec, l) for (int e = 0; e < L; ++e) {
        const size_t i = static_cast<size_t>(l) * L + e;
        st<float>(fr + in.res + 4 * i, ir::num::bf16ToF32(ld<uint16_t>(fr + in.opd[0] + 2 * i)));
      }
      break;
    }
    case OpCode::F32ToBF16: {
      const int L = in.rt.lanes;
      FOR_LANES(exec, l) for (int e = 0; e < L; ++e) {
        const size_t i = static_cast<size_t>(l) * L + e;
        st<uint16_t>(fr + in.res + 2 * i, ir::num::f32ToBf16(ld<float>(fr + in.opd[0] + 4 * i)));
      }
      break;
    }
    case OpCode::Fp4ToF32:
      FOR_LANES(exec, l) st<float>(fr + in.res + 4 * l, ir::num::fp4ToF32(ld<uint32_t>(fr + in.opd[0] + 4 * l),
                                                                           ld<float>(fr + in.opd[1] + 4 * l)));
      break;
    case OpCode::Fp4x8ToBF16x8:
      FOR_LANES(exec, l) {
        const uint32_t w = ld<uint32_t>(fr + in.opd[0] + 4 * l);
        const float s = ld<float>(fr + in.opd[1] + 4 * l);
        for (int e = 0; e < 8; ++e) st<uint16_t>(fr + in.res + 16 * l + 2 * e, ir::num::fp4x8ElemToBf16(w, e, s));
      }
      break;
    case OpCode::E8m0ToF32:
      FOR_LANES(exec, l) st<float>(fr + in.res + 4 * l, ir::num::e8m0ToF32(ld<uint32_t>(fr + in.opd[0] + 4 * l)));
      break;
    case OpCode::Fp8ToF32:
      FOR_LANES(exec, l) st<float>(fr + in.res + 4 * l, ir::num::fp8E4m3ToF32(ld<uint32_t>(fr + in.opd[0] + 4 * l)));
      break;
    case OpCode::F32ToFp8:
      FOR_LANES(exec, l) st<uint32_t>(fr + in.res + 4 * l, ir::num::f32ToFp8E4m3(ld<float>(fr + in.opd[0] + 4 * l)));
      break;

    // --- math -------------------------------------------------------------------------------
    case OpCode::Exp2: fltUn(in, exec, fr, [](float x) { return ir::num::exp2(x); }); break;
    case OpCode::Rcp: fltUn(in, exec, fr, [](float x) { return ir::num::rcp(x); }); break;
    case OpCode::Rsq: fltUn(in, exec, fr, [](float x) { return ir::num::rsq(x); }); break;
    case OpCode::Sqrt: fltUn(in, exec, fr, [](float x) { return std::sqrt(x); }); break;

    // --- vectors ----------------------------------------------------------------------------
    case OpCode::Extract: {
      const int eb = in.rt.bytes(), L = in.t0.lanes, i = static_cast<int>(op.attrs.imm);
      FOR_LANES(exec, l) copyN(fr + in.res + eb * l, fr + in.opd[0] + (static_cast<size_t>(l) * L + i) * eb, eb);
      break;
    }
    case OpCode::Insert: {
      const int n = in.rt.bytes(), eb = in.rt.elemBytes(), i = static_cast<int>(op.attrs.imm);
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

    // --- pointers ---------------------------------------------------------------------------
    case OpCode::PtrAdd: {
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

    // --- memory -----------------------------------------------------------------------------
    case OpCode::Load: {
      const int n = in.rt.bytes();
      const bool atomic = op.attrs.order != ir::MemOrder::Plain;
      const ir::AddrSpace sp = in.t0.space;
      uint64_t addrs[64];
      int na = 0;
      FOR_LANES(exec, l) {
        const uint64_t a = ptrAt(w, in.opd[0], in.t0, l);
        addrs[na++] = a;
        SimMemory::Allocation* al = nullptr;
        const uint8_t* src = access(w, in, l, sp, a, n, atomic, &al);
        if (al && al->shared) [[unlikely]]  // another process's memory (SimShared.h)
          simshared::load(fr + in.res + n * l, src, n, atomic ? std::memory_order_acquire : std::memory_order_relaxed);
        else
          copyN(fr + in.res + n * l, src, n);
        if (races_) [[unlikely]] {
          races_->access(waveIndex(w), w.pc, al, a, n, false, atomic, op.attrs.scope, SimRaces::Use::Read);
          if (atomic) races_->loadSync(waveIndex(w), w.pc, al, a, n, op.attrs.order, op.attrs.scope);
        }
        if (in.rt.scalar == Scalar::I1)
          for (int e = 0; e < in.rt.lanes; ++e) fr[in.res + n * l + e] &= 1;
      }
      if (sp != ir::AddrSpace::Lds) {
        const int64_t b = coalescedBytes(addrs, na, n);
        stats_.globalBytesLoaded += b;
        stageBytes_[stageSlot] += b;
      }
      break;
    }
    case OpCode::Store: {
      const int n = in.t1.bytes();
      const bool atomic = op.attrs.order != ir::MemOrder::Plain;
      const ir::AddrSpace sp = in.t0.space;
      FOR_LANES(exec, l) {
        SimMemory::Allocation* a = nullptr;
        uint8_t* dst = access(w, in, l, sp, ptrAt(w, in.opd[0], in.t0, l), n, atomic, &a);
        if (a && a->shared) [[unlikely]]
          simshared::store(dst, fr + in.opd[1] + n * l, n, atomic ? std::memory_order_release : std::memory_order_relaxed);
        else
          copyN(dst, fr + in.opd[1] + n * l, n);
        if (a && a->watched) wakeWatchers(a, ptrAt(w, in.opd[0], in.t0, l), n);
        if (races_) [[unlikely]] {
          const uint64_t ad = ptrAt(w, in.opd[0], in.t0, l);
          races_->access(waveIndex(w), w.pc, a, ad, n, true, atomic, op.attrs.scope, SimRaces::Use::Write);
          races_->storeSync(waveIndex(w), w.pc, a, ad, n, op.attrs.order, op.attrs.scope, false);
        }
      }
      if (races_) [[unlikely]] races_->endRelease(waveIndex(w));
      if (sp != ir::AddrSpace::Lds) stats_.globalBytesStored += static_cast<int64_t>(n) * std::popcount(exec);
      break;
    }
    case OpCode::AtomicRmw: {
      const int n = in.rt.bytes(), bits = n * 8;
      const bool isF = in.rt.scalar == Scalar::F32;
      const ir::AddrSpace sp = in.t0.space;
      FOR_LANES(exec, l) {
        SimMemory::Allocation* a = nullptr;
        uint8_t* p = access(w, in, l, sp, ptrAt(w, in.opd[0], in.t0, l), n, true, &a);
        const uint64_t v = ldN(fr + in.opd[1] + n * l, n);
        auto apply = [&](uint64_t old) {
          uint64_t r = 0;
          if (isF) {
            r = std::bit_cast<uint32_t>(std::bit_cast<float>(static_cast<uint32_t>(old)) +
                                        std::bit_cast<float>(static_cast<uint32_t>(v)));
          } else {
            switch (op.attrs.rmw) {
              case ir::RmwOp::Add: r = old + v; break;
              case ir::RmwOp::Or: r = old | v; break;
              case ir::RmwOp::And: r = old & v; break;
              case ir::RmwOp::Xor: r = old ^ v; break;
              case ir::RmwOp::Max: r = sx(old, bits) >= sx(v, bits) ? old : v; break;
              case ir::RmwOp::Min: r = sx(old, bits) <= sx(v, bits) ? old : v; break;
              case ir::RmwOp::UMax: r = old >= v ? old : v; break;
              case ir::RmwOp::UMin: r = old <= v ? old : v; break;
              case ir::RmwOp::Xchg: r = v; break;
            }
          }
          return r;
        };
        uint64_t old;
        if (a && a->shared) [[unlikely]] {
          if (n != 4 && n != 8) fail(w, in, l, fmt::format("a {}-byte atomic on shared memory (4 or 8 only)", n));
          old = simshared::rmw(p, n, apply);
        } else {
          old = ldN(p, n);
          stN(p, n, apply(old));
        }
        stN(fr + in.res + n * l, n, old);
        if (a && a->watched) wakeWatchers(a, ptrAt(w, in.opd[0], in.t0, l), n);
        if (races_) [[unlikely]] {
          const uint64_t ad = ptrAt(w, in.opd[0], in.t0, l);
          races_->loadSync(waveIndex(w), w.pc, a, ad, n, op.attrs.order, op.attrs.scope);
          races_->access(waveIndex(w), w.pc, a, ad, n, true, true, op.attrs.scope, SimRaces::Use::Read);
          races_->storeSync(waveIndex(w), w.pc, a, ad, n, op.attrs.order, op.attrs.scope, true);
        }
      }
      if (races_) [[unlikely]] races_->endRelease(waveIndex(w));
      if (sp != ir::AddrSpace::Lds) {
        const int64_t b = static_cast<int64_t>(n) * std::popcount(exec);
        stats_.globalBytesLoaded += b;
        stats_.globalBytesStored += b;
        stageBytes_[stageSlot] += b;
      }
      break;
    }
    case OpCode::CmpXchg: {
      const int n = in.rt.bytes();
      const ir::AddrSpace sp = in.t0.space;
      FOR_LANES(exec, l) {
        SimMemory::Allocation* a = nullptr;
        uint8_t* p = access(w, in, l, sp, ptrAt(w, in.opd[0], in.t0, l), n, true, &a);
        const bool sharedMem = a && a->shared;
        if (sharedMem && n != 4 && n != 8) fail(w, in, l, fmt::format("a {}-byte cmpxchg on shared memory (4 or 8 only)", n));
        const uint64_t old = sharedMem ? simshared::cas(p, n, ldN(fr + in.opd[1] + n * l, n), ldN(fr + in.opd[2] + n * l, n))
                                       : ldN(p, n);
        const bool swapped = old == ldN(fr + in.opd[1] + n * l, n);
        if (swapped) {
          if (!sharedMem) stN(p, n, ldN(fr + in.opd[2] + n * l, n));
          if (a && a->watched) wakeWatchers(a, ptrAt(w, in.opd[0], in.t0, l), n);
        }
        stN(fr + in.res + n * l, n, old);
        if (races_) [[unlikely]] {
          const uint64_t ad = ptrAt(w, in.opd[0], in.t0, l);
          races_->loadSync(waveIndex(w), w.pc, a, ad, n, op.attrs.order, op.attrs.scope);
          races_->access(waveIndex(w), w.pc, a, ad, n, swapped, true, op.attrs.scope, SimRaces::Use::Read);
          if (swapped) races_->storeSync(waveIndex(w), w.pc, a, ad, n, op.attrs.order, op.attrs.scope, true);
        }
      }
      if (races_) [[unlikely]] races_->endRelease(waveIndex(w));
      if (sp != ir::AddrSpace::Lds) {
        const int64_t b = static_cast<int64_t>(n) * std::popcount(exec);
        stats_.globalBytesLoaded += b;
        stats_.globalBytesStored += b;
        stageBytes_[stageSlot] += b;
      }
      break;
    }
    case OpCode::Fence:
      // Sequentially consistent already (see SimLaunch.h); the race detector keeps its edges.
      if (races_) [[unlikely]] races_->fence(waveIndex(w), w.pc, op.attrs.order, op.attrs.scope);
      break;
    case OpCode::Barrier: {
      ++w.pc;
      SimCta& c = ctas_[w.ctaIndex];
      ++c.arrived;
      if (races_) [[unlikely]] races_->arrive(waveIndex(w));
      if (c.arrived >= c.live) {
        releaseBarrier(c);
        return kContinue;
      }
      block(w, SimWave::Barrier);
      return kBlocked;
    }

    // --- wave ops ---------------------------------------------------------------------------
    case OpCode::Shuffle: {
      const int n = in.rt.bytes();
      FOR_LANES(exec, l) {
        const int src = ld<int32_t>(fr + in.opd[1] + 4 * l) & 63;
        if ((exec >> src) & 1) copyN(fr + in.res + n * l, fr + in.opd[0] + n * src, n);
        else std::memset(fr + in.res + n * l, 0, n);
      }
      break;
    }
    case OpCode::Ballot: {
      uint64_t b = 0;
      FOR_LANES(exec, l) if (fr[in.opd[0] + l]) b |= 1ull << l;
      FOR_LANES(exec, l) st<uint64_t>(fr + in.res + 8 * l, b);
      break;
    }
    case OpCode::Popcount: {
      const int n = in.t0.bytes();
      FOR_LANES(exec, l) st<int32_t>(fr + in.res + 4 * l, std::popcount(ldN(fr + in.opd[0] + n * l, n)));
      break;
    }
    case OpCode::ReadFirstLane: {
      const int n = in.rt.bytes();
      if (!exec) break;
      const int first = __builtin_ctzll(exec);
      FOR_LANES(exec, l) copyN(fr + in.res + n * l, fr + in.opd[0] + n * first, n);
      break;
    }
    case OpCode::Mfma: {
      const ir::mfma::Shape s = ir::mfma::shapeOf(op.attrs.mfma);
      if (s.m == 0) fail(w, in, -1, "unknown MFMA kind");
      float a[64 * 8], b[64 * 8], acc[64 * 4];
      const int per = s.abPerLane;
      const bool bf = in.t0.scalar == Scalar::BF16, fp8 = in.t0.scalar == Scalar::I64;
      for (int i = 0; i < 64 * per; ++i) {
        if (fp8) {  // lane i / 8's i64 holds its 8 e4m3fn elements, byte e element e
          a[i] = ir::num::fp8E4m3ToF32(fr[in.opd[0] + i]);
          b[i] = ir::num::fp8E4m3ToF32(fr[in.opd[1] + i]);
          continue;
        }
        a[i] = ldF(fr + in.opd[0] + (bf ? 2 : 4) * i, bf);
        b[i] = ldF(fr + in.opd[1] + (bf ? 2 : 4) * i, bf);
      }
      std::memcpy(acc, fr + in.opd[2], sizeof acc);
      ir::mfma::run(op.attrs.mfma, a, b, acc);
      std::memcpy(fr + in.res, acc, sizeof acc);
      break;
    }

    // --- sync -------------------------------------------------------------------------------
    case OpCode::Publish: {
      const ir::AddrSpace sp = in.t0.space;
      FOR_LANES(exec, l) {
        const uint64_t addr = ptrAt(w, in.opd[0], in.t0, l);
        SimMemory::Allocation* a = nullptr;
        uint8_t* p = access(w, in, l, sp, addr, 8, true, &a);
        const uint64_t key = sp == ir::AddrSpace::Lds ? ((1ull << 63) | (static_cast<uint64_t>(w.ctaIndex) << 32) | addr) : addr;
        auto [it, fresh] = published_.try_emplace(key, PubRecord{w.rank, w.cta, w.wave, l, in.stage});
        if (!fresh) {
          const PubRecord& r = it->second;
          fail(w, in, l, fmt::format("pair published twice in one launch: {} {:#x} ({}) was already published by "
                                     "stage '{}', rank {} CTA {} wave {} lane {}",
                                     ir::addrSpaceName(sp), addr, a ? a->name : std::string("LDS"),
                                     stageName(r.stage), r.rank, r.cta, r.wave, r.lane));
        }
        if (a && a->shared) [[unlikely]] {  // one 8-byte release store: the data before the pair
          simshared::storePair(p, ld<int32_t>(fr + in.opd[1] + 4 * l), ld<int32_t>(fr + in.opd[2] + 4 * l));
        } else {
          st<int32_t>(p, ld<int32_t>(fr + in.opd[1] + 4 * l));
          st<int32_t>(p + 4, ld<int32_t>(fr + in.opd[2] + 4 * l));
        }
        if (a && a->watched) wakeWatchers(a, addr, 8);
        if (races_) [[unlikely]] {
          races_->access(waveIndex(w), w.pc, a, addr, 8, true, true, op.attrs.scope, SimRaces::Use::Write);
          races_->storeSync(waveIndex(w), w.pc, a, addr, 8, op.attrs.order, op.attrs.scope, false);
        }
      }
      if (races_) [[unlikely]] races_->endRelease(waveIndex(w));
      if (sp != ir::AddrSpace::Lds) stats_.globalBytesStored += 8 * std::popcount(exec);
      break;
    }
    case OpCode::Wait: {
      if (!w.inWait) {
        w.inWait = true;
        w.waitStart = now_;
        w.waitDone = 0;
      }
      const ir::AddrSpace sp = in.t0.space;
      uint64_t resolved = 0;
      int64_t next = INT64_MAX;
      FOR_LANES(exec & ~w.waitDone, l) {
        SimMemory::Allocation* a = nullptr;
        const uint64_t pairAddr = ptrAt(w, in.opd[0], in.t0, l);
        const uint8_t* p = access(w, in, l, sp, pairAddr, 8, true, &a);
        int32_t value, tag;
        if (a && a->shared) [[unlikely]] {  // one 8-byte acquire load (SimShared.h)
          const uint64_t pr = simshared::loadPair(p);
          value = static_cast<int32_t>(static_cast<uint32_t>(pr));
          tag = static_cast<int32_t>(static_cast<uint32_t>(pr >> 32));
        } else {
          value = ld<int32_t>(p);
          tag = ld<int32_t>(p + 4);
        }
        if (tag == ld<int32_t>(fr + in.opd[1] + 4 * l)) {
          st<int32_t>(fr + in.res + 4 * l, value);
          resolved |= 1ull << l;
          if (races_) [[unlikely]] {
            races_->access(waveIndex(w), w.pc, a, pairAddr, 8, false, true, op.attrs.scope, SimRaces::Use::WaitPair);
            races_->loadSync(waveIndex(w), w.pc, a, pairAddr, 8, op.attrs.order, op.attrs.scope);
          }
          continue;
        }
        const int64_t deadline = satAdd(w.waitStart, ld<int64_t>(fr + in.opd[2] + 8 * l));
        if (now_ >= deadline) {
          // Timed out: the first error wins errWord[0]; errWord[1] counts them.
          const ir::Type et = plan_.kernel.typeOf(op.operands[3]);
          SimMemory::Allocation* ea = nullptr;
          const uint64_t ewAddr = ptrAt(w, in.opd[3], et, l);
          uint8_t* ew0 = access(w, in, l, et.space, ewAddr, 4, true, &ea);       // CAS 0 -> code
          uint8_t* ew1 = access(w, in, l, et.space, ewAddr + 4, 4, true, nullptr);  // atomic add 1
          if (ld<int32_t>(ew0) == 0) st<int32_t>(ew0, ld<int32_t>(fr + in.opd[4] + 4 * l));
          st<uint32_t>(ew1, ld<uint32_t>(ew1) + 1);
          st<int32_t>(fr + in.res + 4 * l, value);
          resolved |= 1ull << l;
          ++stats_.waitTimeouts;
          if (races_) [[unlikely]] {  // a timed-out wait reads the stale pair: that is its protocol
            races_->access(waveIndex(w), w.pc, a, pairAddr, 8, false, true, op.attrs.scope, SimRaces::Use::WaitPair);
            races_->loadSync(waveIndex(w), w.pc, a, pairAddr, 8, op.attrs.order, op.attrs.scope);
          }
          if (ea && ea->watched) wakeWatchers(ea, ewAddr, 8);
          continue;
        }
        next = std::min(next, deadline);
        if (a) watch(a, pairAddr, static_cast<uint32_t>(&w - waves_.data()), w.blockSeq + 1);
      }
      if (sp != ir::AddrSpace::Lds) {
        const int64_t b = 8 * static_cast<int64_t>(std::popcount(resolved));
        stats_.globalBytesLoaded += b;
        stageBytes_[stageSlot] += b;
      }
      w.waitDone |= resolved;
      if ((exec & ~w.waitDone) == 0) {
        w.inWait = false;
        break;
      }
      block(w, SimWave::Wait);  // blockSeq becomes the one the watchers above recorded
      // A bound that saturates (INT64_MAX) is "forever": no deadline, so it can deadlock.
      if (next != INT64_MAX) deadlines_.push({next, static_cast<uint32_t>(&w - waves_.data()), w.blockSeq});
      return kBlocked;
    }

    // --- time -------------------------------------------------------------------------------
    case OpCode::Realtime: {
      const int64_t t = opts_.clockStart + now_;
      FOR_LANES(exec, l) st<int64_t>(fr + in.res + 8 * l, t);
      break;
    }
    case OpCode::Sleep: {
      ++w.pc;
      block(w, SimWave::Sleep);
      deadlines_.push({now_ + std::max<int64_t>(1, op.attrs.imm), static_cast<uint32_t>(&w - waves_.data()), w.blockSeq});
      return kBlocked;
    }

    // --- variables --------------------------------------------------------------------------
    case OpCode::VarLoad: {
      const int n = in.rt.bytes();
      FOR_LANES(exec, l) copyN(fr + in.res + n * l, fr + in.var + n * l, n);
      break;
    }
    case OpCode::VarStore: {
      const int n = in.t0.bytes();
      FOR_LANES(exec, l) copyN(fr + in.var + n * l, fr + in.opd[0] + n * l, n);
      break;
    }

    default:
      fail(w, in, -1, fmt::format("the Sim device cannot run opcode {}", in.code));
  }
  ++w.pc;
  return kContinue;
}

}  // namespace monogen::runtime
