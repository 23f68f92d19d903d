// The extension module monogen._monogen: the C++ runtime for Python (python/monogen/*.py wraps
// it; a model file imports monogen.minimax_m3, not this).
#include "bindings/Bindings.h"

PYBIND11_MODULE(_monogen, m) {
  m.doc() = "monogen's C++ runtime: the per-rank FFN and layer runners, the reference, the code-object cache";
  monogen::python::bindErrors(m);
  monogen::python::bindConfig(m);
  monogen::python::bindFfnRunner(m);
  monogen::python::bindLayerRunner(m);
  monogen::python::bindReference(m);
  monogen::python::bindLayerReference(m);
  monogen::python::bindCodeCache(m);
}
