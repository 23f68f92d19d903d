#include "specs/minimax_m3/KernelContext.h"

namespace monogen::specs::minimax_m3 {

using ir::AddrSpace;
using ir::Type;
using ir::Val;

KernelContext::KernelContext(const ModelConfig& cfg, const Layout& layout, const ir::Plan& plan, ir::Builder& b)
    : cfg(cfg), L(layout), b(b) {
  tid = b.named(b.tid(), "tid");
  lane = b.named(b.lane(), "lane");
  block = b.named(b.block(), "block");
  auto ptrArg = [&](const char* name) { return b.arg(plan.argIndex(name), Type::ptr(AddrSpace::Global), name); };
  part = ptrArg(arg::kPart);
  resIn = ptrArg(arg::kResIn);
  resOut = ptrArg(arg::kResOut);
  scratch = ptrArg(arg::kScratch);
  sym = ptrArg(arg::kSym);
  Val peers = ptrArg(arg::kPeers);
  err = ptrArg(arg::kErr);
  tag = b.arg(plan.argIndex(arg::kTag), Type::i32(), arg::kTag);
  rank = b.arg(plan.argIndex(arg::kRank), Type::i32(), arg::kRank);
  waitTicks = b.arg(plan.argIndex(arg::kWaitTicks), Type::i64(), arg::kWaitTicks);
  for (int p = 0; p < L.tp; ++p) {
    Val addr = b.load(Type::i64(), b.ptrAdd(peers, int64_t{p} * 8));
    peerSym.push_back(b.named(b.intToPtr(addr, AddrSpace::Peer), "sym_r" + std::to_string(p)));
  }
}

Val KernelContext::pairAt(Val base, const Area& area, Val index) {
  return b.ptrAdd(base, i32(area.offset) + index * i32(kPairBytes));
}

Val KernelContext::elemAt(Val base, const Area& area, Val index, int elemBytes) {
  return b.ptrAdd(base, i32(area.offset) + index * i32(elemBytes));
}

Val KernelContext::elemAt(Val base, Val index, int elemBytes) { return b.ptrAdd(base, index * i32(elemBytes)); }

void KernelContext::ctaSync(bool drain) {
  if (drain) b.fence(ir::MemOrder::Release, ir::MemScope::Agent);
  b.barrier();
}

void KernelContext::forEachTask(const Placement& p, const std::function<void(Val)>& body) {
  Val first = (block - i32(p.base % L.blocks) + i32(L.blocks)) % i32(L.blocks);
  b.for_(first, i32(p.tasks), i32(L.blocks), body);
}

}  // namespace monogen::specs::minimax_m3
