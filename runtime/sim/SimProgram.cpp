// Flattening the structured kernel IR into a SIMT program, and register-slot allocation.
#include "runtime/sim/SimProgram.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <queue>

#include "ir/Error.h"

namespace monogen::runtime {

namespace {

struct Loop {
  int32_t start, end;  // the instructions a back edge repeats: [start, end]
  bool contains(int32_t p) const { return p >= start && p <= end; }
};

class Flattener {
 public:
  explicit Flattener(const ir::Plan& plan) : plan_(plan), fn_(plan.kernel) {
    defPos_.assign(fn_.values.size(), -1);
    uses_.resize(fn_.values.size());
  }

  SimProgram run() {
    region(fn_.body, 0, -1);
    allocate();
    return std::move(prog_);
  }

 private:
  std::string where(const ir::Op& op, int opNum) const {
    return fmt::format("{}, op #{} {}", plan_.key.variantName(), opNum, ir::opName(op.code));
  }

  int32_t emit(uint16_t code, const ir::Op& op, int opNum, int depth, int stage) {
    SimInst in;
    in.code = code;
    in.op = &op;
    in.opNum = opNum;
    in.depth = depth;
    in.stage = static_cast<int16_t>(stage);
    prog_.insts.push_back(in);
    return static_cast<int32_t>(prog_.insts.size() - 1);
  }
  void def(int32_t pc, ir::Value v, const ir::Op& op, int opNum) {
    if (!v) return;
    if (v.id >= fn_.values.size()) throw SimError(where(op, opNum), fmt::format("result %{} is not a value", v.id));
    if (defPos_[v.id] < 0) defPos_[v.id] = pc;
    prog_.insts[pc].rt = fn_.values[v.id].type;
    pcRes_.resize(prog_.insts.size(), 0);
    pcRes_[pc] = v.id;
  }
  void use(int32_t pc, int k, ir::Value v, const ir::Op& op, int opNum) {
    if (!v || v.id >= fn_.values.size())
      throw SimError(where(op, opNum), fmt::format("operand {} (%{}) is not a value", k, v.id));
    uses_[v.id].push_back(pc);
    SimInst& in = prog_.insts[pc];
    pcOpd_.resize(prog_.insts.size());
    pcOpd_[pc][k] = v.id;
    in.nopd = static_cast<uint8_t>(std::max<int>(in.nopd, k + 1));
    if (k == 0) in.t0 = fn_.values[v.id].type;
    if (k == 1) in.t1 = fn_.values[v.id].type;
  }

  void region(const ir::Region& r, int depth, int stage) {
    for (const ir::Op& op : r.ops) {
      const int n = opCounter_++;
      switch (op.code) {
        case ir::OpCode::If: ifOp(op, n, depth, stage); break;
        case ir::OpCode::For: forOp(op, n, depth, stage); break;
        case ir::OpCode::While: whileOp(op, n, depth, stage); break;
        case ir::OpCode::StageScope: {
          if (op.regions.size() != 1) throw SimError(where(op, n), "stage takes one region");
          if (op.attrs.stage < 0 || op.attrs.stage >= static_cast<int>(plan_.stages.size()))
            throw SimError(where(op, n), fmt::format("stage index {} is not one of the plan's {} stages",
                                                     op.attrs.stage, plan_.stages.size()));
          region(op.regions[0], depth, op.attrs.stage);
          break;
        }
        default: plainOp(op, n, depth, stage); break;
      }
    }
  }

  void ifOp(const ir::Op& op, int n, int depth, int stage) {
    if (op.operands.size() != 1 || op.regions.size() != 2)
      throw SimError(where(op, n), "if takes one condition and two regions");
    const int32_t b = emit(kSimIfBegin, op, n, depth, stage);
    use(b, 0, op.operands[0], op, n);
    region(op.regions[0], depth + 1, stage);
    const int32_t e = emit(kSimElse, op, n, depth, stage);
    prog_.insts[b].target = e;
    region(op.regions[1], depth + 1, stage);
    const int32_t end = emit(kSimEndIf, op, n, depth, stage);
    prog_.insts[e].target = end;
    maxDepth_ = std::max(maxDepth_, depth + 1);
  }

