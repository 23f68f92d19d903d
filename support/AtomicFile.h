// The one file writer every monogen output goes through (the cache's code objects, `emit -o`,
// `trace -o`, `sim --save`, the dumps): a temp file in the destination's directory, fsynced and
// renamed into place, never through a planted symlink or FIFO.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

namespace monogen::support {

/// Writes `parts` (concatenated) to `path` atomically, replacing a regular file; InputError for a
/// non-regular destination, RuntimeError naming the failing call. On failure nothing is left.
void writeFileAtomically(const std::filesystem::path& path, std::initializer_list<std::string_view> parts,
                         mode_t mode = 0600);

/// Checks up front what writeFileAtomically(path) needs: a file name, absent or a regular file,
/// in an existing directory this process can write. Throws InputError at `option` (e.g. "-o").
void checkOutputFile(const std::filesystem::path& path, const std::string& option);

/// The same for an output directory makeDirectories may create: a writable directory (a symlink
/// to one is followed), or absent under a writable nearest ancestor.
void checkOutputDir(const std::filesystem::path& dir, const std::string& option);

/// mkdir -p, each new directory with `mode` (before the umask). Throws RuntimeError at `where`
/// naming the component that could not be created, or that `dir` is not a directory.
void makeDirectories(const std::filesystem::path& dir, mode_t mode, const std::string& where);

}  // namespace monogen::support
