#include "specs/minimax_m3/testing/SimHarness.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <tuple>

#include "codegen/Compiler.h"
#include "ir/Error.h"
#include "ir/Numerics.h"
#include "runtime/Launch.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/reference/MoeReference.h"
#include "specs/minimax_m3/reference/OprojReference.h"
#include "specs/minimax_m3/reference/Reference.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

namespace monogen::specs::minimax_m3 {

using runtime::DType;
using runtime::HostTensor;
using runtime::TensorMap;
namespace num = ir::num;

namespace {

HostTensor bf16Tensor(int rows, int hidden) { return HostTensor::zeros(DType::BF16, {rows, hidden}); }

const HostTensor& need(const TensorMap& m, const std::string& name, DType d, const std::vector<int64_t>& shape) {
  return runtime::requireTensor(m, name, d, shape, "minimax_m3 sim inputs");
}


/// The MoE's kernel arguments a rank's buffers hold (per rank: the expert weights; the rest are
/// the same on every rank).
const char* const kMoeArgs[] = {arg::kNormW, arg::kRouterW, arg::kBias, arg::kW13, arg::kS13,
                                arg::kW2,    arg::kS2,      arg::kSlots, arg::kOut};

DType dtypeOf(ir::Scalar s) {
  switch (s) {
    case ir::Scalar::BF16: return DType::BF16;
    case ir::Scalar::F32: return DType::F32;
    case ir::Scalar::I32: return DType::I32;
    case ir::Scalar::I64: return DType::I64;
    default: return DType::U8;
  }
}

}  // namespace

TensorMap moeReferenceOutputs(const ModelConfig& cfg, int rows, int tp, const TensorMap& inputs,
                              const TensorMap& runOutputs, MoeExperts experts, MoeQuant quant, RefNumerics numerics) {
  const TensorMap acts{{"sres", runOutputs.at("sres.r0")}, {"ssq", runOutputs.at("ssq.r0")}};
  const TensorMap ref =
      moeReference(cfg, rows, tp, inputs, experts, &acts, quant, numerics);
  TensorMap out;
  for (int r = 0; r < tp; ++r) {
    for (const char* n : {"rstd", "xn", "picks", "weights", "slot_expert", "slot_count", "slot_row", "slot_pick",
                          "out"})
      out[rankName(n, r)] = ref.at(n);
    out[rankName("mid", r)] = ref.at(rankName("mid", r));
    out[rankName("down", r)] = ref.at(rankName("down", r));
  }
  return out;
}

SimSession::SimSession(const FfnVariant& v)
    : v_(v), plan_(buildPlan(v)), own_(std::make_unique<runtime::SimDeviceAdapter>()), dev_(own_.get()) {
  allocate();
}

SimSession::SimSession(const FfnVariant& v, runtime::Device& device, runtime::CodeObjectBytes code)
    : v_(v), plan_(buildPlan(v)), dev_(&device), code_(std::move(code)) {
  if (dev_->runsCodeObjects() && code_.empty()) code_ = codegen::compile(plan_).bytes;
  allocate();
}

SimSession::SimSession(const FfnVariant& v, ir::Plan plan, runtime::Device& device, runtime::CodeObjectBytes code)
    : v_(v), plan_(std::move(plan)), dev_(&device), code_(std::move(code)), attnWritten_(true) {
  if (dev_->runsCodeObjects() && code_.empty())
    throw InputError(plan_.key.variantName(),
                     fmt::format("the {} device runs code objects: expected the Plan's code object (the generator's), "
                                 "got none",
                                 dev_->name()));
  allocate();
}

SimSession::SimSession(const ModelConfig& cfg, const ir::Key& key) : SimSession(FfnVariant::make(cfg, key)) {}

SimSession::SimSession(const ModelConfig& cfg, const ir::Key& key, runtime::Device& device,
                       runtime::CodeObjectBytes code)
    : SimSession(FfnVariant::make(cfg, key), device, std::move(code)) {}

runtime::SimDevice& SimSession::device() {
  if (auto* sim = dynamic_cast<runtime::SimDeviceAdapter*>(dev_)) return sim->sim();
  throw RuntimeError(plan_.key.variantName(),
                     fmt::format("the session runs on the {} device, not the Sim device", dev_->name()));
}

std::vector<uint8_t> SimSession::read(int rank, uint64_t addr, int64_t bytes) {
  std::vector<uint8_t> v(static_cast<size_t>(bytes));
  dev_->download(rank, v.data(), addr, bytes);
  return v;
}

std::vector<ZeroOnce> zeroAtAllocation(const ir::Plan& plan) {
  std::vector<ZeroOnce> z;
  for (const ir::FlagArray& f : plan.flags) {
    auto r = std::find_if(plan.regions.begin(), plan.regions.end(),
                          [&](const ir::MemRegion& m) { return m.name == f.region; });
    if (r == plan.regions.end())
      throw RuntimeError(plan.key.variantName(), fmt::format("flag array '{}': no region '{}'", f.name, f.region));
    z.push_back({r->buffer, r->offset, f.pairs * kPairBytes, fmt::format("flag array '{}'", f.name)});
  }
  z.push_back({arg::kEpoch, 0, plan.arg(arg::kEpoch).bytes(), "epoch"});
  z.push_back({arg::kErr, 0, plan.arg(arg::kErr).bytes(), "error word"});
  return z;
}

// Allocation is where the host's side of the launch contract lives: the buffers come back
// uninitialized (the Sim poisons them, hipMalloc's hold whatever was there), and the ranges
// zeroAtAllocation lists (every flag array, the epoch, the error word) are zeroed here, once, on
// every rank, before any launch. Every other buffer is written before a launch reads it: the
// inputs and weights by launch()'s uploads, scratch, sym and the outputs by the launch itself.
void SimSession::allocate() {
  runtime::Device& mem = *dev_;
  const Layout& L = v_.layout;
  const int64_t rowBytes = int64_t{L.rows} * L.hidden * 2;
  bufs_.resize(L.tp);
  for (int r = 0; r < L.tp; ++r) bufs_[r].sym = mem.alloc(r, L.symBytes, rankName("sym", r));
  for (int r = 0; r < L.tp; ++r) {
    RankBuffers& b = bufs_[r];
    if (L.oproj) {
      b.attn = mem.alloc(r, plan_.arg(arg::kAttn).bytes(), rankName("attn", r));
      b.wo = mem.alloc(r, plan_.arg(arg::kWo).bytes(), rankName("wo", r));
      b.woScale = mem.alloc(r, plan_.arg(arg::kWoScale).bytes(), rankName("wo_scale", r));
    } else {
      b.part = mem.alloc(r, rowBytes, rankName("part", r));
    }
    b.resIn = mem.alloc(r, rowBytes, rankName("res_in", r));
    b.resOut = mem.alloc(r, rowBytes, rankName("res_out", r));
    b.scratch = mem.alloc(r, L.scratchBytes, rankName("scratch", r));
    b.peers = mem.alloc(r, int64_t{L.tp} * 8, rankName("peers", r));
    b.err = mem.alloc(r, 8, rankName("err", r));
    b.epoch = mem.alloc(r, 4, rankName("epoch", r));  // kept across launches, like the flags
    b.inject = mem.alloc(r, 8, rankName("inject", r));
    for (const char* n : kMoeArgs) b.moe[n] = mem.alloc(r, plan_.arg(n).bytes(), rankName(n, r));
    if (v_.knobs.trace) b.trace = mem.alloc(r, plan_.arg(arg::kTrace).bytes(), rankName("trace", r));
  }
  for (const ZeroOnce& z : zeroAtAllocation(plan_))
    for (int r = 0; r < L.tp; ++r) {
      if (attnWritten_ && !ownsBuffer(z.arg)) continue;  // the caller's buffer
      const std::vector<uint8_t> zeros(static_cast<size_t>(z.bytes), 0);
      mem.upload(r, bufferOf(z.arg, r) + static_cast<uint64_t>(z.offset), zeros.data(), z.bytes);
    }
}

bool SimSession::ownsBuffer(const std::string& name) const {
  for (const char* n : {"scratch", "sym", "epoch", "err", "attn", "res_in"})
    if (name == n) return true;
  return false;
}

uint64_t SimSession::bufferOf(const std::string& name, int r) const {
  if (r < 0 || r >= static_cast<int>(bufs_.size()))
    throw InputError(plan_.key.variantName(), fmt::format("rank {}: expected 0..{}", r, bufs_.size() - 1));
  const RankBuffers& b = bufs_[r];
  if (name == "scratch") return b.scratch;
  if (name == "sym") return b.sym;
  if (name == "epoch") return b.epoch;
  if (name == "err") return b.err;
  if (name == "attn" && b.attn) return b.attn;
  if (name == "res_in") return b.resIn;
  throw InputError(plan_.key.variantName(),
                   fmt::format("buffer '{}': expected scratch, sym, epoch, err, attn or res_in", name));
}

SimRun SimSession::launch(const TensorMap& inputs, const runtime::SimOptions& opts, const LaunchParams& params,
                          const std::vector<runtime::RankArgs>& extra) {
  runtime::Device& dev = *dev_;
  const Layout& L = v_.layout;
  SimRun run;
  const std::vector<int64_t> shape{L.rows, L.hidden};
  const int64_t rowBytes = int64_t{L.rows} * L.hidden * 2;
  const HostTensor* res = attnWritten_ ? nullptr : &need(inputs, "res_in", DType::BF16, shape);
  auto zero = [&](int r, uint64_t addr, int64_t bytes) {
    const std::vector<uint8_t> z(static_cast<size_t>(bytes), 0);
    dev.upload(r, addr, z.data(), bytes);
  };

  uint64_t lost = 0;
  if (params.lostFrom >= 0) {
    if (params.lostFrom >= L.tp || params.lostTo < 0 || params.lostTo >= L.tp)
      throw InputError(plan_.key.variantName(),
                       fmt::format("lost push {} -> {}: ranks are 0..{}", params.lostFrom, params.lostTo, L.tp - 1));
    lost = dev.alloc(params.lostFrom, L.symBytes, "lost pushes");
  }

  std::vector<runtime::RankArgs> ranks;
  for (int r = 0; r < L.tp; ++r) {
    const RankBuffers& b = bufs_[r];
    if (L.oproj) {  // o_proj in the launch: its input, weight and scales (part.rR is not read)
      checkOprojCopy(v_.cfg, L.tp, inputs, r);  // refuses a layer without the rowwise-FP8 copy
      const int64_t H = L.hidden, A = L.attnWidth;
      if (!attnWritten_)
        dev.upload(r, b.attn, need(inputs, rankName("attn", r), DType::BF16, {L.rows, A}).data.data(), L.rows * A * 2);
      dev.upload(r, b.wo, need(inputs, rankName("wo", r), DType::U8, {H, A}).data.data(), H * A);
      dev.upload(r, b.woScale, need(inputs, "wo_scale", DType::F32, {H}).data.data(), H * 4);
    } else {
      dev.upload(r, b.part, need(inputs, rankName("part", r), DType::BF16, shape).data.data(), rowBytes);
    }
    if (res) dev.upload(r, b.resIn, res->data.data(), rowBytes);
    zero(r, b.err, 8);  // each launch is judged alone: its error word starts at no failure
    const int32_t inject[2] = {params.injectRank >= 0 ? params.injectRank + 1 : 0, params.injectTicks};
    dev.upload(r, b.inject, inject, 8);
    if (b.trace) zero(r, b.trace, plan_.arg(arg::kTrace).bytes());
    for (const char* n : kMoeArgs) {
      const ir::KernelArg& ka = plan_.arg(n);
      const std::string key = launchTensorName(n, r);
      if (std::string(n) == arg::kOut) continue;
      if (auto it = inputs.find(key); it != inputs.end()) {
        need(inputs, key, dtypeOf(ka.elem), ka.shape);
        if (n == std::string(arg::kS13) || n == std::string(arg::kS2))
          checkDeclaredScales(it->second, key, v_.knobs.scales);  // the same shape either way
        dev.upload(r, b.moe.at(n), it->second.data.data(), ka.bytes());
      } else {
        zero(r, b.moe.at(n), ka.bytes());  // no MoE inputs: zero weights, every row valid (slot 0)
      }
    }
    std::vector<uint64_t> peers;
    for (int p = 0; p < L.tp; ++p) peers.push_back(r == params.lostFrom && p == params.lostTo ? lost : bufs_[p].sym);
    dev.upload(r, b.peers, peers.data(), int64_t{L.tp} * 8);
    auto tagIt = params.rankTag.find(r);
    int32_t tag = tagIt == params.rankTag.end() ? params.tag : tagIt->second;
    if (params.replay) {
      dev.download(r, &tag, b.epoch, 4);
      tag = launchTagAfter(tag);
    } else {
      if (tag < 1 || tag > kLaunchTagMask + 1)
        throw InputError("launch tag", fmt::format("{}: expected 1 .. 2^30", tag));
      const int32_t epoch = epochBefore(tag);
      dev.upload(r, b.epoch, &epoch, 4);
    }
    if (r == 0) run.tag = tag;
    using runtime::LaunchArg;
    ranks.push_back({
        {arg::kResIn, LaunchArg::tensor(b.resIn, DType::BF16, shape)},
        {arg::kResOut, LaunchArg::tensor(b.resOut, DType::BF16, shape)},
        {arg::kScratch, LaunchArg::tensor(b.scratch, DType::U8, {L.scratchBytes})},
        {arg::kSym, LaunchArg::tensor(b.sym, DType::U8, {L.symBytes})},
        {arg::kPeers, LaunchArg::peerTable(b.peers, peers)},
        {arg::kErr, LaunchArg::tensor(b.err, DType::I32, {2})},
        {arg::kRank, LaunchArg::scalar(r)},
        {arg::kWaitTicks, LaunchArg::scalar(params.waitTicks)},
        {arg::kEpoch, LaunchArg::tensor(b.epoch, DType::I32, {1})},
        {arg::kHandshake, LaunchArg::scalar(params.handshake ? 1 : 0)},
        {arg::kInject, LaunchArg::tensor(b.inject, DType::I32, {2})},
    });
    if (b.trace) ranks.back()[arg::kTrace] = LaunchArg::tensor(b.trace, DType::I64, plan_.arg(arg::kTrace).shape);
    if (L.oproj) {
      ranks.back()[arg::kAttn] = LaunchArg::tensor(b.attn, DType::BF16, {L.rows, L.attnWidth});
      ranks.back()[arg::kWo] = LaunchArg::tensor(b.wo, DType::U8, {L.hidden, L.attnWidth});
      ranks.back()[arg::kWoScale] = LaunchArg::tensor(b.woScale, DType::F32, {L.hidden});
    } else {
      ranks.back()[arg::kPart] = LaunchArg::tensor(b.part, DType::BF16, shape);
    }
    for (const char* n : kMoeArgs) {
      const ir::KernelArg& ka = plan_.arg(n);
      ranks.back()[n] = LaunchArg::tensor(b.moe.at(n), dtypeOf(ka.elem), ka.shape);
    }
    if (static_cast<size_t>(r) < extra.size())
      for (const auto& [name, a] : extra[r]) {
        if (ranks.back().count(name))
          throw InputError(plan_.key.variantName(), fmt::format("extra argument '{}' is the session's own", name));
        ranks.back()[name] = a;
      }
  }
  // Checked against the Plan (presence, dtypes, shapes, alignment, peer table) and the device's
  // rank count before anything runs.
  auto* sim = dynamic_cast<runtime::SimDeviceAdapter*>(dev_);
  if (sim) sim->options() = opts;
  dev.launch(plan_, code_, ranks);
  if (sim) run.stats = sim->lastStats();

  const int tasks = static_cast<int>(L.reduce.tasks);
  for (int r = 0; r < L.tp; ++r) {
    const RankBuffers& b = bufs_[r];
    auto copy = [&](uint64_t addr, DType d, std::vector<int64_t> shp) {
      HostTensor t = HostTensor::zeros(d, std::move(shp));
      dev.download(r, t.data.data(), addr, static_cast<int64_t>(t.data.size()));
      return t;
    };
    run.outputs[rankName("res_out", r)] = copy(b.resOut, DType::BF16, shape);
    run.outputs[rankName("sres", r)] = copy(b.scratch + L.sres.offset, DType::F32, shape);
    if (L.oproj) {  // o_proj in the launch: the quant's scales and the partial push sent
      run.outputs[rankName("xscale", r)] = copy(b.scratch + L.xscale.offset, DType::F32, {L.rows});
      run.outputs[rankName("opart", r)] = copy(b.scratch + L.opart.offset, DType::BF16, shape);
    }
    HostTensor ssq = HostTensor::zeros(DType::F32, {L.rows, tasks});
    HostTensor ssqTag = HostTensor::zeros(DType::I32, {L.rows, tasks});
    const std::vector<uint8_t> pairBytes = read(r, b.scratch + L.ssq.offset, L.ssq.bytes);
    const int32_t* pairs = reinterpret_cast<const int32_t*>(pairBytes.data());
    for (int64_t i = 0; i < int64_t{L.rows} * tasks; ++i) {
      std::memcpy(ssq.as<float>() + i, pairs + 2 * i, 4);
      ssqTag.as<int32_t>()[i] = pairs[2 * i + 1];
    }
    HostTensor err = copy(b.err, DType::I32, {2});
    run.outputs[rankName("ssq", r)] = std::move(ssq);
    run.outputs[rankName("ssq_tag", r)] = std::move(ssqTag);
    run.outputs[rankName("epoch", r)] = copy(b.epoch, DType::I32, {1});
    if (b.trace) run.outputs[rankName("trace", r)] = copy(b.trace, DType::U64, plan_.arg(arg::kTrace).shape);
    const int32_t* ew = err.as<int32_t>();
    if (ew[0] != 0 && run.error.empty())
      run.error = fmt::format("rank {}: error word {:#x} (site {}, rank {}, token {}), {} failure{}: {}", r, ew[0],
                              errorSite(ew[0]), errorRank(ew[0]), errorToken(ew[0]), ew[1], ew[1] == 1 ? "" : "s",
                              errorMeaning(ew[0]));
    run.outputs[rankName("err", r)] = std::move(err);
    readMoe(r, run.tag, run.outputs);
  }
  run.valid = run.error.empty();
  return run;
}

void SimSession::readMoe(int r, int32_t tag, TensorMap& o) {
  const RankBuffers& b = bufs_[r];
  readMoeOutputs(
      v_.layout, r, b.scratch, b.moe.at(arg::kOut),
      [&](uint64_t addr, int64_t bytes) { return read(r, addr, bytes); }, o);
  // rank r's combined partial as rank 0 received it (FFN[src = r]); reduce-scattered, row t as its
  // owner rank t % TP received it
  const Layout& L = v_.layout;
  const auto ffnOf = [&](int at) { return read(at, bufs_[at].sym + L.ffn.offset, L.ffn.bytes); };
  HostTensor down = downPartial(L, r, tag, ffnOf(0));
  if (L.ffnReduceScatter)
    for (int owner = 1; owner < std::min(L.tp, L.rows); ++owner) {
      const HostTensor part = downPartial(L, r, tag, ffnOf(owner));
      for (int t = owner; t < L.rows; t += L.tp)
        std::memcpy(down.as<uint16_t>() + int64_t{t} * L.hidden, part.as<uint16_t>() + int64_t{t} * L.hidden,
                    size_t(L.hidden) * 2);
    }
  o[rankName("down", r)] = std::move(down);
}

void readMoeOutputs(const Layout& L, int r, uint64_t scratch, uint64_t outAddr, const RankReader& read, TensorMap& o) {
  const int S = L.rows, H = L.hidden, K = L.topk, IP = L.tiling.interPerRank;
  auto copy = [&](uint64_t addr, DType d, std::vector<int64_t> shape) {
    HostTensor t = HostTensor::zeros(d, std::move(shape));
    const std::vector<uint8_t> v = read(addr, static_cast<int64_t>(t.data.size()));
    std::memcpy(t.data.data(), v.data(), v.size());
    return t;
  };
  o[rankName("xn", r)] = copy(scratch + L.xn.offset, DType::BF16, {S, H});
  {
    HostTensor rstd = HostTensor::zeros(DType::F32, {S});  // RSTD's pairs: (f32 bits, tag)
    const std::vector<uint8_t> p = read(scratch + L.rstd.offset, L.rstd.bytes);
    for (int t = 0; t < S; ++t) std::memcpy(rstd.data.data() + 4 * t, p.data() + kPairBytes * t, 4);
    o[rankName("rstd", r)] = std::move(rstd);
  }
  o[rankName("out", r)] = copy(outAddr, DType::BF16, {S, H});
  const std::vector<uint8_t> routeBytes = read(scratch + L.routeA.offset, L.routeA.bytes);
  const int32_t* route = reinterpret_cast<const int32_t*>(routeBytes.data());
  HostTensor picks = HostTensor::zeros(DType::I32, {S, K}), weights = HostTensor::zeros(DType::F32, {S, K});
  for (int t = 0; t < S; ++t)
    for (int k = 0; k < K; ++k) {
      picks.as<int32_t>()[t * K + k] = route[2 * (t * 2 * K + k)];
      std::memcpy(weights.as<float>() + t * K + k, route + 2 * (t * 2 * K + K + k), 4);
    }
  o[rankName("picks", r)] = std::move(picks);
  o[rankName("weights", r)] = std::move(weights);
  // CTA 0's slot table
  const std::vector<uint8_t> tabBytes = read(scratch + L.tabDump.offset, L.tabDump.bytes);
  const int32_t* tab = reinterpret_cast<const int32_t*>(tabBytes.data());
  const int maxSlots = L.tiling.maxSlots;
  const int n = std::max(0, std::min(tab[0], maxSlots));
  HostTensor se = HostTensor::zeros(DType::I32, {n}), sc = HostTensor::zeros(DType::I32, {n});
  HostTensor sr = HostTensor::zeros(DType::I32, {n, 16}), sp = HostTensor::zeros(DType::I32, {n, 16});
  HostTensor mid = HostTensor::zeros(DType::BF16, {n, 16, IP});
  const std::vector<uint8_t> midBytes = read(scratch + L.mid.offset, L.mid.bytes);
  const uint16_t* midSrc = reinterpret_cast<const uint16_t*>(midBytes.data());
  for (int u = 0; u < n; ++u) {
    se.as<int32_t>()[u] = tab[1 + u];
    sc.as<int32_t>()[u] = tab[1 + maxSlots + u];
    for (int col = 0; col < 16; ++col) {
      sr.as<int32_t>()[u * 16 + col] = tab[1 + 2 * maxSlots + u * 16 + col];
      sp.as<int32_t>()[u * 16 + col] = tab[1 + 2 * maxSlots + maxSlots * 16 + u * 16 + col];
      if (col < sc.as<int32_t>()[u])
        std::memcpy(mid.as<uint16_t>() + (int64_t(u) * 16 + col) * IP, midSrc + (int64_t(u) * 16 + col) * IP, IP * 2);
    }
  }
  o[rankName("slot_expert", r)] = std::move(se);
  o[rankName("slot_count", r)] = std::move(sc);
  o[rankName("slot_row", r)] = std::move(sr);
  o[rankName("slot_pick", r)] = std::move(sp);
  o[rankName("mid", r)] = std::move(mid);
}

HostTensor downPartial(const Layout& L, int src, int32_t tag, const std::vector<uint8_t>& ffnBytes) {
  const int S = L.rows, H = L.hidden;
  HostTensor down = HostTensor::zeros(DType::BF16, {S, H});
  const int32_t* ffn = reinterpret_cast<const int32_t*>(ffnBytes.data());
  const int64_t half = L.ffn.parity ? (tag & 1) * (L.ffn.pairs / 2) : 0;  // this launch's parity half
  for (int64_t i = 0; i < int64_t{S} * H / 2; ++i)
    std::memcpy(down.as<uint16_t>() + 2 * i, ffn + 2 * (half + int64_t{src} * S * (H / 2) + i), 4);
  return down;
}

runtime::TraceBuffers traceOf(const ir::Plan& plan, const SimRun& run) {
  runtime::TraceBuffers t;
  t.name = plan.key.variantName();
  t.blocks = plan.grid.blocks;
  t.clockHz = plan.target().clockHz;
  for (const ir::Stage& s : plan.stages) t.stages.push_back(s.name);
  for (int r = 0; r < plan.ranks; ++r) {
    auto it = run.outputs.find(rankName("trace", r));
    if (it == run.outputs.end())
      throw InputError(t.name, fmt::format("no trace of rank {}: build the variant with the trace knob", r));
    const uint64_t* p = it->second.as<uint64_t>();
    t.ranks.emplace_back(p, p + it->second.numel());
  }
  return t;
}

SimRun runOnSim(const FfnVariant& v, const TensorMap& inputs, const runtime::SimOptions& opts,
                const LaunchParams& params) {
  SimSession s(v);
  return s.launch(inputs, opts, params);
}

SimRun runOnSim(const ModelConfig& cfg, const ir::Key& key, const TensorMap& inputs, const runtime::SimOptions& opts,
                const LaunchParams& params) {
  return runOnSim(FfnVariant::make(cfg, key), inputs, opts, params);
}

SimRun runOnDevice(runtime::Device& device, const FfnVariant& v, const TensorMap& inputs,
                   const LaunchParams& params) {
  SimSession s(v, device);
  return s.launch(inputs, {}, params);
}

SimRun runOnDevice(runtime::Device& device, const ModelConfig& cfg, const ir::Key& key, const TensorMap& inputs,
                   const LaunchParams& params) {
  return runOnDevice(device, FfnVariant::make(cfg, key), inputs, params);
}

TensorMap referenceOutputs(const ModelConfig& cfg, int rows, int tp, const TensorMap& inputs) {
  const Layout L = Layout::make(cfg, rows, tp, FfnInput::Part);  // the all-reduce of part.rR, either input
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

TensorMap launchReferenceOutputs(const ModelConfig& cfg, int rows, int tp, const TensorMap& inputs,
                                 MoeExperts experts, MoeQuant quant, RefNumerics numerics) {
  TensorMap want = referenceOutputs(cfg, rows, tp, inputs);
  for (auto& [name, t] : moeReferenceOutputs(cfg, rows, tp, inputs, want, experts, quant, numerics))
    want[name] = std::move(t);
  for (auto& [name, t] : oprojReferenceOutputs(cfg, rows, tp, inputs, numerics)) want[name] = std::move(t);
  return want;
}

TensorMap launchReferenceOutputs(const FfnVariant& v, const TensorMap& inputs, RefNumerics numerics) {
  return launchReferenceOutputs(v.cfg, v.layout.rows, v.layout.tp, inputs, v.knobs.experts, MoeQuant::A16w4, numerics);
}

TensorMap oprojReferenceOutputs(const ModelConfig& cfg, int rows, int tp, const TensorMap& inputs, RefNumerics numerics) {
  TensorMap out;
  if (!inputs.count(rankName("attn", 0))) return out;  // the o_proj partial input: no o_proj
  const Layout L = Layout::make(cfg, rows, tp, FfnInput::Attn);
  for (int r = 0; r < tp; ++r) {
    const HostTensor& x = need(inputs, rankName("attn", r), DType::BF16, {rows, L.attnWidth});
    const QuantRows q = quantizeRows(x.as<uint16_t>(), rows, L.attnWidth, numerics);
    HostTensor s = HostTensor::zeros(DType::F32, {rows});
    std::memcpy(s.data.data(), q.xScale.data(), s.data.size());
    out[rankName("xscale", r)] = std::move(s);
    out[rankName("opart", r)] = need(inputs, rankName("part", r), DType::BF16, {rows, L.hidden});
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

namespace {

/// The launch's stage names in Plan order. Every variant has the same stages in the same order,
/// so they come from the smallest variant's Plan, built once.
const std::vector<std::string>& launchStages() {
  static const std::vector<std::string> names = [] {
    const ModelConfig cfg = ModelConfig::reduced();
    std::vector<std::string> v;
    for (const ir::Stage& st : buildPlan(cfg, makeKey(cfg, 1, 1)).stages) v.push_back(st.name);
    return v;
  }();
  return names;
}

/// Where `name` comes in dataflowOrder: (stage position, rank, position in kOutputWriters);
/// nullopt for a name kOutputWriters does not know.
std::optional<std::tuple<int, int, int>> dataflowKey(const std::string& name) {
  const size_t dot = name.rfind(".r");
  if (dot == std::string::npos || dot + 2 >= name.size()) return std::nullopt;
  int rank = 0;
  for (size_t i = dot + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    rank = rank * 10 + (name[i] - '0');
  }
  const std::string base = name.substr(0, dot);
  const std::vector<std::string>& stages = launchStages();
  for (int w = 0; w < static_cast<int>(std::size(kOutputWriters)); ++w) {
    if (base != kOutputWriters[w].output) continue;
    int stage = static_cast<int>(stages.size());  // every stage's: after the last
    if (kOutputWriters[w].stage) {
      auto it = std::find(stages.begin(), stages.end(), kOutputWriters[w].stage);
      if (it == stages.end())
        throw RuntimeError("dataflowOrder", fmt::format("kOutputWriters: '{}' is written by stage '{}', which the "
                                                        "Plan does not have",
                                                        base, kOutputWriters[w].stage));
      stage = static_cast<int>(it - stages.begin());
    }
    return std::tuple{stage, rank, w};
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> dataflowOrder(const TensorMap& m) {
  std::vector<std::pair<std::tuple<int, int, int>, std::string>> known;
  std::vector<std::string> unknown;  // alphabetical: the map's order
  for (const auto& [name, t] : m) {
    if (auto k = dataflowKey(name)) {
      known.emplace_back(*k, name);
    } else {
      unknown.push_back(name);
    }
  }
  std::sort(known.begin(), known.end());
  std::vector<std::string> out;
  for (auto& [k, name] : known) out.push_back(std::move(name));
  for (auto& name : unknown) out.push_back(std::move(name));
  return out;
}

std::string writerStage(const std::string& name, const std::vector<std::string>& stages) {
  const size_t dot = name.rfind(".r");
  const std::string base = dot == std::string::npos ? name : name.substr(0, dot);
  for (const OutputWriter& w : kGatherWriters)
    if (base == w.output && std::find(stages.begin(), stages.end(), w.stage) != stages.end()) return w.stage;
  for (const OutputWriter& w : kOutputWriters)
    if (base == w.output) return w.stage ? w.stage : "";
  return "";
}

std::optional<Mismatch> firstMismatch(const TensorMap& got, const TensorMap& want,
                                      const std::vector<std::string>& stages) {
  for (const std::string& name : dataflowOrder(want)) {
    const HostTensor& w = want.at(name);
    auto it = got.find(name);
    const std::string stage = writerStage(name, stages);
    if (it == got.end()) return Mismatch{name, -1, "missing", shapeText(w), stage};
    const HostTensor& g = it->second;
    if (g.dtype != w.dtype || g.shape != w.shape || g.data.size() != w.data.size())
      return Mismatch{name, -1, shapeText(g), shapeText(w), stage};
    const int n = runtime::dtypeBytes(w.dtype);
    for (int64_t i = 0; i < w.numel(); ++i)
      if (std::memcmp(g.data.data() + i * n, w.data.data() + i * n, n) != 0)
        return Mismatch{name, i, elemText(g, i), elemText(w, i), stage};
  }
  return std::nullopt;
}

std::string describe(const Mismatch& m) {
  const std::string by = m.stage.empty() ? "" : fmt::format(" (written by stage '{}')", m.stage);
  if (m.index < 0) return fmt::format("{}: got {}, want {}{}", m.tensor, m.got, m.want, by);
  return fmt::format("{}[{}]: got {}, want {}{}", m.tensor, m.index, m.got, m.want, by);
}

std::vector<std::pair<std::string, int64_t>> mismatchCounts(const TensorMap& got, const TensorMap& want) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const std::string& name : dataflowOrder(want)) {
    const HostTensor& w = want.at(name);
    auto it = got.find(name);
    if (it == got.end() || it->second.dtype != w.dtype || it->second.shape != w.shape ||
        it->second.data.size() != w.data.size()) {
      out.emplace_back(name, w.numel());
      continue;
    }
    const int n = runtime::dtypeBytes(w.dtype);
    int64_t bad = 0;
    for (int64_t i = 0; i < w.numel(); ++i)
      bad += std::memcmp(it->second.data.data() + i * n, w.data.data() + i * n, n) != 0;
    if (bad) out.emplace_back(name, bad);
  }
  return out;
}

}  // namespace monogen::specs::minimax_m3