  void forOp(const ir::Op& op, int n, int depth, int stage) {
    if (op.operands.size() != 3 || op.regions.size() != 1 || op.regions[0].args.size() != 1)
      throw SimError(where(op, n), "for takes (lo, hi, step) and a region with one argument");
    const ir::Value iv = op.regions[0].args[0];
    const int32_t init = emit(kSimForInit, op, n, depth, stage);
    use(init, 0, op.operands[0], op, n);
    def(init, iv, op, n);
    const int32_t check = emit(kSimForCheck, op, n, depth, stage);
    use(check, 0, iv, op, n);
    use(check, 1, op.operands[1], op, n);
    use(check, 2, op.operands[2], op, n);
    region(op.regions[0], depth + 1, stage);
    const int32_t step = emit(kSimForStep, op, n, depth, stage);
    use(step, 0, iv, op, n);
    use(step, 1, op.operands[2], op, n);
    prog_.insts[step].target = check;
    prog_.insts[step].rt = fn_.values[iv.id].type;
    pcRes_.resize(prog_.insts.size(), 0);
    pcRes_[step] = iv.id;  // writes iv again; the liveness sees a use here
    const int32_t end = emit(kSimLoopEnd, op, n, depth, stage);
    prog_.insts[check].target = end;
    loops_.push_back({check, step});
    maxDepth_ = std::max(maxDepth_, depth + 1);
  }

  void whileOp(const ir::Op& op, int n, int depth, int stage) {
    if (op.regions.size() != 2 || !op.regions[0].yield)
      throw SimError(where(op, n), "while takes a condition region that yields an i1, and a body");
    emit(kSimLoopBegin, op, n, depth, stage);
    const int32_t condStart = static_cast<int32_t>(prog_.insts.size());
    region(op.regions[0], depth + 1, stage);
    const int32_t check = emit(kSimWhileCheck, op, n, depth, stage);
    use(check, 0, op.regions[0].yield, op, n);
    region(op.regions[1], depth + 1, stage);
    const int32_t jump = emit(kSimJump, op, n, depth, stage);
    prog_.insts[jump].target = condStart;
    const int32_t end = emit(kSimLoopEnd, op, n, depth, stage);
    prog_.insts[check].target = end;
    loops_.push_back({condStart, jump});
    maxDepth_ = std::max(maxDepth_, depth + 1);
  }

  void plainOp(const ir::Op& op, int n, int depth, int stage) {
    if (op.operands.size() > 5) throw SimError(where(op, n), "more than 5 operands");
    const int32_t pc = emit(static_cast<uint16_t>(op.code), op, n, depth, stage);
    for (size_t k = 0; k < op.operands.size(); ++k) use(pc, static_cast<int>(k), op.operands[k], op, n);
    def(pc, op.result, op, n);
    if (op.code == ir::OpCode::VarLoad || op.code == ir::OpCode::VarStore) {
      if (op.attrs.var < 0 || op.attrs.var >= static_cast<int>(fn_.vars.size()))
        throw SimError(where(op, n), fmt::format("variable {} is not one of the kernel's {}", op.attrs.var,
                                                 fn_.vars.size()));
    }
    if (op.code == ir::OpCode::Arg && op.attrs.imm > prog_.maxArgIndex) {
      prog_.maxArgIndex = static_cast<int32_t>(op.attrs.imm);
      prog_.maxArgOpNum = n;
    }
    if (op.code == ir::OpCode::Arg && op.attrs.imm < 0)
      throw SimError(where(op, n), fmt::format("argument index {} is negative", op.attrs.imm));
  }

