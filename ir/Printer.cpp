#include "ir/Printer.h"

#include <fmt/format.h>

namespace monogen::ir {
namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string scalarText(Scalar s) {
  Type t{s};
  if (s == Scalar::Ptr) return "u64";
  if (s == Scalar::I8) return "u8";
  return t.str();
}

class KernelPrinter {
 public:
  KernelPrinter(const Function& fn, const Plan* plan) : fn_(fn), plan_(plan) {}

  std::string run() {
    out_ = fmt::format("kernel {} {{\n", fn_.name);
    for (size_t i = 0; i < fn_.vars.size(); ++i)
      out_ += fmt::format("  var ${}.{} : {}\n", i, fn_.vars[i].name, fn_.vars[i].type.str());
    region(fn_.body, 1);
    out_ += "}\n";
    return out_;
  }

 private:
  std::string v(Value x) const {
    if (!x) return "%_";
    const std::string& n = fn_.values.at(x.id).name;
    return n.empty() ? fmt::format("%{}", x.id) : fmt::format("%{}.{}", x.id, n);
  }
  std::string var(int id) const { return fmt::format("${}.{}", id, fn_.vars.at(id).name); }

  std::string operands(const Op& op) const {
    std::string s;
    for (size_t i = 0; i < op.operands.size(); ++i) s += (i ? ", " : "") + v(op.operands[i]);
    return s;
  }

  std::string attrs(const Op& op) const {
    const Attrs& a = op.attrs;
    switch (op.code) {
      case OpCode::ConstInt: return fmt::format(" {}", a.imm);
      case OpCode::ConstFloat: return fmt::format(" {}", a.fimm);
      case OpCode::Arg: return fmt::format(" #{}", a.imm);
      case OpCode::Extract: case OpCode::Insert: return fmt::format(" [{}]", a.imm);
      case OpCode::Sleep: return fmt::format(" {}", a.imm);
      case OpCode::Cmp: return fmt::format(" {}", cmpPredName(a.pred));
      case OpCode::Mfma: return fmt::format(" {}", mfmaKindName(a.mfma));
      case OpCode::AtomicRmw: return fmt::format(" {} [{}, {}]", rmwOpName(a.rmw), memOrderName(a.order), memScopeName(a.scope));
      case OpCode::Load: case OpCode::Store: case OpCode::CmpXchg: case OpCode::Fence: case OpCode::Publish:
        return a.order == MemOrder::Plain ? "" : fmt::format(" [{}, {}]", memOrderName(a.order), memScopeName(a.scope));
      case OpCode::Wait:
        return fmt::format(" site {} [{}, {}]", a.site, memOrderName(a.order), memScopeName(a.scope));
      default:
        return "";
    }
    return "";
  }

  void line(int depth, const std::string& s) { out_ += std::string(2 * depth, ' ') + s + "\n"; }

  void region(const Region& r, int depth) {
    for (const Op& op : r.ops) this->op(op, depth);
  }

  void op(const Op& op, int depth) {
    switch (op.code) {
      case OpCode::If:
        line(depth, fmt::format("if {} {{", v(op.operands[0])));
        region(op.regions[0], depth + 1);
        if (!op.regions[1].ops.empty()) {
          line(depth, "} else {");
          region(op.regions[1], depth + 1);
        }
        line(depth, "}");
        return;
      case OpCode::For:
        line(depth, fmt::format("for {} = {} to {} step {} {{", v(op.regions[0].args[0]), v(op.operands[0]),
                                v(op.operands[1]), v(op.operands[2])));
        region(op.regions[0], depth + 1);
        line(depth, "}");
        return;
      case OpCode::While:
        line(depth, "while {");
        region(op.regions[0], depth + 1);
        line(depth + 1, fmt::format("yield {}", v(op.regions[0].yield)));
        line(depth, "} do {");
        region(op.regions[1], depth + 1);
        line(depth, "}");
        return;
      case OpCode::StageScope: {
        std::string name = plan_ && op.attrs.stage >= 0 && op.attrs.stage < static_cast<int>(plan_->stages.size())
                               ? plan_->stages[op.attrs.stage].name
                               : "?";
        line(depth, fmt::format("stage {} \"{}\" {{", op.attrs.stage, name));
        region(op.regions[0], depth + 1);
        line(depth, "}");
        return;
      }
      case OpCode::VarLoad:
        line(depth, fmt::format("{} = var_load {} : {}", v(op.result), var(op.attrs.var), fn_.typeOf(op.result).str()));
        return;
      case OpCode::VarStore:
        line(depth, fmt::format("var_store {}, {}", var(op.attrs.var), v(op.operands[0])));
        return;
      default:
        break;
    }
    std::string s = op.result ? fmt::format("{} = ", v(op.result)) : "";
    s += opName(op.code);
    s += attrs(op);
    if (!op.operands.empty()) s += ' ' + operands(op);
    if (op.result) s += " : " + fn_.typeOf(op.result).str();
    line(depth, s);
  }

