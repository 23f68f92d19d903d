// One rank of the MiniMax-M3 FFN launch for a Python serving process (LaunchRunner.h: the device,
// the runtime, the launch), binding torch tensors by the Plan's argument list. docs/python.md.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bindings/LaunchRunner.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

namespace monogen::python {

namespace py = pybind11;

struct FfnRunnerOptions : RunnerOptions {
  /// The layout the caller holds s13 / s2 in ("e8m0_shuffle": what vLLM and SGLang hold after
  /// loading; "rowmajor"): it picks the variant that reads that layout (the scales knob) and is
  /// declared on those tensors at every bind (WeightContract.h: shapes cannot tell them apart).
  std::string scales = "e8m0_shuffle";
  /// What the launch takes (bindings/Input.h): attn (the attention rows, with wo / wo_scale among
  /// the weights; o_proj in the launch, the default) or part (the o_proj partial). It picks the
  /// variant (the input knob): the Plan's input argument is then `attn` or `part`.
  specs::minimax_m3::FfnInput input = specs::minimax_m3::FfnInput::Attn;
};

class FfnRunner : public LaunchRunner {
 public:
  FfnRunner(specs::minimax_m3::ModelConfig cfg, FfnRunnerOptions opts);

  /// One launch. Serialized: a second thread's launch on this runner waits (GIL released) until
  /// the first has ended (the Sim: run and copied back; HIP: enqueued).
  void launch(const py::dict& tensors, const py::dict& scalars, uint64_t stream);
  /// "attn" or "part": the launch's input, the name of its Plan argument.
  const char* input() const { return specs::minimax_m3::ffnInputName(input_); }

 private:
  std::string missingPeers(int rows, int32_t tag) override;

  specs::minimax_m3::FfnInput input_;
};

}  // namespace monogen::python
