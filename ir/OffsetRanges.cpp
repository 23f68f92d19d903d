#include "ir/OffsetRanges.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace monogen::ir {
namespace {

using i128 = __int128;

std::string text(i128 v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  std::string s;
  for (unsigned __int128 u = neg ? -static_cast<unsigned __int128>(v) : v; u; u /= 10) s += char('0' + int(u % 10));
  if (neg) s += '-';
  return {s.rbegin(), s.rend()};
}

/// An integer value's interval, and the first op whose arithmetic may have wrapped on its way.
struct Range {
  bool known = false;  // false: not reached yet (a variable no store has reached)
  i128 lo = 0, hi = 0;
  int wrap = -1;       // index into Analysis::wraps_, -1: exact
};

/// Where wrapping can begin: the op and its exact range before wrapping.
struct WrapSite {
  std::string where, type;
  i128 lo, hi;
};

/// What a pointer is: the kernel argument it was derived from (-1: unknown).
struct PtrInfo {
  int arg = -1;
};

constexpr i128 kTensorLimit = i128{1} << 31;  // offsets into a tensor this big must not wrap

class Analysis {
 public:
  explicit Analysis(const Plan& p) : p_(p), fn_(p.kernel) {}

  std::vector<std::string> run() {
    vars_.assign(fn_.vars.size(), Range{});
    for (int pass = 0; pass < 12; ++pass) {
      changed_ = false;
      widen_ = pass >= 6;  // a variable still growing after 6 passes takes its type's whole range
      walkAll();
      if (!changed_) break;
    }
    report_ = true;
    walkAll();
    return problems_;
  }

 private:
  void walkAll() {
    values_.assign(fn_.values.size(), Range{});
    ptrs_.assign(fn_.values.size(), PtrInfo{});
    opNumber_ = 0;
    stage_ = -1;
    walk(fn_.body);
  }

  std::string where(const Op& op) const {
    const std::string st = stage_ >= 0 && stage_ < static_cast<int>(p_.stages.size())
                               ? "stage '" + p_.stages[stage_].name + "'"
                               : "kernel";
    return fmt::format("{}, op #{} {}", st, opNumber_, opName(op.code));
  }

  static int bitsOf(const Type& t) { return t.scalar == Scalar::I1 ? 1 : t.elem().elemBits(); }
  static i128 typeMin(const Type& t) { return t.scalar == Scalar::I1 ? 0 : -(i128{1} << (bitsOf(t) - 1)); }
  static i128 typeMax(const Type& t) { return t.scalar == Scalar::I1 ? 1 : (i128{1} << (bitsOf(t) - 1)) - 1; }
  static Range top(const Type& t, int wrap = -1) { return Range{true, typeMin(t), typeMax(t), wrap}; }
  static Range exact(i128 lo, i128 hi, int wrap = -1) { return Range{true, lo, hi, wrap}; }
  static int firstWrap(std::initializer_list<int> w) {
    for (int x : w)
      if (x >= 0) return x;
    return -1;
  }
  static Range join(const Range& a, const Range& b) {
    if (!a.known) return b;
    if (!b.known) return a;
    return Range{true, std::min(a.lo, b.lo), std::max(a.hi, b.hi), firstWrap({a.wrap, b.wrap})};
  }

  /// An arithmetic result [lo, hi] of type t: kept when it fits, else it wraps here.
  Range fit(const Op& op, const Type& t, i128 lo, i128 hi, int wrap) {
    if (lo >= typeMin(t) && hi <= typeMax(t)) return exact(lo, hi, wrap);
    if (wrap < 0) {
      wraps_.push_back(WrapSite{where(op), t.elem().str(), lo, hi});
      wrap = static_cast<int>(wraps_.size()) - 1;
    }
    return top(t, wrap);
  }

  const Range& in(Value v) const { return values_[v.id]; }
  const Type& ty(Value v) const { return fn_.typeOf(v); }

  void walk(const Region& r) {
    for (const Op& op : r.ops) {
      ++opNumber_;
      visit(op);
    }
  }

