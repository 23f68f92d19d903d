#include "runtime/Cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <regex>
#include <thread>

#include "ir/Error.h"
#include "support/AtomicFile.h"

namespace monogen::runtime {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'M', 'O', 'N', 'O', 'G', 'E', 'N', '\x01'};
constexpr size_t kFixedHeader = 8 + 4 + 4;  // magic, version, keyLen
constexpr size_t kMaxKeyText = 1 << 20;

std::string octalMode(mode_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0%03o", static_cast<unsigned>(m & 07777));
  return buf;
}

void putLe(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t getLe(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(s[at + i])) << (8 * i);
  return v;
}

const std::regex& tempName();

/// A file name a cache keeps in its directory: an entry, its lock or hit count, a temp file.
bool isCacheFileName(const std::string& name) {
  static const std::regex own("[0-9a-f]{64}\\.(co|hits|lock)");
  return std::regex_match(name, own) || std::regex_match(name, tempName());
}

/// How to make `dir` private: chmod it when it holds only the cache's own files; otherwise it is
/// another directory (a home, /etc), which must not be chmodded: use a directory of its own.
std::string privateDirHint(const fs::path& dir) {
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir, ec)) {
    const std::string name = de.path().filename().string();
    if (!isCacheFileName(name))
      return "It also holds '" + name + "', which is not a cache file: it is not the cache's own directory, so do "
             "not chmod it; set MONOGEN_CACHE_DIR (or --dir) to a directory of its own, e.g. ~/.cache/monogen";
  }
  return "Fix it with: chmod 700 " + dir.string();
}

/// "" when `dir` is a directory this user owns that group and others cannot access; else why not.
std::string privateDirProblem(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    return std::string("cannot stat it: ") + std::strerror(err);
  }
  if (!S_ISDIR(st.st_mode)) return "exists but is not a directory";
  if (st.st_uid != ::geteuid())
    return "is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " + std::to_string(::geteuid()) +
           "); refusing to load code objects from it. Use a directory you own (set MONOGEN_CACHE_DIR) with mode 0700";
  // Private, as the README says: others must neither plant code objects nor read the ones here.
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    return "has mode " + octalMode(st.st_mode) +
           ": group or others can access it (anyone who can write could plant a code object); expected 0700 (owner "
           "only). " + privateDirHint(dir);
  return {};
}

void checkPrivateDir(const fs::path& dir) {
  if (const std::string problem = privateDirProblem(dir); !problem.empty())
    throw RuntimeError("cache directory " + dir.string(), problem);
}

/// An exclusive flock on "<digest>.lock" in a cache directory, held while it lives. The kernel
/// drops it when the holder dies, kill -9 included, so a crashed compile never blocks others.
class FileLock {
 public:
  /// Blocks until the lock is ours (a line on stderr if another process holds it over a second).
  /// With tryOnly, returns at once; held() says whether it was taken.
  FileLock(const fs::path& lockFile, const std::string& what, bool tryOnly = false) {
    fd_ = ::open(lockFile.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      const int err = errno;
      throw RuntimeError("cache lock " + lockFile.string(), std::string("cannot open: ") + std::strerror(err));
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
      held_ = true;
      return;
    }
    if (tryOnly) return;
    const auto t0 = std::chrono::steady_clock::now();
    bool said = false;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (!said && std::chrono::steady_clock::now() - t0 > std::chrono::seconds(1)) {
        std::cerr << "monogen: waiting for another process compiling " << what << " (lock " << lockFile.string()
                  << ")\n";
        said = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    held_ = true;
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing the descriptor drops the flock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool held() const { return held_; }

 private:
  int fd_ = -1;
  bool held_ = false;
};

bool envFlag(const char* name, bool dflt, std::initializer_list<const char*> on, std::initializer_list<const char*> off,
             const char* expected) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  for (const char* o : on)
    if (std::strcmp(v, o) == 0) return true;
  for (const char* o : off)
    if (std::strcmp(v, o) == 0) return false;
  throw InputError(std::string("environment variable ") + name, std::string("value '") + v + "'; expected " + expected);
}

const std::regex& entryName() {
  static const std::regex r("([0-9a-f]{64})\\.co");
  return r;
}
const std::regex& tempName() {
  static const std::regex r("\\.([0-9a-f]{64})\\.co\\.tmp\\.[0-9a-f]{16}");
  return r;
}

int64_t readHits(const fs::path& hitsFile) {
  int fd = ::open(hitsFile.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[32] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  return n > 0 ? std::strtoll(buf, nullptr, 10) : 0;
}

/// hits + 1 in "<digest>.hits" (under a flock of that file, so concurrent hits all count).
void countHit(const fs::path& dir, const std::string& digest) {
  const fs::path f = dir / (digest + ".hits");
  int fd = ::open(f.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) return;  // a hit count is a statistic: never fail a load over it
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || ::flock(fd, LOCK_EX) != 0) {
    ::close(fd);
    return;
  }
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  const long long hits = (n > 0 ? std::strtoll(buf, nullptr, 10) : 0) + 1;
  const std::string text = std::to_string(hits) + "\n";
  if (::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()))
    (void)::ftruncate(fd, static_cast<off_t>(text.size()));
  ::close(fd);
}

}  // namespace

