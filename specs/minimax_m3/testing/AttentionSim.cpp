#include "specs/minimax_m3/testing/AttentionSim.h"

#include <fmt/format.h>

#include <cstring>
#include <iterator>
#include <map>
#include <string>

#include "ir/Error.h"
#include "runtime/Launch.h"
#include "runtime/sim/SimDeviceAdapter.h"
#include "specs/minimax_m3/kernel/AttentionContext.h"

namespace monogen::specs::minimax_m3 {

namespace {

/// A Device's allocations with the Sim memory's call shapes.
struct DeviceMemory {
  runtime::Device& dev;
  uint64_t alloc(int64_t bytes, int rank, const std::string& name) { return dev.alloc(rank, bytes, name); }
};

template <class T>
uint64_t upload(DeviceMemory& mem, int rank, const std::string& name, const std::vector<T>& v) {
  const int64_t bytes = static_cast<int64_t>(v.size() * sizeof(T));
  const uint64_t addr = mem.alloc(bytes > 0 ? bytes : 16, rank, name);
  if (bytes > 0) mem.dev.upload(rank, addr, v.data(), bytes);
  return addr;
}

template <class T>
std::vector<T> download(const RankDownload& dev, uint64_t addr, size_t n) {
  std::vector<T> v(n);
  if (n > 0) dev(v.data(), addr, static_cast<int64_t>(n * sizeof(T)));
  return v;
}

template <class T>
std::vector<uint8_t> bytesOf(const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + v.size() * sizeof(T));
}

}  // namespace

AttentionSimRun runAttentionOnSim(const ir::Plan& plan, const AttentionVariant& v, const AttentionLaunch& in,
                                  const runtime::SimOptions& opts, int32_t tag, int64_t waitTicks,
                                  const ScratchPlant& plant) {
  runtime::SimDeviceAdapter sim(opts);
  AttentionSimRun run = runAttention(sim, {}, plan, v, in, tag, waitTicks, plant);
  run.stats = sim.lastStats();
  return run;
}

AttentionBuffers uploadAttention(runtime::Device& dev, const AttentionVariant& v, const AttentionLaunch& in,
                                 int32_t tag, int64_t waitTicks, const std::string& where) {
  namespace n = attn_arg;
  const AttentionLaunchLayout& L = v.layout;
  if (in.S != L.rows || in.TP != L.tp || in.mode != v.knobs.mode || in.fullLayer != v.knobs.fullLayer ||
      in.indexCp != v.knobs.indexCp())
    throw InputError(where, fmt::format("the inputs (S {}, TP {}, {}{}) are not the variant's", in.S, in.TP,
                                        cacheModeName(in.mode), in.indexCp ? ", indexer CP rows" : ""));
  validateAttentionLaunch(v.cfg, in, where);  // before any allocation or launch
  DeviceMemory mem{dev};
  const size_t SH = static_cast<size_t>(L.rows) * L.hidden;
  const size_t qn = static_cast<size_t>(L.rows) * L.shape.qHeads * L.shape.headDim;
  const size_t iqn = static_cast<size_t>(L.rows) * L.shape.indexHeads * L.shape.indexDim;
  const size_t an = static_cast<size_t>(L.rows) * L.shape.attnWidth();
  AttentionBuffers at(static_cast<size_t>(L.tp));
  for (int r = 0; r < L.tp; ++r) {
    const std::map<std::string, std::vector<uint8_t>> b = attentionRankInputs(in, r);
    auto& m = at[r];
    auto put = [&](const char* name) { m[name] = upload(mem, r, name, b.at(name)); };
    put(n::kX);
    put(n::kRes);
    m[n::kResOut] = mem.alloc(static_cast<int64_t>(SH * 2), r, n::kResOut);
    put(n::kGIn);
    m[n::kScratch] = mem.alloc(L.scratchBytes, r, n::kScratch);
    const std::vector<uint8_t> flags(static_cast<size_t>(L.scratchBytes - L.xrdyOffset), 0);  // XRDY, QRDY, ...
    dev.upload(r, m[n::kScratch] + L.xrdyOffset, flags.data(), static_cast<int64_t>(flags.size()));
    put(n::kWQkv);
    put(n::kSQkv);
    m[n::kErr] = upload(mem, r, n::kErr, std::vector<int32_t>{0, 0});
    m[n::kHeadsCount] = upload(mem, r, n::kHeadsCount, std::vector<int32_t>(static_cast<size_t>(L.rows), 0));
    m[n::kTag] = static_cast<uint64_t>(static_cast<uint32_t>(tag));
    m[n::kWaitTicks] = static_cast<uint64_t>(waitTicks);
    for (const char* w : {n::kGQ, n::kGK, n::kGIk, n::kGIq}) put(w);
    m[n::kIq] = mem.alloc(static_cast<int64_t>(iqn * 2), r, n::kIq);
    for (const char* w : {n::kCosSin, n::kPositions, n::kSlots, n::kIndexSlots, n::kKCache, n::kVCache, n::kKScale,
                          n::kVScale, n::kIndexCache})
      put(w);
    m[n::kQ] = mem.alloc(static_cast<int64_t>(qn * 2), r, n::kQ);
    for (const char* w : {n::kSeqLens, n::kBlockTables, n::kIndexTables}) put(w);
    m[n::kTableStride] = static_cast<uint64_t>(in.rows.tableWidth);
    m[n::kAttn] = mem.alloc(static_cast<int64_t>(an * 2), r, n::kAttn);
  }
  return at;
}

