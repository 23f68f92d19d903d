// The code-object cache (runtime/Cache.h) from Python, the same calls `monogen cache` makes
// (tools/CmdCache.cpp): the default directory, scan (every entry checked as a load would),
// clear, the removal of killed writers' temp files, and fill: compile the code objects of a set
// of variants into the cache ahead of serving (what a HIP runner's warm_up would otherwise do).
#include <pybind11/stl.h>

#include "bindings/Bindings.h"
#include "bindings/Config.h"
#include "bindings/Input.h"
#include "codegen/Toolchain.h"
#include "runtime/Cache.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/Spec.h"

namespace monogen::python {

namespace mm = specs::minimax_m3;

namespace {

std::filesystem::path dirOf(const std::string& dir) {
  return dir.empty() ? runtime::Cache::defaultDir() : std::filesystem::path(dir);
}

}  // namespace

void bindCodeCache(py::module_& m) {
  m.def(
      "cache_default_dir", [] { return runtime::Cache::defaultDir().string(); },
      "$MONOGEN_CACHE_DIR if set, else ~/.cache/monogen.");
  m.def(
      "cache_scan",
      [](const std::string& dir) {
        py::list out;
        for (const runtime::CacheFileInfo& f : runtime::Cache::scan(dirOf(dir))) {
          py::dict d;
          d["path"] = f.path.string();
          d["digest"] = f.digest;
          d["key_text"] = f.keyText;
          d["bytes"] = f.bytes;
          d["hits"] = f.hits;
          d["age_seconds"] = f.ageSeconds;
          d["idle_seconds"] = f.idleSeconds;
          d["problem"] = f.problem;
          out.append(d);
        }
        return out;
      },
      py::arg("dir") = "", "Every entry, checked as a load would check it (problem '' when good), oldest first.");
  m.def(
      "cache_remove_stale_temps", [](const std::string& dir) { return runtime::Cache::removeStaleTemps(dirOf(dir)); },
      py::arg("dir") = "");
  m.def(
      "cache_clear", [](const std::string& dir) { return runtime::Cache::clear(dirOf(dir)); }, py::arg("dir") = "",
      "Removes every entry (and the cache's lock, hit and temp files); returns how many entries went.");
  m.def(
      "cache_fill",
      [](py::handle config, int tp, const std::vector<int>& rows, const std::string& dir, const std::string& scales,
         py::handle input) {
        const mm::ModelConfig cfg = configOf(config);
        mm::FfnKnobs knobs;  // as FfnRunner(scales=, input=) picks its variants
        knobs.scales = mm::scaleLayoutOf(scales, "monogen.cache.fill, scales");
        knobs.input = inputOf(input, "monogen.cache.fill, input");
        std::vector<std::pair<std::string, std::string>> made;
        py::gil_scoped_release nogil;
        auto cache = std::make_shared<runtime::Cache>(dirOf(dir), codegen::toolchainId());
        runtime::Generator gen(mm::makeGenerator(cfg, cache));
        for (int s : rows) {
          const auto v = gen.variant(mm::makeKey(cfg, s, tp, knobs), true);
          made.emplace_back(v->plan.key.variantName(), runtime::cacheSourceName(v->source));
        }
        return made;
      },
      py::arg("config"), py::arg("tp"), py::arg("rows"), py::arg("dir") = "", py::arg("scales") = "e8m0_shuffle",
      py::arg("input") = "attn",
      "Compiles (or finds) the code object of every S at TP `tp` into the cache, the variants FfnRunner(scales=, "
      "input=) launches; [(variant, source)].");
}

}  // namespace monogen::python
