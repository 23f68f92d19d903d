// Test inputs and the C++ reference for one rank (make_launch_inputs, rank_reference), for Python
// tests and for a framework checking its wiring; tensors cross as (dtype name, shape, bytes)
// triples. docs/python.md.
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <cstring>

#include "bindings/Bindings.h"
#include "bindings/Config.h"
#include "bindings/Input.h"
#include "bindings/TorchTensor.h"
#include "ir/Error.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/testing/RankHarness.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

namespace monogen::python {

namespace mm = specs::minimax_m3;

namespace {

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
      [](py::handle config, int rows, int tp, uint64_t seed, const std::string& scales, py::handle input) {
        const mm::ModelConfig cfg = configOf(config);
        mm::LaunchInputOptions opt;
        opt.scales = mm::scaleLayoutOf(scales, "make_launch_inputs, scales");
        opt.oproj = inputOf(input, "make_launch_inputs, input") == mm::FfnInput::Attn;
        runtime::TensorMap in;
        {
          py::gil_scoped_release nogil;
          in = mm::makeLaunchInputs(cfg, rows, tp, seed, opt);
        }
        return toPython(in);
      },
      py::arg("config"), py::arg("rows"), py::arg("tp"), py::arg("seed"), py::arg("scales") = "e8m0_shuffle",
      py::arg("input") = "attn",
      "Every rank's inputs of one launch (makeLaunchInputs): part.r<R> (input \"attn\": the o_proj partial of "
      "attn.r<R>, wo.r<R>, wo_scale, also there), res_in, slots, the weights (w13.r<R> .., router_w, bias, norm_w), "
      "as {name: (dtype, shape, bytes)}.");
  m.def(
      "rank_reference",
      [](py::handle config, int rows, int tp, int rank, const py::dict& inputs, const std::string& scales,
         py::handle input) {
        const mm::ModelConfig cfg = configOf(config);
        if (rank < 0 || rank >= tp)
          throw InputError("rank_reference", fmt::format("rank {} of TP {}: expected 0 <= rank < TP", rank, tp));
        const mm::FfnInput declared = inputOf(input, "rank_reference, input");
        runtime::TensorMap in = fromPython(inputs, "rank_reference");
        // The declaration must be what the inputs were made for: attn's o_proj tensors there or not.
        const std::string attn = fmt::format("{}.r{}", mm::arg::kAttn, rank);
        const bool hasAttn = in.count(attn) > 0;
        if ((declared == mm::FfnInput::Attn) != hasAttn)
          throw InputError("rank_reference, input",
                           fmt::format("\"{}\" was declared, but '{}' is {}among the inputs: expected the inputs of "
                                       "make_launch_inputs(..., input=\"{}\")",
                                       mm::ffnInputName(declared), attn, hasAttn ? "" : "not ",
                                       mm::ffnInputName(declared)));
        // torch tensors carry no layout: the caller declares the one its scales are in.
        const char* layout = mm::scaleLayoutName(mm::scaleLayoutOf(scales, "rank_reference, scales"));
        for (auto& [name, t] : in)
          if (name.rfind(mm::arg::kS13, 0) == 0 || name.rfind(mm::arg::kS2, 0) == 0) t.layout = layout;
        runtime::TensorMap mine;
        {
          py::gil_scoped_release nogil;
          mine = mm::rankReference(mm::launchReferenceOutputs(cfg, rows, tp, in), rank, tp);
        }
        return toPython(mine);
      },
      py::arg("config"), py::arg("rows"), py::arg("tp"), py::arg("rank"), py::arg("inputs"),
      py::arg("scales") = "e8m0_shuffle", py::arg("input") = "attn",
      "The C++ reference of one launch (launchReferenceOutputs) for rank `rank` (rankReference): out.r<rank>, "
      "res_out.r<rank> and the rank's other read-backs, as {name: (dtype, shape, bytes)}. `inputs` is "
      "make_launch_inputs's map as torch tensors, made with the same `input`.");
}

}  // namespace monogen::python
