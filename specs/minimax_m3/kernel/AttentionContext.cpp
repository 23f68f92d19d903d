#include "specs/minimax_m3/kernel/AttentionContext.h"

namespace monogen::specs::minimax_m3 {

using ir::AddrSpace;
using ir::Type;
using ir::Val;

AttentionContext::AttentionContext(const AttentionVariant& v, const ir::Plan& plan, ir::Builder& b)
    : variant(v), L(v.layout), b(b), plan_(&plan) {}

Val AttentionContext::arg(const char* name) { return b.arg(plan_->argIndex(name), Type::ptr(AddrSpace::Global), name); }

void AttentionContext::stage(int index, const std::function<void()>& body) {
  b.stage(index, [&] {
    tid = b.named(b.tid(), "tid");
    lane = b.named(b.lane(), "lane");
    wave = b.named(b.wave(), "wave");
    block = b.named(b.block(), "block");
    red = b.named(b.intToPtr(b.i32(0), AddrSpace::Lds), "red");
    body();
  });
}

void AttentionContext::forEachTask(const Placement& p, const std::function<void(Val)>& body) {
  specs::forEachTask(b, block, p.base, p.tasks, L.blocks, body);
}

}  // namespace monogen::specs::minimax_m3
