// Writing a file so that its final name never holds a half-written file, and so that nothing
// planted in its directory (a symlink, a FIFO) is followed: every file monogen writes (the
// cache's code objects, `emit -o`, `trace -o`, `sim --save`'s .safetensors) goes through
// writeFileAtomically. It creates a temp file with an unpredictable name in the destination's
// directory (O_CREAT|O_EXCL|O_NOFOLLOW, the given mode), writes it, fsyncs it, renames it into
// place and fsyncs the directory. The check* functions refuse, before the work that makes the
// bytes starts, an output path the write would refuse or fail on.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

namespace monogen::runtime {

/// Writes `parts` (concatenated) to `path` atomically. Refuses (InputError naming the path) a
/// destination that is a symlink, a directory or any other non-regular file; a regular file is
/// replaced. Throws RuntimeError naming the path, the failing system call and its strerror.
/// On any failure the temp file is removed and the destination is left as it was.
void writeFileAtomically(const std::filesystem::path& path, std::initializer_list<std::string_view> parts,
                         mode_t mode = 0600);

/// What writeFileAtomically(path) needs, checked up front: `path` names a file (not "dir/"),
/// is absent or a regular file (not a symlink, a directory, a FIFO, a device), and its
/// directory exists and this process can create files in it. Throws InputError at `option`
/// (e.g. "-o") naming the path, what was found and what is expected (with the errno text of a
/// failing call).
void checkOutputFile(const std::filesystem::path& path, const std::string& option);

/// The same for an output directory that makeDirectories will create if need be: `dir` is a
/// directory this process can create files in (a symlink to one is followed), or it does not
/// exist and its nearest existing ancestor is such a directory. An existing non-directory (a
/// regular file, a FIFO) is refused.
void checkOutputDir(const std::filesystem::path& dir, const std::string& option);

/// mkdir -p: every directory it creates gets `mode` (before the umask). Throws RuntimeError at
/// `where` naming the component that could not be created and why, or saying that `dir`
/// exists but is not a directory.
void makeDirectories(const std::filesystem::path& dir, mode_t mode, const std::string& where);

}  // namespace monogen::runtime
