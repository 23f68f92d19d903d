#include "ir/Builder.h"

#include <fmt/format.h>

#include "ir/Error.h"
#include "ir/Mfma.h"

namespace monogen::ir {

const Type& Val::type() const { return b->fn().typeOf(v); }

Builder::Builder(Function& fn) : fn_(fn) { stack_.push_back(&fn_.body); }

Value Builder::newValue(Type t) {
  fn_.values.push_back(ValueInfo{t, {}});
  return Value{static_cast<uint32_t>(fn_.values.size() - 1)};
}

void Builder::checkShape(OpCode code, size_t operands, size_t regions) const {
  expect(operands == static_cast<size_t>(opOperands(code)), code,
         fmt::format("expected {} operands, got {}", opOperands(code), operands));
  expect(regions == static_cast<size_t>(opRegions(code)), code,
         fmt::format("expected {} regions, got {}", opRegions(code), regions));
}

Type Builder::resultType(OpCode code, const std::vector<Value>& operands, Type given) const {
  auto operand = [&](size_t i) { return fn_.typeOf(operands.at(i)); };
  switch (opResult(code)) {
    case ResultRule::None: fail(code, "has no result");
    case ResultRule::Given: return given;
    case ResultRule::I32: return Type::i32();
    case ResultRule::I64: return Type::i64();
    case ResultRule::F32: return Type::f32();
    case ResultRule::BF16x8: return Type::vec(Type::bf16(), 8);
    case ResultRule::Operand0: return operand(0);
    case ResultRule::Operand1: return operand(1);
    case ResultRule::Operand2: return operand(2);
    case ResultRule::Elem0: return operand(0).elem();
    case ResultRule::BoolLanes0: return Type::vec(Type::i1(), operand(0).lanes);
    case ResultRule::F32Lanes0: return Type::vec(Type::f32(), operand(0).lanes);
    case ResultRule::BF16Lanes0: return Type::vec(Type::bf16(), operand(0).lanes);
    case ResultRule::PtrBits0: return operand(0).space == AddrSpace::Lds ? Type::i32() : Type::i64();
  }
  fail(code, "unknown result rule");
}

Val Builder::emit(OpCode code, std::vector<Value> operands, Attrs attrs, Type given) {
  checkShape(code, operands.size(), 0);
  const Type t = resultType(code, operands, given);
  Op op{code, newValue(t), std::move(operands), attrs, {}};
  Value r = op.result;
  stack_.back()->ops.push_back(std::move(op));
  return wrap(r);
}

void Builder::emitVoid(OpCode code, std::vector<Value> operands, Attrs attrs,
                       std::vector<Region> regions) {
  checkShape(code, operands.size(), regions.size());
  expect(opResult(code) == ResultRule::None, code, "has a result");
  stack_.back()->ops.push_back(Op{code, Value{}, std::move(operands), attrs, std::move(regions)});
}

Region Builder::buildRegion(const std::function<void()>& body) {
  Region r;
  stack_.push_back(&r);
  if (body) body();
  stack_.pop_back();
  return r;
}

void Builder::fail(OpCode op, const std::string& what) const {
  throw IrError(fmt::format("kernel '{}', op {}", fn_.name, opName(op)), what);
}

void Builder::expect(bool ok, OpCode op, const std::string& what) const {
  if (!ok) fail(op, what);
}

// --- values ---

Val Builder::constInt(Type t, int64_t v) {
  expect(t.isInt() && !t.isVector(), OpCode::ConstInt, "expected a scalar integer type, got " + t.str());
  Attrs a;
  a.imm = v;
  return emit(OpCode::ConstInt, {}, a, t);
}

Val Builder::f32(double v) {
  Attrs a;
  a.fimm = static_cast<float>(v);
  return emit(OpCode::ConstFloat, {}, a, Type::f32());
}

Val Builder::bf16(double v) {
  Attrs a;
  a.fimm = v;
  return emit(OpCode::ConstFloat, {}, a, Type::bf16());
}

Val Builder::tid() { return emit(OpCode::ThreadId, {}); }
Val Builder::lane() { return emit(OpCode::LaneId, {}); }
Val Builder::wave() { return emit(OpCode::WaveId, {}); }
Val Builder::block() { return emit(OpCode::BlockId, {}); }

Val Builder::stageBlock() {
  Attrs a;
  a.imm = 1;
  return emit(OpCode::BlockId, {}, a);
}

Val Builder::arg(int index, Type t, const std::string& name) {
  Attrs a;
  a.imm = index;
  return named(emit(OpCode::Arg, {}, a, t), name);
}

Val Builder::like(Val a, double v) {
  const Type& t = a.type();
  if (t.isFloat()) return t.scalar == Scalar::BF16 ? bf16(v) : f32(v);
  return constInt(t.elem(), static_cast<int64_t>(v));
}

// --- arithmetic ---

Val Builder::binary(OpCode op, Val a, Val b) {
  const Type& ta = a.type();
  const Type& tb = b.type();
  expect(ta == tb, op, fmt::format("operand types differ: {} and {}", ta.str(), tb.str()));
  expect(!ta.isPtr(), op, "pointer operands: use ptrAdd");
  switch (op) {
    case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div:
    case OpCode::Min: case OpCode::Max:
      break;
    case OpCode::Rem: case OpCode::UDiv: case OpCode::URem: case OpCode::UMin: case OpCode::UMax:
    case OpCode::Shl: case OpCode::LShr: case OpCode::AShr:
      expect(ta.isInt() && !ta.isBool(), op, "expected integers, got " + ta.str());
      break;
    case OpCode::And: case OpCode::Or: case OpCode::Xor:
      expect(ta.isInt(), op, "expected integers or i1, got " + ta.str());
      break;
    default:
      fail(op, "not a binary op");
  }
  if (ta.isBool()) expect(op == OpCode::And || op == OpCode::Or || op == OpCode::Xor, op, "i1 arithmetic");
  return emit(op, {a.v, b.v});
}

Val Builder::cmp(CmpPred p, Val a, Val b) {
  const Type& ta = a.type();
  expect(ta == b.type(), OpCode::Cmp, fmt::format("operand types differ: {} and {}", ta.str(), b.type().str()));
  const bool floatPred = p >= CmpPred::Oeq;
  expect(floatPred == ta.isFloat(), OpCode::Cmp,
         fmt::format("predicate {} does not apply to {}", cmpPredName(p), ta.str()));
  Attrs at;
  at.pred = p;
  return emit(OpCode::Cmp, {a.v, b.v}, at);
}

Val Builder::select(Val c, Val a, Val b) {
  expect(c.type().scalar == Scalar::I1, OpCode::Select, "condition must be i1, got " + c.type().str());
  expect(a.type() == b.type(), OpCode::Select,
         fmt::format("arm types differ: {} and {}", a.type().str(), b.type().str()));
  return emit(OpCode::Select, {c.v, a.v, b.v});
}

Val Builder::fma(Val a, Val b, Val c) {
  expect(a.type() == Type::f32() && b.type() == Type::f32() && c.type() == Type::f32(), OpCode::Fma,
         "expected f32 operands");
  return emit(OpCode::Fma, {a.v, b.v, c.v});
}

// --- conversions ---

Val Builder::bitcast(Val a, Type t) {
  expect(a.type().lanes * a.type().elemBits() == t.lanes * t.elemBits(), OpCode::Bitcast,
         fmt::format("widths differ: {} to {}", a.type().str(), t.str()));
  return emit(OpCode::Bitcast, {a.v}, {}, t);
}

Val Builder::trunc(Val a, Type t) {
  expect(a.type().isInt() && t.isInt() && t.elemBits() < a.type().elemBits(), OpCode::Trunc,
         fmt::format("{} to {}", a.type().str(), t.str()));
  return emit(OpCode::Trunc, {a.v}, {}, t);
}
Val Builder::zext(Val a, Type t) {
  expect(a.type().isInt() && t.isInt() && t.elemBits() > a.type().elemBits(), OpCode::ZExt,
         fmt::format("{} to {}", a.type().str(), t.str()));
  return emit(OpCode::ZExt, {a.v}, {}, t);
}
Val Builder::sext(Val a, Type t) {
  expect(a.type().isInt() && t.isInt() && t.elemBits() > a.type().elemBits(), OpCode::SExt,
         fmt::format("{} to {}", a.type().str(), t.str()));
  return emit(OpCode::SExt, {a.v}, {}, t);
}
Val Builder::siToFp(Val a) {
  expect(a.type() == Type::i32(), OpCode::SIToFP, "expected i32, got " + a.type().str());
  return emit(OpCode::SIToFP, {a.v});
}
Val Builder::uiToFp(Val a) {
  expect(a.type() == Type::i32(), OpCode::UIToFP, "expected i32, got " + a.type().str());
  return emit(OpCode::UIToFP, {a.v});
}
Val Builder::fpToSi(Val a, Type t) {
  expect(a.type() == Type::f32() && (t == Type::i32() || t == Type::i64()), OpCode::FPToSI,
         "expected f32 to i32/i64");
  return emit(OpCode::FPToSI, {a.v}, {}, t);
}
Val Builder::bf16ToF32(Val a) {
  expect(a.type().scalar == Scalar::BF16, OpCode::BF16ToF32, "expected bf16, got " + a.type().str());
  return emit(OpCode::BF16ToF32, {a.v});
}
Val Builder::f32ToBf16(Val a) {
  expect(a.type().scalar == Scalar::F32, OpCode::F32ToBF16, "expected f32, got " + a.type().str());
  return emit(OpCode::F32ToBF16, {a.v});
}
Val Builder::fp4ToF32(Val code, Val scale) {
  expect(code.type() == Type::i32() && scale.type() == Type::f32(), OpCode::Fp4ToF32,
         "expected (i32 code, f32 scale)");
  return emit(OpCode::Fp4ToF32, {code.v, scale.v});
}
Val Builder::fp4x8ToBf16x8(Val word, Val scale) {
  expect(word.type() == Type::i32() && scale.type() == Type::f32(), OpCode::Fp4x8ToBF16x8,
         "expected (i32 word of 8 codes, f32 scale)");
  return emit(OpCode::Fp4x8ToBF16x8, {word.v, scale.v});
}
Val Builder::e8m0ToF32(Val code) {
  expect(code.type() == Type::i32(), OpCode::E8m0ToF32, "expected i32, got " + code.type().str());
  return emit(OpCode::E8m0ToF32, {code.v});
}
Val Builder::fp8ToF32(Val code) {
  expect(code.type() == Type::i32(), OpCode::Fp8ToF32, "expected i32, got " + code.type().str());
  return emit(OpCode::Fp8ToF32, {code.v});
}
Val Builder::f32ToFp8(Val a) {
  expect(a.type() == Type::f32(), OpCode::F32ToFp8, "expected f32, got " + a.type().str());
  return emit(OpCode::F32ToFp8, {a.v});
}
Val Builder::f32x2ToFp8x2(Val a, Val b) {
  expect(a.type() == Type::f32() && b.type() == Type::f32(), OpCode::F32x2ToFp8x2,
         "expected f32 and f32, got " + a.type().str() + " and " + b.type().str());
  return emit(OpCode::F32x2ToFp8x2, {a.v, b.v});
}
Val Builder::bf16BitsToF32(Val bits) {
  Val lo = trunc(bits, Type::i16());
  return bf16ToF32(bitcast(lo, Type::bf16()));
}

Val Builder::unary(OpCode op, Val a) {
  expect(a.type() == Type::f32(), op, "expected f32, got " + a.type().str());
  return emit(op, {a.v}, {}, Type::f32());
}

// --- vectors ---

Val Builder::extract(Val v, int i) {
  expect(v.type().isVector() && i >= 0 && i < v.type().lanes, OpCode::Extract,
         fmt::format("element {} of {}", i, v.type().str()));
  Attrs a;
  a.imm = i;
  return emit(OpCode::Extract, {v.v}, a);
}
Val Builder::insert(Val v, Val s, int i) {
  expect(v.type().isVector() && i >= 0 && i < v.type().lanes && s.type() == v.type().elem(),
         OpCode::Insert, fmt::format("{} into element {} of {}", s.type().str(), i, v.type().str()));
  Attrs a;
  a.imm = i;
  return emit(OpCode::Insert, {v.v, s.v}, a);
}
Val Builder::splat(Val s, int lanes) {
  expect(!s.type().isVector() && lanes >= 2 && lanes <= 16, OpCode::Splat,
         fmt::format("{} to {} lanes", s.type().str(), lanes));
  return emit(OpCode::Splat, {s.v}, {}, Type::vec(s.type(), lanes));
}
Val Builder::concat(Val lo, Val hi) {
  const Type tl = lo.type(), th = hi.type();
  expect(tl.isVector() && th.isVector() && tl.elem() == th.elem() && tl.lanes + th.lanes <= 16, OpCode::Insert,
         fmt::format("concat of {} and {}", tl.str(), th.str()));
  Val v = splat(extract(lo, 0), tl.lanes + th.lanes);
  for (int i = 1; i < tl.lanes; ++i) v = insert(v, extract(lo, i), i);
  for (int i = 0; i < th.lanes; ++i) v = insert(v, extract(hi, i), tl.lanes + i);
  return v;
}

// --- pointers and memory ---

Val Builder::ptrAdd(Val p, Val off) {
  expect(p.type().isPtr(), OpCode::PtrAdd, "expected a pointer, got " + p.type().str());
  expect(off.type() == Type::i32() || off.type() == Type::i64(), OpCode::PtrAdd,
         "byte offset must be i32 or i64, got " + off.type().str());
  return emit(OpCode::PtrAdd, {p.v, off.v});
}
Val Builder::ptrAdd(Val p, int64_t off) {
  return ptrAdd(p, p.type().space == AddrSpace::Lds ? i32(off) : i64(off));
}
Val Builder::ptrToInt(Val p) {
  expect(p.type().isPtr(), OpCode::PtrToInt, "expected a pointer");
  return emit(OpCode::PtrToInt, {p.v});
}
Val Builder::intToPtr(Val i, AddrSpace s) {
  Type t = Type::ptr(s);
  expect(i.type().isInt() && i.type().elemBits() == t.elemBits(), OpCode::IntToPtr,
         fmt::format("{} to {}", i.type().str(), t.str()));
  return emit(OpCode::IntToPtr, {i.v}, {}, t);
}

static bool validAccessBytes(int n) { return n == 1 || n == 2 || n == 4 || n == 8 || n == 12 || n == 16; }

Val Builder::load(Type t, Val p, MemOrder o, MemScope s) {
  expect(p.type().isPtr(), OpCode::Load, "expected a pointer, got " + p.type().str());
  expect(validAccessBytes(t.bytes()), OpCode::Load, "access of " + t.str() + " is not 1, 2, 4, 8, 12 or 16 bytes");
  expect(o == MemOrder::Plain || o == MemOrder::Relaxed || o == MemOrder::Acquire, OpCode::Load,
         std::string("order ") + memOrderName(o) + " on a load");
  expect(o == MemOrder::Plain || t.bytes() <= 8, OpCode::Load, "atomic loads are at most 8 bytes");
  Attrs a;
  a.order = o;
  a.scope = s;
  return emit(OpCode::Load, {p.v}, a, t);
}

void Builder::store(Val p, Val v, MemOrder o, MemScope s) {
  expect(p.type().isPtr(), OpCode::Store, "expected a pointer, got " + p.type().str());
  expect(validAccessBytes(v.type().bytes()), OpCode::Store,
         "access of " + v.type().str() + " is not 1, 2, 4, 8, 12 or 16 bytes");
  expect(o == MemOrder::Plain || o == MemOrder::Relaxed || o == MemOrder::Release, OpCode::Store,
         std::string("order ") + memOrderName(o) + " on a store");
  expect(o == MemOrder::Plain || v.type().bytes() <= 8, OpCode::Store, "atomic stores are at most 8 bytes");
  Attrs a;
  a.order = o;
  a.scope = s;
  emitVoid(OpCode::Store, {p.v, v.v}, a);
}

Val Builder::atomicRmw(RmwOp r, Val p, Val v, MemOrder o, MemScope s) {
  expect(p.type().isPtr() && (v.type() == Type::i32() || v.type() == Type::i64() ||
                              (v.type() == Type::f32() && r == RmwOp::Add)),
         OpCode::AtomicRmw, "expected (pointer, i32/i64) or f32 add");
  Attrs a;
  a.rmw = r;
  a.order = o == MemOrder::Plain ? MemOrder::Relaxed : o;
  a.scope = s;
  return emit(OpCode::AtomicRmw, {p.v, v.v}, a);
}

Val Builder::cmpXchg(Val p, Val e, Val d, MemOrder o, MemScope s) {
  expect(p.type().isPtr() && e.type() == d.type() && (e.type() == Type::i32() || e.type() == Type::i64()),
         OpCode::CmpXchg, "expected (pointer, i32/i64, same type)");
  Attrs a;
  a.order = o;
  a.scope = s;
  return emit(OpCode::CmpXchg, {p.v, e.v, d.v}, a);
}

void Builder::fence(MemOrder o, MemScope s) {
  expect(o == MemOrder::Acquire || o == MemOrder::Release || o == MemOrder::AcqRel || o == MemOrder::SeqCst,
         OpCode::Fence, std::string("order ") + memOrderName(o) + " on a fence");
  Attrs a;
  a.order = o;
  a.scope = s;
  emitVoid(OpCode::Fence, {}, a);
}

void Builder::barrier() { emitVoid(OpCode::Barrier, {}); }

// --- wave ops ---

Val Builder::shuffle(Val v, Val src) {
  expect(src.type() == Type::i32(), OpCode::Shuffle, "source lane must be i32");
  expect(v.type().bytes() % 4 == 0 || v.type().bytes() <= 4, OpCode::Shuffle, "shuffles move dwords");
  return emit(OpCode::Shuffle, {v.v, src.v});
}
Val Builder::ballot(Val c) {
  expect(c.type() == Type::i1(), OpCode::Ballot, "expected i1, got " + c.type().str());
  return emit(OpCode::Ballot, {c.v});
}
Val Builder::popcount(Val v) {
  expect(v.type() == Type::i32() || v.type() == Type::i64(), OpCode::Popcount, "expected i32/i64");
  return emit(OpCode::Popcount, {v.v});
}
Val Builder::readFirstLane(Val v) {
  expect(!v.type().isVector() && v.type().bytes() <= 8 && !v.type().isBool(), OpCode::ReadFirstLane,
         "expected a 1..8-byte scalar");
  return emit(OpCode::ReadFirstLane, {v.v});
}
Val Builder::ctaUniform(Val v) {
  expect(!v.type().isVector() && v.type().bytes() <= 8 && !v.type().isBool(), OpCode::CtaUniform,
         "expected a 1..8-byte scalar");
  return emit(OpCode::CtaUniform, {v.v});
}
Val Builder::mfma(MfmaKind k, Val a, Val b, Val acc) {
  const mfma::Shape s = mfma::shapeOf(k);
  expect(s.m != 0, OpCode::Mfma, "unknown MFMA kind");
  const Type ab = mfma::operandType(k), accT = mfma::accType();
  expect(a.type() == ab && b.type() == ab && acc.type() == accT, OpCode::Mfma,
         fmt::format("{} takes ({}, {}, {}), got ({}, {}, {})", mfmaKindName(k), ab.str(), ab.str(),
                     accT.str(), a.type().str(), b.type().str(), acc.type().str()));
  Attrs at;
  at.mfma = k;
  return emit(OpCode::Mfma, {a.v, b.v, acc.v}, at);
}

Val Builder::mfmaScale(Val a, Val b, Val acc, Val scaleA, Val scaleB) {
  const Type ta = mfma::scaledAType(), tb = mfma::scaledBType(), tacc = mfma::accType();
  expect(a.type() == ta && b.type() == tb && acc.type() == tacc && scaleA.type() == Type::i32() &&
             scaleB.type() == Type::i32(),
         OpCode::MfmaScale,
         fmt::format("takes ({}, {}, {}, i32, i32), got ({}, {}, {}, {}, {})", ta.str(), tb.str(), tacc.str(),
                     a.type().str(), b.type().str(), acc.type().str(), scaleA.type().str(), scaleB.type().str()));
  return emit(OpCode::MfmaScale, {a.v, b.v, acc.v, scaleA.v, scaleB.v});
}

Val Builder::butterfly(Val v, std::initializer_list<int> masks, OpCode combine) {
  return butterfly(v, std::span<const int>(masks.begin(), masks.size()), combine);
}

Val Builder::butterfly(Val v, std::span<const int> masks, OpCode combine) {
  Val l = lane();
  for (int m : masks) {
    Val other = shuffle(v, l ^ m);
    v = binary(combine, v, other);
  }
  return v;
}

// --- sync ---

void Builder::publish(Val pair, Val value, Val tag, MemOrder o, MemScope s) {
  expect(pair.type().isPtr() && value.type() == Type::i32() && tag.type() == Type::i32(), OpCode::Publish,
         "expected (pair pointer, i32 value, i32 tag)");
  expect(o == MemOrder::Release || o == MemOrder::Relaxed, OpCode::Publish, "order must be Release or Relaxed");
  Attrs a;
  a.order = o;
  a.scope = s;
  emitVoid(OpCode::Publish, {pair.v, value.v, tag.v}, a);
}

Val Builder::wait(Val pair, Val tag, Val bound, Val errWord, Val errCode, int site, MemOrder o, MemScope s) {
  expect(pair.type().isPtr() && pair.type().space != AddrSpace::Lds, OpCode::Wait, "expected a global pair pointer");
  expect(tag.type() == Type::i32() && bound.type() == Type::i64() && errWord.type().isPtr() &&
             errCode.type() == Type::i32(),
         OpCode::Wait, "expected (pair ptr, i32 tag, i64 bound, error word ptr, i32 code)");
  expect(o == MemOrder::Acquire || o == MemOrder::Relaxed, OpCode::Wait, "order must be Acquire or Relaxed");
  expect(site > 0, OpCode::Wait, "site ids start at 1");
  Attrs a;
  a.order = o;
  a.scope = s;
  a.site = site;
  return emit(OpCode::Wait, {pair.v, tag.v, bound.v, errWord.v, errCode.v}, a);
}

// --- time ---

Val Builder::realtime() { return emit(OpCode::Realtime, {}); }
void Builder::sleep(int amount) {
  expect(amount >= 0 && amount <= 127, OpCode::Sleep, "s_sleep takes 0..127");
  Attrs a;
  a.imm = amount;
  emitVoid(OpCode::Sleep, {}, a);
}

// --- variables ---

Var Builder::var(Type t, const std::string& name) {
  fn_.vars.push_back(VarInfo{t, name});
  return Var{static_cast<uint32_t>(fn_.vars.size() - 1)};
}
Var Builder::var(Val init, const std::string& name) {
  Var v = var(init.type(), name);
  set(v, init);
  return v;
}
Val Builder::get(Var v) {
  Attrs a;
  a.var = static_cast<int32_t>(v.id);
  return emit(OpCode::VarLoad, {}, a, fn_.vars.at(v.id).type);
}
void Builder::set(Var v, Val value) {
  expect(fn_.vars.at(v.id).type == value.type(), OpCode::VarStore,
         fmt::format("var '{}' is {}, value is {}", fn_.vars[v.id].name, fn_.vars[v.id].type.str(),
                     value.type().str()));
  Attrs a;
  a.var = static_cast<int32_t>(v.id);
  emitVoid(OpCode::VarStore, {value.v}, a);
}

// --- control flow ---

void Builder::if_(Val c, const std::function<void()>& then, const std::function<void()>& otherwise) {
  expect(c.type() == Type::i1(), OpCode::If, "condition must be i1, got " + c.type().str());
  std::vector<Region> rs;
  rs.push_back(buildRegion(then));
  rs.push_back(buildRegion(otherwise));
  emitVoid(OpCode::If, {c.v}, {}, std::move(rs));
}

void Builder::for_(Val lo, Val hi, Val step, const std::function<void(Val)>& body) {
  expect(lo.type() == Type::i32() && hi.type() == Type::i32() && step.type() == Type::i32(), OpCode::For,
         "bounds and step must be i32");
  Region r;
  Value iv = newValue(Type::i32());
  r.args.push_back(iv);
  stack_.push_back(&r);
  body(wrap(iv));
  stack_.pop_back();
  std::vector<Region> rs;
  rs.push_back(std::move(r));
  emitVoid(OpCode::For, {lo.v, hi.v, step.v}, {}, std::move(rs));
}

void Builder::while_(const std::function<Val()>& cond, const std::function<void()>& body) {
  Region c;
  stack_.push_back(&c);
  Val cv = cond();
  stack_.pop_back();
  expect(cv.type() == Type::i1(), OpCode::While, "condition must be i1, got " + cv.type().str());
  c.yield = cv.v;
  std::vector<Region> rs;
  rs.push_back(std::move(c));
  rs.push_back(buildRegion(body));
  emitVoid(OpCode::While, {}, {}, std::move(rs));
}

void Builder::stage(int index, const std::function<void()>& body) {
  Attrs a;
  a.stage = index;
  std::vector<Region> rs;
  rs.push_back(buildRegion(body));
  emitVoid(OpCode::StageScope, {}, a, std::move(rs));
}

Val Builder::named(Val v, const std::string& name) {
  fn_.values.at(v.v.id).name = name;
  return v;
}

// --- operators ---

Val operator+(Val a, Val b) { return a.b->binary(OpCode::Add, a, b); }
Val operator-(Val a, Val b) { return a.b->binary(OpCode::Sub, a, b); }
Val operator*(Val a, Val b) { return a.b->binary(OpCode::Mul, a, b); }
Val operator/(Val a, Val b) { return a.b->binary(OpCode::Div, a, b); }
Val operator%(Val a, Val b) { return a.b->binary(OpCode::Rem, a, b); }
Val operator&(Val a, Val b) { return a.b->binary(OpCode::And, a, b); }
Val operator|(Val a, Val b) { return a.b->binary(OpCode::Or, a, b); }
Val operator^(Val a, Val b) { return a.b->binary(OpCode::Xor, a, b); }
Val operator<<(Val a, Val b) { return a.b->binary(OpCode::Shl, a, b); }
Val operator>>(Val a, Val b) { return a.b->binary(OpCode::AShr, a, b); }
static Val ordered(Val a, Val b, CmpPred si, CmpPred fp) { return a.b->cmp(a.type().isFloat() ? fp : si, a, b); }
Val operator<(Val a, Val b) { return ordered(a, b, CmpPred::Slt, CmpPred::Olt); }
Val operator<=(Val a, Val b) { return ordered(a, b, CmpPred::Sle, CmpPred::Ole); }
Val operator>(Val a, Val b) { return ordered(a, b, CmpPred::Sgt, CmpPred::Ogt); }
Val operator>=(Val a, Val b) { return ordered(a, b, CmpPred::Sge, CmpPred::Oge); }
Val operator==(Val a, Val b) { return ordered(a, b, CmpPred::Eq, CmpPred::Oeq); }
Val operator!=(Val a, Val b) { return a.b->cmp(a.type().isFloat() ? CmpPred::One : CmpPred::Ne, a, b); }
Val operator!(Val a) { return a ^ a.b->i1(true); }
Val operator-(Val a) { return a.b->like(a, 0) - a; }

}  // namespace monogen::ir