CacheOptions CacheOptions::fromEnv() {
  CacheOptions o;
  o.disk = envFlag("MONOGEN_CACHE", true, {"on", "1"}, {"off", "0"}, "off or on (0 or 1)");
  o.recompile = envFlag("MONOGEN_RECOMPILE", false, {"1"}, {"0"}, "1 (ignore cache hits) or 0");
  o.runOnly = envFlag("MONOGEN_RUN_ONLY", false, {"1"}, {"0"}, "1 (fail on a miss instead of compiling) or 0");
  return o;
}

const char* cacheSourceName(CacheSource s) {
  switch (s) {
    case CacheSource::Memory: return "memory";
    case CacheSource::Disk: return "disk";
    case CacheSource::Compiled: return "compiled";
  }
  return "?";
}

struct Cache::InFlight {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::shared_ptr<const CacheEntry> entry;
  std::exception_ptr error;
};

Cache::Cache(fs::path dir, std::string toolchainId, CacheOptions options)
    : dir_(std::move(dir)), toolchainId_(std::move(toolchainId)), options_(options) {
  if (!options_.disk) return;  // memory only: the directory is never touched
  if (dir_.empty()) throw RuntimeError("cache directory", "the path is empty");
  dir_ = fs::absolute(dir_).lexically_normal();
  if (dir_.has_filename() == false && dir_ != dir_.root_path()) dir_ = dir_.parent_path();
  support::makeDirectories(dir_, 0700, "cache directory " + dir_.string());
  checkPrivateDir(dir_);
  removeStaleTemps(dir_);
}

fs::path Cache::defaultDir() {
  if (const char* d = std::getenv("MONOGEN_CACHE_DIR"); d && *d) return fs::path(d);
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "monogen";
  throw RuntimeError("cache directory", "neither MONOGEN_CACHE_DIR nor HOME is set; set MONOGEN_CACHE_DIR");
}

fs::path Cache::pathFor(const ir::Key& key) const { return dir_ / (keyDigest(key, toolchainId_) + ".co"); }

CacheStats Cache::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

void Cache::clearMemory() {
  std::lock_guard<std::mutex> g(mu_);
  memory_.clear();
}

std::string Cache::encodeFile(const std::string& keyText, const std::vector<uint8_t>& payload) {
  std::string s(kMagic, sizeof kMagic);
  putLe(s, kCacheFormatVersion, 4);
  putLe(s, keyText.size(), 4);
  s += keyText;
  putLe(s, payload.size(), 8);
  const Sha256 sum = sha256(payload.data(), payload.size());
  s.append(reinterpret_cast<const char*>(sum.data()), sum.size());
  s.append(reinterpret_cast<const char*>(payload.data()), payload.size());
  return s;
}

