#include "bindings/Config.h"

#include <fmt/format.h>

#include "bindings/Bindings.h"
#include "ir/Error.h"

namespace monogen::python {

using specs::minimax_m3::ModelConfig;

ModelConfig configOf(py::handle config) {
  if (py::isinstance<py::dict>(config)) {
    const std::string text = py::module_::import("json").attr("dumps")(config).cast<std::string>();
    return ModelConfig::fromHfJsonText(text, "config dict");
  }
  if (py::isinstance<py::str>(config)) return ModelConfig::byName(config.cast<std::string>());
  if (py::hasattr(config, "__fspath__"))
    return ModelConfig::fromHfJson(py::module_::import("os").attr("fspath")(config).cast<std::string>());
  throw InputError("config", fmt::format("a {} was given: expected \"full\", \"reduced\", a config.json path or its dict",
                                         py::str(py::type::handle_of(config).attr("__name__")).cast<std::string>()));
}

void bindConfig(py::module_& m) {
  m.def(
      "config_canonical", [](py::handle c) { return configOf(c).canonical(); }, py::arg("config"),
      "The config's canonical text (what goes into the cache key), after every check of its reader.");
}

}  // namespace monogen::python
