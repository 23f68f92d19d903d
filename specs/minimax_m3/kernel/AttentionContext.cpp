#include "specs/minimax_m3/kernel/AttentionContext.h"

#include "specs/common/Pairs.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"

namespace monogen::specs::minimax_m3 {

using ir::AddrSpace;
using ir::Type;
using ir::Val;

AttentionContext::AttentionContext(const AttentionVariant& v, const ir::Plan& plan, ir::Builder& b)
    : variant(v), L(v.layout), b(b), plan_(&plan) {}

AttentionContext::AttentionContext(const AttentionVariant& v, const ir::Plan& plan, ir::Builder& b,
                                   std::map<std::string, std::string> renames, ir::Value tag)
    : variant(v), L(v.layout), b(b), plan_(&plan), renames_(std::move(renames)), launchTag_(tag) {}

const char* AttentionContext::planName(const char* name) const {
  auto it = renames_.find(name);
  return it == renames_.end() ? name : it->second.c_str();
}

Val AttentionContext::arg(const char* name) {
  const char* n = planName(name);
  return b.arg(plan_->argIndex(n), Type::ptr(AddrSpace::Global), n);
}

Val AttentionContext::scalarI32(const char* name) {
  const char* n = planName(name);
  return b.arg(plan_->argIndex(n), Type::i32(), n);
}

void AttentionContext::stage(int index, const std::function<void()>& body) {
  b.stage(index, [&] {
    tid = b.named(b.tid(), "tid");
    lane = b.named(b.lane(), "lane");
    wave = b.named(b.wave(), "wave");
    block = b.named(launchTag_.id != 0 ? b.stageBlock() : b.block(), "block");
    red = b.named(b.intToPtr(b.i32(0), AddrSpace::Lds), "red");
    tag = launchTag_.id != 0 ? b.wrap(launchTag_) : b.arg(plan_->argIndex(attn_arg::kTag), Type::i32(), attn_arg::kTag);
    waitTicks = b.arg(plan_->argIndex(attn_arg::kWaitTicks), Type::i64(), attn_arg::kWaitTicks);
    err = arg(attn_arg::kErr);
    body();
  });
}

Val AttentionContext::pairAt(int64_t offset, Val index) {
  return b.ptrAdd(arg(attn_arg::kScratch), b.i32(offset) + index * b.i32(8));
}

void AttentionContext::publish(Val pair) {
  publishPair(b, pair, b.i32(1), tag, ir::MemOrder::Release, ir::MemScope::Agent, hooks_);
}

void AttentionContext::await(Val pair, int site, Val token) {
  awaitPair(b, pair, tag, waitTicks, err, b.i32(site) | token << b.i32(16), site, ir::MemOrder::Acquire,
            ir::MemScope::Agent, hooks_);
}

AwaitedPair AttentionContext::awaitChecked(Val pair, int site, Val token) {
  return awaitPairChecked(b, pair, tag, waitTicks, err, b.i32(site) | token << b.i32(16), site,
                          ir::MemOrder::Acquire, ir::MemScope::Agent, hooks_);
}

Val AttentionContext::rank() { return scalarI32(arg::kRank); }

Val AttentionContext::peerSym(Val o) {
  Val addr = b.load(Type::i64(), b.ptrAdd(arg(arg::kPeers), o * i32(8)));
  return b.intToPtr(addr, AddrSpace::Peer);
}

void AttentionContext::publishPeer(Val pair, Val value) {
  publishPair(b, pair, value, tag, ir::MemOrder::Relaxed, ir::MemScope::System, hooks_);
}

AwaitedPair AttentionContext::awaitPeerChecked(Val pair, int site, Val token) {
  return awaitPairChecked(b, pair, tag, waitTicks, err, b.i32(site) | token << b.i32(16), site,
                          ir::MemOrder::Relaxed, ir::MemScope::System, hooks_);
}

void AttentionContext::fail(int site, Val token) {
  b.cmpXchg(err, i32(0), i32(site) | token << i32(16), ir::MemOrder::Relaxed, ir::MemScope::Agent);
  b.atomicRmw(ir::RmwOp::Add, b.ptrAdd(err, int64_t{4}), i32(1), ir::MemOrder::Relaxed, ir::MemScope::Agent);
}

void AttentionContext::forEachTask(const Placement& p, const std::function<void(Val)>& body) {
  specs::forEachTask(b, block, p.base, p.tasks, L.blocks, body);
}

void AttentionContext::awaitAllOnce(const Placement& p, int64_t offset, int64_t count, int site) {
  Val hasTasks = (block - i32(p.base) + i32(L.blocks)) % i32(L.blocks) < i32(p.tasks);
  b.if_(hasTasks, [&] {
    for (int64_t first = 0; first < count; first += L.threads) {
      Val i = first == 0 ? tid : tid + i32(first);
      b.if_(i < i32(count), [&] { await(pairAt(offset, i), site, i); });
    }
    ctaSync(false);
  });
}

}  // namespace monogen::specs::minimax_m3
