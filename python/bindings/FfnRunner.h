// One rank of the MiniMax-M3 FFN launch for a Python serving process (vLLM / SGLang style: one
// process a GPU): the per-rank runtime (runtime/RankRuntime.h) on a per-rank device, taking the
// framework's torch tensors. python/monogen/minimax_m3.py wraps it as monogen.minimax_m3.FfnRunner.
//
// Steps, in RankRuntime's order: allocate, export_handle (bytes for the framework's
// all_gather_object), open_peers (every rank's bytes), peers_opened (after the framework's
// barrier), warm_up, then launch as often as the model runs.
//
// launch(tensors, scalars, stream) binds by the Plan's argument list, not by a fixed set of
// names: every Input, Output and Weight tensor argument of S's Plan must be in `tensors` (by
// argument name), nothing else may be; every scalar the runtime does not own may be in
// `scalars` (wait_ticks defaults to the runner's, the others to 0). S is the row count of the
// Plan's first Input tensor, the launch's input (`attn` or `part`, as opts.input picked the
// variant). Each tensor's device, dtype, shape, strides and data_ptr()
// are checked against the Plan before anything runs (InputError naming the argument, expected,
// given).
//
// Devices:
// - "sim" (CPU tensors): a SimRankDevice. The Sim has its own memory, so the runner keeps one
//   Sim copy of every caller tensor per S (RankHarness's allocRankIo) and, at every launch,
//   copies every Input and Weight tensor in (weights too: the Sim cannot alias host memory),
//   runs the launch to its end (the stream argument is accepted and ignored: the Sim has no
//   streams), copies every Output tensor back, and reads the rank's error word: a failed
//   launch (a peer that never came, a wait out of its bound) raises RuntimeError with the
//   error word's meaning and the ranks whose pairs are missing, and the word is cleared.
// - "hip" (GPU tensors of a ROCm torch, device type "cuda"): a HipRankDevice. The tensors are
//   bound in place (no copies); a bound launch is kept per (S, data_ptrs, scalars), so a graph
//   capture replays fixed addresses; launch enqueues on `stream` (a hipStream_t as an int, 0 the
//   null stream) and returns. NOT RUN HERE: no GPU, no ROCm torch.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
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

 private:
  std::string where(const std::string& step) const;

  specs::minimax_m3::ModelConfig cfg_;
  FfnRunnerOptions opts_;
  std::string tensorDevice_;
  std::unique_ptr<runtime::RankDevice> dev_;
  std::unique_ptr<runtime::Generator> gen_;
  std::unique_ptr<runtime::RankRuntime> rt_;  // after dev_ and gen_: destroyed first
  std::vector<std::string> progressLines_;                     // the last warm-up's
  std::map<int, specs::minimax_m3::RankIo> simIo_;               // sim: the Sim copies, per S
  std::map<std::vector<int64_t>, runtime::BoundLaunch*> bound_;  // by (S, scalars[, data_ptrs])
};

}  // namespace monogen::python
