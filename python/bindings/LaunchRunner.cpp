#include "bindings/LaunchRunner.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/Error.h"
#include "runtime/HipRankDevice.h"
#include "runtime/sim/SimRankDevice.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"
#include "specs/minimax_m3/testing/RankHarness.h"

namespace monogen::python {

namespace mm = specs::minimax_m3;
using runtime::LaunchArg;

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

RunnerOptions runnerOptions(int tp, int rank, std::vector<int> rows, std::string device, int ordinal,
                            int64_t waitTicks, py::object progress) {
  RunnerOptions o;
  o.tp = tp;
  o.rank = rank;
  o.rows = std::move(rows);
  o.device = std::move(device);
  o.deviceOrdinal = ordinal;
  o.waitTicks = waitTicks;
  o.progress = std::move(progress);
  return o;
}

LaunchRunner::LaunchRunner(std::string kind, mm::ModelConfig cfg, RunnerOptions opts)
    : cfg_(std::move(cfg)), opts_(std::move(opts)), kind_(std::move(kind)) {
  if (opts_.device == "sim") {
    tensorDevice_ = "cpu";
    dev_ = std::make_unique<runtime::SimRankDevice>(opts_.rank, opts_.tp);
  } else if (opts_.device == "hip") {
    tensorDevice_ = "cuda";
    dev_ = std::make_unique<runtime::HipRankDevice>(opts_.rank, opts_.tp, opts_.deviceOrdinal);
  } else {
    throw InputError(kind_, fmt::format("device '{}': expected \"sim\" (CPU tensors) or \"hip\" (a ROCm GPU)",
                                        opts_.device));
  }
}

LaunchRunner::~LaunchRunner() = default;  // rt_ first, then gen_ and dev_ (declaration order)

void LaunchRunner::start(const std::function<runtime::Generator(std::shared_ptr<runtime::Cache>)>& makeGen,
                         runtime::RankRuntimeOptions ro) {
  // HIP: the code objects compiled once, then from disk; the Sim needs Plans only
  gen_.reset(new runtime::Generator(makeGen(sim() ? nullptr : mm::defaultCache())));  // not movable: built in place
  ro.progress = [this](const std::string& line) {  // kept for warmUp's result, and passed on
    progressLines_.push_back(line);
    if (opts_.progress.is_none()) return;
    py::gil_scoped_acquire gil;
    opts_.progress(line);
  };
  rt_ = std::make_unique<runtime::RankRuntime>(*gen_, *dev_, std::move(ro));
}

std::string LaunchRunner::where(const std::string& step) const {
  return fmt::format("{}.{}, rank {} of TP {}", kind_, step, opts_.rank, opts_.tp);
}

py::bytes LaunchRunner::exportHandle() {
  const std::vector<uint8_t> h = rt_->exportHandle();
  return py::bytes(reinterpret_cast<const char*>(h.data()), h.size());
}

void LaunchRunner::openPeers(const std::vector<py::bytes>& handles) {
  std::vector<std::vector<uint8_t>> all;
  for (const py::bytes& b : handles) {
    const std::string s = b;
    all.emplace_back(s.begin(), s.end());
  }
  py::gil_scoped_release nogil;
  rt_->openPeers(all);
}

std::vector<std::string> LaunchRunner::warmUp() {
  progressLines_.clear();
  {
    py::gil_scoped_release nogil;  // a HIP warm-up compiles; the progress callback takes the GIL back
    rt_->warmUp();
  }
  return progressLines_;
}

py::list LaunchRunner::arguments(int rows) const {
  const ir::Plan& plan = rt_->plan(rows);
  py::list out;
  for (const ir::KernelArg& a : plan.args) {
    if (isOwn(rows, a.name)) continue;
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

std::unique_lock<std::mutex> LaunchRunner::oneLaunch() {
  std::unique_lock<std::mutex> one(launching_, std::try_to_lock);
  if (!one.owns_lock()) {  // another thread is launching: wait without the GIL it may need
    py::gil_scoped_release nogil;
    one.lock();
  }
  return one;
}

TensorView LaunchRunner::readOnDevice(py::handle t, const std::string& aw) const {
  TensorView v = readTensor(t, aw);
  const int gpu = opts_.deviceOrdinal >= 0 ? opts_.deviceOrdinal : opts_.rank;  // HipRankDevice's choice
  if (!sim() && v.device == tensorDevice_ && v.deviceIndex >= 0 && v.deviceIndex != gpu)
    throw InputError(aw, fmt::format("on {}: this runner launches on cuda:{}; expected the tensor there", v.describe(),
                                     gpu));
  return v;
}

void LaunchRunner::checkNoOverlap(const std::vector<Given>& given, const std::string& at) {
  // A written tensor must be its own: the launch reads its inputs while it writes (on the Sim one
  // copy-back would overwrite the other; on HIP they would race).
  for (const Given& a : given) {
    if (!a.copyBack) continue;
    for (const Given& b : given) {
      const TensorView &v = a.view, &u = b.view;
      if (&a == &b || u.bytes() == 0 || v.bytes() == 0) continue;
      if (v.ptr < u.ptr + static_cast<uint64_t>(u.bytes()) && u.ptr < v.ptr + static_cast<uint64_t>(v.bytes()))
        throw InputError(fmt::format("{}, argument '{}'", at, a.name),
                         fmt::format("shares memory with argument '{}' (data_ptr {:#x}, {} bytes and {:#x}, {} bytes): "
                                     "a tensor the launch writes must be a tensor of its own (no in-place launch)",
                                     b.name, v.ptr, v.bytes(), u.ptr, u.bytes()));
    }
  }
}

runtime::RankArgs LaunchRunner::scalarArgs(int S, const py::dict& scalars, const std::map<std::string, int64_t>& fixed,
                                           const std::string& at) const {
  std::vector<std::string> names;
  runtime::RankArgs args;
  for (const ir::KernelArg& a : rt_->plan(S).args) {
    if (a.isPointer) continue;
    if (auto f = fixed.find(a.name); f != fixed.end()) {  // the runner's, from the tensors
      args[a.name] = LaunchArg::scalar(f->second);
      continue;
    }
    if (isOwn(S, a.name)) continue;
    names.push_back(a.name);
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
  }
  for (auto [k, v] : scalars) {
    const std::string name = py::str(k);
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw InputError(at, fmt::format("unknown scalar '{}': the caller's scalars are {}", name, joined(names)));
  }
  return args;
}

void LaunchRunner::run(int S, const std::vector<Given>& given, const std::map<std::string, uint64_t>& owned,
                       runtime::RankArgs args, uint64_t stream, const std::string& at) {
  const ir::Plan& plan = rt_->plan(S);
  std::vector<int64_t> key{S};
  for (const ir::KernelArg& a : plan.args)
    if (auto it = args.find(a.name); it != args.end()) key.push_back(it->second.value);
  std::vector<uint64_t> where(given.size());  // the device address each Given is bound at
  for (size_t i = 0; i < given.size(); ++i) {
    const Given& g = given[i];
    if (sim()) {
      SimCopy& c = simCopies_[{S, g.arg->name}];
      if (c.bytes < g.view.bytes() || c.addr == 0)  // the Sim has no free: a grown tensor gets a new copy
        c = {dev_->alloc(std::max<int64_t>(g.view.bytes(), 1), mm::rankName(g.arg->name, opts_.rank), 256),
             g.view.bytes()};
      where[i] = c.addr;
    } else {
      where[i] = g.view.ptr;
    }
    args[g.arg->name] = LaunchArg::tensor(where[i], *runtime::dtypeFor(g.arg->elem), g.arg->shape);
    key.push_back(static_cast<int64_t>(where[i]));
  }
  for (const auto& [name, addr] : owned)
    args[name] = LaunchArg::tensor(addr, *runtime::dtypeFor(plan.arg(name).elem), plan.arg(name).shape);
  auto b = bound_.find(key);
  if (b == bound_.end()) {  // checked and packed once
    for (const auto& [name, layout] : gen_->argLayouts(plan)) args.at(name).layout = layout;  // declared
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
  int32_t epoch = 0;
  {
    py::gil_scoped_release nogil;
    for (size_t i = 0; i < given.size(); ++i)
      if (given[i].copyIn) dev_->upload(where[i], reinterpret_cast<const void*>(given[i].view.ptr), given[i].view.bytes());
    dev_->download(&epoch, rt_->buffer(S, mm::arg::kEpoch), 4);
    rt_->launch(*b->second.launch);  // the Sim runs it to its end; `stream` is ignored
    dev_->synchronize(nullptr);
    for (size_t i = 0; i < given.size(); ++i)
      if (given[i].copyBack) dev_->download(reinterpret_cast<void*>(given[i].view.ptr), where[i], given[i].view.bytes());
  }
  runtime::TensorMap err;
  const std::string errName = mm::rankName("err", opts_.rank);
  err[errName] = runtime::HostTensor::zeros(runtime::DType::I32, {2});
  const uint64_t errAddr = rt_->buffer(S, mm::arg::kErr);
  dev_->download(err[errName].data.data(), errAddr, 8);
  if (const std::string e = mm::rankError(err, opts_.rank); !e.empty()) {
    std::string why = e;
    if (const std::string m = missingPeers(S, mm::launchTagAfter(epoch)); !m.empty()) why += "; " + m;
    dev_->zero(errAddr, 8);  // handled: the next launch may set it again
    throw RuntimeError(at, "the launch failed: " + why);
  }
}

}  // namespace monogen::python
