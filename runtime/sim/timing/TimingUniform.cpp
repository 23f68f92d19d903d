// uniformResults: a linear scan of the flat program, repeated until the variables' and the loops'
// divergence stop changing.
#include "runtime/sim/timing/TimingUniform.h"

#include <unordered_map>

namespace monogen::runtime::timing {

std::vector<bool> uniformResults(const SimProgram& prog) {
  const size_t n = prog.insts.size();
  std::vector<bool> uni(n, false);
  std::unordered_map<uint32_t, bool> slotUni, varUni, loopDiv;  // loopDiv by the loop's first pc
  for (bool changed = true; changed;) {
    changed = false;
    slotUni.clear();
    std::vector<bool> div{false};  // divergence of the enclosing regions
    std::vector<uint32_t> loopAt;
    const auto uniform = [&](uint32_t slot) {
      if (slot == kSimNoSlot) return true;
      auto it = slotUni.find(slot);
      return it != slotUni.end() && it->second;
    };
    const auto varUniform = [&](uint32_t var) {
      auto it = varUni.find(var);
      return it == varUni.end() || it->second;
    };
    const auto mark = [&](std::unordered_map<uint32_t, bool>& m, uint32_t k) {
      auto [it, fresh] = m.try_emplace(k, false);
      if (fresh || it->second) changed = true;
      it->second = false;
    };
    for (size_t pc = 0; pc < n; ++pc) {
      const SimInst& in = prog.insts[pc];
      bool u = true;
      for (uint32_t s : in.opd) u = u && uniform(s);
      if (in.code >= kSimIfBegin) {
        switch (static_cast<SimCode>(in.code)) {
          case kSimIfBegin: div.push_back(div.back() || !u); break;
          case kSimElse: break;
          case kSimEndIf: div.pop_back(); break;
          case kSimForInit: case kSimLoopBegin: {
            loopAt.push_back(static_cast<uint32_t>(pc));
            auto it = loopDiv.find(static_cast<uint32_t>(pc));
            div.push_back(div.back() || (it != loopDiv.end() && it->second));
            break;
          }
          case kSimForCheck: case kSimWhileCheck:
            if (!u && !div.back()) {
              if (!loopDiv[loopAt.back()]) changed = true;
              loopDiv[loopAt.back()] = true;
              div.back() = true;
            }
            break;
          case kSimLoopEnd:
            div.pop_back();
            loopAt.pop_back();
            break;
          case kSimForStep: case kSimJump: break;
        }
        uni[pc] = u;
        if (in.res != kSimNoSlot) slotUni[in.res] = u;
        continue;
      }
      const auto code = static_cast<ir::OpCode>(in.code);
      if (code == ir::OpCode::VarStore) {
        if ((!u || div.back()) && varUniform(in.var)) mark(varUni, in.var);
        uni[pc] = u;
        continue;
      }
      if (code == ir::OpCode::VarLoad) u = varUniform(in.var);
      else if (code == ir::OpCode::WaveId || code == ir::OpCode::ReadFirstLane || code == ir::OpCode::Ballot ||
               code == ir::OpCode::CtaUniform)
        u = true;
      else if (ir::variesByLane(code)) u = false;
      uni[pc] = u;
      if (in.res != kSimNoSlot) slotUni[in.res] = u;
    }
  }
  return uni;
}

}  // namespace monogen::runtime::timing
