// The gfx950 timing model's memory: bandwidth queues (per-CU vL1, L2 and an HBM share per XCD, one
// xGMI link per ordered pair of GPUs) with a latency per level, and which XCDs' L2 hold a line.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "runtime/sim/timing/TimingCycles.h"

namespace monogen::runtime::timing {

/// Where a CTA runs: its GPU (rank), XCD and CU (0..255 on its GPU). CTAs go round-robin over
/// the XCDs (CTA c on XCD c % 8), then over an XCD's 32 CUs.
struct TimingPlace {
  int rank = 0, xcd = 0, cu = 0;
  static TimingPlace of(int rank, int cta) {
    const int xcd = cta % kXcds;
    return {rank, xcd, xcd * kCusPerXcd + (cta / kXcds) % kCusPerXcd};
  }
};

/// A FIFO bandwidth server: a request's bytes pass at `bw` bytes a cycle once those before it have.
struct TimingQueue {
  double free = 0;
  /// Starts a request arriving at t; returns its start (its end is start + bytes / bw, in `free`).
  double take(double t, double bytes, double bw) {
    const double s = t > free ? t : free;
    free = s + bytes / bw;
    return s;
  }
};

/// Where an access goes: its owner's memory (`owner` rank), a streamed weight or not.
struct TimingTarget {
  int owner = 0;
  bool weight = false;
};

class TimingMemory {
 public:
  TimingMemory(const TimingCycles& c, int ranks);

  /// A global or peer load issued at t by a wave at `at` of the sorted distinct L2 lines `lines`:
  /// when its data is back. Weights stream from HBM; other lines hit L2 if the reader's XCD holds
  /// them, else come from HBM (the MALL is modeled as HBM) and then stay in that L2; a peer's lines
  /// cross the xGMI link from the owner (latency: a round trip).
  double load(double t, const TimingPlace& at, const TimingTarget& to, const uint64_t* lines, int n);
  /// A store of those lines issued at t: when it has reached L2 (or the peer). The writer's XCD then
  /// holds them alone (other XCDs' copies are invalidated); a peer store leaves them in no L2.
  double store(double t, const TimingPlace& at, const TimingTarget& to, const uint64_t* lines, int n);
  /// An atomic (RMW, CmpXchg) on those lines: when its old value is back.
  double atomic(double t, const TimingPlace& at, const TimingTarget& to, const uint64_t* lines, int n);
  /// An LDS access of `bytes` issued at t: when its data is back.
  double lds(double t, const TimingPlace& at, double bytes);

 private:
  TimingQueue& l1(const TimingPlace& p) { return l1_[p.rank * kXcds * kCusPerXcd + p.cu]; }
  TimingQueue& l2(const TimingPlace& p) { return l2_[p.rank * kXcds + p.xcd]; }
  TimingQueue& hbm(const TimingPlace& p) { return hbm_[p.rank * kXcds + p.xcd]; }
  TimingQueue& link(int from, int to) { return link_[from * ranks_ + to]; }

  const TimingCycles& c_;
  int ranks_;
  std::vector<TimingQueue> l1_, l2_, hbm_, lds_, link_;
  std::unordered_map<uint64_t, uint8_t> xcds_;  // line address -> the XCDs whose L2 holds it
};

}  // namespace monogen::runtime::timing
