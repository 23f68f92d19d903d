// What every stage of the MiniMax-M3 attention launch reads: the variant, the builder, the CTA's
// ids and the kernel arguments by name, bound afresh in each stage (stages talk through memory).
#pragma once
#include <functional>
#include <map>
#include <string>

#include "ir/Builder.h"
#include "ir/Plan.h"
#include "specs/common/CtaSync.h"
#include "specs/common/Pairs.h"
#include "specs/common/SyncHooks.h"
#include "specs/common/TaskLoop.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"

namespace monogen::specs::minimax_m3 {

/// The attention launch's kernel argument names.
namespace attn_arg {
inline constexpr const char *kX = "x", *kRes = "res", *kResOut = "res_out", *kGIn = "g_in", *kScratch = "scratch",
                            *kGQ = "g_q", *kGK = "g_k", *kGIk = "g_ik", *kGIq = "g_iq", *kIq = "iq", *kCosSin = "cos_sin",
                            *kPositions = "positions", *kSlots = "slots", *kIndexSlots = "index_slots",
                            *kKCache = "k_cache", *kVCache = "v_cache", *kKScale = "k_scale",
                            *kVScale = "v_scale", *kIndexCache = "index_cache", *kQ = "q", *kWQkv = "w_qkv",
                            *kSQkv = "s_qkv", *kErr = "err", *kTag = "tag", *kWaitTicks = "wait_ticks",
                            *kSeqLens = "seq_lens", *kBlockTables = "block_tables", *kTableStride = "table_stride",
                            *kAttn = "attn", *kHeadsCount = "heads_count",
                            *kIndexTables = "index_block_tables";
}  // namespace attn_arg

struct AttentionContext {
  AttentionContext(const AttentionVariant& v, const ir::Plan& plan, ir::Builder& b);
  /// Inside another launch's Plan (the layer launch): argument `name` is the Plan's
  /// `renames[name]` when listed, the tag is `tag` (a value of the kernel's prologue), not the
  /// `tag` argument, and each stage's `block` is its own read (Builder::stageBlock).
  AttentionContext(const AttentionVariant& v, const ir::Plan& plan, ir::Builder& b,
                   std::map<std::string, std::string> renames, ir::Value tag);

  const AttentionVariant& variant;
  const AttentionLaunchLayout& L;
  ir::Builder& b;
  ir::Val tid, lane, wave, block;
  ir::Val red;  // LDS: f32 [32] group sums, then f32 [waves] wave maxima
  ir::Val tag, waitTicks, err;  // the launch's tag (i32, never 0), a wait's bound (i64), the error word

  /// A global-pointer argument of the Plan, by name.
  ir::Val arg(const char* name);
  ir::Val i32(int64_t v) { return b.i32(v); }
  ir::Val f32(double v) { return b.f32(v); }
  /// Plan stage `index`'s body with this stage's ids bound.
  void stage(int index, const std::function<void()>& body);
  /// specs::forEachTask over p.
  void forEachTask(const Placement& p, const std::function<void(ir::Val task)>& body);
  /// Once a CTA that runs any of p's tasks: thread i waits for pairs i, i + threads, .. of the
  /// `count` at byte `offset` (site, the pair's index as token), then the CTA syncs.
  void awaitAllOnce(const Placement& p, int64_t offset, int64_t count, int site);
  /// specs::ctaSync.
  void ctaSync(bool drain) { specs::ctaSync(b, drain, hooks_); }
  /// Pair `index` of the scratch flag array at byte `offset`.
  ir::Val pairAt(int64_t offset, ir::Val index);
  /// Publishes the launch's tag to the pair (release, agent scope).
  void publish(ir::Val pair);
  /// An i32 scalar argument of the Plan, by name.
  ir::Val scalarI32(const char* name);
  /// Waits for the launch's tag at the pair (acquire, agent scope); past waitTicks the error word
  /// gets site | token << 16.
  void await(ir::Val pair, int site, ir::Val token);
  /// await, then whether the pair carries the tag (awaitPairChecked): a value read after a
  /// timeout reaches no address unless guarded.
  AwaitedPair awaitChecked(ir::Val pair, int site, ir::Val token);
  /// The layer launch's (indexer CP): this rank (i32), rank o's symmetric buffer (a peer
  /// pointer, o an i32 value), the launch's parity half (tag & 1).
  ir::Val rank();
  ir::Val peerSym(ir::Val o);
  ir::Val parity() { return tag & i32(1); }
  /// A message pair to a peer: `value` with the launch's tag, relaxed at system scope (the pair
  /// carries its own tag); awaited by awaitPeerChecked (relaxed, system scope).
  void publishPeer(ir::Val pair, ir::Val value);
  AwaitedPair awaitPeerChecked(ir::Val pair, int site, ir::Val token);
  /// This launch fails with site | token << 16 (i32): error word 0 -> it if still 0 (the first
  /// failure wins), the failure count + 1; both atomic at agent scope.
  void fail(int site, ir::Val token);

 private:
  const ir::Plan* plan_;
  SyncHooks hooks_;
  std::map<std::string, std::string> renames_;
  ir::Value launchTag_;  // set: the tag of the enclosing launch

  /// The Plan's name of argument `name`.
  const char* planName(const char* name) const;
};

}  // namespace monogen::specs::minimax_m3
