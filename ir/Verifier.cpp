#include "ir/Verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "ir/Error.h"
#include "ir/Mfma.h"
#include "ir/OffsetRanges.h"

namespace monogen::ir {
namespace {

struct Problems {
  std::string variant;
  std::vector<std::string> list;
  void add(const std::string& where, const std::string& what) {
    list.push_back(fmt::format("{}: {}: {}", variant, where, what));
  }
};

// ---------------------------------------------------------------- the Plan

// A key made without a target holds an empty one; nothing else can be checked against it.
bool checkTarget(const Plan& p, Problems& out) {
  const Target& t = p.target();
  if (!t.arch.empty() && t.waveSize > 0 && t.maxThreads > 0 && t.computeUnits > 0) return true;
  out.add("target", fmt::format("'{}' (wave{}) is no machine: the key needs one (ir::gfx950(), ir::targetNamed)",
                                t.arch, t.waveSize));
  return false;
}

void checkGrid(const Plan& p, Problems& out) {
  if (p.ranks < 1) out.add("ranks", fmt::format("a launch spans {} ranks: expected at least 1", p.ranks));
  if (p.grid.threads <= 0 || p.grid.threads > p.target().maxThreads || p.grid.threads % p.target().waveSize != 0)
    out.add("grid", fmt::format("{} threads a CTA: expected a multiple of {} up to {}", p.grid.threads,
                                p.target().waveSize, p.target().maxThreads));
  if (p.grid.blocks <= 0 || p.grid.blocks > p.target().computeUnits)
    out.add("grid", fmt::format("{} CTAs: a persistent grid needs every CTA co-resident, at most {} (one a CU)",
                                p.grid.blocks, p.target().computeUnits));
}

void checkArgs(const Plan& p, Problems& out) {
  std::set<std::string> names;
  for (const KernelArg& a : p.args) {
    if (!names.insert(a.name).second) out.add("arg '" + a.name + "'", "declared twice");
    if (a.isPointer && (a.align <= 0 || (a.align & (a.align - 1)) != 0))
      out.add("arg '" + a.name + "'", fmt::format("alignment {} is not a power of two", a.align));
    if (a.role == ArgRole::Peers && a.elem == Scalar::Ptr && (a.shape.size() != 1 || a.shape[0] != p.ranks))
      out.add("arg '" + a.name + "'", fmt::format("a peer table must have one entry a rank, {} entries", p.ranks));
  }
}

void checkRegions(const Plan& p, Problems& out) {
  std::map<std::string, std::vector<const MemRegion*>> byBuffer;
  std::set<std::string> names;
  for (const MemRegion& r : p.regions) {
    if (!names.insert(r.name).second) out.add("region '" + r.name + "'", "declared twice");
    const int ai = p.argIndex(r.buffer);
    if (ai < 0) {
      out.add("region '" + r.name + "'", fmt::format("its buffer '{}' is not a kernel argument", r.buffer));
      continue;
    }
    const int64_t cap = p.args[ai].bytes();
    if (r.offset < 0 || r.bytes < 0 || r.offset + r.bytes > cap)
      out.add("region '" + r.name + "'", fmt::format("[{}, {}) does not fit buffer '{}' of {} bytes", r.offset,
                                                     r.offset + r.bytes, r.buffer, cap));
    byBuffer[r.buffer].push_back(&r);
  }
  for (auto& [buf, rs] : byBuffer) {
    std::sort(rs.begin(), rs.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < rs.size(); ++i)
      if (rs[i]->offset < rs[i - 1]->offset + rs[i - 1]->bytes)
        out.add("region '" + rs[i]->name + "'",
                fmt::format("overlaps region '{}' in buffer '{}' ([{}, {}) and [{}, {}))", rs[i - 1]->name, buf,
                            rs[i]->offset, rs[i]->offset + rs[i]->bytes, rs[i - 1]->offset,
                            rs[i - 1]->offset + rs[i - 1]->bytes));
  }
  for (const FlagArray& f : p.flags) {
    auto it = std::find_if(p.regions.begin(), p.regions.end(), [&](auto& r) { return r.name == f.region; });
    if (it == p.regions.end()) {
      out.add("flag '" + f.name + "'", fmt::format("its region '{}' does not exist", f.region));
      continue;
    }
    if (f.pairs * 8 > it->bytes)
      out.add("flag '" + f.name + "'",
              fmt::format("{} pairs need {} bytes, region '{}' has {}", f.pairs, f.pairs * 8, f.region, it->bytes));
    if (f.parityHalves && f.pairs % 2 != 0)
      out.add("flag '" + f.name + "'",
              fmt::format("{} pairs cannot be two parity halves: expected an even count", f.pairs));
  }
}

void checkPools(const Plan& p, Problems& out) {
  if (p.ldsBytes > p.target().ldsBytes)
    out.add("lds", fmt::format("{} bytes of LDS, the target has {}", p.ldsBytes, p.target().ldsBytes));
  std::map<std::string, const LdsPool*> byName;
  for (const LdsPool& l : p.pools) byName[l.name] = &l;
  for (const LdsPool& l : p.pools) {
    if (l.offset < 0 || l.bytes < 0 || l.offset + l.bytes > p.ldsBytes)
      out.add("pool '" + l.name + "'",
              fmt::format("[{}, {}) does not fit the kernel's {} bytes of LDS", l.offset, l.offset + l.bytes, p.ldsBytes));
    if (!l.aliasOf.empty() && !byName.count(l.aliasOf))
      out.add("pool '" + l.name + "'", fmt::format("aliases '{}', which is not a pool", l.aliasOf));
  }
  for (size_t i = 0; i < p.pools.size(); ++i)
    for (size_t j = i + 1; j < p.pools.size(); ++j) {
      const LdsPool &a = p.pools[i], &b = p.pools[j];
      const bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes && a.bytes && b.bytes;
      const bool declared = a.aliasOf == b.name || b.aliasOf == a.name;
      if (overlap && !declared)
        out.add("pool '" + b.name + "'", fmt::format("overlaps pool '{}' without declaring the alias", a.name));
    }
}

void checkStages(const Plan& p, Problems& out) {
  const int n = static_cast<int>(p.stages.size());
  std::map<std::string, std::vector<int>> publishers;
  for (int i = 0; i < n; ++i) {
    const Stage& s = p.stages[i];
    const std::string where = "stage '" + s.name + "'";
    if (s.tasks <= 0) out.add(where, fmt::format("{} tasks: every stage needs at least one", s.tasks));
    if (s.base < 0 || s.base >= p.grid.blocks)
      out.add(where, fmt::format("base {} is not a CTA of the {}-CTA grid", s.base, p.grid.blocks));
    if (s.everyCta && s.tasks != p.grid.blocks)
      out.add(where, fmt::format("runs on every CTA but has {} tasks for {} CTAs", s.tasks, p.grid.blocks));
    for (const FlagUse& u : s.publishes) publishers[u.flag].push_back(i);
    for (const FlagUse& u : s.waits)
      if (p.flag(u.flag).name.empty()) out.add(where, "waits an unnamed flag");
  }
  // Exactly one publisher of every waited flag, covering each pair once per launch.
  for (const FlagArray& f : p.flags) {
    const auto& pubs = publishers[f.name];
    bool waited = false;
    for (const Stage& s : p.stages)
      for (const FlagUse& u : s.waits) waited |= u.flag == f.name;
    const std::string where = "flag '" + f.name + "'";
    if (waited && pubs.empty()) {
      out.add(where, "is waited on but no stage publishes it");
      continue;
    }
    if (pubs.size() > 1) {
      out.add(where, fmt::format("has {} publishing stages ('{}' and '{}'); expected exactly one", pubs.size(),
                                 p.stages[pubs[0]].name, p.stages[pubs[1]].name));
      continue;
    }
    if (pubs.size() == 1) {
      int64_t published = 0;
      for (const FlagUse& u : p.stages[pubs[0]].publishes)
        if (u.flag == f.name) published += u.pairs;
      const int64_t expect = f.publishedPairs > 0 ? f.publishedPairs : f.launchPairs() * (f.peer ? p.ranks : 1);
      if (published != expect)
        out.add(where, fmt::format("stage '{}' publishes {} pairs a launch; the array holds {}{}{}, each to be "
                                   "published exactly once",
                                   p.stages[pubs[0]].name, published, expect,
                                   f.publishedPairs > 0 ? " (a reduce-scatter's)"
                                   : f.peer             ? fmt::format(" ({} a rank x {} ranks)", f.launchPairs(), p.ranks)
                                                        : "",
                                   f.parityHalves ? fmt::format(" in the launch's parity half (of {} pairs in "
                                                                "two halves)",
                                                                f.pairs)
                                                  : ""));
    }
  }
  for (const auto& [flag, pubs] : publishers)
    if (std::none_of(p.flags.begin(), p.flags.end(), [&](auto& f) { return f.name == flag; }))
      out.add("stage '" + p.stages[pubs[0]].name + "'", fmt::format("publishes '{}', which is not a flag array", flag));

  // Wait graph plus program order: a cycle means some launch can deadlock.
  std::vector<std::vector<std::pair<int, std::string>>> edges(n);
  for (int i = 0; i + 1 < n; ++i) edges[i].push_back({i + 1, "program order"});
  for (int i = 0; i < n; ++i)
    for (const FlagUse& u : p.stages[i].waits)
      for (int pub : publishers[u.flag]) edges[pub].push_back({i, "flag " + u.flag});
  std::vector<int> state(n, 0), parent(n, -1);
  std::vector<std::string> via(n);
  bool reported = false;
  std::function<void(int)> dfs = [&](int u) {
    state[u] = 1;
    for (auto& [v, why] : edges[u]) {
      if (reported) return;
      if (state[v] == 1) {
        std::string cycle = fmt::format("'{}' -({})-> '{}'", p.stages[u].name, why, p.stages[v].name);
        for (int w = u; w != v && parent[w] >= 0; w = parent[w])
          cycle = fmt::format("'{}' -({})-> ", p.stages[parent[w]].name, via[w]) + cycle;
        out.add("stages", "wait cycle, a launch can deadlock: " + cycle);
        reported = true;
        return;
      }
      if (state[v] == 0) {
        parent[v] = u;
        via[v] = why;
        dfs(v);
      }
    }
    state[u] = 2;
  };
  for (int i = 0; i < n && !reported; ++i)
    if (state[i] == 0) dfs(i);
}

// ---------------------------------------------------------------- the kernel IR

class KernelChecker {
 public:
  KernelChecker(const Plan& p, Problems& out) : p_(p), fn_(p.kernel), out_(out) {
    defined_.assign(fn_.values.size(), false);
    uniform_.assign(fn_.values.size(), false);
    varUniform_.assign(fn_.vars.size(), true);
  }

