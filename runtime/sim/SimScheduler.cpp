// The Sim device's scheduler and clock: the launch's waves, the runnable list a seeded pick draws
// from, blocking and wake-ups (barrier, wait, sleep), the simulated clock, deadlock and the run
// loop. One step is SimInterpreter.cpp; memory access is SimAccess.cpp.
#include "runtime/sim/SimLaunch.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdlib>
#include <cstring>

#include "ir/Error.h"
#include "runtime/sim/timing/TimingModel.h"

namespace monogen::runtime {

SimLaunch::SimLaunch(SimMemory& mem, const ir::Plan& plan, const SimProgram& prog,
                     const std::vector<std::vector<uint64_t>>& args, const SimOptions& opts)
    : mem_(mem), plan_(plan), prog_(prog), args_(args), opts_(opts), rng_(opts.seed) {
  const std::string v = plan.key.variantName();
  tp_ = static_cast<int>(args.size());
  blocks_ = plan.grid.blocks;
  const int threads = plan.grid.threads;
  if (tp_ < 1) throw SimError(v, "a launch needs arguments for at least one rank (args is empty)");
  if (blocks_ < 1 || threads < 1)
    throw SimError(v, fmt::format("grid {} x {} is empty", blocks_, threads));
  if (plan.ldsBytes < 0) throw SimError(v, fmt::format("ldsBytes {} is negative", plan.ldsBytes));
  if (opts_.maxQuantum < 1) opts_.maxQuantum = 1;
  for (int r = 0; r < tp_; ++r)
    if (prog.maxArgIndex >= static_cast<int>(args[r].size()))
      throw SimError(fmt::format("{}, op #{} arg", v, prog.maxArgOpNum),
                     fmt::format("reads kernel argument {} but rank {} has {} arguments", prog.maxArgIndex, r,
                                 args[r].size()));
  wavesPerCta_ = (threads + 63) / 64;
  const size_t nCta = static_cast<size_t>(tp_) * blocks_;
  const size_t nWave = nCta * wavesPerCta_;
  frames_ = static_cast<uint8_t*>(std::calloc(nWave * prog.frameBytes + 64, 1));
  const size_t lds = static_cast<size_t>(plan.ldsBytes);
  ldsAll_ = static_cast<uint8_t*>(std::malloc(nCta * lds + 64));  // poisoned below
  if (!frames_ || !ldsAll_) {
    std::free(frames_);
    std::free(ldsAll_);
    throw SimError(v, fmt::format("out of host memory for {} wave frames of {} bytes or {} CTAs' LDS", nWave,
                                  prog.frameBytes, nCta));
  }
  // LDS starts poisoned (SimOptions::poisonSeed), CTA by CTA, as hardware's holds the last kernel's data.
  const uint64_t poison = opts_.poisonSeed ? opts_.poisonSeed : opts_.seed;
  for (size_t ci = 0; ci < nCta; ++ci)
    poisonFill(ldsAll_ + ci * lds, static_cast<int64_t>(lds), splitMix64Mix(poison * 0x1000193ull + ci + 1));
  waves_.resize(nWave);
  ctas_.resize(nCta);
  runnable_.reserve(nWave);
  for (int r = 0; r < tp_; ++r)
    for (int c = 0; c < blocks_; ++c) {
      const uint32_t ci = static_cast<uint32_t>(r * blocks_ + c);
      SimCta& cta = ctas_[ci];
      cta.lds = ldsAll_ + ci * lds;
      cta.firstWave = ci * wavesPerCta_;
      cta.waves = wavesPerCta_;
      cta.live = wavesPerCta_;
      for (int wv = 0; wv < wavesPerCta_; ++wv) {
        const uint32_t wi = cta.firstWave + wv;
        SimWave& w = waves_[wi];
        w.frame = frames_ + static_cast<size_t>(wi) * prog.frameBytes;
        w.rank = opts_.firstRank + r;
        w.cta = c;
        w.wave = wv;
        w.ctaIndex = ci;
        const int lanes = std::min(64, threads - wv * 64);
        w.exec = lanes >= 64 ? ~0ull : ((1ull << lanes) - 1);
        makeRunnable(wi);
      }
    }
  live_ = static_cast<int64_t>(nWave);
  if (opts_.races) setUpRaces();
  if (opts_.timing) {
    if (opts_.realtimeWaits)
      throw SimError(v, "the timing model (SimOptions::timing) needs every rank in one process, not realtimeWaits");
    timing_ = std::make_unique<timing::TimingModel>(*opts_.timing, plan, prog, tp_, blocks_, wavesPerCta_);
    for (size_t i = 0; i < plan.args.size(); ++i)  // weights stream from HBM (docs/timing.md)
      if (plan.args[i].isPointer && plan.args[i].role == ir::ArgRole::Weight)
        for (int r = 0; r < tp_; ++r)
          if (i < args_[r].size())
            if (const SimMemory::Allocation* a = mem_.find(args_[r][i], 1)) timing_->weight(a);
  }
  stageBytes_.assign(plan.stages.size() + 1, 0);
  if (opts_.stageSpans)
    spans_.assign(static_cast<size_t>(tp_) * blocks_ * plan.stages.size(), {-1, -1});
}

void SimLaunch::setUpRaces() {
  std::vector<SimRaces::WaveInfo> info;
  info.reserve(waves_.size());
  for (const SimWave& w : waves_) info.push_back({w.rank, w.cta, w.wave, w.ctaIndex});
  races_ = std::make_unique<SimRaces>(plan_, prog_, std::move(info), plan_.ldsBytes);
  // The memory the launch owns, checked for uninitialized reads (SimRaces.h): every rank's
  // Scratch and Output pointer arguments' allocations.
  for (int r = 0; r < tp_; ++r)
    for (size_t i = 0; i < plan_.args.size() && i < args_[r].size(); ++i) {
      const ir::KernelArg& ka = plan_.args[i];
      if (!ka.isPointer || (ka.role != ir::ArgRole::Scratch && ka.role != ir::ArgRole::Output)) continue;
      if (const SimMemory::Allocation* a = mem_.find(args_[r][i], 1)) races_->own(a, static_cast<int>(i));
    }
  // Weights are read-only: their reads need no shadow (at full dims they are GBs), and a write
  // to one is reported (docs/sim.md, "Read-only allocations").
  for (size_t i = 0; i < plan_.args.size(); ++i)
    if (plan_.args[i].isPointer && plan_.args[i].role == ir::ArgRole::Weight)
      for (int r = 0; r < tp_; ++r)
        if (i < args_[r].size())
          if (const SimMemory::Allocation* a = mem_.find(args_[r][i], 1)) races_->readOnly(a);
}

SimLaunch::~SimLaunch() {
  for (auto& [addr, wt] : watch_) --wt.alloc->watched;
  std::free(frames_);
  std::free(ldsAll_);
}

// ---------------------------------------------------------------------------------------------
// Scheduler

void SimLaunch::makeRunnable(uint32_t wi) {
  SimWave& w = waves_[wi];
  w.state = SimWave::Ready;
  if (w.runIdx >= 0) return;
  w.runIdx = static_cast<int32_t>(runnable_.size());
  runnable_.push_back(wi);
  if (w.cta == opts_.lastCta) ++lastRunnable_;
  if (timing_) [[unlikely]] pushTimed(wi);
}

void SimLaunch::removeRunnable(uint32_t wi) {
  SimWave& w = waves_[wi];
  if (w.runIdx < 0) return;
  const uint32_t last = runnable_.back();
  runnable_[w.runIdx] = last;
  waves_[last].runIdx = w.runIdx;
  runnable_.pop_back();
  w.runIdx = -1;
  if (w.cta == opts_.lastCta) --lastRunnable_;
}

void SimLaunch::block(SimWave& w, SimWave::State s) {
  w.state = s;
  ++w.blockSeq;
  removeRunnable(static_cast<uint32_t>(&w - waves_.data()));
}

void SimLaunch::releaseBarrier(SimCta& c) {
  c.arrived = 0;
  if (races_) races_->barrier(c.firstWave, c.waves);
  if (timing_) timing_->releaseBarrier(c.firstWave, c.waves);
  for (uint32_t i = 0; i < c.waves; ++i) {
    const uint32_t wi = c.firstWave + i;
    if (waves_[wi].state == SimWave::Barrier) makeRunnable(wi);
  }
}

void SimLaunch::exitWave(SimWave& w) {
  w.state = SimWave::Exited;
  removeRunnable(static_cast<uint32_t>(&w - waves_.data()));
  if (timing_) timing_->exit(static_cast<uint32_t>(&w - waves_.data()));
  --live_;
  SimCta& c = ctas_[w.ctaIndex];
  --c.live;
  if (c.arrived > 0 && c.arrived >= c.live) releaseBarrier(c);
}

void SimLaunch::wakeDue() {
  while (!deadlines_.empty() && deadlines_.top().at <= now_) {
    const Deadline d = deadlines_.top();
    deadlines_.pop();
    SimWave& w = waves_[d.wave];
    if ((w.state == SimWave::Wait || w.state == SimWave::Sleep) && w.blockSeq == d.seq) makeRunnable(d.wave);
  }
}

void SimLaunch::watch(SimMemory::Allocation* a, uint64_t pair, uint32_t wi, uint32_t seq) {
  Watch& wt = watch_[pair];
  if (!wt.alloc) {
    wt.alloc = a;
    ++a->watched;
  }
  const std::pair<uint32_t, uint32_t> me{wi, seq};
  if (wt.waiters.empty() || wt.waiters.back() != me) wt.waiters.push_back(me);
}

void SimLaunch::wakeWatchers(SimMemory::Allocation* a, uint64_t addr, int n) {
  for (uint64_t g = addr & ~7ull; g < addr + static_cast<uint64_t>(n); g += 8) {
    auto it = watch_.find(g);
    if (it == watch_.end()) continue;
    for (const auto& [wi, seq] : it->second.waiters) {
      SimWave& w = waves_[wi];
      if (w.blockSeq != seq) continue;
      w.recheck = false;  // its watcher is gone: the wave's next block registers it again
      if (w.state == SimWave::Wait) makeRunnable(wi);
    }
    --a->watched;
    watch_.erase(it);
  }
}

bool SimLaunch::pollPeers() {
  bool waiting = false;
  for (const SimWave& w : waves_) waiting = waiting || w.state == SimWave::Wait;
  if (!waiting) return false;  // only barriers and sleeps: the simulated clock decides
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::microseconds(std::max(1, opts_.pollMicros)));
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  now_ += std::max<int64_t>(1, static_cast<int64_t>(sec * static_cast<double>(plan_.target().clockHz)));
  for (uint32_t wi = 0; wi < waves_.size(); ++wi)
    if (waves_[wi].state == SimWave::Wait) {  // re-check its pairs (and its deadline), keeping its block
      waves_[wi].recheck = true;
      makeRunnable(wi);
    }
  wakeDue();
  return true;
}

