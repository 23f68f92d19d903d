#include "specs/minimax_m3/kernel/WeightContract.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"

namespace monogen::specs::minimax_m3 {

using runtime::DType;
using runtime::HostTensor;
using runtime::TensorMap;

namespace {

void checkShuffleDims(int64_t rows, int64_t kBytes, const char* what) {
  if (rows <= 0 || rows % 16 != 0 || kBytes <= 0 || kBytes % 16 != 0)
    throw InputError(what, fmt::format("a (16,16)-shuffled fp4x2 matrix needs rows % 16 == 0 and bytes a row "
                                       "% 16 == 0; given {} x {}",
                                       rows, kBytes));
}

std::string shapeText(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

}  // namespace

std::vector<uint8_t> shuffle16x16(const uint8_t* rowMajor, int64_t rows, int64_t kBytes) {
  checkShuffleDims(rows, kBytes, "shuffle16x16");
  std::vector<uint8_t> out(static_cast<size_t>(rows * kBytes));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < kBytes; ++c) out[shuffledOffset16x16(r, c, kBytes)] = rowMajor[r * kBytes + c];
  return out;
}

std::vector<uint8_t> unshuffle16x16(const uint8_t* shuffled, int64_t rows, int64_t kBytes) {
  checkShuffleDims(rows, kBytes, "unshuffle16x16");
  std::vector<uint8_t> out(static_cast<size_t>(rows * kBytes));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < kBytes; ++c) out[r * kBytes + c] = shuffled[shuffledOffset16x16(r, c, kBytes)];
  return out;
}

std::vector<uint8_t> e8m0Shuffle(const uint8_t* scales, int64_t m, int64_t n, int64_t* pm, int64_t* pn) {
  const int64_t PM = (m + 255) / 256 * 256, PN = (n + 7) / 8 * 8;
  std::vector<uint8_t> out(static_cast<size_t>(PM * PN), 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) out[e8m0ShuffledOffset(i, j, PN)] = scales[i * n + j];
  if (pm) *pm = PM;
  if (pn) *pn = PN;
  return out;
}

std::vector<uint8_t> e8m0Unshuffle(const uint8_t* shuffled, int64_t m, int64_t n) {
  const int64_t PN = (n + 7) / 8 * 8;
  std::vector<uint8_t> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) out[i * n + j] = shuffled[e8m0ShuffledOffset(i, j, PN)];
  return out;
}

const char* scaleLayoutName(ScaleLayout l) { return l == ScaleLayout::E8m0Shuffle ? "e8m0_shuffle" : "rowmajor"; }

ScaleLayout scaleLayoutOf(const std::string& name, const std::string& where) {
  for (ScaleLayout l : {ScaleLayout::E8m0Shuffle, ScaleLayout::RowMajor})
    if (name == scaleLayoutName(l)) return l;
  throw InputError(where, fmt::format("scale layout '{}': expected e8m0_shuffle or rowmajor (e8m0_shuffle: what vLLM "
                                      "and SGLang hold after loading)", name));
}

ScaleLayout declaredScaleLayout(const HostTensor& t, const std::string& name) {
  for (ScaleLayout l : {ScaleLayout::E8m0Shuffle, ScaleLayout::RowMajor})
    if (t.layout == scaleLayoutName(l)) return l;
  throw InputError("weight contract: " + name,
                   fmt::format("tensor '{}' declares scale layout {}: expected e8m0_shuffle or rowmajor (the "
                               "caller must declare the layout of the scales it holds)",
                               name, t.layout.empty() ? std::string("none (undeclared)") : "'" + t.layout + "'"));
}

void checkDeclaredScales(const HostTensor& t, const std::string& name, ScaleLayout l) {
  if (t.layout == scaleLayoutName(l)) return;
  throw InputError("weight contract: " + name,
                   fmt::format("tensor '{}' declares scale layout {}, expected '{}' (the variant's scales knob): "
                               "the same shape cannot tell the layouts apart, so the caller must declare the one "
                               "it holds",
                               name, t.layout.empty() ? std::string("none (undeclared)") : "'" + t.layout + "'",
                               scaleLayoutName(l)));
}

HostTensor holdScales(const HostTensor& logical, ScaleLayout l) {
  if (logical.dtype != DType::U8 || logical.shape.size() != 3 || logical.shape[1] % 32 != 0)
    throw InputError("holdScales", fmt::format("expected U8 [E+1, N, K/32] with N % 32 == 0, given {} {}",
                                               runtime::dtypeName(logical.dtype), shapeText(logical.shape)));
  const int64_t e1 = logical.shape[0], n = logical.shape[1], kb = logical.shape[2];
  HostTensor t;
  t.dtype = DType::U8;
  t.layout = scaleLayoutName(l);
  if (l == ScaleLayout::RowMajor) {
    t.shape = logical.shape;
    t.data = logical.data;
    return t;
  }
  int64_t pm = 0, pn = 0;
  t.data = e8m0Shuffle(logical.data.data(), e1 * n, kb, &pm, &pn);
  t.data.resize(static_cast<size_t>(e1 * n * pn));  // the row padding past the last expert: zeros only
  t.shape = {e1, n, pn};
  return t;
}

