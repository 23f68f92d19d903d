// The interpreter's wave-op class: cross-lane ops (Shuffle, Ballot, ReadFirstLane, CtaUniform), Popcount, and
// Mfma and MfmaScale, which like the hardware ignores the exec mask and reads and writes all 64 lanes.
#include <bit>

#include <fmt/format.h>

#include "ir/Mfma.h"
#include "runtime/sim/SimLanes.h"
#include "runtime/sim/SimLaunch.h"

namespace monogen::runtime {

using namespace simlanes;
using ir::OpCode;
using ir::Scalar;

void SimLaunch::checkCtaUniform(const SimWave& w, const SimInst& in, uint64_t v) {
  const auto key = [&](uint64_t who) { return who << 32 | static_cast<uint32_t>(w.pc); };
  const uint32_t n = ctaUniformRuns_[key(waveIndex(w))]++;
  std::vector<uint64_t>& seen = ctaUniformSeen_[key(w.ctaIndex)];
  if (seen.size() == n) seen.push_back(v);
  else if (seen[n] != v)
    fail(w, in, -1, fmt::format("cta_uniform: wave {} holds {:#x} at this op's run {}, an earlier wave of the CTA held {:#x}",
                                w.wave, v, n, seen[n]));
}

SimLaunch::Status SimLaunch::visitWaveOp(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  const uint64_t exec = w.exec;
  switch (static_cast<OpCode>(in.code)) {
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
    case OpCode::CtaUniform: {
      const int n = in.rt.bytes();
      if (!exec) break;
      const uint64_t v = ldN(fr + in.opd[0] + n * __builtin_ctzll(exec), n);
      FOR_LANES(exec, l) {
        if (ldN(fr + in.opd[0] + n * l, n) != v)
          fail(w, in, l, fmt::format("cta_uniform: lane {} holds {:#x}, the wave's first active lane {:#x}", l,
                                     ldN(fr + in.opd[0] + n * l, n), v));
        copyN(fr + in.res + n * l, fr + in.opd[0] + n * l, n);
      }
      checkCtaUniform(w, in, v);
      break;
    }
    case OpCode::Mfma: {
      const ir::MfmaKind kind = in.op->attrs.mfma;
      const ir::mfma::Shape s = ir::mfma::shapeOf(kind);
      if (s.m == 0) fail(w, in, -1, "unknown MFMA kind");
      float a[64 * 8], b[64 * 8], acc[64 * 4];
      const bool bf = in.t0.scalar == Scalar::BF16, fp8 = in.t0.scalar == Scalar::I64;
      for (int i = 0; i < 64 * s.abPerLane; ++i) {
        if (fp8) {  // lane i / 8's i64 holds its 8 e4m3fn elements, byte e element e
          a[i] = ir::num::fp8E4m3ToF32(fr[in.opd[0] + i]);
          b[i] = ir::num::fp8E4m3ToF32(fr[in.opd[1] + i]);
          continue;
        }
        a[i] = ldF(fr + in.opd[0] + (bf ? 2 : 4) * i, bf);
        b[i] = ldF(fr + in.opd[1] + (bf ? 2 : 4) * i, bf);
      }
      std::memcpy(acc, fr + in.opd[2], sizeof acc);
      ir::mfma::run(kind, a, b, acc);
      std::memcpy(fr + in.res, acc, sizeof acc);
      break;
    }
    case OpCode::MfmaScale: {  // a lane's operands: 32 A bytes, 16 B bytes, acc, two scale words
      uint8_t a[64 * 32], bm[64 * 16], sa[64], sb[64];
      float acc[64 * 4];
      std::memcpy(a, fr + in.opd[0], sizeof a);
      std::memcpy(bm, fr + in.opd[1], sizeof bm);
      std::memcpy(acc, fr + in.opd[2], sizeof acc);
      for (int l = 0; l < 64; ++l) sa[l] = fr[in.opd[3] + 4 * l], sb[l] = fr[in.opd[4] + 4 * l];
      ir::mfma::runScaled(a, bm, sa, sb, acc);
      std::memcpy(fr + in.res, acc, sizeof acc);
      break;
    }
    default: cannotRun(w, in);
  }
  ++w.pc;
  return kContinue;
}

}  // namespace monogen::runtime