void SimLaunch::deadlock() {
  std::string list;
  int shown = 0, blocked = 0;
  for (const SimWave& w : waves_) {
    if (w.state == SimWave::Exited) continue;
    ++blocked;
    if (shown >= 16) continue;
    ++shown;
    const SimInst& in = prog_.insts[w.state == SimWave::Barrier ? w.pc - 1 : w.pc];
    list += fmt::format("\n  rank {} CTA {} wave {}: stage '{}', op #{} {} ({})", w.rank, w.cta, w.wave,
                        stageName(in.stage), in.opNum, ir::opName(in.op->code),
                        w.state == SimWave::Barrier ? "at the barrier" : "blocked");
  }
  if (blocked > shown) list += fmt::format("\n  ... and {} more", blocked - shown);
  throw SimError(plan_.key.variantName(),
                 fmt::format("deadlock at tick {}: {} waves are blocked and none can run or time out:{}", now_,
                             blocked, list));
}

SimStats SimLaunch::run() {
  if (timing_) return runTimed();
  nextProgress_ = std::max<int64_t>(opts_.progressEvery, 1);
  while (live_ > 0) {
    if (runnable_.empty()) {
      while (!deadlines_.empty()) {
        const Deadline& d = deadlines_.top();
        const SimWave& w = waves_[d.wave];
        if ((w.state == SimWave::Wait || w.state == SimWave::Sleep) && w.blockSeq == d.seq) break;
        deadlines_.pop();
      }
      // Once a wait has timed out the launch is INVALID whatever follows: its later bounds are
      // simulated ticks, not slept, so a dead or stopped peer costs one bound of real time.
      const bool invalid = stats_.waitTimeouts > 0 && !deadlines_.empty();
      if (opts_.realtimeWaits && !invalid && pollPeers()) continue;
      if (deadlines_.empty()) deadlock();
      now_ = std::max(now_, deadlines_.top().at);
      wakeDue();
      continue;
    }
    uint32_t wi = runnable_[rng_.below(runnable_.size())];
    if (lastRunnable_ > 0 && lastRunnable_ < static_cast<int64_t>(runnable_.size()))
      while (waves_[wi].cta == opts_.lastCta) wi = runnable_[rng_.below(runnable_.size())];
    const int quantum = 1 + static_cast<int>(rng_.below(static_cast<uint64_t>(opts_.maxQuantum)));
    const int n = runWave(wi, quantum);
    stats_.steps += n;
    tickAccum_ += n;
    if (live_ > 0) {
      now_ += tickAccum_ / live_;
      tickAccum_ %= live_;
    }
    wakeDue();
    afterQuantum();
  }
  stats_.ticks = now_;
  return finishStats();
}