  Range intOp(const Op& op) {
    const Type& t = ty(op.result);
    const auto& o = op.operands;
    auto arg = [&](size_t i) -> Range { return in(o[i]).known ? in(o[i]) : top(ty(o[i])); };
    auto corners = [&](const Range& a, const Range& b, auto f, int wrap) {
      const i128 c[4] = {f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)};
      return fit(op, t, *std::min_element(c, c + 4), *std::max_element(c, c + 4), wrap);
    };
    auto constOf = [&](const Range& r) -> std::optional<i128> {
      return r.lo == r.hi ? std::optional<i128>(r.lo) : std::nullopt;
    };
    switch (op.code) {
      case OpCode::ConstInt: return exact(op.attrs.imm, op.attrs.imm);
      case OpCode::ThreadId: return exact(0, p_.grid.threads - 1);
      case OpCode::LaneId: return exact(0, p_.target().waveSize - 1);
      case OpCode::WaveId: return exact(0, std::max(1, p_.grid.threads / p_.target().waveSize) - 1);
      case OpCode::BlockId: return exact(0, p_.grid.blocks - 1);
      case OpCode::Cmp: return exact(0, 1);
      case OpCode::Popcount: return exact(0, bitsOf(ty(o[0])));
      default:
        break;
    }
    if (o.empty()) return top(t);
    const Range a = arg(0);
    const int w = firstWrap({a.wrap, o.size() > 1 ? arg(1).wrap : -1});
    switch (op.code) {
      case OpCode::Add: return fit(op, t, a.lo + arg(1).lo, a.hi + arg(1).hi, w);
      case OpCode::Sub: return fit(op, t, a.lo - arg(1).hi, a.hi - arg(1).lo, w);
      case OpCode::Mul: return corners(a, arg(1), [](i128 x, i128 y) { return x * y; }, w);
      case OpCode::Shl:
        if (auto k = constOf(arg(1)); k && *k >= 0 && *k < bitsOf(t))
          return corners(a, exact(i128{1} << int(*k), i128{1} << int(*k)), [](i128 x, i128 y) { return x * y; }, w);
        return top(t, w);
      case OpCode::Div: case OpCode::UDiv: {
        const Range b = arg(1);
        if (b.lo > 0 && (op.code == OpCode::Div || a.lo >= 0))
          return corners(a, b, [](i128 x, i128 y) { return x / y; }, w);
        return top(t, w);
      }
      case OpCode::Rem: case OpCode::URem: {
        const Range b = arg(1);
        if (b.lo > 0 && a.lo >= 0) return exact(0, std::min(a.hi, b.hi - 1), w);
        if (b.lo > 0 && op.code == OpCode::Rem) return exact(-(b.hi - 1), b.hi - 1, w);
        return top(t, w);
      }
      case OpCode::And: {
        const Range b = arg(1);
        if (a.lo >= 0 && b.lo >= 0) return exact(0, std::min(a.hi, b.hi), w);
        if (a.lo >= 0) return exact(0, a.hi, w);
        if (b.lo >= 0) return exact(0, b.hi, w);
        return top(t, w);
      }
      case OpCode::Or: case OpCode::Xor: {
        const Range b = arg(1);
        if (a.lo < 0 || b.lo < 0) return top(t, w);
        i128 m = 1;
        while (m <= std::max(a.hi, b.hi)) m <<= 1;
        return exact(0, m - 1, w);
      }
      case OpCode::LShr: case OpCode::AShr: {
        auto k = constOf(arg(1));
        if (!k || *k < 0 || *k >= bitsOf(t)) return top(t, w);
        if (a.lo >= 0 || op.code == OpCode::AShr) return exact(a.lo >> int(*k), a.hi >> int(*k), w);
        return *k == 0 ? top(t, w) : exact(0, (i128{1} << (bitsOf(t) - int(*k))) - 1, w);
      }
      case OpCode::Min: return exact(std::min(a.lo, arg(1).lo), std::min(a.hi, arg(1).hi), w);
      case OpCode::Max: return exact(std::max(a.lo, arg(1).lo), std::max(a.hi, arg(1).hi), w);
      case OpCode::UMin: case OpCode::UMax:
        if (a.lo >= 0 && arg(1).lo >= 0)
          return op.code == OpCode::UMin ? exact(std::min(a.lo, arg(1).lo), std::min(a.hi, arg(1).hi), w)
                                         : exact(std::max(a.lo, arg(1).lo), std::max(a.hi, arg(1).hi), w);
        return top(t, w);
      case OpCode::Select: {
        Range r = join(arg(1), arg(2));
        r.wrap = firstWrap({arg(1).wrap, arg(2).wrap});
        return r;
      }
      case OpCode::SExt: return exact(a.lo, a.hi, a.wrap);
      case OpCode::ZExt:
        return a.lo >= 0 ? exact(a.lo, a.hi, a.wrap)
                         : exact(0, ty(o[0]).scalar == Scalar::I1 ? 1 : (i128{1} << bitsOf(ty(o[0]))) - 1, a.wrap);
      case OpCode::Trunc:
        return a.lo >= typeMin(t) && a.hi <= typeMax(t) ? exact(a.lo, a.hi, a.wrap) : top(t, a.wrap);
      case OpCode::Extract: case OpCode::Splat: case OpCode::ReadFirstLane: case OpCode::CtaUniform: return exact(a.lo, a.hi, a.wrap);
      case OpCode::Insert: return join(a, arg(1));
      case OpCode::Shuffle: return join(a, exact(0, 0));
      default:
        return top(t);  // loads, waits, atomics, bitcasts, float conversions, arguments
    }
    return top(t);
  }

