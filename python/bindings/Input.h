// The launch's input a Python caller declares (the `input` knob, specs/minimax_m3/kernel/Knobs.h):
// "attn" (the attention rows, o_proj's per-token FP8 quant and GEMM inside the launch; the
// default, as in C++) or "part" (the unreduced o_proj partial the framework computed). The
// runner's variant, make_launch_inputs's tensors and rank_reference's check all follow it.
#pragma once
#include <pybind11/pybind11.h>

#include <string>

#include "specs/minimax_m3/kernel/WeightContract.h"

namespace monogen::python {

namespace py = pybind11;

/// The input `input` names; InputError at `where` naming what was given (a value or a type)
/// and the two allowed.
specs::minimax_m3::FfnInput inputOf(py::handle input, const std::string& where);

}  // namespace monogen::python
