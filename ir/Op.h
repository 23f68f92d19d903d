// The kernel IR: per-lane SSA values over structured regions (what one CTA executes).
//
// Every op computes, for each active lane of a wave, from its operands' values in that lane
// (wave ops read other lanes explicitly). Control flow is structured: If, For, While and Stage
// own regions. Loop-carried and branch-merged state goes through mutable variables (VarLoad /
// VarStore), which lower to allocas + mem2reg and are per-lane registers on the Sim device.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/Type.h"

namespace monogen::ir {

/// An SSA value: an index into Function::values (0 is "no value").
struct Value {
  uint32_t id = 0;
  explicit operator bool() const { return id != 0; }
  bool operator==(const Value& o) const { return id == o.id; }
};

/// A mutable per-lane variable: an index into Function::vars.
struct Var {
  uint32_t id = 0;
};

/// The op set. Operands are listed in order; "T" is the result type.
enum class OpCode : uint16_t {
  // --- values ---
  ConstInt,     ///< attrs.imm as an integer/i1 of type T.
  ConstFloat,   ///< attrs.fimm as f32 or bf16 (exactly representable).
  ThreadId,     ///< The lane's thread index in the CTA, i32.
  LaneId,       ///< The lane's index in its wave (0..63), i32.
  WaveId,       ///< The wave's index in the CTA, i32.
  BlockId,      ///< The CTA's index in the grid, i32.
  Arg,          ///< Kernel argument attrs.imm (a pointer to global memory, or an i32/i64 scalar).
  // --- arithmetic: elementwise on scalars and vectors; ints wrap, floats are IEEE RNE ---
  // What the IR leaves open, as LLVM does: a NaN result of float arithmetic or of a float
  // conversion is some NaN (its sign, payload and quietness are unspecified: x86 and gfx950
  // propagate different payloads), and Min/Max of +0 and -0 may return either zero. Ops that
  // move bits (Bitcast, Select, Extract, Insert, Splat, Shuffle, loads and stores) keep them.
  Add, Sub, Mul,
  Div,          ///< Float: IEEE correctly rounded. Int: signed, truncating.
  Rem,          ///< Int: signed remainder.
  UDiv, URem,   ///< Unsigned integer division and remainder.
  And, Or, Xor, Shl, LShr, AShr,
  Min, Max,     ///< Int: signed. Float: IEEE minNum/maxNum (a NaN operand, quiet or signalling, yields the other).
  UMin, UMax,   ///< Unsigned integer min/max.
  Fma,          ///< a * b + c in f32 with a single rounding.
  Cmp,          ///< (a, b) -> i1 by attrs.pred.
  Select,       ///< (cond i1, a, b) -> cond ? a : b.
  // --- conversions ---
  Bitcast,      ///< Reinterpret bits; same total width.
  Trunc, ZExt, SExt,          ///< Integer width changes.
  SIToFP, UIToFP, FPToSI,     ///< Int <-> f32 (FPToSI truncates toward zero).
  BF16ToF32,    ///< Exact widening of bf16 to f32.
  F32ToBF16,    ///< f32 -> bf16, round to nearest even (NaN stays a NaN).
  Fp4ToF32,     ///< (code i32 low 4 bits, scale f32) -> e2m1(code) * scale.
  Fp4x8ToBF16x8,  ///< (word i32: 8 e2m1 codes, low nibble first; scale f32) -> bf16x8, e = bf16(e2m1(code e) * scale).
  E8m0ToF32,    ///< i32 low 8 bits as an e8m0 scale: 2^(e-127); 255 is NaN.
  Fp8ToF32,     ///< i32 low 8 bits as OCP e4m3fn -> f32 (exact).
  F32ToFp8,     ///< f32 -> OCP e4m3fn byte in an i32: RNE, saturating to +-448, NaN -> 0x7f.
  // --- math (f32) ---
  Exp2, Rcp, Rsq, Sqrt,
  // --- vectors ---
  Extract,      ///< (vec) -> element attrs.imm.
  Insert,       ///< (vec, scalar) -> vec with element attrs.imm replaced.
  Splat,        ///< (scalar) -> T, every element the scalar.
  // --- pointers ---
  PtrAdd,       ///< (ptr, byte offset i32 or i64, signed) -> ptr in the same space.
  PtrToInt,     ///< ptr -> i64 (global/peer) or i32 (lds).
  IntToPtr,     ///< i64 -> global/peer pointer (a device address); i32 -> LDS pointer, a byte
                ///< offset into the CTA's LDS (Plan::ldsBytes, lowered as one LDS array).
  // --- memory ---
  Load,         ///< (ptr) -> T, 1..16 bytes, with attrs.order (Plain/Relaxed/Acquire) and scope.
  Store,        ///< (ptr, value), with attrs.order (Plain/Relaxed/Release) and scope.
  AtomicRmw,    ///< (ptr, value) -> old value; attrs.rmw, order, scope. 32/64-bit.
  CmpXchg,      ///< (ptr, expected, desired) -> old value; order, scope.
  Fence,        ///< attrs.order (Acquire/Release/AcqRel) at attrs.scope.
  Barrier,      ///< The CTA's workgroup barrier; orders LDS and global accesses at workgroup scope.
  // --- wave ops ---
  Shuffle,      ///< (value, src lane i32) -> value of lane src & 63 (0 if that lane is inactive).
  Ballot,       ///< (i1) -> i64 with bit l set when lane l is active and true.
  Popcount,     ///< (i32 or i64) -> i32 number of set bits.
  ReadFirstLane,///< (value) -> the value of the wave's first active lane, in every lane.
  Mfma,         ///< (a, b, acc) -> acc', the attrs.mfma shape with its documented lane layout.
  // --- sync: first-class (value, tag) pairs ---
  // Scopes, as the memory model says (LLVM AMDGPUUsage, "Memory Model GFX942", which gfx950
  // follows; table "AMDHSA Memory Model Code Sequences GFX942"):
  //  - A flag another GPU reads (a push into a peer's symmetric buffer, the handshake) is
  //    published at System scope: its store carries sc0 sc1 and, for Release, a buffer_wbl2 sc0 sc1
  //    and s_waitcnt vmcnt(0) come first, so what the flag releases is written back past this
  //    GPU's L2 before the flag can be seen. A pair whose value is the whole message (the
  //    all-reduce pushes) is Relaxed: the single 8-byte store is the data.
  //  - A flag only this GPU's CTAs read is published at Agent scope (sc1; buffer_wbl2 sc1 + wait).
  //  - A wait polls at its scope (agent: sc1, system: sc0 sc1) and, for Acquire, ends with
  //    s_waitcnt vmcnt(0) and buffer_inv sc1 (agent) / sc0 sc1 (system), so the loads after it do
  //    not hit stale L2 / L1 lines. A wait on a flag a peer GPU wrote takes System scope: the
  //    HSA/LLVM model synchronizes a release and an acquire only when each one's scope includes the
  //    other thread, and a peer GPU is outside this agent. (AITER's and vLLM's custom all-reduce
  //    poll their peers' flags with __MEMORY_SCOPE_DEVICE, agent, acquires: that relies on the
  //    XGMI probes invalidating local lines the peer writes; ours costs buffer_inv sc0 sc1 instead
  //    of sc1 per wait.) Workgroup scope writes back and invalidates nothing (not tgsplit).
  // codegen/Lowering.cpp lowers these (with an explicit wait after buffer_wbl2, which LLVM 22.1
  // drops, llvm/llvm-project#178316); tests/test_codegen_scopes.cpp checks the ISA of each.
  Publish,      ///< (pair ptr, value i32, tag i32): one 8-byte store of {value, tag}; order Release or Relaxed.
  Wait,         ///< (pair ptr, tag i32, bound i64 ticks, error word ptr, error code i32) -> value i32.
                ///< Polls until the pair carries tag, then reads with attrs.order (Acquire/Relaxed).
                ///< Past the bound it sets the error word (first error wins) and counts it; attrs.site.
  // --- time ---
  Realtime,     ///< The 100 MHz realtime clock, i64.
  Sleep,        ///< Sleep about attrs.imm * 64 clock cycles (s_sleep).
  // --- mutable variables ---
  VarLoad,      ///< -> the lane's value of var attrs.var.
  VarStore,     ///< (value): the active lanes' var attrs.var := value.
  // --- structured control flow ---
  If,           ///< (cond i1) regions[0] then, regions[1] else.
  For,          ///< (lo, hi, step i32) regions[0] body; its arg is the induction variable.
  While,        ///< regions[0] computes the condition (its `yield`), regions[1] the body.
  StageScope,   ///< regions[0] runs as stage attrs.stage of the Plan (names errors and trace spans).
};

/// Comparison predicates: signed/unsigned ints, ordered/unordered floats.
enum class CmpPred : uint8_t { Eq, Ne, Slt, Sle, Sgt, Sge, Ult, Ule, Ugt, Uge, Oeq, One, Olt, Ole, Ogt, Oge, Uno, Ord };
/// Read-modify-write operations of AtomicRmw.
enum class RmwOp : uint8_t { Add, Or, And, Xor, Max, Min, UMax, UMin, Xchg };
/// Memory ordering of a load, store, atomic or fence.
enum class MemOrder : uint8_t { Plain, Relaxed, Acquire, Release, AcqRel, SeqCst };
/// Memory scope: the CTA, the GPU, or the whole system (other GPUs included).
enum class MemScope : uint8_t { Workgroup, Agent, System };
/// The MFMA shapes gfx950 has that the IR knows. See ir/Mfma.h for their lane layouts.
enum class MfmaKind : uint8_t {
  None,
  F32_16x16x32_BF16,  ///< a, b: <8 x bf16>; acc: <4 x f32>.
  F32_16x16x4_F32,    ///< a, b: f32; acc: <4 x f32>.
  F32_16x16x32_FP8,   ///< a, b: i64, 8 OCP e4m3fn bytes (byte e is element e); acc: <4 x f32>.
};

/// An op's attributes; which fields mean something depends on the opcode.
struct Attrs {
  int64_t imm = 0;    ///< ConstInt value, Arg index, Extract/Insert index, Sleep amount.
  double fimm = 0;    ///< ConstFloat value.
  CmpPred pred = CmpPred::Eq;
  RmwOp rmw = RmwOp::Add;
  MemOrder order = MemOrder::Plain;
  MemScope scope = MemScope::Agent;
  MfmaKind mfma = MfmaKind::None;
  int32_t site = 0;   ///< Wait: the site id written to the error word.
  int32_t var = -1;   ///< VarLoad/VarStore: the variable.
  int32_t stage = -1; ///< StageScope: index into Plan::stages.
};

struct Op;

/// A straight-line list of ops. For's body has one arg (the induction variable);
/// While's condition region yields its i1 condition.
struct Region {
  std::vector<Op> ops;
  std::vector<Value> args;
  Value yield;
};

/// One operation: opcode, result (if any), operands, attributes and owned regions.
struct Op {
  OpCode code;
  Value result;
  std::vector<Value> operands;
  Attrs attrs;
  std::vector<Region> regions;
};

/// Per-value information: its type and an optional name for the printer.
struct ValueInfo {
  Type type;
  std::string name;
};

/// A mutable variable's type and name.
struct VarInfo {
  Type type;
  std::string name;
};

/// The kernel: one function a CTA runs, as a body region over values and variables.
struct Function {
  std::string name;
  std::vector<ValueInfo> values{ValueInfo{}};  // index 0 is "no value"
  std::vector<VarInfo> vars;
  Region body;

  const Type& typeOf(Value v) const { return values.at(v.id).type; }
};

/// The op's printed name ("add", "wait", ...).
const char* opName(OpCode c);
const char* cmpPredName(CmpPred p);
const char* rmwOpName(RmwOp r);
const char* memOrderName(MemOrder o);
const char* memScopeName(MemScope s);
const char* mfmaKindName(MfmaKind k);
/// True for ops that may block a wave (Barrier, Wait, Sleep) or touch memory.
bool isBlocking(OpCode c);
bool touchesMemory(OpCode c);

}  // namespace monogen::ir