  void run() {
    // Variables: uniform until a non-uniform store is seen; iterate to a fixed point.
    for (int iter = 0; iter < 8; ++iter) {
      changed_ = false;
      reportPass_ = false;
      std::fill(defined_.begin(), defined_.end(), false);
      walk(fn_.body, true);
      if (!changed_) break;
    }
    reportPass_ = true;
    std::fill(defined_.begin(), defined_.end(), false);
    stageCount_.assign(p_.stages.size(), 0);
    walk(fn_.body, true);
    for (size_t i = 0; i < p_.stages.size(); ++i)
      if (stageCount_[i] != 1)
        out_.add("stage '" + p_.stages[i].name + "'",
                 fmt::format("its body is in the kernel {} times; every task must be placed exactly once",
                             stageCount_[i]));
  }

 private:
  std::string where(const Op& op) const {
    const std::string st = stage_ >= 0 && stage_ < static_cast<int>(p_.stages.size())
                               ? "stage '" + p_.stages[stage_].name + "'"
                               : "kernel";
    return fmt::format("{}, op #{} {}", st, opNumber_, opName(op.code));
  }
  void problem(const Op& op, const std::string& what) {
    if (reportPass_) out_.add(where(op), what);
  }

  bool use(const Op& op, Value v) {
    if (!v || v.id >= defined_.size() || !defined_[v.id]) {
      problem(op, fmt::format("operand %{} is used where it is not defined", v.id));
      return false;
    }
    return true;
  }
  void def(Value v, bool uniform) {
    if (!v) return;
    defined_[v.id] = true;
    uniform_[v.id] = uniform;
  }

