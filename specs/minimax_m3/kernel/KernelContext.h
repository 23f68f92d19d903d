// What every stage of the MiniMax-M3 FFN kernel reads: the config, the layout, the builder, the
// CTA's ids, the kernel arguments, the few sync idioms the stages share (the CTA barrier with or
// without draining stores, the task loop, pair addresses), and the MFMA tile view (MfmaTile) the
// GEMM stages read their lanes through.
#pragma once
#include <functional>
#include <vector>

#include "ir/Builder.h"
#include "ir/Mfma.h"
#include "ir/Plan.h"
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

/// One wave's tile view of an MFMA kind over a K step of `chain` MFMAs chained through the
/// accumulator (ThunderKittens' typed register tiles, on gfx950's wave64 MFMA): the stages say
/// "the lane's A row, its K, its accumulator element's (row, column)" through it and never spell
/// out lane arithmetic. The lane layout is ir/Mfma.h's declared one (aRow/aCol/bRow/bCol/dRow/
/// dCol, the one model the Sim and the reference share), read in the tile form every 16 x 16
/// kind there has: lane l holds row l % 16 of A, column l % 16 of B, K groupK (l / 16) + e of
/// one MFMA's A and B (its element e), and accumulator rows accRows (l / 16) + i of column l % 16
/// (its element i). of() checks that form against the declared functions over all 64 lanes and
/// every element and throws IrError naming the kind if it does not hold. Nothing here assumes an
/// element type: bf16 16x16x32 (8 bf16 a lane), f32 16x16x4 (1 f32) and an fp8 16x16x32 (8
/// bytes a lane, A[l % 16][8 (l / 16) + e]) read alike; the caller names the operand's IR type.
///
/// A step's K: lane group g = l / 16 holds laneRunK() = chain x groupK contiguous K of the step,
/// and MFMA d's element e is K stepK0 + g laneRunK + groupK d + e (kOf). A16W4's step is 4 bf16
/// MFMAs, 32 K a lane group (one e8m0 block); the router's chunk 4 f32 MFMAs, 4 K a lane group.
/// This is a relabeling of the GEMM's K, the same for A and B, and it fixes the f32 order of a
/// step's products: MFMA d = 0 .. chain - 1 in order, each adding its K in ir/Mfma.h's order
/// (its local k = groupK g + e ascending) to the accumulator.
struct MfmaTile {
  ir::MfmaKind kind = ir::MfmaKind::None;
  ir::mfma::Shape shape{};  // M x N x K, elements a lane of A/B and of the accumulator
  int chain = 1;            // MFMAs a step, chained through the accumulator
  int groupK = 0;           // K a lane group holds of one MFMA (8: 16x16x32 bf16 / fp8; 1: 16x16x4 f32)
  int accRows = 0;          // accumulator rows a lane group holds (4)
  ir::Val group;            // (IR) lane / 16: the lane's K group of A and B, its accumulator row block
  ir::Val col;              // (IR) lane % 16: the lane's A row, B column and accumulator column

  /// The host-side constants of `kind`'s tile form (no IR: group and col stay unset), checked
  /// against ir/Mfma.h; throws IrError when the declared layout is not the tile form or chain < 1.
  static MfmaTile of(ir::MfmaKind kind, int chain);
  /// of(kind, chain), then emits group = lane / 16 and col = lane % 16, in that order.
  static MfmaTile at(ir::Val lane, ir::MfmaKind kind, int chain);

  /// K a step covers: chain x K.
  int stepK() const { return chain * shape.k; }
  /// Contiguous K a lane holds in a step: chain x groupK.
  int laneRunK() const { return chain * groupK; }
  /// Offset in the lane's run of MFMA d's first element: groupK x d.
  int kOffset(int d) const { return groupK * d; }
  /// Host mirror for references and tests: the step K (from the step's start) of lane `lane`'s
  /// element e of MFMA d.
  int kOf(int lane, int d, int e) const { return laneRunK() * (lane / shape.m) + kOffset(d) + e; }

  /// (IR) The lane's A row, B column and accumulator column: all lane % 16 (no op emitted).
  ir::Val aRow() const { return col; }
  ir::Val bCol() const { return col; }
  ir::Val accCol() const { return col; }
  /// (IR) The first K of the lane's run from the step's start: group x laneRunK().
  ir::Val laneK0() const;
  /// (IR) The accumulator row of the lane's element i: group x accRows + i.
  ir::Val accRow(int i) const;

