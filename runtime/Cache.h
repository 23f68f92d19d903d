// The code-object cache: a memory layer (digest -> entry) in front of a disk layer (one checked
// file per key in a private directory, one compiler per key across processes). Compiling is a
// callback, so the runtime never depends on LLVM. File format and locking: docs/runtime.md.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/Plan.h"
#include "runtime/KeyHash.h"

namespace monogen::runtime {

inline constexpr uint32_t kCacheFormatVersion = 1;

/// Where a get() found its entry.
enum class CacheSource : uint8_t { Memory, Disk, Compiled };
const char* cacheSourceName(CacheSource s);  // "memory", "disk", "compiled"

/// One cached code object.
struct CacheEntry {
  std::string keyText;        // what the digest is over
  std::string digest;         // hex SHA-256 of keyText
  std::vector<uint8_t> bytes; // the code object
  CacheSource origin = CacheSource::Compiled;  // how it entered memory: Disk or Compiled
};

/// The cache's knobs.
struct CacheOptions {
  bool disk = true;        ///< MONOGEN_CACHE=off|on (default on): the disk layer
  bool recompile = false;  ///< MONOGEN_RECOMPILE=1: ignore disk hits, compile and rewrite
  bool runOnly = false;    ///< MONOGEN_RUN_ONLY=1: a miss throws RuntimeError naming the variant
  /// From the environment; an unknown value is an InputError naming the variable, the value and
  /// what is expected.
  static CacheOptions fromEnv();
};

/// One file of a cache directory, as `monogen cache ls / verify` show it.
struct CacheFileInfo {
  std::filesystem::path path;
  std::string digest;    // from the file name
  std::string keyText;   // from the header ("" when unreadable)
  int64_t bytes = 0;     // the file's size
  int64_t hits = 0;      // disk hits counted in <digest>.hits
  double ageSeconds = 0; // since it was written
  double idleSeconds = 0;  // since it was last written or hit
  std::string problem;   // empty when the file checks out (magic, version, checksum, name = digest of its key)
};

struct CacheStats {
  int64_t memoryHits = 0;
  int64_t diskHits = 0;
  int64_t compiles = 0;
  int64_t rejectedFiles = 0;   // disk files that failed the check (then regenerated)
  int64_t diskWrites = 0;
  int64_t diskWriteErrors = 0; // the code object was still returned
};

class Cache {
 public:
  using CompileFn = std::function<std::vector<uint8_t>()>;

  /// Opens (creating it 0700, parents too) the cache directory `dir`. Throws RuntimeError if
  /// it cannot be created, is not a directory, is owned by another user, or is not private:
  /// group or others have any access to it (the mode must be 0700 or stricter, e.g. not
  /// 0755). toolchainId goes into every key (the caller passes the LLVM version).
  /// With options.disk false nothing on disk is touched (dir may then be empty). Removes the
  /// temp files killed writers left in dir.
  Cache(std::filesystem::path dir, std::string toolchainId, CacheOptions options = CacheOptions::fromEnv());

  /// $MONOGEN_CACHE_DIR if set and non-empty, else $HOME/.cache/monogen. Throws RuntimeError
  /// if neither MONOGEN_CACHE_DIR nor HOME is set.
  static std::filesystem::path defaultDir();

  /// The code object for `key`: from memory, else from disk (checked), else compile() (then
  /// written to disk). Concurrent calls for one key compile once; the others wait. If
  /// `source` is given it says where this call found it. Exceptions from compile() propagate
  /// to every caller waiting on that compile; nothing is cached then.
  std::shared_ptr<const CacheEntry> get(const ir::Key& key, const CompileFn& compile,
                                        CacheSource* source = nullptr);

  CacheStats stats() const;
  const std::filesystem::path& dir() const { return dir_; }
  const std::string& toolchainId() const { return toolchainId_; }
  /// The file a key's code object lives in.
  std::filesystem::path pathFor(const ir::Key& key) const;
  /// Drops the memory layer (the disk layer stays).
  void clearMemory();
  const CacheOptions& options() const { return options_; }

  /// Every "<digest>.co" in a cache directory, each checked like a load would check it, oldest
  /// first. Read only: takes no locks, changes nothing.
  static std::vector<CacheFileInfo> scan(const std::filesystem::path& dir);
  /// "" when `dir` is private as a cache needs it (a directory you own, mode 0700 or stricter);
  /// else why not, with a fix that never chmods a directory holding other than cache files.
  static std::string unsafeDirReason(const std::filesystem::path& dir);
  /// Removes the temp files killed writers left (those whose lock is free); returns how many.
  static int removeStaleTemps(const std::filesystem::path& dir);
  /// Removes every file a cache keeps in dir (entries, locks, hit counts, stale temps; nothing
  /// else), each under its lock so no writer is cut short; returns how many entries went.
  static int clear(const std::filesystem::path& dir);
  /// Removes the least recently used entries until the entries take at most maxBytes; returns
  /// the entries removed.
  static std::vector<CacheFileInfo> prune(const std::filesystem::path& dir, int64_t maxBytes);

  /// Header + payload bytes of a cache file (exposed for tests and `monogen emit`).
  static std::string encodeFile(const std::string& keyText, const std::vector<uint8_t>& payload);
  /// Checks a file's bytes against the expected key text. On success fills payload and returns
  /// an empty string; otherwise returns why it was rejected.
  static std::string decodeFile(const std::string& fileBytes, const std::string& expectedKeyText,
                                std::vector<uint8_t>& payload);

 private:
  struct InFlight;
  std::shared_ptr<const CacheEntry> loadOrCompile(const ir::Key& key, const std::string& text,
                                                  const std::string& digest, const CompileFn& compile,
                                                  CacheSource& source);
  /// The entry's file, checked; null if absent or rejected (a warning says why; *rejected set).
  std::shared_ptr<CacheEntry> loadFile(const std::string& text, const std::string& digest, bool* rejected = nullptr);

  std::filesystem::path dir_;
  std::string toolchainId_;
  CacheOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const CacheEntry>> memory_;  // by key text
  std::unordered_map<std::string, std::shared_ptr<InFlight>> inflight_;        // by key text
  CacheStats stats_;
};

}  // namespace monogen::runtime
