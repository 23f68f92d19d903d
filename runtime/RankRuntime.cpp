#include "runtime/RankRuntime.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "ir/Error.h"

namespace monogen::runtime {

namespace {
constexpr int64_t kRegionAlign = 4096;
int64_t roundUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
bool runtimeOwned(const ir::KernelArg& a, const std::string& rankArg) {
  if (!a.isPointer) return a.name == rankArg;
  return a.role == ir::ArgRole::Scratch || a.role == ir::ArgRole::Peers || a.role == ir::ArgRole::Control;
}
}  // namespace

RankRuntime::RankRuntime(Generator& gen, RankDevice& device, RankRuntimeOptions opts)
    : gen_(gen), dev_(device), opts_(std::move(opts)) {
  if (opts_.tp < 1 || opts_.rank < 0 || opts_.rank >= opts_.tp)
    throw InputError(where(), fmt::format("rank {} of TP {}: expected 0 <= rank < TP", opts_.rank, opts_.tp));
  if (device.rank() != opts_.rank || device.tp() != opts_.tp)
    throw InputError(where(), fmt::format("the device is {}, the runtime rank {} of TP {}", device.name(),
                                          opts_.rank, opts_.tp));
  if (opts_.rows.empty()) throw InputError(where(), "no S to serve: RankRuntimeOptions::rows is empty");
  if (!opts_.key) throw InputError(where(), "RankRuntimeOptions::key is empty");
}

RankRuntime::~RankRuntime() = default;

std::string RankRuntime::where() const { return fmt::format("rank runtime, rank {} of TP {}", opts_.rank, opts_.tp); }

const RankRuntime::PerS& RankRuntime::perS(int rows, const char* what) const {
  auto it = byRows_.find(rows);
  if (it == byRows_.end()) {
    std::string known;
    for (int s : opts_.rows) known += (known.empty() ? "" : ", ") + std::to_string(s);
    throw InputError(where() + ", " + what,
                     allocated_ ? fmt::format("S = {} is not served here; the runtime was set up for S in {{{}}}", rows, known)
                                : std::string("allocate() has not run"));
  }
  return it->second;
}

void RankRuntime::allocate() {
  if (allocated_) throw InputError(where(), "allocate() called twice");
  // The Plans first: every check before any memory is taken.
  for (int s : opts_.rows) {
    if (byRows_.count(s)) throw InputError(where(), fmt::format("S = {} is listed twice", s));
    const ir::Key key = opts_.key(s);
    std::shared_ptr<const Variant> v = gen_.variant(key, false);
    if (v->plan.ranks != opts_.tp)
      throw InputError(where(), fmt::format("key({}) is {}, a launch of {} ranks: expected TP {}", s,
                                            key.variantName(), v->plan.ranks, opts_.tp));
    byRows_[s].variant = std::move(v);
  }
  std::map<std::string, const ir::KernelArg*> control;  // shared by every S
  int64_t scratchTotal = 0, symTotal = 0;
  std::map<int, std::map<std::string, int64_t>> offsets;
  for (auto& [s, p] : byRows_) {
    const ir::Plan& plan = p.variant->plan;
    const int si = plan.argIndex(opts_.symmetricArg);
    if (si < 0 || plan.args[si].role != ir::ArgRole::Scratch || !plan.args[si].isPointer)
      throw InputError(where(), fmt::format("{} has no Scratch tensor argument '{}' (RankRuntimeOptions::symmetricArg)",
                                            plan.key.variantName(), opts_.symmetricArg));
    const int ri = plan.argIndex(opts_.rankArg);
    if (ri < 0 || plan.args[ri].isPointer)
      throw InputError(where(), fmt::format("{} has no scalar argument '{}' (RankRuntimeOptions::rankArg)",
                                            plan.key.variantName(), opts_.rankArg));
    int peersArgs = 0;
    for (const ir::KernelArg& a : plan.args) {
      if (!a.isPointer || !runtimeOwned(a, opts_.rankArg)) continue;
      if (a.role == ir::ArgRole::Peers) {
        ++peersArgs;
        if (a.bytes() != int64_t{opts_.tp} * 8)
          throw InputError(where(), fmt::format("{}: peers argument '{}' holds {} bytes, expected TP x 8 = {}",
                                                plan.key.variantName(), a.name, a.bytes(), opts_.tp * 8));
        offsets[s][a.name] = scratchTotal;
        scratchTotal += roundUp(a.bytes(), kRegionAlign);
      } else if (a.role == ir::ArgRole::Control) {
        auto [it, fresh] = control.try_emplace(a.name, &a);
        const ir::KernelArg& b = *it->second;
        const bool rowsOnly = !a.shape.empty() && b.shape.size() == a.shape.size() &&
                              std::equal(a.shape.begin() + 1, a.shape.end(), b.shape.begin() + 1);
        if (!fresh && (b.elem != a.elem || !rowsOnly))
          throw InputError(where(), fmt::format("control argument '{}' differs between S values ({} bytes vs {}) in "
                                                "more than its rows: the runtime keeps one for every S",
                                                a.name, b.bytes(), a.bytes()));
        if (a.bytes() > b.bytes()) it->second = &a;  // one buffer of the most rows serves every S
      } else if (a.name == opts_.symmetricArg) {
        p.symOffset = static_cast<uint64_t>(symTotal);
        symTotal += roundUp(a.bytes(), kRegionAlign);
      } else {
        offsets[s][a.name] = scratchTotal;
        scratchTotal += roundUp(a.bytes(), kRegionAlign);
      }
    }
    if (peersArgs != 1)
      throw InputError(where(), fmt::format("{} has {} Peers arguments, expected 1", plan.key.variantName(), peersArgs));
  }
  for (const auto& [name, a] : control) scratchTotal += roundUp(a->bytes(), kRegionAlign);

  // One allocation for the rank's own regions, one symmetric buffer, both zeroed once (flags
  // start at tag 0; an allocation is not zero by itself).
  const uint64_t base = dev_.alloc(std::max<int64_t>(scratchTotal, 1), fmt::format("rank {} runtime buffers", opts_.rank),
                                   kRegionAlign);
  dev_.zero(base, scratchTotal);
  symBytes_ = wholePages(symTotal);
  sym_ = dev_.allocSymmetric(symBytes_, fmt::format("{}.r{}", opts_.symmetricArg, opts_.rank));
  dev_.zero(sym_, symBytes_);
  int64_t controlAt = scratchTotal;
  for (auto it = control.rbegin(); it != control.rend(); ++it) controlAt -= roundUp(it->second->bytes(), kRegionAlign);
  std::map<std::string, uint64_t> controlAddr;
  for (const auto& [name, a] : control) {
    controlAddr[name] = base + static_cast<uint64_t>(controlAt);
    controlAt += roundUp(a->bytes(), kRegionAlign);
  }
  for (auto& [s, p] : byRows_) {
    for (const auto& [name, off] : offsets[s]) p.owned[name] = base + static_cast<uint64_t>(off);
    for (const auto& [name, addr] : controlAddr)
      if (p.variant->plan.argIndex(name) >= 0) p.owned[name] = addr;
    p.owned[opts_.symmetricArg] = sym_ + p.symOffset;
  }
  allocated_ = true;
}

std::vector<uint8_t> RankRuntime::exportHandle() {
  if (!allocated_) throw InputError(where(), "exportHandle() before allocate()");
  return dev_.exportSymmetric();
}

void RankRuntime::openPeers(const std::vector<std::vector<uint8_t>>& handles) {
  if (!allocated_) throw InputError(where(), "openPeers() before allocate()");
  if (opened_) throw InputError(where(), "openPeers() called twice");
  if (handles.size() != static_cast<size_t>(opts_.tp))
    throw InputError(where(), fmt::format("{} handles; expected one per rank, TP = {}", handles.size(), opts_.tp));
  std::vector<uint64_t> base(opts_.tp);
  for (int p = 0; p < opts_.tp; ++p) {
    base[p] = dev_.openPeer(p, handles[p]);
    if (p == opts_.rank && base[p] != sym_)
      throw InputError(where(), fmt::format("handle {} (this rank's own) names {:#x}, not this rank's buffer {:#x}", p,
                                            base[p], sym_));
  }
  for (auto& [s, ps] : byRows_) {
    ps.peers.resize(opts_.tp);
    for (int p = 0; p < opts_.tp; ++p) ps.peers[p] = base[p] + ps.symOffset;  // every rank lays its buffer out alike
    const ir::Plan& plan = ps.variant->plan;
    for (const ir::KernelArg& a : plan.args)
      if (a.isPointer && a.role == ir::ArgRole::Peers) dev_.upload(ps.owned.at(a.name), ps.peers.data(), opts_.tp * 8);
  }
  opened_ = true;
}

void RankRuntime::warmUp() {
  if (!allocated_) throw InputError(where(), "warmUp() before allocate()");
  int i = 0;
  for (auto& [s, p] : byRows_) {
    ++i;
    const auto t0 = std::chrono::steady_clock::now();
    const ir::Key key = p.variant->plan.key;
    std::string how = "no code object (the Sim runs the Plan)";
    static const CodeObjectBytes kNone;
    const CodeObjectBytes* code = &kNone;
    if (dev_.runsCodeObjects()) {
      try {
        p.variant = gen_.variant(key, true);
      } catch (const Error& e) {
        throw RuntimeError(where() + ", warm-up of " + key.variantName(), e.what());
      }
      code = &p.variant->code->bytes;
      how = fmt::format("{} bytes, {}", code->size(), cacheSourceName(p.variant->source));
    }
    p.kernel = dev_.load(p.variant->plan, *code);
    p.warm = true;
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (opts_.progress)
      opts_.progress(fmt::format("rank {}: [{}/{}] {} ready in {:.2f} s ({})", opts_.rank, i, byRows_.size(),
                                 key.variantName(), sec, how));
  }
}

bool RankRuntime::owns(int rows, const std::string& arg) const {
  const PerS& p = perS(rows, "owns");
  const int i = p.variant->plan.argIndex(arg);
  return i >= 0 && runtimeOwned(p.variant->plan.args[i], opts_.rankArg);
}

BoundLaunch& RankRuntime::bind(int rows, const RankArgs& args) {
  PerS& p = perS(rows, "bind");
  if (!opened_) throw InputError(where(), "bind() before openPeers(): the peer tables are not written");
  if (!p.warm) throw InputError(where(), fmt::format("bind() of S = {} before warmUp()", rows));
  const ir::Plan& plan = p.variant->plan;
  RankArgs all;
  for (const auto& [name, v] : args) {
    const int i = plan.argIndex(name);
    if (i >= 0 && runtimeOwned(plan.args[i], opts_.rankArg))
      throw InputError(fmt::format("{}, bind of {}, argument '{}'", where(), plan.key.variantName(), name),
                       fmt::format("is the runtime's own ({}); bind only the caller's tensors and scalars",
                                   plan.args[i].isPointer ? ir::argRoleName(plan.args[i].role) : "the rank"));
    all[name] = v;
  }
  for (const ir::KernelArg& a : plan.args) {
    if (!runtimeOwned(a, opts_.rankArg)) continue;
    if (!a.isPointer) {
      all[a.name] = LaunchArg::scalar(opts_.rank);
    } else if (a.role == ir::ArgRole::Peers) {
      all[a.name] = LaunchArg::peerTable(p.owned.at(a.name), p.peers);
    } else {
      all[a.name] = LaunchArg::tensor(p.owned.at(a.name), *dtypeFor(a.elem), a.shape);
    }
  }
  PackedRank packed = packRank(plan, opts_.rank, all, gen_.argLayouts(plan));  // InputError naming the argument and the rank
  auto b = std::make_unique<BoundLaunch>();
  b->rows = rows;
  b->plan = &plan;
  b->kernel = p.kernel;
  b->values = std::move(packed.values);
  b->kernargs = std::move(packed.kernargs);
  bound_.push_back(std::move(b));
  return *bound_.back();
}

void RankRuntime::unbind(const BoundLaunch& b) {
  const auto it = std::find_if(bound_.begin(), bound_.end(), [&](const auto& p) { return p.get() == &b; });
  if (it == bound_.end()) throw InputError(where() + ", unbind", "not a launch this runtime bound (or unbound already)");
  bound_.erase(it);
}

void RankRuntime::launch(BoundLaunch& b, void* stream) { dev_.launch(b.kernel, b.values, b.kernargs, stream); }

uint64_t RankRuntime::buffer(int rows, const std::string& arg) const {
  const PerS& p = perS(rows, "buffer");
  auto it = p.owned.find(arg);
  if (it == p.owned.end()) {
    std::string known;
    for (const auto& [n, a] : p.owned) known += (known.empty() ? "" : ", ") + n;
    throw InputError(where(), fmt::format("'{}' is not a buffer the runtime owns; it owns: {}", arg, known));
  }
  return it->second;
}

const ir::Plan& RankRuntime::plan(int rows) const { return perS(rows, "plan").variant->plan; }

}  // namespace monogen::runtime
