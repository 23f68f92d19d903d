// .safetensors files: an 8-byte little-endian header length, a JSON header mapping each
// tensor name to {dtype, shape, data_offsets} (plus an optional "__metadata__" string map),
// then the tensors' bytes. Used for launch inputs, outputs and references.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "runtime/Tensor.h"

namespace monogen::runtime {

struct SafetensorsFile {
  TensorMap tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"
};

/// Reads and validates a file. Throws InputError naming the file (and the tensor) when the
/// header length runs past the file, the header is not the expected JSON, a dtype is unknown,
/// or a tensor's data_offsets are out of range, overlap another's, or disagree with
/// dtype x shape.
SafetensorsFile readSafetensorsFile(const std::filesystem::path& path);
/// readSafetensorsFile(path).tensors.
TensorMap readSafetensors(const std::filesystem::path& path);
/// The same checks on a whole file held in memory (what the fuzzer drives); `name` stands
/// for the path in the messages.
SafetensorsFile parseSafetensors(std::string_view bytes, const std::string& name);

/// Writes tensors (in name order, contiguous) and metadata to a temp file in the same
/// directory, then renames it over `path`: a half-written file never has the final name.
/// Throws InputError if a tensor's byte count disagrees with its dtype x shape, RuntimeError
/// if the file cannot be written.
void writeSafetensors(const std::filesystem::path& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// The dtype named `name` ("BF16", "F32", ...), or false if monogen does not know it.
bool dtypeFromName(const std::string& name, DType& out);

}  // namespace monogen::runtime
