#include "specs/minimax_m3/SaveLaunch.h"

#include "runtime/AtomicFile.h"
#include "runtime/Safetensors.h"

namespace monogen::specs::minimax_m3 {

void saveLaunch(const std::filesystem::path& dir, const ModelConfig& cfg, int S, int TP,
                const runtime::TensorMap& inputs, const runtime::TensorMap& outputs,
                const runtime::TensorMap& reference, const std::map<std::string, std::string>& metadata) {
  runtime::makeDirectories(dir, 0755, "launch directory " + dir.string());
  std::map<std::string, std::string> meta = metadata;
  meta["config"] = cfg.canonical();
  meta["rows"] = std::to_string(S);
  meta["tp"] = std::to_string(TP);
  runtime::writeSafetensors(dir / "inputs.safetensors", inputs, meta);
  runtime::writeSafetensors(dir / "outputs.safetensors", outputs, meta);
  if (!reference.empty()) runtime::writeSafetensors(dir / "reference.safetensors", reference, meta);
}

namespace {
constexpr const char* kFiles[] = {"inputs.safetensors", "outputs.safetensors", "reference.safetensors"};
}  // namespace

void checkSaveDir(const std::filesystem::path& dir, const std::string& option) {
  runtime::checkOutputDir(dir, option);
  if (std::filesystem::is_directory(dir))
    for (const char* f : kFiles) runtime::checkOutputFile(dir / f, option);
}

runtime::SafetensorsFile loadLaunchInputs(const std::filesystem::path& dir) {
  return runtime::readSafetensorsFile(dir / "inputs.safetensors");
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
