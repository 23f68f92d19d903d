#include "specs/minimax_m3/kernel/Mutation.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

#include "ir/Error.h"
#include "ir/Op.h"

namespace monogen::specs::minimax_m3 {

namespace {
struct KindName {
  MutationKind kind;
  const char* name;
};
constexpr KindName kKinds[] = {
    {MutationKind::PublishRelaxed, "publish_relaxed"}, {MutationKind::WaitRelaxed, "wait_relaxed"},
    {MutationKind::NoDrain, "no_drain"},               {MutationKind::PushAgent, "push_agent"},
    {MutationKind::PublishWorkgroup, "publish_workgroup"}, {MutationKind::NoBarrier, "no_barrier"},
};
}  // namespace

const char* mutationKindName(MutationKind k) {
  for (const KindName& n : kKinds)
    if (n.kind == k) return n.name;
  return "none";
}

SyncHelper helperOf(MutationKind k) {
  switch (k) {
    case MutationKind::WaitRelaxed: return SyncHelper::Wait;
    case MutationKind::NoDrain: return SyncHelper::Drain;
    case MutationKind::NoBarrier: return SyncHelper::Barrier;
    default: return SyncHelper::Publish;
  }
}

std::string Mutation::canonical() const {
  if (kind == MutationKind::None) return "";
  return fmt::format("{}@{}.{}", mutationKindName(kind), stage, ordinal);
}

Mutation Mutation::parse(const std::string& text, const std::string& where) {
  const size_t at = text.find('@'), dot = text.rfind('.');
  auto bad = [&] {
    return InputError(where, fmt::format("mutation '{}': expected kind@stage.ordinal, kind one of publish_relaxed, "
                                         "wait_relaxed, no_drain, push_agent, publish_workgroup, no_barrier",
                                         text));
  };
  if (at == std::string::npos || dot == std::string::npos || dot < at + 2) throw bad();
  Mutation m;
  const std::string kind = text.substr(0, at);
  for (const KindName& n : kKinds)
    if (kind == n.name) m.kind = n.kind;
  if (m.kind == MutationKind::None) throw bad();
  m.stage = text.substr(at + 1, dot - at - 1);
  const char* b = text.data() + dot + 1;
  const char* e = text.data() + text.size();
  const auto r = std::from_chars(b, e, m.ordinal);
  if (r.ec != std::errc() || r.ptr != e || m.ordinal < 0) throw bad();
  return m;
}

bool Mutator::at(SyncHelper h) {
  if (!m_ || stage_ != m_.stage || helperOf(m_.kind) != h) return false;
  if (seen_++ != m_.ordinal) return false;
  hit_ = true;
  return true;
}

void Mutator::publish(ir::MemOrder& o, ir::MemScope& s) {
  if (!at(SyncHelper::Publish)) return;
  auto expect = [&](bool ok, const char* what) {
    if (!ok)
      throw InputError(m_.canonical(), fmt::format("the site is a publish at {} {} scope, not {}", ir::memOrderName(o),
                                                   ir::memScopeName(s), what));
  };
  switch (m_.kind) {
    case MutationKind::PublishRelaxed:
      expect(o == ir::MemOrder::Release, "a release");
      o = ir::MemOrder::Relaxed;
      break;
    case MutationKind::PushAgent:
      expect(s == ir::MemScope::System, "a system-scope push");
      s = ir::MemScope::Agent;
      break;
    default:  // PublishWorkgroup
      expect(s == ir::MemScope::Agent, "an agent-scope publish");
      s = ir::MemScope::Workgroup;
      break;
  }
}

void Mutator::wait(ir::MemOrder& o, ir::MemScope& s) {
  if (!at(SyncHelper::Wait)) return;
  if (o != ir::MemOrder::Acquire)
    throw InputError(m_.canonical(), fmt::format("the site is a wait at {} {} scope, not an acquire",
                                                 ir::memOrderName(o), ir::memScopeName(s)));
  o = ir::MemOrder::Relaxed;
}

bool Mutator::keepCtaSync(bool drain) { return !at(drain ? SyncHelper::Drain : SyncHelper::Barrier); }

void Mutator::finish(const std::string& where) const {
  if (m_ && !hit_)
    throw InputError(where, fmt::format("mutation {}: stage '{}' has {} such call{}, so the site was never built",
                                        m_.canonical(), m_.stage, seen_, seen_ == 1 ? "" : "s"));
}

// ---------------------------------------------------------------------------------------------
// Locating a mutation in the built Plans

namespace {
struct FlatOp {
  const ir::Op* op;
  int num;    // 1-based preorder
  int stage;  // Plan stage index, -1 outside any
};
void flatten(const ir::Region& r, int stage, std::vector<FlatOp>& out) {
  for (const ir::Op& op : r.ops) {
    const int st = op.code == ir::OpCode::StageScope ? op.attrs.stage : stage;
    out.push_back({&op, static_cast<int>(out.size()) + 1, st});
    for (const ir::Region& sub : op.regions) flatten(sub, st, out);
  }
}
std::vector<FlatOp> flatOps(const ir::Plan& p) {
  std::vector<FlatOp> v;
  flatten(p.kernel.body, -1, v);
  return v;
}
bool sameOp(const ir::Op& a, const ir::Op& b) {
  return a.code == b.code && a.attrs.order == b.attrs.order && a.attrs.scope == b.attrs.scope;
}
std::string stageName(const ir::Plan& p, int i) {
  return i >= 0 && i < static_cast<int>(p.stages.size()) ? p.stages[i].name : "(no stage)";
}
}  // namespace

MutationSite locateMutation(const ir::Plan& real, const ir::Plan& mutated) {
  const std::vector<FlatOp> a = flatOps(real), b = flatOps(mutated);
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (sameOp(*a[i].op, *b[i].op)) continue;
    MutationSite s;
    s.stage = stageName(mutated, b[i].stage);
    s.opNum = b[i].num;
    if (a[i].op->code == b[i].op->code) {
      s.op = ir::opName(b[i].op->code);
    } else {
      s.op = ir::opName(a[i].op->code);
      s.removed = true;
    }
    return s;
  }
  throw RuntimeError(mutated.key.variantName(), "the mutated Plan's kernel does not differ from the real one");
}

int nextOpNum(const ir::Plan& plan, const std::string& stage, int from, ir::OpCode code) {
  for (const FlatOp& f : flatOps(plan))
    if (f.num >= from && f.op->code == code && stageName(plan, f.stage) == stage) return f.num;
  return 0;
}

}  // namespace monogen::specs::minimax_m3
