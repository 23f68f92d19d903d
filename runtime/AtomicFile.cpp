#include "runtime/AtomicFile.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "ir/Error.h"

namespace monogen::runtime {

namespace {

std::string sysError(const char* call) { return std::string(call) + " failed: " + std::strerror(errno); }

void writeAll(int fd, std::string_view s, const std::string& where) {
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw RuntimeError(where, sysError("write"));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

void writeFileAtomically(const std::filesystem::path& path, std::initializer_list<std::string_view> parts,
                         mode_t mode) {
  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  int fd = -1;
  std::string tmp;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = (dir / (path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                  std::to_string(counter.fetch_add(1))))
              .string();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0 && errno != EEXIST) throw RuntimeError(tmp, sysError("open(O_CREAT|O_EXCL)"));
  }
  if (fd < 0) throw RuntimeError(path.string(), "could not create a unique temp file next to it");
  try {
    for (std::string_view s : parts) writeAll(fd, s, tmp);
    if (::fsync(fd) != 0) throw RuntimeError(tmp, sysError("fsync"));
    if (::close(fd) != 0) {
      fd = -1;
      throw RuntimeError(tmp, sysError("close"));
    }
    fd = -1;
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw RuntimeError(path.string(), sysError("rename") + " (from " + tmp + ")");
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename durable; a failure here does not undo the write.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace monogen::runtime
