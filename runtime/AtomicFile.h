// Writing a file so that its final name never holds a half-written file: a temp file in the
// same directory (O_EXCL, the given mode), fsync'd, renamed into place, directory fsync'd.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <sys/types.h>

namespace monogen::runtime {

/// Writes `parts` (concatenated) to `path` atomically. Throws RuntimeError naming the path and
/// the failing system call; the temp file is removed on any failure.
void writeFileAtomically(const std::filesystem::path& path, std::initializer_list<std::string_view> parts,
                         mode_t mode = 0600);

}  // namespace monogen::runtime