std::map<std::string, std::vector<uint8_t>> attentionRankInputs(const AttentionLaunch& in, int r) {
  namespace n = attn_arg;
  const AttentionCaches& c = in.caches.at(r);
  return {{n::kX, bytesOf(in.x)},
          {n::kRes, bytesOf(in.res)},
          {n::kGIn, bytesOf(in.weights.gIn)},
          {n::kWQkv, bytesOf(in.weights.wQkv.at(r))},
          {n::kSQkv, bytesOf(in.weights.sQkv.at(r))},
          {n::kGQ, bytesOf(in.weights.gQ)},
          {n::kGK, bytesOf(in.weights.gK)},
          {n::kGIk, bytesOf(in.weights.gIk)},
          {n::kGIq, bytesOf(in.weights.gIq)},
          {n::kCosSin, bytesOf(in.weights.cosSin)},
          {n::kPositions, bytesOf(in.rows.positions)},
          {n::kSlots, bytesOf(in.rows.slots)},
          {n::kIndexSlots, bytesOf(in.rows.indexSlots)},
          {n::kKCache, bytesOf(c.k)},
          {n::kVCache, bytesOf(c.v)},
          {n::kKScale, bytesOf(c.kScale)},
          {n::kVScale, bytesOf(c.vScale)},
          {n::kIndexCache, bytesOf(c.indexKeys)},
          {n::kSeqLens, bytesOf(in.rows.seqLens)},
          {n::kBlockTables, bytesOf(in.rows.tables)},
          {n::kIndexTables, bytesOf(in.rows.indexTables)}};
}

AttentionSimRank readAttentionRank(runtime::Device& dev, const std::map<std::string, uint64_t>& m,
                                   const AttentionVariant& v, const AttentionLaunch& in, int r) {
  return readAttentionRank([&dev, r](void* dst, uint64_t src, int64_t bytes) { dev.download(r, dst, src, bytes); }, m,
                           v, in, r);
}