  void walk(const Region& r, bool uniformFlow) {
    std::vector<Value> here;
    for (const Op& op : r.ops) {
      ++opNumber_;
      visit(op, uniformFlow);
      if (op.result) here.push_back(op.result);
    }
    for (Value v : here) defined_[v.id] = false;  // not visible outside the region
    for (Value v : r.args) defined_[v.id] = false;
  }

  const Type& ty(Value v) const { return fn_.typeOf(v); }

  void visit(const Op& op, bool uniformFlow) {
    bool allUniform = true, ok = true;
    for (Value v : op.operands) {
      ok &= use(op, v);
      if (ok) allUniform &= uniform_[v.id];
    }
    if (!ok) return;
    if (!checkShape(op)) {
      def(op.result, false);
      return;
    }
    checkTypes(op);
    switch (op.code) {
      case OpCode::VarLoad:
        def(op.result, varUniform_.at(op.attrs.var));
        return;
      case OpCode::CtaUniform:  // a claim the Sim checks at run time
        def(op.result, true);
        return;
      case OpCode::VarStore:
        if ((!allUniform || !uniformFlow) && varUniform_.at(op.attrs.var)) {
          varUniform_[op.attrs.var] = false;
          changed_ = true;
        }
        return;
      case OpCode::Barrier:
        if (!uniformFlow)
          problem(op, "a barrier in control flow that is not uniform across the CTA (every wave must reach "
                      "every barrier); move it out of the thread-dependent if/loop");
        return;
      case OpCode::If:
        walk(op.regions[0], uniformFlow && allUniform);
        walk(op.regions[1], uniformFlow && allUniform);
        return;
      case OpCode::For: {
        const bool u = uniformFlow && allUniform;
        def(op.regions[0].args[0], u);
        walk(op.regions[0], u);
        return;
      }
      case OpCode::While: {
        // The condition region is evaluated with the flow of the loop itself.
        std::vector<bool> saved = defined_;
        for (const Op& c : op.regions[0].ops) {
          ++opNumber_;
          visit(c, uniformFlow);
        }
        const Value y = op.regions[0].yield;
        const bool u = uniformFlow && y && defined_[y.id] && uniform_[y.id];
        if (!y || !defined_[y.id]) problem(op, "the while condition yields no defined i1");
        walk(op.regions[1], u);
        defined_ = saved;
        return;
      }
      case OpCode::StageScope: {
        if (op.attrs.stage < 0 || op.attrs.stage >= static_cast<int>(p_.stages.size())) {
          problem(op, fmt::format("stage index {} is not a stage of the Plan", op.attrs.stage));
          return;
        }
        if (reportPass_) ++stageCount_[op.attrs.stage];
        const int saved = stage_;
        stage_ = op.attrs.stage;
        walk(op.regions[0], uniformFlow);
        stage_ = saved;
        return;
      }
      default:  // every other op: uniform when its operands are, unless its record says it varies
        def(op.result, allUniform && !variesByLane(op.code));
        return;
    }
  }