std::vector<ContractEntry> contractEntries(const ModelConfig& cfg, int tp, ScaleLayout l, FfnInput input) {
  const int64_t e1 = cfg.expertsWithShared(), h = cfg.hidden, ip = cfg.interPerRank(tp);
  std::vector<ContractEntry> e = {
      {"w13", DType::U8, {e1, 2 * ip, h / 2}},
      {"s13", DType::U8, {e1, 2 * ip, heldScaleColumns(h / 32, l)}},
      {"w2", DType::U8, {e1, h, ip / 2}},
      {"s2", DType::U8, {e1, h, heldScaleColumns(ip / 32, l)}},
      {"router_w", DType::F32, {cfg.experts, h}},
      {"bias", DType::F32, {cfg.experts}},
      {"norm_w", DType::BF16, {h}},
  };
  if (input == FfnInput::Attn) {
    e.push_back({"wo", DType::U8, {h, cfg.attnWidth(tp)}});
    e.push_back({"wo_scale", DType::F32, {h}});
  }
  return e;
}

namespace {
/// checkContract with `find(name)` naming where contract tensor `name` is (nullptr: missing).
template <class Find>
void checkContractWith(const ModelConfig& cfg, int tp, ScaleLayout l, FfnInput input, const Find& find,
                       bool oprojOnly = false) {
  if (tp < 1 || cfg.intermediate % tp != 0 || (cfg.intermediate / tp) % 32 != 0)
    throw InputError("weight contract", fmt::format("TP {}: I / TP must be a multiple of 32 (I = {})", tp,
                                                    cfg.intermediate));
  if (input == FfnInput::Attn && (cfg.heads * cfg.headDim) % tp != 0)
    throw InputError("weight contract", fmt::format("TP {}: heads x head_dim = {} x {} does not divide by TP", tp,
                                                    cfg.heads, cfg.headDim));
  for (const ContractEntry& e : contractEntries(cfg, tp, l, input)) {
    if (oprojOnly && e.name.rfind("wo", 0) != 0) continue;
    const std::string where = "weight contract: " + e.name;
    const auto [found, name] = find(e.name);
    if (!found)
      throw InputError(where, fmt::format("missing tensor '{}' (expected {} {}){}", name, runtime::dtypeName(e.dtype),
                                          shapeText(e.shape),
                                          e.name.rfind("wo", 0) == 0
                                              ? ": the layer has no rowwise-FP8 copy of o_proj (SGLang's _ptpc_weight "
                                                "/ _ptpc_scale), which o_proj in the launch (input=attn) reads"
                                              : ""));
    const HostTensor& t = *found;
    if (t.dtype != e.dtype || t.shape != e.shape)
      throw InputError(where, fmt::format("tensor '{}': expected {} {}, given {} {}", e.name,
                                          runtime::dtypeName(e.dtype), shapeText(e.shape),
                                          runtime::dtypeName(t.dtype), shapeText(t.shape)));
    const int64_t bytes = t.numel() * runtime::dtypeBytes(t.dtype);
    if (static_cast<int64_t>(t.data.size()) != bytes)
      throw InputError(where, fmt::format("tensor '{}' {}: holds {} bytes, expected {}", e.name,
                                          shapeText(t.shape), t.data.size(), bytes));
    if (e.name == "s13" || e.name == "s2") checkDeclaredScales(t, name, l);
  }
}
}  // namespace

void checkContract(const ModelConfig& cfg, int tp, const TensorMap& w, ScaleLayout l, FfnInput input) {
  checkContractWith(cfg, tp, l, input, [&](const std::string& n) {
    auto it = w.find(n);
    return std::pair{it == w.end() ? nullptr : &it->second, n};
  });
}

namespace {
/// Where contract tensor n of rank `rank` is in a launch's map (nullptr: missing), and its name there.
std::pair<const HostTensor*, std::string> inLaunch(const TensorMap& launch, const std::string& n, int rank) {
  const std::string name = launchTensorName(n, rank);
  auto it = launch.find(name);
  return {it == launch.end() ? nullptr : &it->second, name};
}
}  // namespace

void checkContract(const ModelConfig& cfg, int tp, const TensorMap& launch, int rank, ScaleLayout l,
                   FfnInput input) {
  checkContractWith(cfg, tp, l, input, [&](const std::string& n) { return inLaunch(launch, n, rank); });
}

void checkOprojCopy(const ModelConfig& cfg, int tp, const TensorMap& launch, int rank) {
  // the scale layout is never read: only wo / wo_scale are checked
  checkContractWith(cfg, tp, ScaleLayout::E8m0Shuffle, FfnInput::Attn, [&](const std::string& n) { return inLaunch(launch, n, rank); }, true);
}

ScaleLayout launchScaleLayout(const TensorMap& launch, int rank) {
  const std::string name = "s13.r" + std::to_string(rank);
  auto it = launch.find(name);
  if (it == launch.end()) throw InputError("weight contract: s13", fmt::format("missing tensor '{}'", name));
  return declaredScaleLayout(it->second, name);
}

