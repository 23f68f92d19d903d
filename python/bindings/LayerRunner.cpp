#include "bindings/LayerRunner.h"

#include <fmt/format.h>

#include <algorithm>

#include "bindings/Bindings.h"
#include "bindings/Config.h"
#include "bindings/TorchTensor.h"
#include "ir/Error.h"
#include "specs/minimax_m3/kernel/AttentionContext.h"
#include "specs/minimax_m3/kernel/AttentionLayout.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/testing/LayerRankHarness.h"
#include "specs/minimax_m3/testing/RankHarness.h"

namespace monogen::python {

namespace mm = specs::minimax_m3;
namespace an = specs::minimax_m3::attn_arg;

namespace {

/// The Plan's outputs the layer writes for itself (the attention rows and residual, q, the index q).
bool intermediate(const std::string& name) {
  return name == mm::arg::kAttn || name == mm::arg::kResIn || name == an::kQ || name == an::kIq;
}

}  // namespace

LayerRunner::LayerRunner(mm::ModelConfig cfg, LayerRunnerOptions opts)
    : LaunchRunner("LayerRunner", std::move(cfg), opts), layerOpts_(opts) {
  if (opts.knobs.mode != mm::CacheMode::Vllm)
    throw InputError(where("__init__") + ", cache",
                     fmt::format("\"{}\": expected \"vllm\" (the runner binds vLLM's cache layout: one packed K/V "
                                 "tensor, scalar scales, the index cache's own slots and tables)",
                                 mm::cacheModeName(opts.knobs.mode)));
  const mm::ModelConfig& c = cfg_;
  runtime::RankRuntimeOptions ro = mm::layerRankRuntimeOptions(c, opts_.rank, opts_.tp, opts_.rows, opts.knobs);
  start([&c](std::shared_ptr<runtime::Cache> cache) { return mm::makeLayerGenerator(c, std::move(cache)); },
        std::move(ro));
}

bool LayerRunner::isOwn(int rows, const std::string& arg) const {
  return rt_->owns(rows, arg) || intermediate(arg) || arg == an::kTableStride;
}

std::string LayerRunner::missingPeers(int rows, int32_t tag) {
  return mm::missingPeers(mm::LayerVariant::make(cfg_, rt_->plan(rows).key).ffn, *rt_, tag);
}

LayerRunner::Expect LayerRunner::expect(int S, const ir::KernelArg& a) const {
  const mm::AttentionShape sh = mm::AttentionShape::make(cfg_, opts_.tp, opts_.rank, where("launch"));
  const mm::KvCacheGeometry kv;  // vLLM's block of 128 tokens
  const bool full = layerOpts_.knobs.fullLayer;
  Expect e{a.name, a.shape, shapeText(a.shape)};
  if (a.name == an::kKCache) {
    e.name = "kv_cache";
    e.shape = {-1, 2, int64_t{sh.kvHeads} * kv.block, sh.headDim};
    e.shapeText = fmt::format("[blocks, 2, {}, {}] (vLLM's packed cache: each block's K half, then its V half; {} KV "
                              "head{} x {} tokens x head_dim)",
                              e.shape[2], e.shape[3], sh.kvHeads, sh.kvHeads == 1 ? "" : "s", kv.block);
    e.inPlace = true;
  } else if (a.name == an::kKScale || a.name == an::kVScale) {
    e.shapeText = "[1] (vLLM's scalar scale)";
  } else if (a.name == an::kIndexCache) {
    e.shape = {-1, kv.block, sh.indexDim};
    e.shapeText = fmt::format("[index blocks, {}, {}] (the index keys, E4M3, token-major)", kv.block, sh.indexDim);
    e.optional = full;
    e.inPlace = !full;
  } else if (a.name == an::kIndexSlots) {
    e.optional = full;
  } else if (a.name == an::kBlockTables || a.name == an::kIndexTables) {
    e.shape = {S, -1};
    e.shapeText = fmt::format("[{}, table width]{}", S,
                              a.name == an::kIndexTables ? " (block_tables' width: one table stride)" : "");
  } else if (a.name == an::kCosSin) {
    e.shape = {-1, sh.rotaryDim};
    e.shapeText = fmt::format("[max positions, {}] (cos, then sin, of each position)", sh.rotaryDim);
  }
  return e;
}

py::list LayerRunner::callerArguments(int rows) const {
  py::list out = arguments(rows);
  const ir::Plan& plan = rt_->plan(rows);
  for (py::handle h : out) {
    py::dict d = py::reinterpret_borrow<py::dict>(h);
    const std::string name = d["name"].cast<std::string>();
    if (plan.argIndex(name) < 0 || !plan.arg(name).isPointer) continue;
    const Expect e = expect(rows, plan.arg(name));
    d["name"] = e.name;
    d["shape"] = py::tuple(py::cast(e.shape));
    d["optional"] = e.optional;
    d["in_place"] = e.inPlace;
  }
  return out;
}

const std::map<std::string, uint64_t>& LayerRunner::ownBuffers(int S) {
  auto it = own_.find(S);
  if (it != own_.end()) return it->second;
  std::map<std::string, uint64_t> m;
  for (const ir::KernelArg& a : rt_->plan(S).args) {
    if (!a.isPointer || !intermediate(a.name)) continue;
    m[a.name] = dev_->alloc(a.bytes(), mm::rankName(a.name, opts_.rank), 256);
    dev_->zero(m[a.name], a.bytes());
  }
  return own_.emplace(S, std::move(m)).first->second;
}

void LayerRunner::launch(const py::dict& tensors, const py::dict& scalars, uint64_t stream) {
  auto one = oneLaunch();
  const std::string lead = an::kX;
  if (!tensors.contains(lead))
    throw InputError(where("launch"), fmt::format("no tensor '{}' (it gives S, its row count)", lead));
  const TensorView leadView = readTensor(tensors[lead.c_str()], where("launch") + ", argument '" + lead + "'");
  const auto& served = rt_->rows();
  if (leadView.shape.size() != 2 || std::find(served.begin(), served.end(), leadView.shape[0]) == served.end()) {
    std::vector<std::string> s;
    for (int r : served) s.push_back(std::to_string(r));
    throw InputError(where("launch") + ", argument '" + lead + "'",
                     fmt::format("{} gives S = {}: this runner serves S in {{{}}} (expected [S, {}] with one of them, "
                                 "as warmed up; build the runner with rows=[...] for more)",
                                 leadView.describe(), leadView.shape.empty() ? 0 : leadView.shape[0], joined(s),
                                 cfg_.hidden));
  }
  const int S = static_cast<int>(leadView.shape[0]);
  const ir::Plan& plan = rt_->plan(S);
  const std::string at = fmt::format("{}, S = {}", where("launch"), S);

  // Every caller tensor checked, nothing unknown, before anything is bound or copied.
  std::vector<Expect> want;
  std::vector<std::string> names;
  for (const ir::KernelArg& a : plan.args) {
    want.push_back(a.isPointer && !isOwn(S, a.name) ? expect(S, a) : Expect{});
    if (!want.back().name.empty()) names.push_back(want.back().name);
  }
  for (auto [k, v] : tensors) {
    const std::string name = py::str(k);
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw InputError(at, fmt::format("unknown tensor argument '{}': the layer's tensors are {}", name, joined(names)));
  }
  std::vector<Given> given;
  std::map<std::string, uint64_t> owned = ownBuffers(S);
  std::map<std::string, const TensorView*> byName;
  given.reserve(plan.args.size());
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const ir::KernelArg& a = plan.args[i];
    const Expect& e = want[i];
    if (e.name.empty()) continue;
    const std::string aw = fmt::format("{}, argument '{}'", at, e.name);
    const auto dt = torchDtypesFor(a.elem);
    if (!tensors.contains(e.name) || tensors[e.name.c_str()].is_none()) {
      if (e.optional) {  // a full layer reads no index cache: a stand-in of the Plan's size
        const int64_t bytes = std::max<int64_t>(a.bytes(), 256);
        auto& own = own_[S][a.name];
        if (own == 0) {
          own = dev_->alloc(bytes, mm::rankName(a.name, opts_.rank), 256);
          dev_->zero(own, bytes);
        }
        owned[a.name] = own;
        continue;
      }
      throw InputError(aw, fmt::format("missing: expected {} {} ({})", dt.empty() ? "?" : dt[0], e.shapeText, a.doc));
    }
    TensorView v = readOnDevice(tensors[e.name.c_str()], aw);
    std::vector<int64_t> shape = e.shape;
    if ((a.name == an::kKScale || a.name == an::kVScale) && v.shape.empty()) shape = {};  // a 0-d scalar tensor too
    checkTensor(v, dt, shape, e.shapeText, tensorDevice_, aw);
    const bool out = a.role == ir::ArgRole::Output;
    given.push_back({&a, e.name, std::move(v), !out, out || e.inPlace});
  }
  for (const Given& g : given) byName[g.arg->name] = &g.view;
  // One table stride for both tables (the Plan's table_stride).
  const TensorView& table = *byName.at(an::kBlockTables);
  if (auto it = byName.find(an::kIndexTables); it != byName.end() && it->second->shape[1] != table.shape[1])
    throw InputError(fmt::format("{}, argument 'index_block_tables'", at),
                     fmt::format("{} is {} wide: expected block_tables' width, {} (one table stride)",
                                 it->second->describe(), it->second->shape[1], table.shape[1]));
  checkNoOverlap(given, at);
  run(S, given, owned, scalarArgs(S, scalars, {{an::kTableStride, table.shape[1]}}, at), stream, at);
}

