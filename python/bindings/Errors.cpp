// monogen's C++ errors (ir/Error.h) as Python exceptions carrying the C++ message unchanged
// ("input error at <where>: <what was wrong, expected, given>"):
//   monogen.Error            (Exception)      the base of all of them
//   monogen.InputError       (Error, ValueError)   bad input: a tensor, a config, an option, a handle
//   monogen.RuntimeError     (Error, RuntimeError) the cache, the devices, a launch's error word
//   monogen.IrError, CodegenError, SimError (Error)
// Each Python class is created here with those bases; a translator maps the C++ type to it.
#include <pybind11/pybind11.h>

#include "bindings/Bindings.h"
#include "ir/Error.h"

namespace monogen::python {

namespace {

PyObject* newException(py::module_& m, const char* name, PyObject* bases) {
  const std::string qual = std::string("monogen.") + name;
  PyObject* cls = PyErr_NewException(qual.c_str(), bases, nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}

PyObject *gError, *gInput, *gRuntime, *gIr, *gCodegen, *gSim;

}  // namespace

void bindErrors(py::module_& m) {
  gError = newException(m, "Error", PyExc_Exception);
  gInput = newException(m, "InputError", py::make_tuple(py::handle(gError), py::handle(PyExc_ValueError)).release().ptr());
  gRuntime =
      newException(m, "RuntimeError", py::make_tuple(py::handle(gError), py::handle(PyExc_RuntimeError)).release().ptr());
  gIr = newException(m, "IrError", gError);
  gCodegen = newException(m, "CodegenError", gError);
  gSim = newException(m, "SimError", gError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      PyErr_SetString(gInput, e.what());
    } catch (const RuntimeError& e) {
      PyErr_SetString(gRuntime, e.what());
    } catch (const IrError& e) {
      PyErr_SetString(gIr, e.what());
    } catch (const CodegenError& e) {
      PyErr_SetString(gCodegen, e.what());
    } catch (const SimError& e) {
      PyErr_SetString(gSim, e.what());
    } catch (const Error& e) {
      PyErr_SetString(gError, e.what());
    }
  });
}

}  // namespace monogen::python
