// TimingMemory: the queues and latencies a global, peer or LDS access goes through.
#include "runtime/sim/timing/TimingMemory.h"

#include <algorithm>

namespace monogen::runtime::timing {

TimingMemory::TimingMemory(const TimingCycles& c, int ranks)
    : c_(c),
      ranks_(ranks),
      l1_(static_cast<size_t>(ranks) * kXcds * kCusPerXcd),
      l2_(static_cast<size_t>(ranks) * kXcds),
      hbm_(static_cast<size_t>(ranks) * kXcds),
      lds_(static_cast<size_t>(ranks) * kXcds * kCusPerXcd),
      link_(static_cast<size_t>(ranks) * ranks) {}

double TimingMemory::load(double t, const TimingPlace& at, const TimingTarget& to, const uint64_t* lines, int n) {
  const double bytes = static_cast<double>(n) * kLineBytes;
  if (to.owner != at.rank) {  // over xGMI: the owner's link to the reader carries the data
    const double s = link(to.owner, at.rank).take(t, bytes, c_.xgmiBandwidth);
    return s + bytes / c_.xgmiBandwidth + 2 * c_.visiblePeer;
  }
  const double s1 = l1(at).take(t, bytes, c_.l1Bandwidth);
  const double s2 = l2(at).take(s1, bytes, c_.l2Bandwidth);
  double done = std::max(s1 + bytes / c_.l1Bandwidth, s2 + bytes / c_.l2Bandwidth);
  int missed = 0;
  if (to.weight) {
    missed = n;
  } else {
    const uint8_t bit = static_cast<uint8_t>(1u << at.xcd);
    for (int i = 0; i < n; ++i) {
      uint8_t& held = xcds_[lines[i]];
      if (!(held & bit)) ++missed;
      held |= bit;
    }
  }
  if (missed == 0) return done + c_.l2Latency;
  const double mb = static_cast<double>(missed) * kLineBytes, bw = c_.hbmPerXcd();
  const double s3 = hbm(at).take(s2, mb, bw);
  return std::max(done, s3 + mb / bw) + c_.hbmLatency;
}

double TimingMemory::store(double t, const TimingPlace& at, const TimingTarget& to, const uint64_t* lines, int n) {
  const double bytes = static_cast<double>(n) * kLineBytes;
  if (to.owner != at.rank) {
    const double s = link(at.rank, to.owner).take(t, bytes, c_.xgmiBandwidth);
    for (int i = 0; i < n; ++i) xcds_.erase(lines[i]);
    return s + bytes / c_.xgmiBandwidth + c_.visiblePeer;
  }
  const double s1 = l1(at).take(t, bytes, c_.l1Bandwidth);
  const double s2 = l2(at).take(s1, bytes, c_.l2Bandwidth);
  if (!to.weight)
    for (int i = 0; i < n; ++i) xcds_[lines[i]] = static_cast<uint8_t>(1u << at.xcd);
  return std::max(s1 + bytes / c_.l1Bandwidth, s2 + bytes / c_.l2Bandwidth) + c_.storeLatency;
}

double TimingMemory::atomic(double t, const TimingPlace& at, const TimingTarget& to, const uint64_t* lines, int n) {
  const double bytes = static_cast<double>(n) * kLineBytes;
  if (to.owner != at.rank) {
    const double s = link(at.rank, to.owner).take(t, bytes, c_.xgmiBandwidth);
    return s + bytes / c_.xgmiBandwidth + 2 * c_.visiblePeer;
  }
  const double s2 = l2(at).take(t, bytes, c_.l2Bandwidth);
  for (int i = 0; i < n; ++i) xcds_[lines[i]] = static_cast<uint8_t>(1u << at.xcd);
  return s2 + bytes / c_.l2Bandwidth + c_.atomicLatency;
}

double TimingMemory::lds(double t, const TimingPlace& at, double bytes) {
  TimingQueue& q = lds_[at.rank * kXcds * kCusPerXcd + at.cu];
  const double s = q.take(t, bytes, c_.ldsBandwidth);
  return s + bytes / c_.ldsBandwidth + c_.ldsLatency;
}

}  // namespace monogen::runtime::timing
