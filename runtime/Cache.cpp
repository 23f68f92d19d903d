#include "runtime/Cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>

#include "ir/Error.h"
#include "runtime/AtomicFile.h"

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

void checkPrivateDir(const fs::path& dir) {
  struct stat st {};
  const std::string where = "cache directory " + dir.string();
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    throw RuntimeError(where, std::string("cannot stat it: ") + std::strerror(err));
  }
  if (!S_ISDIR(st.st_mode)) throw RuntimeError(where, "exists but is not a directory");
  if (st.st_uid != ::geteuid())
    throw RuntimeError(where, "is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
                                  std::to_string(::geteuid()) +
                                  "); refusing to load code objects from it. Use a directory you own "
                                  "(set MONOGEN_CACHE_DIR) with mode 0700");
  // Private, as the README says: others must neither plant code objects nor read the ones here.
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    throw RuntimeError(where, "has mode " + octalMode(st.st_mode) +
                                  ": group or others can access it (anyone who can write could plant a code "
                                  "object); expected 0700 (owner only). Fix it with: chmod 700 " + dir.string());
}

}  // namespace

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

Cache::Cache(fs::path dir, std::string toolchainId) : dir_(std::move(dir)), toolchainId_(std::move(toolchainId)) {
  if (dir_.empty()) throw RuntimeError("cache directory", "the path is empty");
  dir_ = fs::absolute(dir_).lexically_normal();
  if (dir_.has_filename() == false && dir_ != dir_.root_path()) dir_ = dir_.parent_path();
  makeDirectories(dir_, 0700, "cache directory " + dir_.string());
  checkPrivateDir(dir_);
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

std::shared_ptr<const CacheEntry> Cache::loadOrCompile(const std::string& text, const std::string& digest,
                                                       const CompileFn& compile, CacheSource& source) {
  const fs::path file = dir_ / (digest + ".co");
  auto entry = std::make_shared<CacheEntry>();
  entry->keyText = text;
  entry->digest = digest;

  std::string bytes, why;
  switch (readCacheFile(file, bytes, why)) {
    case ReadResult::Missing: break;
    case ReadResult::Ok:
      why = decodeFile(bytes, text, entry->bytes);
      if (why.empty()) {
        entry->origin = source = CacheSource::Disk;
        std::lock_guard<std::mutex> g(mu_);
        ++stats_.diskHits;
        return entry;
      }
      [[fallthrough]];
    case ReadResult::Error: {
      std::cerr << "monogen: warning: cache file " << file.string() << " rejected: " << why
                << "; not loading it, regenerating\n";
      std::lock_guard<std::mutex> g(mu_);
      ++stats_.rejectedFiles;
      break;
    }
  }

  entry->bytes = compile();
  entry->origin = source = CacheSource::Compiled;
  {
    std::lock_guard<std::mutex> g(mu_);
    ++stats_.compiles;
  }
  try {
    const std::string enc = encodeFile(text, entry->bytes);
    writeFileAtomically(file, {enc}, 0600);
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
  const std::string text = keyText(key, toolchainId_);
  const std::string digest = hexDigest(sha256(text));
  std::shared_ptr<InFlight> job;
  bool owner = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (auto it = memory_.find(digest); it != memory_.end()) {
      ++stats_.memoryHits;
      if (source) *source = CacheSource::Memory;
      return it->second;
    }
    if (auto it = inflight_.find(digest); it != inflight_.end()) {
      job = it->second;
    } else {
      job = std::make_shared<InFlight>();
      inflight_[digest] = job;
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
    entry = loadOrCompile(text, digest, compile, src);
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    if (entry) memory_[digest] = entry;
    inflight_.erase(digest);
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

}  // namespace monogen::runtime
