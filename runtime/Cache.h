// The code-object cache (DESIGN.md, "Cache"): a memory layer (digest -> entry) in front of a
// disk layer (one file per key in a private directory). Compiling is a callback, so the
// runtime never depends on LLVM.
//
// Disk file "<digest>.co", all integers little-endian:
//   magic    8 bytes  "MONOGEN\x01"
//   version  u32      kCacheFormatVersion
//   keyLen   u32      length of the key text
//   key      keyLen   keyText(key, toolchainId) (runtime/KeyHash.h)
//   payLen   u64      code object length
//   sha      32 bytes SHA-256 of the code object
//   payload  payLen   the code object
// An entry is opened without following symlinks or blocking (O_NOFOLLOW|O_NONBLOCK) and read
// only if it is a regular file this user owns. One that is not, or whose magic, version, key
// text, length or checksum is wrong, is never loaded: a warning naming the file and the reason
// goes to stderr, it is counted, the code object is compiled again and the file rewritten
// (runtime/AtomicFile.h; a non-regular entry is left as it is, with a second warning).
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
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
  Cache(std::filesystem::path dir, std::string toolchainId);

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

  /// Header + payload bytes of a cache file (exposed for tests and `monogen emit`).
  static std::string encodeFile(const std::string& keyText, const std::vector<uint8_t>& payload);
  /// Checks a file's bytes against the expected key text. On success fills payload and returns
  /// an empty string; otherwise returns why it was rejected.
  static std::string decodeFile(const std::string& fileBytes, const std::string& expectedKeyText,
                                std::vector<uint8_t>& payload);

 private:
  struct InFlight;
  std::shared_ptr<const CacheEntry> loadOrCompile(const std::string& text, const std::string& digest,
                                                  const CompileFn& compile, CacheSource& source);

  std::filesystem::path dir_;
  std::string toolchainId_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const CacheEntry>> memory_;  // by digest
  std::map<std::string, std::shared_ptr<InFlight>> inflight_;        // by digest
  CacheStats stats_;
};

}  // namespace monogen::runtime
