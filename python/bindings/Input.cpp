#include "bindings/Input.h"

#include <fmt/format.h>

#include "ir/Error.h"

namespace monogen::python {

using specs::minimax_m3::FfnInput;

FfnInput inputOf(py::handle input, const std::string& where) {
  if (!py::isinstance<py::str>(input))
    throw InputError(where, fmt::format("a {} was given: {}",
                                        py::str(py::type::handle_of(input).attr("__name__")).cast<std::string>(),
                                        specs::minimax_m3::kFfnInputsAllowed));
  return specs::minimax_m3::ffnInputOf(input.cast<std::string>(), where);  // its message names both
}

}  // namespace monogen::python
