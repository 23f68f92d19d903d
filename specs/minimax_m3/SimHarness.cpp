#include "specs/minimax_m3/SimHarness.h"

#include <fmt/format.h>

#include <cstring>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "runtime/Launch.h"
#include "specs/minimax_m3/KernelContext.h"
#include "specs/minimax_m3/Reference.h"
#include "specs/minimax_m3/Sites.h"
#include "specs/minimax_m3/Spec.h"

namespace monogen::specs::minimax_m3 {

using runtime::DType;
using runtime::HostTensor;
using runtime::TensorMap;
namespace num = ir::num;

namespace {

/// splitmix64: the same stream on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
  uint32_t bit() { return static_cast<uint32_t>(next() >> 63); }

 private:
  uint64_t s_;
};

uint16_t bf(uint32_t sign, uint32_t exp, uint32_t mant) {
  return static_cast<uint16_t>(sign << 15 | (exp & 0xff) << 7 | (mant & 0x7f));
}
uint32_t bfExp(uint16_t b) { return (b >> 7) & 0xff; }

/// A value of moderate magnitude (2^-8 .. 2^5).
uint16_t moderate(Rng& g) { return bf(g.bit(), 127 - 8 + g.below(13), g.below(128)); }

/// Any finite value: mostly moderate, some zeros, large, tiny and subnormal ones. Large ones
/// stay below 2^57 so a 32-column sum of squares stays finite.
uint16_t anyValue(Rng& g) {
  const uint32_t k = g.below(100);
  if (k < 70) return moderate(g);
  if (k < 78) return bf(g.bit(), 0, 0);                            // +0 / -0
  if (k < 86) return bf(g.bit(), 127 + 30 + g.below(27), g.below(128));  // large: 2^30 .. 2^56
  if (k < 90) return bf(g.bit(), 0, 1 + g.below(127));             // subnormal
  if (k < 94) return bf(g.bit(), 1 + g.below(16), g.below(128));   // tiny normal
  return bf(g.bit(), 127 - 30 + g.below(50), g.below(128));        // wide: 2^-30 .. 2^19
}

HostTensor bf16Tensor(int rows, int hidden) { return HostTensor::zeros(DType::BF16, {rows, hidden}); }

const HostTensor& need(const TensorMap& m, const std::string& name, DType d, const std::vector<int64_t>& shape) {
  auto it = m.find(name);
  if (it == m.end()) throw InputError("minimax_m3 sim inputs", fmt::format("no tensor '{}'", name));
  if (it->second.dtype != d || it->second.shape != shape)
    throw InputError("minimax_m3 sim inputs",
                     fmt::format("tensor '{}' is {} [{}], expected {} [{}]", name, runtime::dtypeName(it->second.dtype),
                                 fmt::join(it->second.shape, ", "), runtime::dtypeName(d), fmt::join(shape, ", ")));
  return it->second;
}

std::string rankName(const char* base, int r) { return fmt::format("{}.r{}", base, r); }

}  // namespace

TensorMap makeInputs(const ModelConfig& cfg, int rows, int tp, uint64_t seed) {
  Layout::make(cfg, rows, tp);  // validates S and TP
  const int H = cfg.hidden;
  Rng g(seed * 0x100000001b3ull + 0x6d696e696d6178ull);
  std::vector<HostTensor> parts;
  for (int r = 0; r < tp; ++r) parts.push_back(bf16Tensor(rows, H));
  HostTensor res = bf16Tensor(rows, H);

  for (int64_t i = 0; i < int64_t{rows} * H; ++i) {
    uint16_t p[8] = {};
    uint16_t rv = 0;
    const uint32_t k = g.below(100);
    if (k < 55) {  // independent values
      for (int r = 0; r < tp; ++r) p[r] = anyValue(g);
      rv = anyValue(g);
    } else if (k < 63) {  // negative zero everywhere: -0 + -0 stays -0
      for (int r = 0; r < tp; ++r) p[r] = 0x8000;
      rv = 0x8000;
    } else if (k < 73) {  // the all-reduce's f32 sum lands on a bf16 tie (x + half an ulp of x)
      const uint32_t s = g.bit(), e = 127 - 6 + g.below(13);
      p[0] = bf(s, e, g.below(128));
      if (tp > 1) p[1] = bf(s, e - 8, 0);
      for (int r = 2; r < tp; ++r) p[r] = bf(g.bit(), 0, 0);
      rv = anyValue(g);
    } else if (k < 83) {  // large values cancelling across ranks: the rank order decides the sum
      const uint16_t big = bf(g.bit(), 127 + 20 + g.below(20), g.below(128));
      p[0] = big;
      if (tp > 1) p[1] = big ^ 0x8000;
      for (int r = 2; r < tp; ++r) p[r] = moderate(g);
      rv = moderate(g);
    } else {  // the residual add lands on a bf16 tie: residual = half an ulp of the reduced value
      for (int r = 0; r < tp; ++r) p[r] = moderate(g);
      float acc = num::bf16ToF32(p[0]);
      for (int r = 1; r < tp; ++r) acc = acc + num::bf16ToF32(p[r]);
      const uint16_t reduced = num::f32ToBf16(acc);
      rv = bfExp(reduced) > 9 ? bf(g.bit(), bfExp(reduced) - 8, 0) : anyValue(g);
    }
    for (int r = 0; r < tp; ++r) parts[r].as<uint16_t>()[i] = p[r];
    res.as<uint16_t>()[i] = rv;
  }
  TensorMap m;
  for (int r = 0; r < tp; ++r) m[rankName("part", r)] = std::move(parts[r]);
  m["res_in"] = std::move(res);
  return m;
}