  const Function& fn_;
  const Plan* plan_;
  std::string out_;
};

}  // namespace

std::string printFunction(const Function& fn) { return KernelPrinter(fn, nullptr).run(); }
std::string printKernel(const Plan& plan) { return KernelPrinter(plan.kernel, &plan).run(); }

std::string printPlan(const Plan& p) {
  std::string s;
  auto add = [&](const std::string& line) { s += line + "\n"; };
  add(fmt::format("plan {}", p.key.variantName()));
  add(fmt::format("  key: {}", p.key.canonical()));
  add(fmt::format("  target: {} (wave{}, {} CUs, {} KiB LDS, {} MHz realtime clock)", p.target().targetId(),
                  p.target().waveSize, p.target().computeUnits, p.target().ldsBytes / 1024, p.target().clockHz / 1'000'000));
  add(fmt::format("  grid: {} x {} (persistent: every CTA co-resident)", p.grid.blocks, p.grid.threads));
  if (!p.facts.empty()) {
    add("  facts:");
    for (const auto& [k, v] : p.facts) add(fmt::format("    {} = {}", k, v));
  }
  add(fmt::format("  args ({} kernarg bytes):", p.kernargBytes()));
  const auto offs = p.kernargOffsets();
  for (size_t i = 0; i < p.args.size(); ++i) {
    const KernelArg& a = p.args[i];
    std::string ty = a.isPointer ? fmt::format("{}{} align {}", scalarText(a.elem), shapeText(a.shape), a.align)
                                 : fmt::format("{} scalar", Type{a.elem}.str());
    add(fmt::format("    {:2} {:<10} {:<28} {:<8} @kernarg {:<3} {}", i, a.name, ty, argRoleName(a.role), offs[i], a.doc));
  }
  add("  regions:");
  for (const MemRegion& r : p.regions)
    add(fmt::format("    {:<10} in {:<8} [{:#x}, {:#x}) {} bytes  {}", r.name, r.buffer, r.offset, r.offset + r.bytes,
                    r.bytes, r.doc));
  add("  flags ((value, tag) pairs, never reset):");
  for (const FlagArray& f : p.flags)
    add(fmt::format("    {:<10} in {:<10} {} pairs{}  {}", f.name, f.region, f.pairs,
                    std::string(f.peer ? " (peer)" : "") + (f.parityHalves ? " (2 parity halves, tag & 1)" : "") +
                        (f.publishedPairs > 0 ? fmt::format(" ({} a launch, every rank)", f.publishedPairs) : ""),
                    f.doc));
  add(fmt::format("  lds pools ({} of {} bytes):", p.ldsBytes, p.target().ldsBytes));
  for (const LdsPool& l : p.pools)
    add(fmt::format("    {:<10} [{:#x}, {:#x}) {} bytes{}  {}", l.name, l.offset, l.offset + l.bytes, l.bytes,
                    l.aliasOf.empty() ? "" : " aliases " + l.aliasOf, l.doc));
  add("  stages:");
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const Stage& st = p.stages[i];
    auto uses = [](const std::vector<FlagUse>& us) {
      if (us.empty()) return std::string("-");
      std::string t;
      for (size_t k = 0; k < us.size(); ++k) t += fmt::format("{}{}({})", k ? ", " : "", us[k].flag, us[k].pairs);
      return t;
    };
    std::string tasks = st.everyCta ? "every CTA"
                                    : fmt::format("{}{} tasks, task t on CTA ({} + t) % {}", st.runtimeTasks ? "<= " : "",
                                                  st.tasks, st.base, p.grid.blocks);
    add(fmt::format("    {} {:<8} {}; waits {}; publishes {}", i, st.name, tasks, uses(st.waits), uses(st.publishes)));
    if (!st.doc.empty()) add(fmt::format("      {}", st.doc));
  }
  return s;
}

}  // namespace monogen::ir