std::string Cache::decodeFile(const std::string& f, const std::string& expectedKeyText, std::vector<uint8_t>& payload) {
  if (f.size() < kFixedHeader) return "truncated header (" + std::to_string(f.size()) + " bytes)";
  if (std::memcmp(f.data(), kMagic, sizeof kMagic) != 0) return "bad magic (not a monogen cache file)";
  const uint64_t version = getLe(f, 8, 4);
  if (version != kCacheFormatVersion)
    return "format version " + std::to_string(version) + ", expected " + std::to_string(kCacheFormatVersion);
  const uint64_t keyLen = getLe(f, 12, 4);
  if (keyLen > kMaxKeyText) return "key text length " + std::to_string(keyLen) + " is implausible";
  size_t at = kFixedHeader;
  if (f.size() < at + keyLen + 8 + 32) return "truncated header (key text or checksum cut off)";
  if (f.compare(at, keyLen, expectedKeyText) != 0 || keyLen != expectedKeyText.size())
    return "key text in the header does not match the requested key";
  at += keyLen;
  const uint64_t payLen = getLe(f, at, 8);
  at += 8;
  Sha256 want;
  std::memcpy(want.data(), f.data() + at, want.size());
  at += want.size();
  const uint64_t have = f.size() - at;
  if (have < payLen)
    return "truncated: header says " + std::to_string(payLen) + " payload bytes, file has " + std::to_string(have);
  if (have > payLen)
    return "wrong length: header says " + std::to_string(payLen) + " payload bytes, file has " + std::to_string(have);
  const Sha256 got = sha256(f.data() + at, payLen);
  if (got != want) return "payload checksum mismatch (sha256 " + hexDigest(got) + ", header says " + hexDigest(want) + ")";
  payload.assign(reinterpret_cast<const uint8_t*>(f.data() + at), reinterpret_cast<const uint8_t*>(f.data() + f.size()));
  return {};
}

namespace {

enum class ReadResult { Missing, Ok, Error };

/// Reads a cache file without following symlinks. On Error `why` says what went wrong.
ReadResult readCacheFile(const fs::path& p, std::string& out, std::string& why) {
  // O_NONBLOCK: opening a FIFO planted here must not wait for a writer; O_NOFOLLOW: no symlinks.
  int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return ReadResult::Missing;
    why = std::string("cannot open: ") + std::strerror(err);
    if (err == ELOOP) why += " (a symbolic link: not followed)";
    return ReadResult::Error;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    why = std::string("fstat failed: ") + std::strerror(err);
    return ReadResult::Error;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    why = std::string("not a regular file (") +
          (S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" : "a device or socket") + ")";
    return ReadResult::Error;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // a regular file: plain blocking reads
  if (st.st_uid != ::geteuid()) {
    ::close(fd);
    why = "owned by uid " + std::to_string(st.st_uid) + ", not by you";
    return ReadResult::Error;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {  // written 0600: anyone else who can write it could swap the code
    ::close(fd);
    why = "has mode " + octalMode(st.st_mode) + ": group or others can write it; expected 0600";
    return ReadResult::Error;
  }
  out.clear();
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      why = std::string("read failed: ") + std::strerror(err);
      ::close(fd);
      return ReadResult::Error;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return ReadResult::Ok;
}

}  // namespace

std::shared_ptr<CacheEntry> Cache::loadFile(const std::string& text, const std::string& digest, bool* rejected) {
  const fs::path file = dir_ / (digest + ".co");
  auto entry = std::make_shared<CacheEntry>();
  entry->keyText = text;
  entry->digest = digest;
  std::string bytes, why;
  switch (readCacheFile(file, bytes, why)) {
    case ReadResult::Missing: return nullptr;
    case ReadResult::Ok:
      why = decodeFile(bytes, text, entry->bytes);
      if (why.empty()) {
        entry->origin = CacheSource::Disk;
        return entry;
      }
      [[fallthrough]];
    case ReadResult::Error: {
      std::cerr << "monogen: warning: cache file " << file.string() << " rejected: " << why
                << "; not loading it, regenerating\n";
      if (rejected) *rejected = true;
      std::lock_guard<std::mutex> g(mu_);
      ++stats_.rejectedFiles;
      return nullptr;
    }
  }
  return nullptr;
}

std::shared_ptr<const CacheEntry> Cache::loadOrCompile(const ir::Key& key, const std::string& text,
                                                       const std::string& digest, const CompileFn& compile,
                                                       CacheSource& source) {
  auto hit = [&](std::shared_ptr<CacheEntry> e) {
    source = CacheSource::Disk;
    countHit(dir_, digest);
    std::lock_guard<std::mutex> g(mu_);
    ++stats_.diskHits;
    return e;
  };
  std::unique_ptr<FileLock> lock;
  bool rejected = false;
  if (options_.disk && !options_.recompile) {
    if (auto e = loadFile(text, digest, &rejected)) return hit(e);
  }
  if (options_.runOnly)
    throw RuntimeError("variant " + key.variantName(),
                       "not in the code-object cache" + (options_.disk ? " (" + dir_.string() + ")" : std::string()) +
                           " and MONOGEN_RUN_ONLY=1 forbids compiling it; warm the cache first (monogen emit --all, "
                           "or a run without MONOGEN_RUN_ONLY)");
  if (options_.disk) {
    // One process compiles; the others wait here, then find its file.
    lock = std::make_unique<FileLock>(dir_ / (digest + ".lock"), "variant " + key.variantName());
    if (!options_.recompile && !rejected)  // absent before the lock: a process we waited for may have written it
      if (auto e = loadFile(text, digest)) return hit(e);
  }
  auto entry = std::make_shared<CacheEntry>();
  entry->keyText = text;
  entry->digest = digest;
  entry->bytes = compile();
  entry->origin = source = CacheSource::Compiled;
  {
    std::lock_guard<std::mutex> g(mu_);
    ++stats_.compiles;
  }
  if (!options_.disk) return entry;
  const fs::path file = dir_ / (digest + ".co");
  try {
    const std::string enc = encodeFile(text, entry->bytes);
    support::writeFileAtomically(file, {enc}, 0600);
    std::lock_guard<std::mutex> g(mu_);
    ++stats_.diskWrites;
  } catch (const Error& e) {
    std::cerr << "monogen: warning: could not write cache file " << file.string() << ": " << e.what() << "\n";
    std::lock_guard<std::mutex> g(mu_);
    ++stats_.diskWriteErrors;
  }
  return entry;
}

std::shared_ptr<const CacheEntry> Cache::get(const ir::Key& key, const CompileFn& compile, CacheSource* source) {
  // The memory layer is keyed by the key text itself: the digest (a SHA-256) is computed once a
  // process per key, on the miss that loads or compiles it.
  const std::string text = keyText(key, toolchainId_);
  std::shared_ptr<InFlight> job;
  bool owner = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (auto it = memory_.find(text); it != memory_.end()) {
      ++stats_.memoryHits;
      if (source) *source = CacheSource::Memory;
      return it->second;
    }
    if (auto it = inflight_.find(text); it != inflight_.end()) {
      job = it->second;
    } else {
      job = std::make_shared<InFlight>();
      inflight_[text] = job;
      owner = true;
    }
  }