SimSession::SimSession(const ModelConfig& cfg, const ir::Key& key)
    : cfg_(cfg), plan_(buildPlan(cfg, key)), layout_(Layout::make(cfg, plan_.key.rows, plan_.key.tp)) {
  runtime::SimMemory& mem = dev_.memory();
  const Layout& L = layout_;
  const int64_t rowBytes = int64_t{L.rows} * L.hidden * 2;
  bufs_.resize(L.tp);
  for (int r = 0; r < L.tp; ++r) bufs_[r].sym = mem.alloc(L.symBytes, r, rankName("sym", r));
  for (int r = 0; r < L.tp; ++r) {
    RankBuffers& b = bufs_[r];
    b.part = mem.alloc(rowBytes, r, rankName("part", r));
    b.resIn = mem.alloc(rowBytes, r, rankName("res_in", r));
    b.resOut = mem.alloc(rowBytes, r, rankName("res_out", r));
    b.scratch = mem.alloc(L.scratchBytes, r, rankName("scratch", r));
    b.peers = mem.alloc(int64_t{L.tp} * 8, r, rankName("peers", r));
    b.err = mem.alloc(8, r, rankName("err", r));
    b.epoch = mem.alloc(4, r, rankName("epoch", r));  // kept across launches, like the flags
    b.inject = mem.alloc(8, r, rankName("inject", r));
    if (plan_.key.trace) b.trace = mem.alloc(plan_.arg(arg::kTrace).bytes(), r, rankName("trace", r));
  }
}

uint64_t SimSession::bufferOf(const std::string& name, int r) const {
  if (r < 0 || r >= static_cast<int>(bufs_.size()))
    throw InputError(plan_.key.variantName(), fmt::format("rank {}: expected 0..{}", r, bufs_.size() - 1));
  const RankBuffers& b = bufs_[r];
  if (name == "scratch") return b.scratch;
  if (name == "sym") return b.sym;
  if (name == "epoch") return b.epoch;
  if (name == "err") return b.err;
  throw InputError(plan_.key.variantName(), fmt::format("buffer '{}': expected scratch, sym, epoch or err", name));
}

