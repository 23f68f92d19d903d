// The model config a Python caller names: "full" (MiniMax-M3.1-Flash), "reduced" (the test
// config), the path of a Hugging Face config.json (a str or os.PathLike), or that file's content
// as a dict. All four go through specs/minimax_m3/kernel/ModelConfig's readers and their checks.
#pragma once
#include <pybind11/pybind11.h>

#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::python {

namespace py = pybind11;

/// InputError naming what was given when it is none of the four.
specs::minimax_m3::ModelConfig configOf(py::handle config);

}  // namespace monogen::python