  /// The operand and region counts of op's record, and a result exactly when the record has one.
  bool checkShape(const Op& op) {
    const size_t operands = opOperands(op.code), regions = opRegions(op.code);
    const bool hasResult = opResult(op.code) != ResultRule::None;
    if (op.operands.size() == operands && op.regions.size() == regions && bool(op.result) == hasResult) return true;
    problem(op, fmt::format("expected {} operands, {} regions and {}; got {}, {} and {}", operands, regions,
                            hasResult ? "a result" : "no result", op.operands.size(), op.regions.size(),
                            op.result ? "a result" : "none"));
    return false;
  }

  void checkTypes(const Op& op) {
    auto need = [&](bool c, const std::string& what) {
      if (!c) problem(op, what);
    };
    const auto& o = op.operands;
    switch (op.code) {
      case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
      case OpCode::UDiv: case OpCode::URem: case OpCode::And: case OpCode::Or: case OpCode::Xor:
      case OpCode::Shl: case OpCode::LShr: case OpCode::AShr: case OpCode::Min: case OpCode::Max:
      case OpCode::UMin: case OpCode::UMax:
        need(ty(o[0]) == ty(o[1]) && ty(op.result) == ty(o[0]),
             "expected operands and a result of one type");
        break;
      case OpCode::Cmp:
        need(ty(o[0]) == ty(o[1]) && ty(op.result).scalar == Scalar::I1, "expected (T, T) -> i1");
        break;
      case OpCode::Select:
        need(ty(o[0]).scalar == Scalar::I1 && ty(o[1]) == ty(o[2]), "expected (i1, T, T)");
        break;
      case OpCode::Load:
        need(ty(o[0]).isPtr(), "expected a pointer operand");
        break;
      case OpCode::Store:
        need(ty(o[0]).isPtr(), "expected (pointer, value)");
        break;
      case OpCode::Publish:
        need(ty(o[0]).isPtr() && ty(o[0]).space != AddrSpace::Lds && ty(o[1]) == Type::i32() &&
                 ty(o[2]) == Type::i32(),
             "expected (global pair pointer, i32 value, i32 tag)");
        break;
      case OpCode::Wait:
        need(ty(o[0]).isPtr() && ty(o[0]).space != AddrSpace::Lds && ty(o[1]) == Type::i32() &&
                 ty(o[2]) == Type::i64() && ty(o[3]).isPtr() && ty(o[4]) == Type::i32() && op.attrs.site > 0,
             "expected (global pair pointer, i32 tag, i64 bound, error word pointer, i32 code) and a site");
        break;
      case OpCode::If:
        need(ty(o[0]) == Type::i1(), "expected an i1 condition");
        break;
      case OpCode::For:
        need(ty(o[0]) == Type::i32() && ty(o[1]) == Type::i32() && ty(o[2]) == Type::i32() &&
                 op.regions[0].args.size() == 1,
             "expected i32 bounds and step and a body with an induction variable");
        break;
      case OpCode::VarLoad: case OpCode::VarStore:
        need(op.attrs.var >= 0 && op.attrs.var < static_cast<int>(fn_.vars.size()), "unknown variable");
        if (op.code == OpCode::VarStore && op.attrs.var >= 0 && op.attrs.var < static_cast<int>(fn_.vars.size()))
          need(fn_.vars[op.attrs.var].type == ty(o[0]), "stored value's type differs from the variable's");
        break;
      case OpCode::Mfma: {
        const Type ab = mfma::operandType(op.attrs.mfma), acc = mfma::accType();
        need(mfma::shapeOf(op.attrs.mfma).m != 0 && ty(o[0]) == ab && ty(o[1]) == ab &&
                 ty(o[2]) == acc && ty(op.result) == acc,
             fmt::format("expected {} (a {}, b {}, acc {}) -> {}", mfmaKindName(op.attrs.mfma), ab.str(), ab.str(),
                         acc.str(), acc.str()));
        break;
      }
      case OpCode::MfmaScale:
        need(ty(o[0]) == mfma::scaledAType() && ty(o[1]) == mfma::scaledBType() && ty(o[2]) == mfma::accType() &&
                 ty(o[3]) == Type::i32() && ty(o[4]) == Type::i32() && ty(op.result) == mfma::accType(),
             "expected (a <8 x i32>, b <4 x i32>, acc <4 x f32>, scale a i32, scale b i32) -> <4 x f32>");
        break;
      case OpCode::Arg:
        need(op.attrs.imm >= 0 && op.attrs.imm < static_cast<int64_t>(p_.args.size()),
             fmt::format("argument #{} does not exist", op.attrs.imm));
        break;
      default:
        break;
    }
  }

  const Plan& p_;
  const Function& fn_;
  Problems& out_;
  std::vector<bool> defined_, uniform_, varUniform_;
  std::vector<int> stageCount_;
  bool changed_ = false, reportPass_ = false;
  int stage_ = -1;
  int opNumber_ = 0;
};

}  // namespace

std::vector<std::string> verifyAll(const Plan& plan) {
  Problems out{plan.key.variantName(), {}};
  if (!checkTarget(plan, out)) return out.list;
  checkGrid(plan, out);
  checkArgs(plan, out);
  checkRegions(plan, out);
  checkPools(plan, out);
  try {
    checkStages(plan, out);
  } catch (const IrError& e) {
    out.list.push_back(e.what());
  }
  KernelChecker(plan, out).run();
  for (std::string& m : offsetRangeProblems(plan)) out.list.push_back(std::move(m));
  return out.list;
}

void verify(const Plan& plan) {
  const auto problems = verifyAll(plan);
  if (problems.empty()) return;
  std::string msg = problems.front();
  if (problems.size() > 1) msg += fmt::format(" (and {} more problems)", problems.size() - 1);
  throw IrError(plan.key.variantName(), msg);
}

}  // namespace monogen::ir