SimRun SimSession::launch(const TensorMap& inputs, const runtime::SimOptions& opts, const LaunchParams& params) {
  runtime::SimMemory& mem = dev_.memory();
  const Layout& L = layout_;
  const std::vector<int64_t> shape{L.rows, L.hidden};
  const int64_t rowBytes = int64_t{L.rows} * L.hidden * 2;
  const HostTensor& res = need(inputs, "res_in", DType::BF16, shape);

  uint64_t lost = 0;
  if (params.lostFrom >= 0) {
    if (params.lostFrom >= L.tp || params.lostTo < 0 || params.lostTo >= L.tp)
      throw InputError(plan_.key.variantName(),
                       fmt::format("lost push {} -> {}: ranks are 0..{}", params.lostFrom, params.lostTo, L.tp - 1));
    lost = mem.alloc(L.symBytes, params.lostFrom, "lost pushes");
  }

  std::vector<runtime::RankArgs> ranks;
  for (int r = 0; r < L.tp; ++r) {
    const RankBuffers& b = bufs_[r];
    std::memcpy(mem.host(b.part, rowBytes), need(inputs, rankName("part", r), DType::BF16, shape).data.data(),
                rowBytes);
    std::memcpy(mem.host(b.resIn, rowBytes), res.data.data(), rowBytes);
    std::memset(mem.host(b.err, 8), 0, 8);
    const int32_t inject[2] = {params.injectRank >= 0 ? params.injectRank + 1 : 0, params.injectTicks};
    std::memcpy(mem.host(b.inject, 8), inject, 8);
    if (b.trace) {
      const int64_t tb = plan_.arg(arg::kTrace).bytes();
      std::memset(mem.host(b.trace, tb), 0, tb);
    }
    std::vector<uint64_t> peers;
    for (int p = 0; p < L.tp; ++p) peers.push_back(r == params.lostFrom && p == params.lostTo ? lost : bufs_[p].sym);
    std::memcpy(mem.host(b.peers, int64_t{L.tp} * 8), peers.data(), peers.size() * 8);
    auto tagIt = params.rankTag.find(r);
    const int32_t tag = tagIt == params.rankTag.end() ? params.tag : tagIt->second;
    using runtime::LaunchArg;
    ranks.push_back({
        {arg::kPart, LaunchArg::tensor(b.part, DType::BF16, shape)},
        {arg::kResIn, LaunchArg::tensor(b.resIn, DType::BF16, shape)},
        {arg::kResOut, LaunchArg::tensor(b.resOut, DType::BF16, shape)},
        {arg::kScratch, LaunchArg::tensor(b.scratch, DType::U8, {L.scratchBytes})},
        {arg::kSym, LaunchArg::tensor(b.sym, DType::U8, {L.symBytes})},
        {arg::kPeers, LaunchArg::peerTable(b.peers, peers)},
        {arg::kErr, LaunchArg::tensor(b.err, DType::I32, {2})},
        {arg::kTag, LaunchArg::scalar(tag)},
        {arg::kRank, LaunchArg::scalar(r)},
        {arg::kWaitTicks, LaunchArg::scalar(params.waitTicks)},
        {arg::kEpoch, LaunchArg::tensor(b.epoch, DType::I32, {1})},
        {arg::kHandshake, LaunchArg::scalar(params.handshake ? 1 : 0)},
        {arg::kInject, LaunchArg::tensor(b.inject, DType::I32, {2})},
    });
    if (b.trace) ranks.back()[arg::kTrace] = LaunchArg::tensor(b.trace, DType::I64, plan_.arg(arg::kTrace).shape);
  }
  // Checked against the Plan (presence, dtypes, shapes, alignment, peer table) before anything runs.
  const runtime::PackedLaunch packed = runtime::packLaunch(plan_, ranks);

  SimRun run;
  run.stats = dev_.run(plan_, packed.values, opts);

  const int tasks = static_cast<int>(L.reduce.tasks);
  for (int r = 0; r < L.tp; ++r) {
    const RankBuffers& b = bufs_[r];
    HostTensor out = bf16Tensor(L.rows, L.hidden);
    std::memcpy(out.data.data(), mem.host(b.resOut, rowBytes), rowBytes);
    HostTensor sres = HostTensor::zeros(DType::F32, shape);
    std::memcpy(sres.data.data(), mem.host(b.scratch + L.sres.offset, L.sres.bytes), L.sres.bytes);
    HostTensor ssq = HostTensor::zeros(DType::F32, {L.rows, tasks});
    HostTensor ssqTag = HostTensor::zeros(DType::I32, {L.rows, tasks});
    const int32_t* pairs = reinterpret_cast<const int32_t*>(mem.host(b.scratch + L.ssq.offset, L.ssq.bytes));
    for (int64_t i = 0; i < int64_t{L.rows} * tasks; ++i) {
      std::memcpy(ssq.as<float>() + i, pairs + 2 * i, 4);
      ssqTag.as<int32_t>()[i] = pairs[2 * i + 1];
    }
    HostTensor err = HostTensor::zeros(DType::I32, {2});
    std::memcpy(err.data.data(), mem.host(b.err, 8), 8);
    run.outputs[rankName("res_out", r)] = std::move(out);
    run.outputs[rankName("sres", r)] = std::move(sres);
    run.outputs[rankName("ssq", r)] = std::move(ssq);
    run.outputs[rankName("ssq_tag", r)] = std::move(ssqTag);
    HostTensor epoch = HostTensor::zeros(DType::I32, {1});
    std::memcpy(epoch.data.data(), mem.host(b.epoch, 4), 4);
    run.outputs[rankName("epoch", r)] = std::move(epoch);
    if (b.trace) {
      HostTensor tr = HostTensor::zeros(DType::U64, plan_.arg(arg::kTrace).shape);
      std::memcpy(tr.data.data(), mem.host(b.trace, static_cast<int64_t>(tr.data.size())), tr.data.size());
      run.outputs[rankName("trace", r)] = std::move(tr);
    }
    const int32_t* ew = err.as<int32_t>();
    if (ew[0] != 0 && run.error.empty())
      run.error = fmt::format("rank {}: error word {:#x} (site {}, rank {}, token {}), {} failure{}", r, ew[0],
                              errorSite(ew[0]), errorRank(ew[0]), errorToken(ew[0]), ew[1], ew[1] == 1 ? "" : "s");
    run.outputs[rankName("err", r)] = std::move(err);
  }
  run.valid = run.error.empty();
  return run;
}