float ExpertMatrix::value(int64_t row, int64_t kk) const {
  return ir::num::fp4ToF32(code(row, kk), ir::num::e8m0ToF32(scale(row, kk)));
}

ExpertMatrix expertMatrix(const HostTensor& w, const HostTensor& s, int expert) {
  const ScaleLayout l = declaredScaleLayout(s, "expertMatrix scales");
  const int64_t kBlocks = w.shape.size() == 3 ? w.shape[2] / 16 : 0, held = heldScaleColumns(kBlocks, l);
  if (w.shape.size() != 3 || s.shape.size() != 3 || w.shape[0] <= expert || s.shape[0] != w.shape[0] ||
      s.shape[1] != w.shape[1] || w.shape[2] % 16 != 0 || s.shape[2] != held || (l == ScaleLayout::E8m0Shuffle && w.shape[1] % 32 != 0) ||
      static_cast<int64_t>(s.data.size()) != s.shape[0] * s.shape[1] * held)
    throw InputError("expertMatrix", fmt::format("fp4x2 {} and e8m0 {} ({}) do not pair (expert {})",
                                                 shapeText(w.shape), shapeText(s.shape), scaleLayoutName(l), expert));
  ExpertMatrix m;
  m.rows = w.shape[1];
  m.k = w.shape[2] * 2;
  const int64_t kBytes = w.shape[2];
  m.codes = unshuffle16x16(w.data.data() + expert * m.rows * kBytes, m.rows, kBytes);
  const uint8_t* sp = s.data.data() + expert * m.rows * held;  // the expert's slab
  m.scales.resize(static_cast<size_t>(m.rows * kBlocks));
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t b = 0; b < kBlocks; ++b) m.scales[r * kBlocks + b] = sp[scaleIndex(l, r, b, kBlocks)];
  return m;
}

TensorMap rankExpertTensors(const ModelConfig& cfg, int tp, int rank, const TensorMap& logical, ScaleLayout l) {
  const int64_t e1 = cfg.expertsWithShared(), h = cfg.hidden, I = cfg.intermediate, ip = cfg.interPerRank(tp);
  auto get = [&](const char* name, std::vector<int64_t> shape) -> const HostTensor& {
    auto it = logical.find(name);
    if (it == logical.end() || it->second.shape != shape || it->second.dtype != DType::U8)
      throw InputError(std::string("logical weights: ") + name,
                       fmt::format("expected U8 {}", shapeText(shape)));
    return it->second;
  };
  const HostTensor& w13 = get("w13", {e1, 2 * I, h / 2});
  const HostTensor& s13 = get("s13", {e1, 2 * I, h / 32});
  const HostTensor& w2 = get("w2", {e1, h, I / 2});
  const HostTensor& s2 = get("s2", {e1, h, I / 32});
  TensorMap out;
  HostTensor ow13 = HostTensor::zeros(DType::U8, {e1, 2 * ip, h / 2});
  HostTensor os13 = HostTensor::zeros(DType::U8, {e1, 2 * ip, h / 32});
  HostTensor ow2 = HostTensor::zeros(DType::U8, {e1, h, ip / 2});
  HostTensor os2 = HostTensor::zeros(DType::U8, {e1, h, ip / 32});
  std::vector<uint8_t> rm;
  for (int64_t e = 0; e < e1; ++e) {
    // w13: the rank's gate rows, then its up rows
    rm.assign(static_cast<size_t>(2 * ip * h / 2), 0);
    for (int64_t r = 0; r < 2 * ip; ++r) {
      const int64_t src = r < ip ? rank * ip + r : I + rank * ip + (r - ip);
      std::copy_n(w13.data.data() + (e * 2 * I + src) * (h / 2), h / 2, rm.data() + r * (h / 2));
      std::copy_n(s13.data.data() + (e * 2 * I + src) * (h / 32), h / 32,
                  os13.data.data() + (e * 2 * ip + r) * (h / 32));
    }
    auto sh = shuffle16x16(rm.data(), 2 * ip, h / 2);
    std::copy(sh.begin(), sh.end(), ow13.data.data() + e * 2 * ip * (h / 2));
    // w2: every hidden row's columns of the rank's slice
    rm.assign(static_cast<size_t>(h * ip / 2), 0);
    for (int64_t r = 0; r < h; ++r) {
      std::copy_n(w2.data.data() + (e * h + r) * (I / 2) + rank * ip / 2, ip / 2, rm.data() + r * (ip / 2));
      std::copy_n(s2.data.data() + (e * h + r) * (I / 32) + rank * ip / 32, ip / 32,
                  os2.data.data() + (e * h + r) * (ip / 32));
    }
    sh = shuffle16x16(rm.data(), h, ip / 2);
    std::copy(sh.begin(), sh.end(), ow2.data.data() + e * h * (ip / 2));
  }
  out["w13"] = std::move(ow13);
  out["s13"] = holdScales(os13, l);
  out["w2"] = std::move(ow2);
  out["s2"] = holdScales(os2, l);
  return out;
}

}  // namespace monogen::specs::minimax_m3
