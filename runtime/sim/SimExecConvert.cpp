// The interpreter's conversion class: bit casts, integer width changes, int <-> float, the
// narrow float formats (bf16, fp4, fp8, e8m0), and the f32 math ops (numerics: docs/sim.md).
#include <climits>
#include <cmath>

#include "runtime/sim/SimLanes.h"
#include "runtime/sim/SimLaunch.h"

namespace monogen::runtime {

using namespace simlanes;
using ir::OpCode;
using ir::Scalar;

namespace {

/// f32 -> a `bits`-wide int: truncates toward zero, saturates, NaN is 0 (as v_cvt_i32_f32).
inline int64_t fpToInt(float f, int bits) {
  if (std::isnan(f)) return 0;
  const double t = std::trunc(static_cast<double>(f));
  const double lo = -std::ldexp(1.0, bits - 1), hi = std::ldexp(1.0, bits - 1);
  if (t < lo) return bits == 64 ? INT64_MIN : static_cast<int64_t>(lo);
  if (t >= hi) return bits == 64 ? INT64_MAX : static_cast<int64_t>(hi) - 1;
  return static_cast<int64_t>(t);
}

/// A bit cast with an i1 vector on one side: i1 vectors pack one bit an element (element 0 in bit 0).
void bitcastBools(const SimInst& in, uint64_t exec, uint8_t* fr) {
  const int n = in.rt.bytes(), totalBits = in.rt.lanes * in.rt.elemBits(), sn = in.t0.bytes();
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
}

/// Trunc, ZExt, SExt of every active lane's elements.
void resize(const SimInst& in, uint64_t exec, uint8_t* fr, bool sign) {
  const int L = in.rt.lanes, reb = in.rt.elemBytes(), seb = in.t0.elemBytes(), sbits = in.t0.elemBits();
  const uint64_t mask = lowMask(in.rt.elemBits());
  FOR_LANES(exec, l) for (int e = 0; e < L; ++e) {
    const uint64_t v = ldN(fr + in.opd[0] + (static_cast<size_t>(l) * L + e) * seb, seb);
    const uint64_t r = sign ? static_cast<uint64_t>(sx(v, sbits)) : (v & lowMask(sbits));
    stN(fr + in.res + (static_cast<size_t>(l) * L + e) * reb, reb, r & mask);
  }
}

/// Fp4ToF32, E8m0ToF32, Fp8ToF32, F32ToFp8, F32x2ToFp8x2: one 4-byte scalar a lane.
void floatFormat(const SimInst& in, uint64_t exec, uint8_t* fr) {
  const uint8_t* A = fr + in.opd[0];
  uint8_t* R = fr + in.res;
  switch (static_cast<OpCode>(in.code)) {
    case OpCode::Fp4ToF32:
      FOR_LANES(exec, l) st<float>(R + 4 * l, ir::num::fp4ToF32(ld<uint32_t>(A + 4 * l), ld<float>(fr + in.opd[1] + 4 * l)));
      break;
    case OpCode::E8m0ToF32: FOR_LANES(exec, l) st<float>(R + 4 * l, ir::num::e8m0ToF32(ld<uint32_t>(A + 4 * l))); break;
    case OpCode::Fp8ToF32: FOR_LANES(exec, l) st<float>(R + 4 * l, ir::num::fp8E4m3ToF32(ld<uint32_t>(A + 4 * l))); break;
    case OpCode::F32x2ToFp8x2:
      FOR_LANES(exec, l) st<uint32_t>(R + 4 * l, ir::num::f32ToFp8E4m3(ld<float>(A + 4 * l)) |
                                                     ir::num::f32ToFp8E4m3(ld<float>(fr + in.opd[1] + 4 * l)) << 8);
      break;
    default: FOR_LANES(exec, l) st<uint32_t>(R + 4 * l, ir::num::f32ToFp8E4m3(ld<float>(A + 4 * l))); break;
  }
}

}  // namespace

SimLaunch::Status SimLaunch::visitConvert(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  const uint64_t exec = w.exec;
  const auto code = static_cast<OpCode>(in.code);
  switch (code) {
    case OpCode::Bitcast:
    case OpCode::PtrToInt:
    case OpCode::IntToPtr: {
      const int n = in.rt.bytes();
      if (in.rt.scalar == Scalar::I1 || in.t0.scalar == Scalar::I1) bitcastBools(in, exec, fr);
      else FOR_LANES(exec, l) copyN(fr + in.res + n * l, fr + in.opd[0] + n * l, n);
      break;
    }
    case OpCode::Trunc:
    case OpCode::ZExt:
    case OpCode::SExt: resize(in, exec, fr, code == OpCode::SExt); break;
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
    case OpCode::BF16ToF32:
    case OpCode::F32ToBF16: {
      const int L = in.rt.lanes;
      const bool widen = code == OpCode::BF16ToF32;
      FOR_LANES(exec, l) for (int e = 0; e < L; ++e) {
        const size_t i = static_cast<size_t>(l) * L + e;
        if (widen) st<float>(fr + in.res + 4 * i, ir::num::bf16ToF32(ld<uint16_t>(fr + in.opd[0] + 2 * i)));
        else st<uint16_t>(fr + in.res + 2 * i, ir::num::f32ToBf16(ld<float>(fr + in.opd[0] + 4 * i)));
      }
      break;
    }
    case OpCode::Fp4x8ToBF16x8:
      FOR_LANES(exec, l) {
        const uint32_t word = ld<uint32_t>(fr + in.opd[0] + 4 * l);
        const float s = ld<float>(fr + in.opd[1] + 4 * l);
        for (int e = 0; e < 8; ++e) st<uint16_t>(fr + in.res + 16 * l + 2 * e, ir::num::fp4x8ElemToBf16(word, e, s));
      }
      break;
    case OpCode::Fp4ToF32: case OpCode::E8m0ToF32: case OpCode::Fp8ToF32: case OpCode::F32ToFp8:
    case OpCode::F32x2ToFp8x2:
      floatFormat(in, exec, fr);
      break;
    default: cannotRun(w, in);
  }
  ++w.pc;
  return kContinue;
}

SimLaunch::Status SimLaunch::visitMath(SimWave& w, const SimInst& in) {
  const bool bf = in.rt.scalar == Scalar::BF16;
  const int L = in.rt.lanes, eb = bf ? 2 : 4;
  uint8_t* R = w.frame + in.res;
  const uint8_t* A = w.frame + in.opd[0];
  const auto code = static_cast<OpCode>(in.code);
  FOR_LANES(w.exec, l) {
    for (int e = 0; e < L; ++e) {
      const size_t o = (static_cast<size_t>(l) * L + e) * eb;
      const float x = ldF(A + o, bf);
      const float r = code == OpCode::Exp2  ? ir::num::exp2(x)
                      : code == OpCode::Rcp ? ir::num::rcp(x)
                      : code == OpCode::Rsq ? ir::num::rsq(x)
                      : code == OpCode::Abs ? std::fabs(x)
                                            : std::sqrt(x);
      stF(R + o, bf, r);
    }
  }
  ++w.pc;
  return kContinue;
}

}  // namespace monogen::runtime
