#include "support/AtomicFile.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "support/Error.h"

namespace monogen::support {

namespace fs = std::filesystem;

namespace {

/// "CALL failed: <strerror(err)>"; callers pass the errno they saved right after the call.
std::string sysError(const std::string& call, int err) { return call + " failed: " + std::strerror(err); }

/// What a non-regular file is, for messages.
std::string kindOf(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISREG(m)) return "a regular file";
  return "not a regular file";
}

/// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// Throws InputError at `where` if a file of mode `m` at `path` is not a regular file.
void refuseNonRegular(const std::string& where, const std::string& path, mode_t m) {
  if (S_ISLNK(m))
    throw InputError(where, "'" + path + "' is a symbolic link: refusing to write through it or replace it; "
                                         "expected a regular file or no file at that path (remove the link, or "
                                         "name its target)");
  if (!S_ISREG(m))
    throw InputError(where, "'" + path + "' is " + kindOf(m) +
                                ", not a regular file: expected a regular file to replace, or no file at that path");
}

/// The destination `name` in the directory `dfd`: absent, or a regular file (else refused).
void checkDestination(int dfd, const std::string& name, const std::string& path) {
  struct stat st {};
  if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    const int err = errno;
    if (err == ENOENT) return;
    throw RuntimeError(path, sysError("stat", err));
  }
  refuseNonRegular("output file", path, st.st_mode);
}

/// 16 hex digits no other process can guess (getrandom; a clock and counter mix if it fails).
std::string randomSuffix() {
  static std::atomic<uint64_t> counter{0};
  uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
    r = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) * 0x9e3779b97f4a7c15ull ^
        (static_cast<uint64_t>(::getpid()) << 32) ^ counter.fetch_add(1);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(r));
  return buf;
}

void writeAll(int fd, std::string_view s, const std::string& where, const std::string& tmp) {
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw RuntimeError(where, sysError("write to the temp file " + tmp, err));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

fs::path directoryOf(const fs::path& path) { return path.has_parent_path() ? path.parent_path() : fs::path("."); }

/// `dir` is a directory this process can create files in; throws InputError at `option`.
void checkWritableDir(const fs::path& dir, const std::string& option, const std::string& forPath) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT)
      throw InputError(option, "directory '" + dir.string() + "' (for '" + forPath + "') does not exist");
    throw InputError(option, "directory '" + dir.string() + "' (for '" + forPath + "'): " + sysError("stat", err));
  }
  if (!S_ISDIR(st.st_mode))
    throw InputError(option, "'" + dir.string() + "' (for '" + forPath + "') is " + kindOf(st.st_mode) +
                                 ", not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    const int err = errno;
    throw InputError(option, "cannot create files in directory '" + dir.string() + "' (for '" + forPath +
                                 "'): " + std::strerror(err));
  }
}

}  // namespace

void writeFileAtomically(const fs::path& path, std::initializer_list<std::string_view> parts, mode_t mode) {
  const std::string file = path.string();
  if (!path.has_filename()) throw InputError(file, "names a directory: expected a file path");
  const fs::path dir = directoryOf(path);
  const std::string name = path.filename().string();
  // Everything below is relative to this one directory, whatever happens to its path meanwhile.
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.fd < 0) {
    const int err = errno;
    throw RuntimeError(file, sysError("open of its directory '" + dir.string() + "'", err));
  }
  checkDestination(dfd.fd, name, file);

  // ".NAME.tmp.<random>": O_EXCL|O_NOFOLLOW never opens what someone planted at that name.
  std::string stem(1, '.');
  stem.append(name, 0, 200).append(".tmp.");
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = stem + randomSuffix();
    fd = ::openat(dfd.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
      const int err = errno;
      if (err != EEXIST)
        throw RuntimeError(file, sysError("open(O_CREAT|O_EXCL|O_NOFOLLOW) of a temp file in '" + dir.string() + "'",
                                          err));
    }
  }
  if (fd < 0) throw RuntimeError(file, "could not create a unique temp file next to it (100 names taken)");
  const std::string tmpPath = (dir / tmp).string();
  try {
    for (std::string_view s : parts) writeAll(fd, s, file, tmpPath);
    if (::fsync(fd) != 0) {
      const int err = errno;
      throw RuntimeError(file, sysError("fsync of the temp file " + tmpPath, err));
    }
    const int closed = ::close(fd);
    const int err = errno;
    fd = -1;
    if (closed != 0) throw RuntimeError(file, sysError("close of the temp file " + tmpPath, err));
    checkDestination(dfd.fd, name, file);  // again: what was planted while we wrote is not replaced either
    if (::renameat(dfd.fd, tmp.c_str(), dfd.fd, name.c_str()) != 0) {
      const int rerr = errno;
      throw RuntimeError(file, sysError("rename", rerr) + " (from " + tmpPath + ")");
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlinkat(dfd.fd, tmp.c_str(), 0);
    throw;
  }
  ::fsync(dfd.fd);  // make the rename durable; a failure here does not undo the write
}

void checkOutputFile(const fs::path& path, const std::string& option) {
  const std::string file = path.string();
  if (file.empty()) throw InputError(option, "the path is empty: expected a file to write");
  if (!path.has_filename()) throw InputError(option, "'" + file + "' names a directory: expected a file path");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    refuseNonRegular(option, file, st.st_mode);
  } else {
    const int err = errno;
    // ENOTDIR: a component is not a directory; the directory check below says which
    if (err != ENOENT && err != ENOTDIR) throw InputError(option, "'" + file + "': " + sysError("stat", err));
  }
  checkWritableDir(directoryOf(path), option, file);
}

void checkOutputDir(const fs::path& dir, const std::string& option) {
  const std::string d = dir.string();
  if (d.empty()) throw InputError(option, "the path is empty: expected a directory to write into");
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      throw InputError(option, "'" + d + "' is " + kindOf(st.st_mode) +
                                   ", not a directory: expected a directory to write into, or a path to create one at");
    checkWritableDir(dir, option, d);
    return;
  }
  const int err = errno;
  if (err != ENOENT) throw InputError(option, "'" + d + "': " + sysError("stat", err));
  // It will be created: its nearest existing ancestor must take new entries.
  fs::path up = fs::absolute(dir).lexically_normal();
  if (!up.has_filename()) up = up.parent_path();
  for (;;) {
    const fs::path parent = up.parent_path();
    if (parent == up) break;  // the root exists
    up = parent;
    if (::stat(up.c_str(), &st) == 0) break;
    const int perr = errno;
    if (perr != ENOENT) throw InputError(option, "'" + up.string() + "' (for '" + d + "'): " + sysError("stat", perr));
  }
  checkWritableDir(up, option, d);
}

void makeDirectories(const fs::path& dir, mode_t mode, const std::string& where) {
  fs::path cur;
  for (const fs::path& part : dir) {
    cur /= part;
    if (cur.empty() || cur == cur.root_path() || part.empty()) continue;
    if (::mkdir(cur.c_str(), mode) != 0) {
      const int err = errno;
      if (err != EEXIST) throw RuntimeError(where, "cannot create " + cur.string() + ": " + std::strerror(err));
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    throw RuntimeError(where, "cannot stat " + dir.string() + ": " + std::strerror(err));
  }
  if (!S_ISDIR(st.st_mode)) throw RuntimeError(where, dir.string() + " exists but is " + kindOf(st.st_mode) +
                                                          ", not a directory");
}

}  // namespace monogen::support