AttentionSimRank readAttentionRank(const RankDownload& dev, const std::map<std::string, uint64_t>& m,
                                   const AttentionVariant& v, const AttentionLaunch& in, int r) {
  namespace n = attn_arg;
  const AttentionLaunchLayout& L = v.layout;
  auto u16 = [&](uint64_t addr, size_t count) { return download<uint16_t>(dev, addr, count); };
  auto u8 = [&](uint64_t addr, size_t count) { return download<uint8_t>(dev, addr, count); };
  auto f32 = [&](uint64_t addr, size_t count) { return download<float>(dev, addr, count); };
  auto i32 = [&](uint64_t addr, size_t count) { return download<int32_t>(dev, addr, count); };
  const size_t SH = static_cast<size_t>(L.rows) * L.hidden;
  const size_t qn = static_cast<size_t>(L.rows) * L.shape.qHeads * L.shape.headDim;
  const size_t iqn = static_cast<size_t>(L.rows) * L.shape.indexHeads * L.shape.indexDim;
  const size_t an = static_cast<size_t>(L.rows) * L.shape.attnWidth();
  const AttentionCaches& c = in.caches[r];
  const uint64_t scratch = m.at(n::kScratch);
  AttentionSimRank k;
  k.h = u16(m.at(n::kResOut), SH);
  k.q = u16(m.at(n::kQ), qn);
  if (!v.knobs.fullLayer) k.iq = u16(m.at(n::kIq), iqn);
  if (L.iqCpOffset >= 0) k.iqCp = u16(scratch + L.iqCpOffset, size_t(L.rows) * L.shape.cpHeads * L.shape.indexDim);
  k.qkv = u16(scratch + L.qkvOffset, size_t(L.rows) * L.qkvRows);
  k.x8 = u8(scratch + L.x8Offset, SH);
  k.xScale = f32(scratch + L.xScaleOffset, L.rows);
  k.rstd = f32(scratch + L.rstdOffset, L.rows);
  k.caches = c;
  k.caches.k = u8(m.at(n::kKCache), c.k.size());
  if (!c.v.empty()) k.caches.v = u8(m.at(n::kVCache), c.v.size());  // vllm: V in k_cache's blocks, no v_cache
  k.caches.kScale = f32(m.at(n::kKScale), c.kScale.size());
  k.caches.vScale = f32(m.at(n::kVScale), c.vScale.size());
  k.caches.indexKeys = u8(m.at(n::kIndexCache), c.indexKeys.size());
  k.attn = u16(m.at(n::kAttn), an);
  k.headsCount = i32(m.at(n::kHeadsCount), size_t(L.rows));
  k.hrdy = download<uint64_t>(dev, scratch + L.hrdyOffset, size_t(L.rows));
  const int G = L.shape.qGroup, D = L.shape.headDim;
  k.splits.resize(static_cast<size_t>(L.splitTasks));
  for (int i = 0; i < L.splitTasks; ++i) {
    if (!in.rows.live(i / (L.shape.kvHeads * kAttnSplits))) continue;
    k.splits[i].o = u16(scratch + L.splitOOffset + uint64_t(2) * i * G * D, size_t(G) * D);
    k.splits[i].m = f32(scratch + L.splitMOffset + uint64_t(4) * i * G, size_t(G));
    k.splits[i].l = f32(scratch + L.splitLOffset + uint64_t(4) * i * G, size_t(G));
  }
  k.selections.resize(static_cast<size_t>(L.rows) * L.shape.kvHeads);
  for (size_t i = 0; i < k.selections.size() && !v.knobs.fullLayer; ++i) {
    if (!in.rows.live(static_cast<int>(i) / L.shape.kvHeads)) continue;
    const auto w = i32(scratch + L.selOffset + uint64_t(4) * kSelWords * i, size_t(L.shape.topk) + 1);
    k.selections[i].blocks.assign(w.begin(), w.begin() + L.shape.topk);
    k.selections[i].nCtx = w[L.shape.topk];
  }
  return k;
}

AttentionSimRun runAttention(runtime::Device& dev, const runtime::CodeObjectBytes& code, const ir::Plan& plan,
                             const AttentionVariant& v, const AttentionLaunch& in, int32_t tag, int64_t waitTicks,
                             const ScratchPlant& plant) {
  const std::string where = plan.key.variantName();
  const AttentionBuffers at = uploadAttention(dev, v, in, tag, waitTicks, where);
  std::vector<std::vector<uint64_t>> args(at.size());
  for (size_t r = 0; r < at.size(); ++r)
    for (const ir::KernelArg& a : plan.args) {
      auto it = at[r].find(a.name);
      if (it == at[r].end()) throw InputError(where, fmt::format("no buffer for argument '{}'", a.name));
      args[r].push_back(it->second);
    }
  if (plant)
    for (size_t r = 0; r < at.size(); ++r) plant(dev, static_cast<int>(r), at[r].at(attn_arg::kScratch));
  runtime::PackedLaunch packed;
  for (const std::vector<uint64_t>& a : args) packed.kernargs.push_back(runtime::packKernargs(plan, a));
  packed.values = std::move(args);
  dev.launch(plan, code, packed);
  AttentionSimRun run;
  for (int r = 0; r < static_cast<int>(at.size()); ++r) {
    run.ranks.push_back(readAttentionRank(dev, at[r], v, in, r));
    int32_t err = 0;
    dev.download(r, &err, at[r].at(attn_arg::kErr), 4);
    run.errorWords.push_back(err);
  }
  return run;
}

}  // namespace monogen::specs::minimax_m3
