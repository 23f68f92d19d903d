// The layer launch's test steps and reference for Python (make_layer_steps): seeded inputs
// (makeLayerInputs) in the names and shapes LayerRunner binds, vLLM's cache layout, and each
// step's reference (layerReference); step k + 1 reads the caches step k wrote. docs/python.md.
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <cstring>

#include "bindings/Bindings.h"
#include "bindings/Config.h"
#include "bindings/TorchTensor.h"
#include "ir/Error.h"
#include "specs/minimax_m3/kernel/AttentionContext.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"
#include "specs/minimax_m3/kernel/LayerSpec.h"
#include "specs/minimax_m3/testing/LayerSim.h"

namespace monogen::python {

namespace mm = specs::minimax_m3;
namespace an = specs::minimax_m3::attn_arg;
using runtime::DType;
using runtime::HostTensor;

namespace {

template <class T>
HostTensor tensorOf(DType d, std::vector<int64_t> shape, const std::vector<T>& v) {
  return HostTensor::of(d, std::move(shape), v, "make_layer_steps");
}

/// Rank r's caches as LayerRunner takes them (vLLM's layout), named "<name>.r<r>".
void putCaches(runtime::TensorMap& m, const mm::AttentionCaches& c, int r) {
  const int64_t tokens = int64_t{c.kv.kvHeads} * c.kv.block;
  m[mm::rankName("kv_cache", r)] = tensorOf(DType::U8, {c.kv.blocks, 2, tokens, c.kv.headDim}, c.k);
  m[mm::rankName(an::kIndexCache, r)] =
      tensorOf(DType::U8, {c.index.blocks, c.index.block, c.index.indexDim}, c.indexKeys);
}

/// The step's inputs: the rows, their metadata, the weights and (first step) the caches.
runtime::TensorMap stepInputs(const mm::ModelConfig& cfg, const mm::LayerInputs& in, const ir::Plan& plan,
                              bool withCaches) {
  const mm::AttentionLaunch& a = in.attention;
  const int S = a.S, H = cfg.hidden;
  runtime::TensorMap m;
  m[an::kX] = tensorOf(DType::BF16, {S, H}, a.x);
  m[an::kRes] = tensorOf(DType::BF16, {S, H}, a.res);
  const mm::AttentionWeights& w = a.weights;
  m[an::kGIn] = tensorOf(DType::BF16, {H}, w.gIn);
  m[an::kGQ] = tensorOf(DType::BF16, {int64_t(w.gQ.size())}, w.gQ);
  m[an::kGK] = tensorOf(DType::BF16, {int64_t(w.gK.size())}, w.gK);
  m[an::kGIq] = tensorOf(DType::BF16, {int64_t(w.gIq.size())}, w.gIq);
  m[an::kGIk] = tensorOf(DType::BF16, {int64_t(w.gIk.size())}, w.gIk);
  m[an::kCosSin] = tensorOf(DType::BF16, {w.maxPositions, int64_t(w.cosSin.size()) / w.maxPositions}, w.cosSin);
  const mm::AttentionRows& R = a.rows;
  m[an::kPositions] = tensorOf(DType::I64, {S}, R.positions);
  m[an::kSlots] = tensorOf(DType::I64, {S}, R.slots);
  m[an::kIndexSlots] = tensorOf(DType::I64, {S}, R.indexSlots);
  m[an::kSeqLens] = tensorOf(DType::I32, {S}, R.seqLens);
  m[an::kBlockTables] = tensorOf(DType::I32, {S, R.tableWidth}, R.tables);
  if (plan.argIndex(an::kIndexTables) >= 0) m[an::kIndexTables] = tensorOf(DType::I32, {S, R.tableWidth}, R.indexTables);
  for (int r = 0; r < a.TP; ++r) {
    const int64_t rows = int64_t(w.sQkv.at(r).size());
    m[mm::rankName(an::kWQkv, r)] = tensorOf(DType::U8, {rows, H}, w.wQkv.at(r));
    m[mm::rankName(an::kSQkv, r)] = tensorOf(DType::F32, {rows}, w.sQkv.at(r));
    m[mm::rankName(an::kKScale, r)] = tensorOf(DType::F32, {1}, a.caches.at(r).kScale);
    m[mm::rankName(an::kVScale, r)] = tensorOf(DType::F32, {1}, a.caches.at(r).vScale);
    if (withCaches) putCaches(m, a.caches.at(r), r);
  }
  // The FFN's weights, as makeLaunchInputs holds them (per rank ones as "<name>.r<r>").
  for (const ir::KernelArg& k : plan.args) {
    if (!k.isPointer || k.role != ir::ArgRole::Weight || m.count(k.name) || m.count(mm::rankName(k.name, 0))) continue;
    for (int r = 0; r < a.TP; ++r) {
      const std::string n = mm::launchTensorName(k.name, r);
      if (auto it = in.ffn.find(n); it != in.ffn.end()) m[n] = it->second;
    }
  }
  return m;
}

/// The next decode step of `in` after `ref`: every live row one position on, in the caches the
/// reference left; x and res drawn again (seed).
mm::LayerInputs nextStep(const mm::ModelConfig& cfg, const mm::LayerInputs& in, const mm::LayerReference& ref,
                         const mm::AttentionInputOptions& o, uint64_t seed) {
  mm::LayerInputs next = in;
  mm::AttentionLaunch& a = next.attention;
  const mm::AttentionLaunch fresh = mm::makeAttentionLaunch(cfg, a.S, a.TP, seed, o);
  a.x = fresh.x;
  a.res = fresh.res;
  for (int r = 0; r < a.TP; ++r) a.caches[r] = ref.attention.ranks[r].caches;
  mm::AttentionRows& R = a.rows;
  const mm::KvCacheGeometry& g = a.caches[0].kv;
  for (int t = 0; t < R.S; ++t) {
    if (!R.live(t)) continue;
    const int64_t pos = ++R.positions[t];
    ++R.seqLens[t];
    const int64_t b = pos / g.block;
    if (b >= R.tableWidth)
      throw InputError("make_layer_steps", fmt::format("row {}: position {} is past its table ({} blocks): expected a "
                                                       "context that leaves room for the steps", t, pos, R.tableWidth));
    R.slots[t] = g.slotOf(g.blockOfEntry(R.tables[size_t(t) * R.tableWidth + b], "make_layer_steps"),
                          static_cast<int>(pos % g.block));
    R.indexSlots[t] = a.caches[0].index.slotOf(mm::indexBlockOf(R, a.mode, t, b), static_cast<int>(pos % g.block));
  }
  next.ffn[mm::arg::kSlots] = tensorOf(DType::I64, {R.S}, R.slots);
  return next;
}

}  // namespace

void bindLayerReference(py::module_& m) {
  m.def(
      "make_layer_steps",
      [](py::handle config, int rows, int tp, uint64_t seed, const std::string& layer, int context, int steps,
         int paddedRows) {
        const mm::ModelConfig cfg = configOf(config);
        if (layer != "sparse" && layer != "full")
          throw InputError("make_layer_steps, layer", fmt::format("\"{}\": expected \"sparse\" or \"full\"", layer));
        mm::AttentionInputOptions o;
        o.fullLayer = layer == "full";
        o.context = context;
        o.paddedRows = paddedRows;
        mm::AttentionKnobs knobs;
        knobs.fullLayer = o.fullLayer;
        py::list out;
        std::vector<std::pair<runtime::TensorMap, runtime::TensorMap>> made;
        {
          py::gil_scoped_release nogil;
          const ir::Plan plan = mm::buildLayerPlan(cfg, mm::makeLayerKey(cfg, rows, tp, knobs));
          mm::LayerInputs in = mm::makeLayerInputs(cfg, rows, tp, seed, o);
          for (int k = 0; k < steps; ++k) {
            const mm::LayerReference ref = mm::layerReference(cfg, in);
            runtime::TensorMap want;
            for (int r = 0; r < tp; ++r) {
              for (const char* n : {mm::arg::kOut, mm::arg::kResOut}) want[mm::rankName(n, r)] = ref.ffn.at(mm::rankName(n, r));
              putCaches(want, ref.attention.ranks[r].caches, r);
            }
            made.emplace_back(stepInputs(cfg, in, plan, k == 0), std::move(want));
            if (k + 1 < steps) in = nextStep(cfg, in, ref, o, seed + 1000 * (k + 1));
          }
        }
        for (const auto& [inputs, want] : made) {
          py::dict d;
          d["inputs"] = toPython(inputs);
          d["reference"] = toPython(want);
          out.append(d);
        }
        return out;
      },
      py::arg("config"), py::arg("rows"), py::arg("tp"), py::arg("seed"), py::arg("layer") = "sparse",
      py::arg("context") = 128, py::arg("steps") = 1, py::arg("padded_rows") = 0,
      "`steps` consecutive decode steps of the layer on TP ranks (vLLM's cache layout): a list of {inputs, reference}, "
      "each {name: (dtype, shape, bytes)}, per-rank tensors as \"<name>.r<rank>\". The first step's inputs hold the "
      "caches (kv_cache, index_cache); each reference holds out, res_out and the caches after the step, which the "
      "next step reads.");
}

}  // namespace monogen::python