  if (!owner) {
    std::unique_lock<std::mutex> l(job->mu);
    job->cv.wait(l, [&] { return job->done; });
    if (job->error) std::rethrow_exception(job->error);
    {
      std::lock_guard<std::mutex> g(mu_);
      ++stats_.memoryHits;
    }
    if (source) *source = CacheSource::Memory;
    return job->entry;
  }

  std::shared_ptr<const CacheEntry> entry;
  std::exception_ptr error;
  CacheSource src = CacheSource::Compiled;
  try {
    const std::string digest = hexDigest(sha256(text));
    entry = loadOrCompile(key, text, digest, compile, src);
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    if (entry) memory_[text] = entry;
    inflight_.erase(text);
  }
  {
    std::lock_guard<std::mutex> l(job->mu);
    job->entry = entry;
    job->error = error;
    job->done = true;
  }
  job->cv.notify_all();
  if (error) std::rethrow_exception(error);
  if (source) *source = src;
  return entry;
}

// ---------------------------------------------------------------- the directory's files

std::string Cache::unsafeDirReason(const fs::path& dir) { return privateDirProblem(dir); }

int Cache::removeStaleTemps(const fs::path& dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = de.path().filename().string();
    if (!std::regex_match(name, m, tempName())) continue;
    // A live writer holds the entry's lock while its temp file exists: only a free lock means
    // the writer is gone.
    FileLock lock(dir / (m[1].str() + ".lock"), "cleanup", /*tryOnly=*/true);
    if (!lock.held()) continue;
    if (::unlink(de.path().c_str()) == 0) {
      ++removed;
      std::cerr << "monogen: removed " << de.path().string() << ", a temp file a killed writer left\n";
    }
  }
  return removed;
}

