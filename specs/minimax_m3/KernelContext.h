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

  /// i32 literal.
  ir::Val i32(int64_t v) { return b.i32(v); }
  /// `base` + `area`.offset + index * 8: pair `index` of a flag array.
  ir::Val pairAt(ir::Val base, const Area& area, ir::Val index);
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
};

}  // namespace monogen::specs::minimax_m3
