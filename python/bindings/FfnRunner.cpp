#include "bindings/FfnRunner.h"

#include <fmt/format.h>

#include <algorithm>

#include "bindings/Bindings.h"
#include "bindings/Config.h"
#include "bindings/Input.h"
#include "bindings/TorchTensor.h"
#include "ir/Error.h"
#include "runtime/HipRankDevice.h"
#include "runtime/sim/SimRankDevice.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

namespace monogen::python {

namespace mm = specs::minimax_m3;
using runtime::LaunchArg;

namespace {

bool callerTensor(const ir::KernelArg& a) {
  return a.isPointer && (a.role == ir::ArgRole::Input || a.role == ir::ArgRole::Output || a.role == ir::ArgRole::Weight);
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

FfnRunner::FfnRunner(mm::ModelConfig cfg, FfnRunnerOptions opts) : cfg_(std::move(cfg)), opts_(std::move(opts)) {
  std::shared_ptr<runtime::Cache> cache;
  if (opts_.device == "sim") {
    tensorDevice_ = "cpu";
    dev_ = std::make_unique<runtime::SimRankDevice>(opts_.rank, opts_.tp);
  } else if (opts_.device == "hip") {
    tensorDevice_ = "cuda";
    dev_ = std::make_unique<runtime::HipRankDevice>(opts_.rank, opts_.tp, opts_.deviceOrdinal);
    cache = mm::defaultCache();  // the code objects: compiled once, then from disk
  } else {
    throw InputError("FfnRunner", fmt::format("device '{}': expected \"sim\" (CPU tensors) or \"hip\" (a ROCm GPU)",
                                              opts_.device));
  }
  gen_.reset(new runtime::Generator(mm::makeGenerator(cfg_, cache)));
  mm::FfnKnobs knobs;
  knobs.scales = mm::scaleLayoutOf(opts_.scales, where("__init__") + ", scales");
  knobs.input = opts_.input;
  runtime::RankRuntimeOptions ro = mm::rankRuntimeOptions(cfg_, opts_.rank, opts_.tp, opts_.rows, knobs);
  ro.progress = [this](const std::string& line) {  // kept for warmUp's result, and passed on
    progressLines_.push_back(line);
    if (opts_.progress.is_none()) return;
    py::gil_scoped_acquire gil;
    opts_.progress(line);
  };
  rt_ = std::make_unique<runtime::RankRuntime>(*gen_, *dev_, std::move(ro));
}

FfnRunner::~FfnRunner() = default;  // rt_ first, then gen_ and dev_ (declaration order)

std::string FfnRunner::where(const std::string& step) const {
  return fmt::format("FfnRunner.{}, rank {} of TP {}", step, opts_.rank, opts_.tp);
}

py::bytes FfnRunner::exportHandle() {
  const std::vector<uint8_t> h = rt_->exportHandle();
  return py::bytes(reinterpret_cast<const char*>(h.data()), h.size());
}

void FfnRunner::openPeers(const std::vector<py::bytes>& handles) {
  std::vector<std::vector<uint8_t>> all;
  for (const py::bytes& b : handles) {
    const std::string s = b;
    all.emplace_back(s.begin(), s.end());
  }
  py::gil_scoped_release nogil;
  rt_->openPeers(all);
}

std::vector<std::string> FfnRunner::warmUp() {
  progressLines_.clear();
  {
    py::gil_scoped_release nogil;  // a HIP warm-up compiles; the progress callback takes the GIL back
    rt_->warmUp();
  }
  return progressLines_;
}

py::list FfnRunner::arguments(int rows) const {
  const ir::Plan& plan = rt_->plan(rows);
  py::list out;
  for (const ir::KernelArg& a : plan.args) {
    if (rt_->owns(rows, a.name)) continue;
    py::dict d;
    d["name"] = a.name;
    if (a.isPointer) {
      d["role"] = a.role == ir::ArgRole::Input ? "input" : a.role == ir::ArgRole::Output ? "output" : "weight";
      const auto dt = torchDtypesFor(a.elem);
      d["dtype"] = dt.empty() ? std::string("?") : dt[0];
      d["dtypes"] = dt;  // every torch dtype accepted (byte views of FP8 / FP4 / E8M0 too)
      d["shape"] = py::tuple(py::cast(a.shape));
    } else {
      d["role"] = "scalar";
      d["dtype"] = a.elem == ir::Scalar::I64 ? "int64" : "int32";
      d["dtypes"] = std::vector<std::string>{d["dtype"].cast<std::string>()};
      d["shape"] = py::tuple();
    }
    d["doc"] = a.doc;
    out.append(d);
  }
  return out;
}

void FfnRunner::launch(const py::dict& tensors, const py::dict& scalars, uint64_t stream) {
  std::unique_lock<std::mutex> one(launching_, std::try_to_lock);
  if (!one.owns_lock()) {  // another thread is launching: wait without the GIL it may need
    py::gil_scoped_release nogil;
    one.lock();
  }
  // S: the row count of the Plan's first Input tensor (attn or part: the launch's input).
  const ir::Plan& first = rt_->plan(rt_->rows().front());
  const auto lead = std::find_if(first.args.begin(), first.args.end(), [](const ir::KernelArg& a) {
    return a.isPointer && a.role == ir::ArgRole::Input && !a.shape.empty();
  });
  const std::string leadName = lead->name;
  if (!tensors.contains(leadName))
    throw InputError(where("launch"), fmt::format("no tensor '{}' (it gives S, its row count)", leadName));
  const TensorView leadView = readTensor(tensors[leadName.c_str()], where("launch") + ", argument '" + leadName + "'");
  const auto& served = rt_->rows();
  if (leadView.shape.empty() || std::find(served.begin(), served.end(), leadView.shape[0]) == served.end()) {
    std::vector<std::string> s;
    for (int r : served) s.push_back(std::to_string(r));
    std::vector<int64_t> want = lead->shape;
    throw InputError(where("launch") + ", argument '" + leadName + "'",
                     fmt::format("{} gives S = {}: this runner serves S in {{{}}} (expected [S{}] with one of them, as "
                                 "warmed up; build the runner with rows=[...] for more)",
                                 leadView.describe(), leadView.shape.empty() ? 0 : leadView.shape[0], joined(s),
                                 [&] {
                                   std::string t;
                                   for (size_t i = 1; i < want.size(); ++i) t += fmt::format(", {}", want[i]);
                                   return t;
                                 }()));
  }
  const int S = static_cast<int>(leadView.shape[0]);
  const ir::Plan& plan = rt_->plan(S);
  const std::string at = fmt::format("{}, S = {}", where("launch"), S);

  // Every caller tensor, checked; nothing unknown.
  std::vector<std::pair<const ir::KernelArg*, TensorView>> views;
  std::vector<std::string> expected;
  for (const ir::KernelArg& a : plan.args)
    if (callerTensor(a)) expected.push_back(a.name);
  for (auto [k, v] : tensors) {
    const std::string name = py::str(k);
    if (std::find(expected.begin(), expected.end(), name) == expected.end())
      throw InputError(at, fmt::format("unknown tensor argument '{}': the Plan's tensors are {}", name, joined(expected)));
  }
  for (const ir::KernelArg& a : plan.args) {
    if (!callerTensor(a)) continue;
    const std::string aw = fmt::format("{}, argument '{}'", at, a.name);
    if (!tensors.contains(a.name)) {
      const auto dt = torchDtypesFor(a.elem);
      throw InputError(aw, fmt::format("missing: expected {} {} ({})", dt.empty() ? "?" : dt[0], shapeText(a.shape), a.doc));
    }
    TensorView v = readTensor(tensors[a.name.c_str()], aw);
    checkTensor(v, a, tensorDevice_, aw);
    const int gpu = opts_.deviceOrdinal >= 0 ? opts_.deviceOrdinal : opts_.rank;  // HipRankDevice's choice
    if (!sim() && v.deviceIndex >= 0 && v.deviceIndex != gpu)
      throw InputError(aw, fmt::format("on {}: this runner launches on cuda:{}; expected the tensor there",
                                       v.describe(), gpu));
    views.emplace_back(&a, std::move(v));
  }
  // No output may share memory with another tensor: the launch reads its inputs while it writes
  // (on the Sim one copy-back would overwrite the other; on HIP they would race).
  for (const auto& [a, v] : views) {
    if (a->role != ir::ArgRole::Output) continue;
    for (const auto& [b, u] : views) {
      if (a == b || u.bytes() == 0 || v.bytes() == 0) continue;
      if (v.ptr < u.ptr + static_cast<uint64_t>(u.bytes()) && u.ptr < v.ptr + static_cast<uint64_t>(v.bytes()))
        throw InputError(fmt::format("{}, argument '{}'", at, a->name),
                         fmt::format("shares memory with argument '{}' (data_ptr {:#x}, {} bytes and {:#x}, {} bytes): "
                                     "an output must be a tensor of its own (no in-place launch)",
                                     b->name, v.ptr, v.bytes(), u.ptr, u.bytes()));
    }
  }
  // The scalars the runtime does not own.
  std::vector<std::string> scalarNames;
  std::vector<int64_t> key{S};
  runtime::RankArgs args;
  for (const ir::KernelArg& a : plan.args) {
    if (a.isPointer || rt_->owns(S, a.name)) continue;
    scalarNames.push_back(a.name);
    int64_t value = a.name == mm::arg::kWaitTicks ? opts_.waitTicks : 0;
    if (scalars.contains(a.name)) {
      py::handle h = scalars[a.name.c_str()];
      if (!py::isinstance<py::int_>(h) || py::isinstance<py::bool_>(h))
        throw InputError(fmt::format("{}, scalar '{}'", at, a.name),
                         fmt::format("a {} was given: expected an int", py::str(py::type::handle_of(h).attr("__name__"))
                                                                             .cast<std::string>()));
      value = h.cast<int64_t>();
    }
    args[a.name] = LaunchArg::scalar(value);
    key.push_back(value);
  }
  for (auto [k, v] : scalars) {
    const std::string name = py::str(k);
    if (std::find(scalarNames.begin(), scalarNames.end(), name) == scalarNames.end())
      throw InputError(at, fmt::format("unknown scalar '{}': the caller's scalars are {}", name, joined(scalarNames)));
  }

  if (sim()) {
    auto io = simIo_.find(S);
    if (io == simIo_.end()) io = simIo_.emplace(S, mm::allocRankIo(*dev_, plan)).first;
    for (const auto& [a, v] : views) args[a->name] = LaunchArg::tensor(io->second.addr.at(a->name), *runtime::dtypeFor(a->elem), a->shape);
  } else {
    for (const auto& [a, v] : views) {
      args[a->name] = LaunchArg::tensor(v.ptr, *runtime::dtypeFor(a->elem), a->shape);
      key.push_back(static_cast<int64_t>(v.ptr));
    }
  }
  auto b = bound_.find(key);
  if (b == bound_.end()) {  // checked and packed once
    for (const auto& [name, layout] : mm::argLayouts(plan)) args.at(name).layout = layout;  // opts_.scales, declared
    if (bound_.size() >= kMaxBound) {
      auto oldest = std::min_element(bound_.begin(), bound_.end(),
                                     [](const auto& x, const auto& y) { return x.second.used < y.second.used; });
      rt_->unbind(*oldest->second.launch);
      bound_.erase(oldest);
    }
    b = bound_.emplace(key, Bound{&rt_->bind(S, args), 0}).first;
  }
  b->second.used = ++launches_;

  if (!sim()) {
    py::gil_scoped_release nogil;
    rt_->launch(*b->second.launch, reinterpret_cast<void*>(stream));
    return;
  }
  const specs::minimax_m3::RankIo& io = simIo_.at(S);
  py::gil_scoped_release nogil;
  for (const auto& [a, v] : views)
    if (a->role != ir::ArgRole::Output) dev_->upload(io.addr.at(a->name), reinterpret_cast<const void*>(v.ptr), v.bytes());
  int32_t epoch = 0;
  dev_->download(&epoch, rt_->buffer(S, mm::arg::kEpoch), 4);
  rt_->launch(*b->second.launch);  // the Sim runs it to its end; `stream` is ignored
  dev_->synchronize(nullptr);
  for (const auto& [a, v] : views)
    if (a->role == ir::ArgRole::Output) dev_->download(reinterpret_cast<void*>(v.ptr), io.addr.at(a->name), v.bytes());
  runtime::TensorMap err;
  const std::string errName = fmt::format("err.r{}", opts_.rank);
  err[errName] = runtime::HostTensor::zeros(runtime::DType::I32, {2});
  const uint64_t errAddr = rt_->buffer(S, mm::arg::kErr);
  dev_->download(err[errName].data.data(), errAddr, 8);
  if (const std::string e = mm::rankError(err, opts_.rank); !e.empty()) {
    std::string why = e;
    if (const std::string m = mm::missingPeers(cfg_, *rt_, S, mm::launchTagAfter(epoch)); !m.empty()) why += "; " + m;
    dev_->zero(errAddr, 8);  // handled: the next launch may set it again
    throw RuntimeError(at, "the launch failed: " + why);
  }
}

void bindFfnRunner(py::module_& m) {
  py::class_<FfnRunner>(m, "FfnRunner",
                        "One rank of the MiniMax-M3 FFN launch (python/bindings/FfnRunner.h); use "
                        "monogen.minimax_m3.FfnRunner, which wraps it.")
      .def(py::init([](py::handle config, int tp, int rank, std::vector<int> rows, std::string device, int ordinal,
                       int64_t waitTicks, py::object progress, std::string scales, py::handle input) {
             FfnRunnerOptions o;
             o.tp = tp;
             o.rank = rank;
             o.rows = std::move(rows);
             o.device = std::move(device);
             o.deviceOrdinal = ordinal;
             o.waitTicks = waitTicks;
             o.progress = std::move(progress);
             o.scales = std::move(scales);
             o.input = inputOf(input, fmt::format("FfnRunner.__init__, rank {} of TP {}, input", rank, tp));
             return std::make_unique<FfnRunner>(configOf(config), std::move(o));
           }),
           py::arg("config"), py::arg("tp"), py::arg("rank"), py::arg("rows"), py::arg("device") = "sim",
           py::arg("device_ordinal") = -1, py::arg("wait_ticks") = 2'000'000'000, py::arg("progress") = py::none(),
           py::arg("scales") = "e8m0_shuffle", py::arg("input") = "attn")
      .def("allocate", &FfnRunner::allocate)
      .def("export_handle", &FfnRunner::exportHandle)
      .def("open_peers", &FfnRunner::openPeers, py::arg("handles"))
      .def("peers_opened", &FfnRunner::peersOpened)
      .def("warm_up", &FfnRunner::warmUp)
      .def("launch", &FfnRunner::launch, py::arg("tensors"), py::arg("scalars") = py::dict(), py::arg("stream") = 0)
      .def("arguments", &FfnRunner::arguments, py::arg("rows"))
      .def_property_readonly("rows", &FfnRunner::rows)
      .def_property_readonly("tp", &FfnRunner::tp)
      .def_property_readonly("rank", &FfnRunner::rank)
      .def_property_readonly("device_name", &FfnRunner::deviceName)
      .def_property_readonly("input", &FfnRunner::input)
      .def_property_readonly("tensor_device", &FfnRunner::tensorDevice)
      .def_property_readonly("bound_count", &FfnRunner::boundCount);
}

}  // namespace monogen::python
