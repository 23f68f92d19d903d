// What every stage of the MiniMax-M3 FFN kernel reads: the config, the layout, the builder, the
// CTA's ids, the kernel arguments, and the common sync idioms (specs/common) bound to them.
#pragma once
#include <functional>
#include <vector>

#include "ir/Builder.h"
#include "ir/Mfma.h"
#include "ir/Plan.h"
#include "specs/common/CtaSync.h"
#include "specs/common/MfmaTile.h"
#include "specs/common/Pairs.h"
#include "specs/common/TaskLoop.h"
#include "specs/minimax_m3/kernel/FfnVariant.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/kernel/Mutation.h"

namespace monogen::specs::minimax_m3 {

/// Launch tags: a launch's tag is launchTagAfter(epoch), the epoch being the last launch's tag as
/// the device holds it (never an argument: a replayed graph must make a new launch). Tags run
/// 1 .. 2^30 and wrap to 1: consecutive launches always differ in parity (the areas' halves),
/// and a pair is rewritten every second launch, so a tag 2^30 launches old is never waited for.
inline constexpr int32_t kLaunchTagMask = (1 << 30) - 1;
inline constexpr int32_t launchTagAfter(int32_t epoch) { return (epoch & kLaunchTagMask) + 1; }
/// The epoch that makes the next launch's tag `tag` (1 .. 2^30).
inline constexpr int32_t epochBefore(int32_t tag) { return tag - 1; }

struct KernelContext {
  /// Binds the spec to b. Nothing is computed in the kernel's prologue: every stage (stage())
  /// binds its own ids, arguments and LDS pools, so a value's registers are live in one stage at
  /// most, and stages talk through memory only.
  KernelContext(const FfnVariant& v, const ir::Plan& plan, ir::Builder& b);

  const FfnVariant& variant;
  const ModelConfig& cfg;
  const Layout& L;
  const FfnKnobs& knobs;
  ir::Builder& b;

  // --- ids ---
  ir::Val tid, lane, block;
  /// The layer launch: each stage binds `block` to its own read (Builder::stageBlock), so no
  /// value derived from it is shared with, hoisted above or live into another stage.
  bool stageBlocks = false;
  // --- arguments ---
  ir::Val part, resIn, resOut;  // bf16 [S][hidden] pointers (part: input=part only)
  ir::Val attn, wo, woScale;    // input=attn only: bf16 [S][attnWidth], e4m3fn [hidden][attnWidth], f32 [hidden]
  ir::Val scratch;              // this rank's scratch (SRES, SSQ)
  ir::Val sym;                  // this rank's symmetric buffer (ATTN)
  ir::Val err;                  // the error word and its count
  ir::Val tag, rank;            // i32: the launch's tag (launchTagAfter(epoch), never 0), this rank
  ir::Val waitTicks;            // i64: a wait's bound in 100 MHz ticks
  std::vector<ir::Val> peerSym; // every rank's symmetric buffer, rank order (after loadPeers())
  ir::Val parity;               // i32: tag & 1, the half of a parity-halved area this launch uses
  ir::Val trace;                // key.trace: u64 [blocks][stages][2], the stages' start / end stamps
  // --- the MoE's arguments (weight contract) ---
  ir::Val normW, routerW, bias, w13, s13, w2, s2, slots, out;
  ir::Val wave;                 // the thread's wave
  ir::Val red, tab, contrib;    // LDS pools
  ir::Val bstage;               // LDS pool: the GEMVs' staged B operands (when L.bstage.bytes > 0)
  /// Loads every rank's symmetric-buffer address (peers[0 .. TP)) into peerSym, for the stages
  /// that write to peers (push, down, epoch).
  void loadPeers();
  const ir::Plan* plan_ = nullptr;

  /// i32 word `index` of the table pool.
  ir::Val tabAt(int word, ir::Val index) { return b.ptrAdd(tab, (i32(word) + index) * i32(4)); }
  ir::Val tabLd(int word, ir::Val index) { return b.load(ir::Type::i32(), tabAt(word, index)); }
  void tabSt(int word, ir::Val index, ir::Val v) { b.store(tabAt(word, index), v); }
  /// The same at a literal index (emitted after v, as a c.i32(index) argument is).
  ir::Val tabLd(int word, int64_t index) { return tabLd(word, i32(index)); }
  void tabSt(int word, int64_t index, ir::Val v) { tabSt(word, i32(index), v); }
  /// The slot count: word 0 of the table's misc words (StageTable.cpp sets it).
  ir::Val slotCount() { return tabLd(L.tw.misc, 0); }
  void setSlotCount(ir::Val n) { tabSt(L.tw.misc, 0, n); }
  /// specs::blockSum over this stage's lane, wave and the `red` pool (L.waves f32).
  ir::Val blockSum(ir::Val v);
  /// The CTA waits for XRDY of every row (thread t < S polls row t), then syncs.
  void awaitX(int site);