void bindLayerRunner(py::module_& m) {
  py::class_<LayerRunner> c(m, "LayerRunner",
                            "One rank of the MiniMax-M3 one-launch decoder layer (python/bindings/LayerRunner.h); "
                            "use monogen.minimax_m3.LayerRunner, which wraps it.");
  c.def(py::init([](py::handle config, int tp, int rank, std::vector<int> rows, std::string device, int ordinal,
                       int64_t waitTicks, py::object progress, const std::string& cache, const std::string& layer) {
             LayerRunnerOptions o;
             static_cast<RunnerOptions&>(o) =
                 runnerOptions(tp, rank, std::move(rows), std::move(device), ordinal, waitTicks, std::move(progress));
             const std::string at = fmt::format("LayerRunner.__init__, rank {} of TP {}", rank, tp);
             if (layer != "sparse" && layer != "full")
               throw InputError(at + ", layer", fmt::format("\"{}\": expected \"sparse\" or \"full\"", layer));
             o.knobs = mm::AttentionKnobs::parse(fmt::format("cache={},layer={}", cache, layer), at);
             return std::make_unique<LayerRunner>(configOf(config), std::move(o));
           }),
           py::arg("config"), py::arg("tp"), py::arg("rank"), py::arg("rows"), py::arg("device") = "sim",
           py::arg("device_ordinal") = -1, py::arg("wait_ticks") = 2'000'000'000, py::arg("progress") = py::none(),
           py::arg("cache") = "vllm", py::arg("layer") = "sparse")
      .def("arguments", &LayerRunner::callerArguments, py::arg("rows"))
      .def_property_readonly("layer", &LayerRunner::layer);
  bindRunnerSteps(c);
}

}  // namespace monogen::python
