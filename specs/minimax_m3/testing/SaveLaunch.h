// Saves one whole launch as .safetensors (runtime/Safetensors.h) in DIR: inputs.safetensors,
// outputs.safetensors and, when given, reference.safetensors, each with the launch description in
// __metadata__ ("config", "rows", "tp", "scales", "input", the caller's); docs/minimax-m3-kernel.md.
#pragma once
#include <filesystem>
#include <map>
#include <string>

#include "runtime/Safetensors.h"
#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

struct SavedLaunch {
  runtime::TensorMap inputs, outputs, reference;  // reference empty when none was saved
  std::map<std::string, std::string> metadata;    // inputs.safetensors' __metadata__
};

/// Creates `dir` if need be and writes inputs.safetensors, outputs.safetensors and (when not
/// empty) reference.safetensors, each with `metadata` as is: the writer of every launch's save.
/// Throws as saveLaunch does.
void writeLaunchFiles(const std::filesystem::path& dir, const runtime::TensorMap& inputs,
                      const runtime::TensorMap& outputs, const runtime::TensorMap& reference,
                      const std::map<std::string, std::string>& metadata);

/// The FFN launch's save: writeLaunchFiles with the FFN launch's description added.
/// Creates `dir` if need be and writes the files above (each through writeFileAtomically:
/// a temp file and a rename, never through a symlink).
/// Throws InputError if an input or output is not a valid tensor, RuntimeError if a file
/// cannot be written.
void saveLaunch(const std::filesystem::path& dir, const ModelConfig& cfg, int S, int TP,
                const runtime::TensorMap& inputs, const runtime::TensorMap& outputs,
                const runtime::TensorMap& reference = {}, const std::map<std::string, std::string>& metadata = {});

/// The one scale layout every s13.* / s2.* tensor of `inputs` declares ("" when it holds none).
/// Throws InputError naming two tensors that declare different ones, or one that declares none.
std::string savedScaleLayout(const runtime::TensorMap& inputs);
/// Declares metadata["scales"] (when present) on every s13.* / s2.* tensor of `tensors`, as
/// loadLaunch and loadLaunchInputs do; without it they stay undeclared (a launch refuses them).
void declareSavedScales(runtime::TensorMap& tensors, const std::map<std::string, std::string>& metadata);

/// The launch input a saved launch was made for, "attn" or "part": its metadata "input" (saveLaunch
/// writes it), else "attn" when it holds attn.r0 (o_proj's input), else "part".
std::string savedInputKind(const runtime::TensorMap& inputs, const std::map<std::string, std::string>& metadata);

/// Refuses, before the launch runs, a `dir` saveLaunch could not write (support/AtomicFile.h):
/// an existing non-directory (e.g. a regular file), a directory (or the nearest existing parent
/// of one to create) this process cannot create files in, or a DIR/*.safetensors of the three
/// above that is a symlink or not a regular file. Throws InputError at `option` naming the path.
void checkSaveDir(const std::filesystem::path& dir, const std::string& option);

/// Reads back what saveLaunch wrote (reference.safetensors is optional).
SavedLaunch loadLaunch(const std::filesystem::path& dir);

/// DIR/inputs.safetensors alone (tensors and __metadata__): all a replay of the launch needs
/// (`monogen sim --inputs DIR`); the outputs and the reference need not be there.
runtime::SafetensorsFile loadLaunchInputs(const std::filesystem::path& dir);

}  // namespace monogen::specs::minimax_m3
