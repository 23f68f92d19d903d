// Test inputs and the C++ reference for one rank, for Python tests and for a framework checking
// its wiring: make_launch_inputs is specs/minimax_m3/MoeInputs.h's makeLaunchInputs (every rank's
// inputs of one launch, seeded), rank_reference is SimHarness.h's launchReferenceOutputs (the
// spec's native reference, the numerics the Sim device runs) cut to one rank by RankHarness.h's
// rankReference: what runSimRank compares a rank's read-back with. Tensors cross as
// (torch dtype name, shape, bytes) triples; python/monogen/minimax_m3.py makes torch tensors of them.
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <cstring>

#include "bindings/Bindings.h"
#include "bindings/Config.h"
#include "bindings/TorchTensor.h"
#include "ir/Error.h"
#include "specs/minimax_m3/MoeInputs.h"
#include "specs/minimax_m3/RankHarness.h"
#include "specs/minimax_m3/SimHarness.h"

namespace monogen::python {

namespace mm = specs::minimax_m3;

namespace {

py::dict toPython(const runtime::TensorMap& m) {
  py::dict out;
  for (const auto& [name, t] : m)
    out[py::str(name)] = py::make_tuple(torchDtypeOf(t.dtype), py::tuple(py::cast(t.shape)),
                                        py::bytes(reinterpret_cast<const char*>(t.data.data()), t.data.size()));
  return out;
}

/// CPU, contiguous torch tensors by name -> host tensors (copied).
runtime::TensorMap fromPython(const py::dict& tensors, const std::string& where) {
  runtime::TensorMap m;
  for (auto [k, t] : tensors) {
    const std::string name = py::str(k);
    const std::string at = where + ", tensor '" + name + "'";
    const TensorView v = readTensor(t, at);
    if (v.device != "cpu" || !v.contiguous())
      throw InputError(at, "given " + v.describe() + ": expected a contiguous CPU tensor");
    runtime::HostTensor h;
    h.dtype = hostDtypeOf(v.dtype, at);
    h.shape = v.shape;
    h.data.resize(static_cast<size_t>(v.bytes()));
    if (v.bytes()) std::memcpy(h.data.data(), reinterpret_cast<const void*>(v.ptr), h.data.size());
    m[name] = std::move(h);
  }
  return m;
}

}  // namespace

void bindReference(py::module_& m) {
  m.def(
      "make_launch_inputs",
      [](py::handle config, int rows, int tp, uint64_t seed) {
        const mm::ModelConfig cfg = configOf(config);
        runtime::TensorMap in;
        {
          py::gil_scoped_release nogil;
          in = mm::makeLaunchInputs(cfg, rows, tp, seed);
        }
        return toPython(in);
      },
      py::arg("config"), py::arg("rows"), py::arg("tp"), py::arg("seed"),
      "Every rank's inputs of one launch (makeLaunchInputs): part.r<R>, res_in, slots, the weights (w13.r<R> .., "
      "router_w, bias, norm_w), as {name: (dtype, shape, bytes)}.");
  m.def(
      "rank_reference",
      [](py::handle config, int rows, int tp, int rank, const py::dict& inputs) {
        const mm::ModelConfig cfg = configOf(config);
        if (rank < 0 || rank >= tp)
          throw InputError("rank_reference", fmt::format("rank {} of TP {}: expected 0 <= rank < TP", rank, tp));
        const runtime::TensorMap in = fromPython(inputs, "rank_reference");
        runtime::TensorMap mine;
        {
          py::gil_scoped_release nogil;
          mine = mm::rankReference(mm::launchReferenceOutputs(cfg, rows, tp, in), rank, tp);
        }
        return toPython(mine);
      },
      py::arg("config"), py::arg("rows"), py::arg("tp"), py::arg("rank"), py::arg("inputs"),
      "The C++ reference of one launch (launchReferenceOutputs) for rank `rank` (rankReference): out.r<rank>, "
      "res_out.r<rank> and the rank's other read-backs, as {name: (dtype, shape, bytes)}. `inputs` is "
      "make_launch_inputs's map as torch tensors.");
}

}  // namespace monogen::python