  struct Interval {
    int32_t start, end;
    uint32_t value;
  };
  /// Every defined value's live range (over a loop's whole body when it is live across the back
  /// edge), sorted by start.
  std::vector<Interval> liveRanges() const {
    const size_t nv = fn_.values.size();
    std::vector<Interval> ivs;
    for (uint32_t v = 1; v < nv; ++v) {
      if (defPos_[v] < 0) {
        if (!uses_[v].empty()) {
          const SimInst& in = prog_.insts[uses_[v].front()];
          throw SimError(where(*in.op, in.opNum), fmt::format("operand %{} is used but never defined", v));
        }
        continue;
      }
      const int32_t d = defPos_[v];
      int32_t start = d, end = d;
      for (int32_t u : uses_[v]) {
        end = std::max(end, u);
        for (const Loop& L : loops_) {
          const bool inU = L.contains(u), inD = L.contains(d);
          if (inU && !inD) end = std::max(end, L.end);
          if (inD && !inU) {
            start = std::min(start, L.start);
            end = std::max(end, L.end);
          }
        }
      }
      ivs.push_back({start, end, v});
    }
    std::sort(ivs.begin(), ivs.end(), [](const Interval& a, const Interval& b) {
      return a.start != b.start ? a.start < b.start : a.value < b.value;
    });
    return ivs;
  }

  void allocate() {
    const size_t nv = fn_.values.size();
    pcRes_.resize(prog_.insts.size(), 0);
    pcOpd_.resize(prog_.insts.size());
    const std::vector<Interval> ivs = liveRanges();
    std::vector<uint32_t> slot(nv, kSimNoSlot);
    using Active = std::pair<int32_t, uint32_t>;  // (end, value)
    std::priority_queue<Active, std::vector<Active>, std::greater<Active>> active;
    std::map<uint32_t, std::vector<uint32_t>> freeBySize;
    uint32_t top = 0;
    auto sizeOf = [&](uint32_t v) { return static_cast<uint32_t>(64 * fn_.values[v].type.bytes()); };
    for (const Interval& iv : ivs) {
      while (!active.empty() && active.top().first < iv.start) {
        const uint32_t v = active.top().second;
        active.pop();
        freeBySize[sizeOf(v)].push_back(slot[v]);
      }
      const uint32_t sz = sizeOf(iv.value);
      auto& fl = freeBySize[sz];
      if (!fl.empty()) {
        slot[iv.value] = fl.back();
        fl.pop_back();
      } else {
        slot[iv.value] = top;
        top += sz;
      }
      active.push({iv.end, iv.value});
    }
    top = (top + 63) & ~63u;
    prog_.valueBytes = top;
    prog_.varBase = top;
    std::vector<uint32_t> varSlot(fn_.vars.size());
    uint32_t vb = 0;
    for (size_t i = 0; i < fn_.vars.size(); ++i) {
      varSlot[i] = top + vb;
      vb += static_cast<uint32_t>(64 * fn_.vars[i].type.bytes());
    }
    vb = (vb + 63) & ~63u;
    prog_.varBytes = vb;
    prog_.maskBase = top + vb;
    prog_.maxDepth = maxDepth_;
    prog_.frameBytes = (prog_.maskBase + 16u * static_cast<uint32_t>(maxDepth_) + 63u) & ~63u;
    for (size_t pc = 0; pc < prog_.insts.size(); ++pc) {
      SimInst& in = prog_.insts[pc];
      if (pcRes_[pc]) in.res = slot[pcRes_[pc]];
      for (int k = 0; k < in.nopd; ++k) in.opd[k] = slot[pcOpd_[pc][k]];
      if (in.code == static_cast<uint16_t>(ir::OpCode::VarLoad) || in.code == static_cast<uint16_t>(ir::OpCode::VarStore))
        in.var = varSlot[static_cast<size_t>(in.op->attrs.var)];
    }
  }

  const ir::Plan& plan_;
  const ir::Function& fn_;
  SimProgram prog_;
  std::vector<int32_t> defPos_;
  std::vector<std::vector<int32_t>> uses_;
  std::vector<uint32_t> pcRes_;
  std::vector<std::array<uint32_t, 5>> pcOpd_;
  std::vector<Loop> loops_;
  int opCounter_ = 1;  // 1-based preorder, as ir/Verifier numbers ops ("op #N")
  int maxDepth_ = 0;
};

}  // namespace

SimProgram SimProgram::compile(const ir::Plan& plan) { return Flattener(plan).run(); }

}  // namespace monogen::runtime
