// What each bindings/*.cpp file adds to the extension module monogen._monogen (Module.cpp calls
// them in this order): one concept a file.
#pragma once
#include <pybind11/pybind11.h>

namespace monogen::python {

namespace py = pybind11;

void bindErrors(py::module_& m);     // Errors.cpp: monogen's C++ errors as Python exceptions
void bindConfig(py::module_& m);     // Config.cpp: a ModelConfig from "full", "reduced", a path or a dict
void bindFfnRunner(py::module_& m);  // FfnRunner.cpp: one rank of the MiniMax-M3 FFN launch
void bindLayerRunner(py::module_& m);  // LayerRunner.cpp: one rank of the one-launch decoder layer
void bindReference(py::module_& m);  // Reference.cpp: test inputs and the C++ reference for one rank
void bindLayerReference(py::module_& m);  // LayerReference.cpp: the layer's test steps and reference
void bindCodeCache(py::module_& m);  // CodeCache.cpp: list, verify, clear, fill the code-object cache

}  // namespace monogen::python
