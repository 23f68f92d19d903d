#include "specs/minimax_m3/testing/SaveLaunch.h"

#include <fmt/format.h>

#include "ir/Error.h"
#include "support/AtomicFile.h"
#include "runtime/Safetensors.h"

namespace monogen::specs::minimax_m3 {

namespace {
bool isScaleTensor(const std::string& name) { return name.rfind("s13.", 0) == 0 || name.rfind("s2.", 0) == 0; }
}  // namespace

std::string savedScaleLayout(const runtime::TensorMap& inputs) {
  std::string layout, first;
  for (const auto& [name, t] : inputs) {
    if (!isScaleTensor(name)) continue;
    if (t.layout.empty())
      throw InputError("saved launch: " + name, fmt::format("tensor '{}' declares no scale layout: a saved launch "
                                                            "must say which layout its scales are held in",
                                                            name));
    if (first.empty()) first = name, layout = t.layout;
    if (t.layout != layout)
      throw InputError("saved launch: " + name, fmt::format("tensor '{}' declares scale layout '{}', '{}' declares '{}'",
                                                            name, t.layout, first, layout));
  }
  return layout;
}

std::string savedInputKind(const runtime::TensorMap& inputs, const std::map<std::string, std::string>& metadata) {
  if (auto it = metadata.find("input"); it != metadata.end()) return it->second;
  return inputs.count("attn.r0") ? "attn" : "part";
}

void declareSavedScales(runtime::TensorMap& tensors, const std::map<std::string, std::string>& metadata) {
  auto it = metadata.find("scales");
  if (it == metadata.end()) return;
  for (auto& [name, t] : tensors)
    if (isScaleTensor(name)) t.layout = it->second;
}

void writeLaunchFiles(const std::filesystem::path& dir, const runtime::TensorMap& inputs,
                      const runtime::TensorMap& outputs, const runtime::TensorMap& reference,
                      const std::map<std::string, std::string>& metadata) {
  support::makeDirectories(dir, 0755, "launch directory " + dir.string());
  runtime::writeSafetensors(dir / "inputs.safetensors", inputs, metadata);
  runtime::writeSafetensors(dir / "outputs.safetensors", outputs, metadata);
  if (!reference.empty()) runtime::writeSafetensors(dir / "reference.safetensors", reference, metadata);
}

void saveLaunch(const std::filesystem::path& dir, const ModelConfig& cfg, int S, int TP,
                const runtime::TensorMap& inputs, const runtime::TensorMap& outputs,
                const runtime::TensorMap& reference, const std::map<std::string, std::string>& metadata) {
  std::map<std::string, std::string> meta = metadata;
  meta["config"] = cfg.canonical();
  meta["rows"] = std::to_string(S);
  meta["tp"] = std::to_string(TP);
  if (const std::string scales = savedScaleLayout(inputs); !scales.empty()) meta["scales"] = scales;
  meta["input"] = savedInputKind(inputs, metadata);
  writeLaunchFiles(dir, inputs, outputs, reference, meta);
}

namespace {
constexpr const char* kFiles[] = {"inputs.safetensors", "outputs.safetensors", "reference.safetensors"};
}  // namespace

void checkSaveDir(const std::filesystem::path& dir, const std::string& option) {
  support::checkOutputDir(dir, option);
  if (std::filesystem::is_directory(dir))
    for (const char* f : kFiles) support::checkOutputFile(dir / f, option);
}

runtime::SafetensorsFile loadLaunchInputs(const std::filesystem::path& dir) {
  runtime::SafetensorsFile f = runtime::readSafetensorsFile(dir / "inputs.safetensors");
  declareSavedScales(f.tensors, f.metadata);
  return f;
}

SavedLaunch loadLaunch(const std::filesystem::path& dir) {
  SavedLaunch s;
  runtime::SafetensorsFile in = loadLaunchInputs(dir);
  s.inputs = std::move(in.tensors);
  s.metadata = std::move(in.metadata);
  s.outputs = runtime::readSafetensors(dir / "outputs.safetensors");
  if (std::filesystem::exists(dir / "reference.safetensors"))
    s.reference = runtime::readSafetensors(dir / "reference.safetensors");
  return s;
}

}  // namespace monogen::specs::minimax_m3
