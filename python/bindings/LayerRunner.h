// One rank of the MiniMax-M3 one-launch decoder layer for a Python serving process
// (LaunchRunner.h: the device, the runtime, the launch): the attention's and the FFN's weights,
// the K/V and index-key caches as torch tensors in vLLM's layout (updated in place), the step's
// rows and their cache metadata; out and res_out written. docs/python.md.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

#include "bindings/LaunchRunner.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"

namespace monogen::python {

namespace py = pybind11;

struct LayerRunnerOptions : RunnerOptions {
  specs::minimax_m3::AttentionKnobs knobs;  // the layer type (sparse / full); the cache mode is vllm
};

class LayerRunner : public LaunchRunner {
 public:
  LayerRunner(specs::minimax_m3::ModelConfig cfg, LayerRunnerOptions opts);

  /// One launch: `tensors` by the caller's names (arguments(S)): x, res, out, res_out, the
  /// weights, kv_cache, k_scale, v_scale, index_cache and the rows' metadata; S = x.shape[0].
  /// Every tensor is checked before anything is written. Serialized as FfnRunner::launch.
  void launch(const py::dict& tensors, const py::dict& scalars, uint64_t stream);
  /// "sparse" or "full".
  const char* layer() const { return layerOpts_.knobs.fullLayer ? "full" : "sparse"; }
  /// The caller's arguments as arguments(S) lists them, with the caches' and the tables' shapes
  /// (-1: the caller's length: blocks, positions, table width) and what each holds.
  py::list callerArguments(int rows) const;

 private:
  /// What the caller gives for Plan argument `a`: its name, shape (-1: any length), the shape's
  /// text, whether the launch writes it in place, whether it may be left out.
  struct Expect {
    std::string name;
    std::vector<int64_t> shape;
    std::string shapeText;
    bool inPlace = false, optional = false;
  };
  Expect expect(int rows, const ir::KernelArg& a) const;
  bool isOwn(int rows, const std::string& arg) const override;
  std::string missingPeers(int rows, int32_t tag) override;
  /// The runner's own buffers of S: the attention rows, its residual, q, the index q (and, on a
  /// full layer, a stand-in index cache / index slots when the caller gives none). Zeroed once.
  const std::map<std::string, uint64_t>& ownBuffers(int rows);

  LayerRunnerOptions layerOpts_;
  std::map<int, std::map<std::string, uint64_t>> own_;
};

}  // namespace monogen::python