runtime::TraceBuffers traceOf(const ir::Plan& plan, const SimRun& run) {
  runtime::TraceBuffers t;
  t.name = plan.key.variantName();
  t.blocks = plan.grid.blocks;
  t.clockHz = plan.target.clockHz;
  for (const ir::Stage& s : plan.stages) t.stages.push_back(s.name);
  for (int r = 0; r < plan.key.tp; ++r) {
    auto it = run.outputs.find(rankName("trace", r));
    if (it == run.outputs.end())
      throw InputError(t.name, fmt::format("no trace of rank {}: build the variant with the trace knob", r));
    const uint64_t* p = it->second.as<uint64_t>();
    t.ranks.emplace_back(p, p + it->second.numel());
  }
  return t;
}

SimRun runOnSim(const ModelConfig& cfg, const ir::Key& key, const TensorMap& inputs, const runtime::SimOptions& opts,
                const LaunchParams& params) {
  SimSession s(cfg, key);
  return s.launch(inputs, opts, params);
}

TensorMap referenceOutputs(const ModelConfig& cfg, int rows, int tp, const TensorMap& inputs) {
  const Layout L = Layout::make(cfg, rows, tp);
  const std::vector<int64_t> shape{rows, L.hidden};
  std::vector<const uint16_t*> parts;
  for (int r = 0; r < tp; ++r) parts.push_back(need(inputs, rankName("part", r), DType::BF16, shape).as<uint16_t>());
  const AllReduceResult ref =
      referenceAllReduce(rows, L.hidden, parts, need(inputs, "res_in", DType::BF16, shape).as<uint16_t>());
  const int tasks = static_cast<int>(L.reduce.tasks);
  TensorMap out;
  for (int r = 0; r < tp; ++r) {
    HostTensor o = bf16Tensor(rows, L.hidden);
    std::memcpy(o.data.data(), ref.resOut.data(), o.data.size());
    HostTensor s = HostTensor::zeros(DType::F32, shape);
    std::memcpy(s.data.data(), ref.sres.data(), s.data.size());
    HostTensor q = HostTensor::zeros(DType::F32, {rows, tasks});
    std::memcpy(q.data.data(), ref.ssq.data(), q.data.size());
    out[rankName("res_out", r)] = std::move(o);
    out[rankName("sres", r)] = std::move(s);
    out[rankName("ssq", r)] = std::move(q);
    out[rankName("err", r)] = HostTensor::zeros(DType::I32, {2});
  }
  return out;
}

namespace {

std::string elemText(const HostTensor& t, int64_t i) {
  const uint8_t* p = t.data.data() + i * runtime::dtypeBytes(t.dtype);
  switch (t.dtype) {
    case DType::BF16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return fmt::format("{:#06x} ({})", b, num::bf16ToF32(b));
    }
    case DType::F32: {
      uint32_t b;
      std::memcpy(&b, p, 4);
      return fmt::format("{:#010x} ({})", b, num::bitsToF32(b));
    }
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return fmt::format("{} ({:#x})", v, static_cast<uint32_t>(v));
    }
    default: {
      std::string s = "0x";
      for (int k = runtime::dtypeBytes(t.dtype) - 1; k >= 0; --k) s += fmt::format("{:02x}", p[k]);
      return s;
    }
  }
}

std::string shapeText(const HostTensor& t) {
  return fmt::format("{} [{}]", runtime::dtypeName(t.dtype), fmt::join(t.shape, ", "));
}

}  // namespace

std::optional<Mismatch> firstMismatch(const TensorMap& got, const TensorMap& want) {
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    if (it == got.end()) return Mismatch{name, -1, "missing", shapeText(w)};
    const HostTensor& g = it->second;
    if (g.dtype != w.dtype || g.shape != w.shape || g.data.size() != w.data.size())
      return Mismatch{name, -1, shapeText(g), shapeText(w)};
    const int n = runtime::dtypeBytes(w.dtype);
    for (int64_t i = 0; i < w.numel(); ++i)
      if (std::memcmp(g.data.data() + i * n, w.data.data() + i * n, n) != 0)
        return Mismatch{name, i, elemText(g, i), elemText(w, i)};
  }
  return std::nullopt;
}

std::string describe(const Mismatch& m) {
  if (m.index < 0) return fmt::format("{}: got {}, want {}", m.tensor, m.got, m.want);
  return fmt::format("{}[{}]: got {}, want {}", m.tensor, m.index, m.got, m.want);
}

}  // namespace monogen::specs::minimax_m3