  /// (IR) The lane's operands of one step, MFMA d = 0 .. chain - 1 in order: a load of `operand`
  /// (one MFMA's lane elements, e.g. <8 x bf16>, f32) at ptrOf(kOffset(d)), ptrOf giving the
  /// address of the lane's run's element at that offset (K laneK0() + offset of its row).
  std::vector<ir::Val> load(ir::Type operand, const std::function<ir::Val(int kOffset)>& ptrOf) const;
  /// load(), each operand then select(live, loaded, 0): a lane whose run lies past the matrix
  /// (live false; ptrOf must still give an address it may read) gets +0 elements.
  std::vector<ir::Val> load(ir::Type operand, const std::function<ir::Val(int kOffset)>& ptrOf, ir::Val live) const;
  /// (IR) One step: acc = mfma(kind, a(d), b(d), acc) for d = 0 .. chain - 1 in order (the
  /// accumulator chain); returns the last accumulator. a(d) / b(d) give MFMA d's lane operands
  /// (they may emit ops: a dequantized A, a normalized B; b(d) is called before a(d)).
  ir::Val step(ir::Val acc, const std::function<ir::Val(int d)>& a, const std::function<ir::Val(int d)>& b) const;
  /// step() over loaded operands: a[d], b[d].
  ir::Val step(ir::Val acc, const std::vector<ir::Val>& a, const std::vector<ir::Val>& b) const;
  /// (IR) Stores the lane's accumulator elements in order, element i at ptrOf(i) (ptrOf places
  /// element i at its (accRow(i), accCol()); called before the element is extracted).
  void storeAcc(ir::Val acc, const std::function<ir::Val(int i)>& ptrOf) const;
  /// storeAcc() into an array of the accumulator's elements (f32) at `base`: element i at
  /// base + index(i) x 4 bytes, index(i) its (accRow(i), accCol())'s place in the array.
  void storeAcc(ir::Val acc, ir::Val base, const std::function<ir::Val(int i)>& index) const;
};

struct KernelContext {
  /// Binds the spec to b. Nothing is computed in the kernel's prologue: every stage (stage())
  /// binds its own ids, arguments and LDS pools, so a value's registers are live in one stage at
  /// most, and stages talk through memory only.
  KernelContext(const ModelConfig& cfg, const Layout& layout, const ir::Plan& plan, ir::Builder& b);

  const ModelConfig& cfg;
  const Layout& L;
  ir::Builder& b;

  // --- ids ---
  ir::Val tid, lane, block;
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
  MoeExperts experts = MoeExperts::All;
  ScaleLayout scales = ScaleLayout::E8m0Shuffle;  // the key's scales knob: how s13 / s2 are held
  /// Loads every rank's symmetric-buffer address (peers[0 .. TP)) into peerSym, for the stages
  /// that write to peers (push, down, epoch).
  void loadPeers();
  const ir::Plan* plan_ = nullptr;

  /// i32 word `index` of the table pool.
  ir::Val tabAt(int word, ir::Val index) { return b.ptrAdd(tab, (i32(word) + index) * i32(4)); }
  ir::Val tabLd(int word, ir::Val index) { return b.load(ir::Type::i32(), tabAt(word, index)); }
  void tabSt(int word, ir::Val index, ir::Val v) { b.store(tabAt(word, index), v); }
  /// The seeds' block_sum: v (f32) summed over the CTA, each wave's butterfly (32 .. 1), then
  /// 0 + wave_0 + ... in order through `red`. Every thread gets the sum. CTA-uniform flow only.
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
  /// key's layout (`scales`): scaleIndex(scales, row, kb, kBlocks) (WeightContract.h) in the IR,
  /// inside the expert's slab of rows x heldScaleColumns(kBlocks) bytes (expertByte). Every
  /// stage's scale load goes through here.
  ir::Val scaleByte(ir::Val tensor, ir::Val e, ir::Val row, ir::Val kb, int64_t rows, int64_t kBlocks);

  /// The CTA's barrier. drain: every thread's earlier stores are released at agent scope first
  /// (the seeds' cta_sync(drain=True)), so a flag published after it covers the whole CTA's stores.
  void ctaSync(bool drain);
  /// b.publish / b.wait: every stage's publishes and waits go through these (and its barriers
  /// through ctaSync), so that each is a site a test-only Mutation (Mutation.h) can name.
  void publish(ir::Val pair, ir::Val value, ir::Val tag, ir::MemOrder o, ir::MemScope s);
  ir::Val wait(ir::Val pair, ir::Val tag, ir::Val bound, ir::Val errWord, ir::Val errCode, int site,
               ir::MemOrder o = ir::MemOrder::Acquire, ir::MemScope s = ir::MemScope::Agent);
  /// Throws when the key's mutation was never built (the last step of buildPlan).
  void finishMutation() const { mutator_.finish(plan_->key.variantName()); }
  /// The tasks of `p` this CTA runs: t = (block - base + blocks) % blocks; t < tasks; t += blocks.
  /// The bounds are CTA-uniform, so the body may hold barriers.
  void forEachTask(const Placement& p, const std::function<void(ir::Val task)>& body);

 private:
  /// The stage's ids, arguments, parity and LDS pools, emitted at its top (stage() calls it).
  void bindStage();
  ir::Value traceStages_;  // the ConstInt holding the trace's stage count (set by finishTrace)
  ir::Value launchTag_;    // the launch's tag, read once in the prologue (launchTagAfter(epoch))
  Mutator mutator_;        // the key's test-only mutation (none in production keys)
};

}  // namespace monogen::specs::minimax_m3