std::vector<CacheFileInfo> Cache::scan(const fs::path& dir) {
  std::vector<CacheFileInfo> out;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (const auto& de : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = de.path().filename().string();
    if (!std::regex_match(name, m, entryName())) continue;
    CacheFileInfo f;
    f.path = de.path();
    f.digest = m[1].str();
    std::error_code e2;
    const auto written = fs::last_write_time(de.path(), e2);
    f.ageSeconds = e2 ? 0 : std::chrono::duration<double>(now - written).count();
    f.idleSeconds = f.ageSeconds;
    const fs::path hitsFile = dir / (f.digest + ".hits");
    f.hits = readHits(hitsFile);
    if (f.hits > 0) {
      const auto used = fs::last_write_time(hitsFile, e2);
      if (!e2) f.idleSeconds = std::min(f.idleSeconds, std::chrono::duration<double>(now - used).count());
    }
    std::string bytes, why;
    if (readCacheFile(de.path(), bytes, why) != ReadResult::Ok) {
      f.problem = why.empty() ? "vanished while listing" : why;
      out.push_back(f);
      continue;
    }
    f.bytes = static_cast<int64_t>(bytes.size());
    // The key text is whatever the header holds; it must hash to the file's name.
    if (bytes.size() >= kFixedHeader && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0) {
      const uint64_t keyLen = getLe(bytes, 12, 4);
      if (keyLen <= kMaxKeyText && bytes.size() >= kFixedHeader + keyLen) f.keyText = bytes.substr(kFixedHeader, keyLen);
    }
    std::vector<uint8_t> payload;
    f.problem = decodeFile(bytes, f.keyText, payload);
    if (f.problem.empty() && hexDigest(sha256(f.keyText)) != f.digest)
      f.problem = "its key text hashes to " + hexDigest(sha256(f.keyText)).substr(0, 16) + "..., not to its file name";
    out.push_back(f);
  }
  std::sort(out.begin(), out.end(), [](const CacheFileInfo& a, const CacheFileInfo& b) {
    return a.ageSeconds != b.ageSeconds ? a.ageSeconds > b.ageSeconds : a.digest < b.digest;
  });
  return out;
}

namespace {

/// Removes an entry's files under its lock (waiting for a writer to finish). The lock file itself
/// goes only with `clear`: a process already waiting on the old one could otherwise compile
/// beside a new lock's holder (harmless, both rename identical files into place, but wasted).
void removeEntry(const fs::path& dir, const std::string& digest, bool lockToo) {
  FileLock lock(dir / (digest + ".lock"), "removal");
  ::unlink((dir / (digest + ".co")).c_str());
  ::unlink((dir / (digest + ".hits")).c_str());
  if (lockToo) ::unlink((dir / (digest + ".lock")).c_str());
}

}  // namespace

int Cache::clear(const fs::path& dir) {
  checkPrivateDir(dir);
  int removed = 0;
  std::vector<std::string> digests;
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir, ec)) {
    const std::string name = de.path().filename().string();
    static const std::regex any("([0-9a-f]{64})\\.(co|hits|lock)");
    std::smatch m;
    if (std::regex_match(name, m, any)) {
      if (m[2] == "co") ++removed;
      digests.push_back(m[1].str());
    }
  }
  std::sort(digests.begin(), digests.end());
  digests.erase(std::unique(digests.begin(), digests.end()), digests.end());
  for (const std::string& d : digests) removeEntry(dir, d, true);
  removeStaleTemps(dir);
  return removed;
}

std::vector<CacheFileInfo> Cache::prune(const fs::path& dir, int64_t maxBytes) {
  checkPrivateDir(dir);
  std::vector<CacheFileInfo> files = scan(dir), removed;
  int64_t total = 0;
  for (const auto& f : files) total += f.bytes;
  // Least recently used (longest idle) first.
  std::sort(files.begin(), files.end(), [](const CacheFileInfo& a, const CacheFileInfo& b) {
    return a.idleSeconds != b.idleSeconds ? a.idleSeconds > b.idleSeconds : a.digest < b.digest;
  });
  for (const auto& f : files) {
    if (total <= maxBytes) break;
    removeEntry(dir, f.digest, false);
    total -= f.bytes;
    removed.push_back(f);
  }
  return removed;
}

}  // namespace monogen::runtime