void SimLaunch::afterQuantum() {
  if (opts_.progress && stats_.steps >= nextProgress_) {
    nextProgress_ = stats_.steps + std::max<int64_t>(opts_.progressEvery, 1);
    opts_.progress(SimProgress{stats_.steps, now_, live_, static_cast<int64_t>(waves_.size())});
  }
  if (stats_.steps > opts_.maxSteps)
    throw SimError(plan_.key.variantName(),
                   fmt::format("ran past maxSteps ({} ops executed, {} waves still live at tick {})",
                               stats_.steps, live_, now_));
}

SimStats SimLaunch::finishStats() {
  if (races_) races_->finish(stats_);
  for (size_t s = 0; s < plan_.stages.size(); ++s)
    if (stageBytes_[s]) stats_.bytesLoadedByStage[plan_.stages[s].name] += stageBytes_[s];
  if (stageBytes_.back()) stats_.bytesLoadedByStage["(no stage)"] += stageBytes_.back();
  const size_t stages = plan_.stages.size();
  for (size_t i = 0; i < spans_.size(); ++i)
    if (spans_[i].first >= 0) {
      const int ctaIndex = static_cast<int>(i / stages);
      stats_.stageSpans.push_back({ctaIndex / blocks_, ctaIndex % blocks_,
                                   static_cast<int>(i % stages), spans_[i].first, spans_[i].second});
    }
  return stats_;
}

