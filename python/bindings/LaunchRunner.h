// What every per-rank launch runner for Python shares (FfnRunner, LayerRunner): the per-rank
// runtime on a SimRankDevice (CPU tensors, copied in and out) or a HipRankDevice (GPU tensors,
// bound in place), its steps, the Plan's argument list, and one launch of checked tensors: the
// Sim's copies, the bound launches kept, the error word. docs/python.md.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bindings/TorchTensor.h"
#include "runtime/Cache.h"
#include "runtime/Generator.h"
#include "runtime/RankDevice.h"
#include "runtime/RankRuntime.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::python {

namespace py = pybind11;

struct RunnerOptions {
  int tp = 1, rank = 0;
  std::vector<int> rows;        // the S values served (each warmed up)
  std::string device = "sim";   // "sim" or "hip"
  int deviceOrdinal = -1;       // hip: the GPU (-1: the rank's)
  int64_t waitTicks = 0;        // the default wait_ticks (100 MHz ticks; the Sim counts idle real time)
  py::object progress;          // None or a callable taking each warm-up line
};

class LaunchRunner {
 public:
  virtual ~LaunchRunner();

  void allocate() { rt_->allocate(); }
  py::bytes exportHandle();
  void openPeers(const std::vector<py::bytes>& handles);
  void peersOpened() { rt_->peersOpened(); }
  /// The warm-up's progress lines (also passed to opts.progress as they come).
  std::vector<std::string> warmUp();

  /// The caller's arguments of S's Plan, in Plan order: {name, role, dtype, dtypes, shape, doc}
  /// dicts (tensors: role "input" / "output" / "weight", dtype the torch dtype; scalars: role
  /// "scalar", dtype "int32" / "int64"). Arguments the runner owns (isOwn) are left out.
  py::list arguments(int rows) const;
  const std::vector<int>& rows() const { return rt_->rows(); }
  int tp() const { return rt_->tp(); }
  int rank() const { return rt_->rank(); }
  std::string deviceName() const { return dev_->name(); }
  /// "cpu" for the Sim, "cuda" for HIP (what torch calls a ROCm GPU).
  const std::string& tensorDevice() const { return tensorDevice_; }
  /// Bound launches kept (at most kMaxBound), for tests.
  size_t boundCount() const { return bound_.size(); }

 protected:
  /// `kind` names the runner in messages ("FfnRunner"). The subclass calls start() next.
  LaunchRunner(std::string kind, specs::minimax_m3::ModelConfig cfg, RunnerOptions opts);
  /// Makes the generator (`makeGen`, given the code-object cache: null on the Sim) and the runtime.
  void start(const std::function<runtime::Generator(std::shared_ptr<runtime::Cache>)>& makeGen,
             runtime::RankRuntimeOptions ro);
  std::string where(const std::string& step) const;
  bool sim() const { return opts_.device == "sim"; }
  /// Arguments of the Plan a caller neither gives nor sees (the runtime's, and the subclass's own).
  virtual bool isOwn(int rows, const std::string& arg) const { return rt_->owns(rows, arg); }
  /// What a failed launch of S on `tag` adds to the error word's meaning ("" for nothing).
  virtual std::string missingPeers(int rows, int32_t tag) = 0;

  /// One caller tensor of a launch, checked. copyIn / copyBack: the Sim copies it in before the
  /// launch (inputs, weights, in-place state) and back after it (outputs, in-place state).
  struct Given {
    const ir::KernelArg* arg;
    std::string name;  // the caller's name for it (messages)
    TensorView view;
    bool copyIn, copyBack;
  };
  /// readTensor, then (on HIP) refuses a tensor on another GPU than the runner's.
  TensorView readOnDevice(py::handle t, const std::string& where) const;
  /// Refuses a written tensor (copyBack) sharing memory with any other given one.
  static void checkNoOverlap(const std::vector<Given>& given, const std::string& at);
  /// The Plan's caller scalars of S (not owned): the given ones checked as ints, the others
  /// wait_ticks -> opts.waitTicks, `fixed` ones as given there, the rest 0.
  runtime::RankArgs scalarArgs(int rows, const py::dict& scalars, const std::map<std::string, int64_t>& fixed,
                               const std::string& at) const;
  /// The launch: every Given bound (the Sim: its own copy, per S and name), `owned` buffers bound
  /// as they are, the scalars; bound once per (S, scalars, addresses); run; the Sim copies back and
  /// reads the error word (RuntimeError with its meaning). Takes the GIL released where it waits.
  void run(int rows, const std::vector<Given>& given, const std::map<std::string, uint64_t>& owned,
           runtime::RankArgs scalars, uint64_t stream, const std::string& at);
  /// Serializes launches of this runner (the GIL released while waiting).
  std::unique_lock<std::mutex> oneLaunch();

  specs::minimax_m3::ModelConfig cfg_;
  RunnerOptions opts_;
  std::string kind_;
  std::string tensorDevice_;
  std::unique_ptr<runtime::RankDevice> dev_;
  std::unique_ptr<runtime::Generator> gen_;
  std::unique_ptr<runtime::RankRuntime> rt_;  // after dev_ and gen_: destroyed first

 private:
  std::vector<std::string> progressLines_;  // the last warm-up's
  struct SimCopy {
    uint64_t addr;
    int64_t bytes;
  };
  std::map<std::pair<int, std::string>, SimCopy> simCopies_;  // sim: by (S, argument), grown when a tensor grows
  /// Bound launches by (S, scalars, addresses), the least recently used unbound past kMaxBound:
  /// an eager caller passing fresh outputs every step stays bounded.
  static constexpr size_t kMaxBound = 64;
  struct Bound {
    runtime::BoundLaunch* launch;
    uint64_t used;
  };
  std::map<std::vector<int64_t>, Bound> bound_;
  uint64_t launches_ = 0;
  std::mutex launching_;  // held through a launch: one launch of this runner at a time
};

/// "a, b, c".
std::string joined(const std::vector<std::string>& v);

/// The options every runner's Python constructor takes, in its argument order.
RunnerOptions runnerOptions(int tp, int rank, std::vector<int> rows, std::string device, int ordinal,
                            int64_t waitTicks, py::object progress);

/// What every runner class shows Python: the steps, launch, and the properties.
template <class R>
void bindRunnerSteps(py::class_<R>& c) {
  c.def("allocate", &R::allocate)
      .def("export_handle", &R::exportHandle)
      .def("open_peers", &R::openPeers, py::arg("handles"))
      .def("peers_opened", &R::peersOpened)
      .def("warm_up", &R::warmUp)
      .def("launch", &R::launch, py::arg("tensors"), py::arg("scalars") = py::dict(), py::arg("stream") = 0)
      .def_property_readonly("rows", &R::rows)
      .def_property_readonly("tp", &R::tp)
      .def_property_readonly("rank", &R::rank)
      .def_property_readonly("device_name", &R::deviceName)
      .def_property_readonly("tensor_device", &R::tensorDevice)
      .def_property_readonly("bound_count", &R::boundCount);
}

}  // namespace monogen::python
