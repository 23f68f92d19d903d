#include "bindings/FfnRunner.h"

#include <fmt/format.h>

#include <algorithm>

#include "bindings/Bindings.h"
#include "bindings/Config.h"
#include "bindings/Input.h"
#include "bindings/TorchTensor.h"
#include "ir/Error.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/kernel/WeightContract.h"
#include "specs/minimax_m3/testing/RankHarness.h"

namespace monogen::python {

namespace mm = specs::minimax_m3;
using runtime::LaunchArg;

namespace {

bool callerTensor(const ir::KernelArg& a) {
  return a.isPointer && (a.role == ir::ArgRole::Input || a.role == ir::ArgRole::Output || a.role == ir::ArgRole::Weight);
}

}  // namespace

FfnRunner::FfnRunner(mm::ModelConfig cfg, FfnRunnerOptions opts)
    : LaunchRunner("FfnRunner", std::move(cfg), opts), input_(opts.input) {
  mm::FfnKnobs knobs;
  knobs.scales = mm::scaleLayoutOf(opts.scales, where("__init__") + ", scales");
  knobs.input = opts.input;
  const mm::ModelConfig& c = cfg_;
  start([&c](std::shared_ptr<runtime::Cache> cache) { return mm::makeGenerator(c, std::move(cache)); },
        mm::rankRuntimeOptions(cfg_, opts_.rank, opts_.tp, opts_.rows, knobs));
}

std::string FfnRunner::missingPeers(int rows, int32_t tag) { return mm::missingPeers(cfg_, *rt_, rows, tag); }

void FfnRunner::launch(const py::dict& tensors, const py::dict& scalars, uint64_t stream) {
  auto one = oneLaunch();
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
  std::vector<Given> given;
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
    TensorView v = readOnDevice(tensors[a.name.c_str()], aw);
    checkTensor(v, a, tensorDevice_, aw);
    const bool out = a.role == ir::ArgRole::Output;
    given.push_back({&a, a.name, std::move(v), !out, out});
  }
  checkNoOverlap(given, at);
  run(S, given, {}, scalarArgs(S, scalars, {}, at), stream, at);
}

void bindFfnRunner(py::module_& m) {
  py::class_<FfnRunner> c(m, "FfnRunner",
                          "One rank of the MiniMax-M3 FFN launch (python/bindings/FfnRunner.h); use "
                          "monogen.minimax_m3.FfnRunner, which wraps it.");
  c.def(py::init([](py::handle config, int tp, int rank, std::vector<int> rows, std::string device, int ordinal,
                       int64_t waitTicks, py::object progress, std::string scales, py::handle input) {
             FfnRunnerOptions o;
             static_cast<RunnerOptions&>(o) =
                 runnerOptions(tp, rank, std::move(rows), std::move(device), ordinal, waitTicks, std::move(progress));
             o.scales = std::move(scales);
             o.input = inputOf(input, fmt::format("FfnRunner.__init__, rank {} of TP {}, input", rank, tp));
             return std::make_unique<FfnRunner>(configOf(config), std::move(o));
           }),
           py::arg("config"), py::arg("tp"), py::arg("rank"), py::arg("rows"), py::arg("device") = "sim",
           py::arg("device_ordinal") = -1, py::arg("wait_ticks") = 2'000'000'000, py::arg("progress") = py::none(),
           py::arg("scales") = "e8m0_shuffle", py::arg("input") = "attn")
      .def("arguments", &FfnRunner::arguments, py::arg("rows"))
      .def_property_readonly("input", &FfnRunner::input);
  bindRunnerSteps(c);
}

}  // namespace monogen::python
