// The Sim's run loop under the timing model (SimOptions::timing): the wave whose modeled clock is
// earliest runs next (ties by a seeded per-wave priority), a few ops at a time while its clock
// stays within kTimedSlack cycles of the next wave's; the realtime clock follows the model's.
#include <fmt/format.h>

#include <cmath>

#include "ir/Error.h"
#include "runtime/sim/SimLaunch.h"
#include "runtime/sim/timing/TimingModel.h"

namespace monogen::runtime {

namespace {
constexpr double kTimedSlack = 0;   // cycles a wave may run ahead of the next one
constexpr int kTimedQuantum = 64;   // ops a wave runs at most before the queue is consulted
}  // namespace

void SimLaunch::pushTimed(uint32_t wi) {
  if (timedSeq_.size() != waves_.size()) timedSeq_.assign(waves_.size(), 0);
  const uint64_t prio = splitMix64Mix(opts_.seed * 0x9e3779b97f4a7c15ull + wi);
  timedQueue_.push({timing_->time(wi), prio, wi, ++timedSeq_[wi]});
}

SimStats SimLaunch::runTimed() {
  nextProgress_ = std::max<int64_t>(opts_.progressEvery, 1);
  for (uint32_t wi : runnable_) pushTimed(wi);
  const int32_t end = static_cast<int32_t>(prog_.insts.size());
  const auto live = [&](const TimedEntry& e) {
    return waves_[e.wave].runIdx >= 0 && timedSeq_[e.wave] == e.seq;
  };
  while (live_ > 0) {
    while (!timedQueue_.empty() && !live(timedQueue_.top())) timedQueue_.pop();
    if (timedQueue_.empty()) {  // every wave blocked: the next wait deadline, or a deadlock
      while (!deadlines_.empty()) {
        const Deadline& d = deadlines_.top();
        const SimWave& w = waves_[d.wave];
        if ((w.state == SimWave::Wait || w.state == SimWave::Sleep) && w.blockSeq == d.seq) break;
        deadlines_.pop();
      }
      if (deadlines_.empty()) deadlock();
      now_ = std::max(now_, deadlines_.top().at);
      wakeDue();
      continue;
    }
    const TimedEntry e = timedQueue_.top();
    timedQueue_.pop();
    now_ = std::max(now_, timing_->ticksAt(e.t));
    wakeDue();
    while (!timedQueue_.empty() && !live(timedQueue_.top())) timedQueue_.pop();
    const double horizon = timedQueue_.empty() ? INFINITY : timedQueue_.top().t + kTimedSlack;
    timedHorizon_ = horizon;
    const uint32_t wi = e.wave;
    SimWave& w = waves_[wi];
    int n = 0;
    if (w.pc >= end) {
      exitWave(w);
    } else {
      while (n < kTimedQuantum) {
        if (!spans_.empty()) noteSpan(w, timing_->ticksAt(timing_->time(wi)));  // the clock only when asked
        const Status s = step(w);
        ++n;
        if (s == kYield) --n;  // it did not run
        if (s != kContinue) break;
        if (w.pc >= end) {
          exitWave(w);
          break;
        }
      }
    }
    if (w.runIdx >= 0 && w.state == SimWave::Ready) pushTimed(wi);
    stats_.steps += n;
    afterQuantum();
  }
  stats_.timed = timing_->result(plan_);
  stats_.ticks = timing_->ticksAt(stats_.timed.cycles);
  return finishStats();
}

}  // namespace monogen::runtime