  /// An FP8 MFMA operand (MfmaTile of F32_16x16x32_FP8) from 8 bf16 values: byte e of the i64 is
  /// F32ToFp8(f32(x[e]) * scale), the per-token quant of one lane's run (OprojReference.h).
  ir::Val fp8x8(ir::Val x8, ir::Val scale);
  /// i32 literal.
  ir::Val i32(int64_t v) { return b.i32(v); }
  /// The wave's MfmaTile of `kind` over steps of `chain` MFMAs, on this stage's lane
  /// (MfmaTile::at: emits lane / 16, lane % 16).
  MfmaTile mfmaTile(ir::MfmaKind kind, int chain) const { return MfmaTile::at(lane, kind, chain); }
  ir::Val argPtr(const char* name);  // a global-pointer argument of the Plan, by name
  /// shuffledOffset16x16 (WeightContract.h) in the IR: the byte offset of row-major fp4x2 byte
  /// (row, byteCol) in an AITER (16,16)-shuffled matrix of kBytes bytes a row.
  ir::Val shuffledOffset(ir::Val row, ir::Val byteCol, int64_t kBytes);
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
  /// Byte `offset` of expert e in an expert-major weight tensor (w13, s13, w2, s2) of
  /// bytesPerExpert bytes an expert (every expert, the shared one included): weights + e *
  /// bytesPerExpert + offset. When the tensor is 2 GiB or more (a rank's w13 at TP 1 is 129 x
  /// 6144 x 3072 bytes) the sum is 64-bit, sext(e) * bytesPerExpert + sext(offset); below that an
  /// i32 sum cannot leave the tensor's range, and it costs no 64-bit registers.
  ir::Val expertByte(ir::Val weights, ir::Val e, int64_t bytesPerExpert, ir::Val offset);
  /// The address of the e8m0 scale of row `row`, K block `kb` of expert e in a contract scale
  /// tensor (s13, s2) of `rows` rows an expert and kBlocks logical K blocks a row, held in the
  /// key's layout (`knobs.scales`): scaleIndex(scales, row, kb, kBlocks) (WeightContract.h) in the IR,
  /// inside the expert's slab of rows x heldScaleColumns(kBlocks) bytes (expertByte). Every
  /// stage's scale load goes through here.
  ir::Val scaleByte(ir::Val tensor, ir::Val e, ir::Val row, ir::Val kb, int64_t rows, int64_t kBlocks);

  /// specs::ctaSync: the CTA's barrier, after releasing the CTA's stores when drain.
  void ctaSync(bool drain);
  /// specs::publishPair / awaitPair: every stage's publishes, waits and barriers go through these
  /// helpers, so each is a site a test-only Mutation (Mutation.h) can name.
  void publish(ir::Val pair, ir::Val value, ir::Val tag, ir::MemOrder o, ir::MemScope s);
  /// The wait is for this launch's tag, bounded by waitTicks; on a timeout it fails with `code`.
  ir::Val await(ir::Val pair, ir::Val code, int site, ir::MemOrder o = ir::MemOrder::Acquire,
                ir::MemScope s = ir::MemScope::Agent);
  /// await() with whether the pair came (specs::awaitPairChecked): for a value that reaches an
  /// address, an index or a bound, which must then not be used under !ok.
  AwaitedPair awaitChecked(ir::Val pair, ir::Val code, int site, ir::MemOrder o = ir::MemOrder::Acquire,
                           ir::MemScope s = ir::MemScope::Agent);
  /// errorCode(site, rank, token) (Sites.h) in the IR: a wait by this rank for row `token`, for
  /// row 0, or for rank `owner`'s pair of row `token`.
  ir::Val errorCode(int site, ir::Val token);
  ir::Val errorCode(int site);
  ir::Val errorCode(int site, int owner, ir::Val token);
  /// errorCode(site, peer, 0) in the IR: a wait for rank `peer` (a Val).
  ir::Val peerErrorCode(int site, ir::Val peer);
  /// The launch's tag as the prologue computed it (launchTagAfter(epoch)): for another launch's
  /// stages in the same kernel (the layer launch's attention stages).
  ir::Value launchTag() const { return launchTag_; }
  /// Throws when the key's mutation was never built (the last step of buildPlan).
  void finishMutation() const { mutator_.finish(plan_->key.variantName()); }
  /// specs::forEachTask over p's placement: the tasks of `p` this CTA runs.
  void forEachTask(const Placement& p, const std::function<void(ir::Val task)>& body);

 private:
  /// The stage's ids, arguments, parity and LDS pools, emitted at its top (stage() calls it).
  void bindStage();
  ir::Value traceStages_;  // the ConstInt holding the trace's stage count (set by finishTrace)
  ir::Value launchTag_;    // the launch's tag, read once in the prologue (launchTagAfter(epoch))
  Mutator mutator_;        // the key's test-only mutation (none in production keys)
};

}  // namespace monogen::specs::minimax_m3
