#include "bindings/Input.h"

#include <fmt/format.h>

#include "ir/Error.h"

namespace monogen::python {

using specs::minimax_m3::FfnInput;

FfnInput inputOf(py::handle input, const std::string& where) {
  constexpr const char* kAllowed =
      "expected \"attn\" (the attention rows, o_proj in the launch; the default) or \"part\" (the o_proj partial)";
  if (!py::isinstance<py::str>(input))
    throw InputError(where, fmt::format("a {} was given: {}",
                                        py::str(py::type::handle_of(input).attr("__name__")).cast<std::string>(),
                                        kAllowed));
  const std::string name = input.cast<std::string>();
  if (name == "attn") return FfnInput::Attn;
  if (name == "part") return FfnInput::Part;
  throw InputError(where, fmt::format("'{}' was given: {}", name, kAllowed));
}

}  // namespace monogen::python
