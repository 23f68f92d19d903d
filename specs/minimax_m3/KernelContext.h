// What every stage of the MiniMax-M3 FFN kernel reads: the config, the layout, the builder, the
// CTA's ids, the kernel arguments, and the few sync idioms the stages share (the CTA barrier
// with or without draining stores, the task loop, pair addresses).
#pragma once
#include <functional>
#include <vector>

#include "ir/Builder.h"
#include "ir/Plan.h"
#include "specs/minimax_m3/Layout.h"
#include "specs/minimax_m3/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

/// Kernel argument names, in argument order (Spec.cpp declares their types and roles).
namespace arg {
inline constexpr const char* kPart = "part";
inline constexpr const char* kResIn = "res_in";
inline constexpr const char* kResOut = "res_out";
inline constexpr const char* kScratch = "scratch";
inline constexpr const char* kSym = "sym";
inline constexpr const char* kPeers = "peers";
inline constexpr const char* kErr = "err";
inline constexpr const char* kTag = "tag";
inline constexpr const char* kRank = "rank";
inline constexpr const char* kWaitTicks = "wait_ticks";
inline constexpr const char* kEpoch = "epoch";          // the finish stages' control args (StageFinish.cpp)
inline constexpr const char* kHandshake = "handshake";
inline constexpr const char* kInject = "inject";
inline constexpr const char* kTrace = "trace";          // only when key.trace
}  // namespace arg

struct KernelContext {
  /// Emits the kernel's prologue (ids, arguments, every rank's sym address) into b's current
  /// region; the stages then use these values.
  KernelContext(const ModelConfig& cfg, const Layout& layout, const ir::Plan& plan, ir::Builder& b);

  const ModelConfig& cfg;
  const Layout& L;
  ir::Builder& b;

  // --- ids ---
  ir::Val tid, lane, block;
  // --- arguments ---
  ir::Val part, resIn, resOut;  // bf16 [S][hidden] pointers
  ir::Val scratch;              // this rank's scratch (SRES, SSQ)
  ir::Val sym;                  // this rank's symmetric buffer (ATTN)
  ir::Val err;                  // the error word and its count
  ir::Val tag, rank;            // i32: the launch's tag (never 0), this rank
  ir::Val waitTicks;            // i64: a wait's bound in 100 MHz ticks
  std::vector<ir::Val> peerSym; // every rank's symmetric buffer (peer pointers), rank order
  ir::Val parity;               // i32: tag & 1, the half of a parity-halved area this launch uses
  ir::Val trace;                // key.trace: u64 [blocks][stages][2], the stages' start / end stamps

  /// i32 literal.
  ir::Val i32(int64_t v) { return b.i32(v); }
  /// `base` + `area`.offset + index * 8: pair `index` of a flag array. For a parity-halved
  /// area (area.parity) it is pair `index` of this launch's half (tag & 1).
  ir::Val pairAt(ir::Val base, const Area& area, ir::Val index);
  /// This launch fails with `code` (i32): error word 0 -> code if it is still 0 (the first
  /// failure wins), the failure count + 1; both atomic at agent scope. Any lane may call it.
  void fail(ir::Val code);
  /// Plan stage `index`'s body in its StageScope. With the trace knob, thread 0 of every CTA
  /// stores the realtime clock to trace[block][index][0] before the body and [1] after it
  /// (plain stores, no barrier); every stage of the kernel goes through here.
  void stage(int index, const std::function<void()>& body);
  /// Sets the trace stamps' stage count (the trace argument's second dimension) once every
  /// stage is in the Plan; the last step of building the kernel (StageFinish.cpp calls it).
  void finishTrace(ir::Plan& plan);
  /// `base` + `area`.offset + index * elemBytes: element `index` of a plain area.
  ir::Val elemAt(ir::Val base, const Area& area, ir::Val index, int elemBytes);
  /// Element `index` of a kernel tensor argument of elemBytes-sized elements.
  ir::Val elemAt(ir::Val base, ir::Val index, int elemBytes);

  /// The CTA's barrier. drain: every thread's earlier stores are released at agent scope first
  /// (the seeds' cta_sync(drain=True)), so a flag published after it covers the whole CTA's stores.
  void ctaSync(bool drain);
  /// The tasks of `p` this CTA runs: t = (block - base + blocks) % blocks; t < tasks; t += blocks.
  /// The bounds are CTA-uniform, so the body may hold barriers.
  void forEachTask(const Placement& p, const std::function<void(ir::Val task)>& body);

 private:
  ir::Value traceStages_;  // the ConstInt holding the trace's stage count (set by finishTrace)
};

}  // namespace monogen::specs::minimax_m3