  void visit(const Op& op) {
    switch (op.code) {
      case OpCode::If:
        walk(op.regions[0]);
        walk(op.regions[1]);
        return;
      case OpCode::For: {
        const Range lo = in(op.operands[0]), hi = in(op.operands[1]), step = in(op.operands[2]);
        const Value iv = op.regions[0].args[0];
        values_[iv.id] = lo.known && hi.known && step.known && step.lo > 0
                             ? exact(lo.lo, std::max(lo.lo, hi.hi - 1), firstWrap({lo.wrap, hi.wrap, step.wrap}))
                             : top(Type::i32(), firstWrap({lo.wrap, hi.wrap, step.wrap}));
        walk(op.regions[0]);
        return;
      }
      case OpCode::While:
        walk(op.regions[0]);
        walk(op.regions[1]);
        return;
      case OpCode::StageScope: {
        const int saved = stage_;
        stage_ = op.attrs.stage;
        walk(op.regions[0]);
        stage_ = saved;
        return;
      }
      case OpCode::VarLoad: {
        const Type& t = ty(op.result);
        if (t.isPtr()) return;  // a pointer variable: its argument is not tracked
        const Range& v = vars_.at(op.attrs.var);
        if (t.isInt()) values_[op.result.id] = v.known ? v : top(t);
        return;
      }
      case OpCode::VarStore: {
        const Value x = op.operands[0];
        if (!ty(x).isInt()) return;
        Range& v = vars_.at(op.attrs.var);
        const Range j = join(v, in(x).known ? in(x) : top(ty(x)));
        if (!v.known || j.lo != v.lo || j.hi != v.hi || j.wrap != v.wrap) {
          v = widen_ ? top(ty(x), j.wrap) : j;
          changed_ = true;
        }
        return;
      }
      case OpCode::Arg:
        if (op.result && ty(op.result).isPtr()) ptrs_[op.result.id].arg = static_cast<int>(op.attrs.imm);
        if (op.result && ty(op.result).isInt()) values_[op.result.id] = top(ty(op.result));
        return;
      case OpCode::PtrAdd: {
        const PtrInfo base = ptrs_[op.operands[0].id];
        ptrs_[op.result.id] = base;
        const Range& off = in(op.operands[1]);
        if (report_ && base.arg >= 0 && off.wrap >= 0 && p_.args[base.arg].bytes() >= kTensorLimit) {
          const KernelArg& a = p_.args[base.arg];
          const WrapSite& s = wraps_[off.wrap];
          problems_.push_back(fmt::format(
              "{}: {}: its byte offset into '{}' ({} bytes, 2 GiB or more) can wrap: {} gives [{}, {}], beyond {}; "
              "sign-extend the index to i64 before scaling it",
              p_.key.variantName(), where(op), a.name, a.bytes(), s.where, text(s.lo), text(s.hi), s.type));
        }
        return;
      }
      case OpCode::Select:
        if (op.result && ty(op.result).isPtr()) {
          const PtrInfo x = ptrs_[op.operands[1].id], y = ptrs_[op.operands[2].id];
          ptrs_[op.result.id].arg = x.arg == y.arg ? x.arg : -1;
          return;
        }
        break;
      default:
        break;
    }
    if (op.result && ty(op.result).isInt()) values_[op.result.id] = intOp(op);
  }

  const Plan& p_;
  const Function& fn_;
  std::vector<Range> values_, vars_;
  std::vector<PtrInfo> ptrs_;
  std::vector<WrapSite> wraps_;
  std::vector<std::string> problems_;
  bool changed_ = false, widen_ = false, report_ = false;
  int opNumber_ = 0, stage_ = -1;
};

}  // namespace

std::vector<std::string> offsetRangeProblems(const Plan& plan) { return Analysis(plan).run(); }

}  // namespace monogen::ir
