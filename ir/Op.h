// The kernel IR: per-lane SSA values over structured regions (what one CTA executes). If, For,
// While and StageScope own regions; loop-carried and merged state lives in per-lane mutable
// variables (VarLoad / VarStore). The op set is ir/Ops.def.
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

/// The op set, from ir/Ops.def (operands in order; "T" is the result type). Float arithmetic and
/// conversions yield some NaN for a NaN (payload unspecified), Min/Max of +0 and -0 either zero;
/// ops that move bits keep them. Memory orders and scopes: docs/memory-model.md.
enum class OpCode : uint16_t {
#define OP(Name, printed, Class, operands, regions, Result, flags, doc) Name,
#include "ir/Ops.def"
};

/// The number of opcodes: OpCode values are 0 .. kNumOpCodes - 1.
inline constexpr int kNumOpCodes = 0
#define OP(Name, printed, Class, operands, regions, Result, flags, doc) +1
#include "ir/Ops.def"
    ;

/// An op's family; the Sim and the lowering may dispatch by it.
enum class OpClass : uint8_t { Value, Arithmetic, Conversion, Math, Vector, Pointer, Memory, Sync, Wave, Time,
                               Variable, Control };

/// How an op's result type follows from its operands ("Given": the builder's caller names it).
enum class ResultRule : uint8_t {
  None,        ///< No result.
  Given,       ///< T as the builder's caller gives it (a load's type, a cast's target...).
  I32, I64, F32,
  BF16x8,      ///< <8 x bf16>.
  Operand0, Operand1, Operand2,  ///< The type of that operand.
  Elem0,       ///< Operand 0's element type.
  BoolLanes0,  ///< i1 with operand 0's lanes.
  F32Lanes0,   ///< f32 with operand 0's lanes.
  BF16Lanes0,  ///< bf16 with operand 0's lanes.
  PtrBits0,    ///< The integer as wide as pointer operand 0: i32 for LDS, else i64.
};

/// Op properties (the flags column of ir/Ops.def).
enum OpFlags : uint8_t {
  kNoFlags = 0,
  kBlocking = 1,       ///< May block the wave (Barrier, Wait, Sleep).
  kTouchesMemory = 2,  ///< Reads or writes memory through a pointer operand.
  kVariesByLane = 4,   ///< Its result may differ between a CTA's lanes though its operands do not.
};

/// One record of ir/Ops.def.
struct OpInfo {
  const char* name;   ///< The printed name ("add", "wait", ...).
  OpClass cls;
  int operands;       ///< The operand count.
  int regions;        ///< The regions an op owns.
  ResultRule result;
  uint8_t flags;      ///< OpFlags.
  const char* doc;
};

inline constexpr OpInfo kOpInfo[kNumOpCodes] = {
#define OP(Name, printed, Class, operands, regions, Result, flags, doc) \
  {printed, OpClass::Class, operands, regions, ResultRule::Result, static_cast<uint8_t>(flags), doc},
#include "ir/Ops.def"
};

constexpr const OpInfo& opInfo(OpCode c) { return kOpInfo[static_cast<int>(c)]; }
constexpr OpClass opClass(OpCode c) { return opInfo(c).cls; }
constexpr int opOperands(OpCode c) { return opInfo(c).operands; }
constexpr int opRegions(OpCode c) { return opInfo(c).regions; }
constexpr ResultRule opResult(OpCode c) { return opInfo(c).result; }
/// True for ops that may block a wave (Barrier, Wait, Sleep).
constexpr bool isBlocking(OpCode c) { return opInfo(c).flags & kBlocking; }
/// True for ops that access memory through a pointer (loads, stores, atomics, Publish, Wait).
constexpr bool touchesMemory(OpCode c) { return opInfo(c).flags & kTouchesMemory; }
/// True for ops whose result may differ between lanes for CTA-uniform operands (ids, loads, waves).
constexpr bool variesByLane(OpCode c) { return opInfo(c).flags & kVariesByLane; }

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
constexpr const char* opName(OpCode c) { return static_cast<int>(c) < kNumOpCodes ? opInfo(c).name : "?"; }
const char* cmpPredName(CmpPred p);
const char* rmwOpName(RmwOp r);
const char* memOrderName(MemOrder o);
const char* memScopeName(MemScope s);
const char* mfmaKindName(MfmaKind k);

}  // namespace monogen::ir
