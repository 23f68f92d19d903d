// One rank of the MiniMax-M3 FFN launch for a Python serving process: the per-rank runtime on a
// SimRankDevice (CPU tensors, copied in and out) or a HipRankDevice (GPU tensors, bound in place),
// binding torch tensors by the Plan's argument list. docs/python.md.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/Generator.h"
#include "runtime/RankDevice.h"
#include "runtime/RankRuntime.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/testing/RankHarness.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

namespace monogen::python {

namespace py = pybind11;

struct FfnRunnerOptions {
  int tp = 1, rank = 0;
  std::vector<int> rows;        // the S values served (each warmed up)
  std::string device = "sim";   // "sim" or "hip"
  int deviceOrdinal = -1;       // hip: the GPU (-1: the rank's)
  int64_t waitTicks = 0;        // the default wait_ticks (100 MHz ticks; the Sim counts idle real time)
  /// The layout the caller holds s13 / s2 in ("e8m0_shuffle": what vLLM and SGLang hold after
  /// loading; "rowmajor"): it picks the variant that reads that layout (the scales knob) and is
  /// declared on those tensors at every bind (WeightContract.h: shapes cannot tell them apart).
  std::string scales = "e8m0_shuffle";
  /// What the launch takes (bindings/Input.h): attn (the attention rows, with wo / wo_scale among
  /// the weights; o_proj in the launch, the default) or part (the o_proj partial). It picks the
  /// variant (the input knob): the Plan's input argument is then `attn` or `part`.
  specs::minimax_m3::FfnInput input = specs::minimax_m3::FfnInput::Attn;
  py::object progress;          // None or a callable taking each warm-up line
};

class FfnRunner {
 public:
  FfnRunner(specs::minimax_m3::ModelConfig cfg, FfnRunnerOptions opts);
  ~FfnRunner();

  void allocate() { rt_->allocate(); }
  py::bytes exportHandle();
  void openPeers(const std::vector<py::bytes>& handles);
  void peersOpened() { rt_->peersOpened(); }
  /// The warm-up's progress lines (also passed to opts.progress as they come).
  std::vector<std::string> warmUp();
  /// One launch. Serialized: a second thread's launch on this runner waits (GIL released) until
  /// the first has ended (the Sim: run and copied back; HIP: enqueued).
  void launch(const py::dict& tensors, const py::dict& scalars, uint64_t stream);

  /// The caller's arguments of S's Plan, in Plan order: {name, role, dtype, shape, doc} dicts
  /// (tensors: role "input" / "output" / "weight", dtype the torch dtype; scalars: role
  /// "scalar", dtype "int32" / "int64").
  py::list arguments(int rows) const;
  const std::vector<int>& rows() const { return rt_->rows(); }
  int tp() const { return rt_->tp(); }
  int rank() const { return rt_->rank(); }
  std::string deviceName() const { return dev_->name(); }
  /// "attn" or "part": the launch's input, the name of its Plan argument.
  const char* input() const { return specs::minimax_m3::ffnInputName(opts_.input); }
  /// "cpu" for the Sim, "cuda" for HIP (what torch calls a ROCm GPU).
  const std::string& tensorDevice() const { return tensorDevice_; }
  /// Bound launches kept (at most kMaxBound), for tests.
  size_t boundCount() const { return bound_.size(); }

 private:
  std::string where(const std::string& step) const;
  bool sim() const { return opts_.device == "sim"; }

  specs::minimax_m3::ModelConfig cfg_;
  FfnRunnerOptions opts_;
  std::string tensorDevice_;
  std::unique_ptr<runtime::RankDevice> dev_;
  std::unique_ptr<runtime::Generator> gen_;
  std::unique_ptr<runtime::RankRuntime> rt_;  // after dev_ and gen_: destroyed first
  std::vector<std::string> progressLines_;                     // the last warm-up's
  std::map<int, specs::minimax_m3::RankIo> simIo_;               // sim: the Sim copies, per S
  /// Bound launches by (S, scalars[, data_ptrs]), the least recently used unbound past kMaxBound:
  /// an eager caller passing fresh outputs every step stays bounded.
  static constexpr size_t kMaxBound = 64;
  struct Bound {
    runtime::BoundLaunch* launch;
    uint64_t used;
  };
  std::map<std::vector<int64_t>, Bound> bound_;
  uint64_t launches_ = 0;
  std::mutex launching_;  // held through launch(): one launch of this runner at a time
};

}  // namespace monogen::python