void SimLaunch::noteSpan(const SimWave& w, int64_t tick) {
  if (spans_.empty() || w.pc >= static_cast<int32_t>(prog_.insts.size()) || prog_.insts[w.pc].stage < 0) return;
  auto& sp = spans_[w.ctaIndex * plan_.stages.size() + static_cast<size_t>(prog_.insts[w.pc].stage)];
  if (sp.first < 0) sp.first = tick;
  sp.second = tick;
}

int SimLaunch::runWave(uint32_t wi, int quantum) {
  SimWave& w = waves_[wi];
  const int32_t end = static_cast<int32_t>(prog_.insts.size());
  if (w.pc >= end) {
    exitWave(w);
    return 0;
  }
  int n = 0;
  while (n < quantum) {
    noteSpan(w, now_);
    const Status s = step(w);
    ++n;
    if (s != kContinue) break;
    if (w.pc >= end) {
      exitWave(w);
      break;
    }
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Messages

std::string SimLaunch::stageName(int stage) const {
  return stage >= 0 && stage < static_cast<int>(plan_.stages.size()) ? plan_.stages[stage].name : "(no stage)";
}

std::string SimLaunch::where(const SimWave& w, const SimInst& in, int lane) const {
  std::string op = fmt::format("op #{} {}", in.opNum, ir::opName(in.op->code));
  if (in.op->result) op += fmt::format(" (%{})", in.op->result.id);
  std::string s = fmt::format("{}, stage '{}', {}, rank {} CTA {} wave {}", plan_.key.variantName(),
                              stageName(in.stage), op, w.rank, w.cta, w.wave);
  if (lane >= 0) s += fmt::format(" lane {}", lane);
  return s;
}

void SimLaunch::fail(const SimWave& w, const SimInst& in, int lane, const std::string& what) const {
  throw SimError(where(w, in, lane), what);
}

}  // namespace monogen::runtime
