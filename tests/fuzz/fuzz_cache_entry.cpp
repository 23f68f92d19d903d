// libFuzzer target: runtime::Cache::decodeFile, the check a cache file's bytes pass before a
// code object is loaded from disk. Each input is checked twice: against a key text it does
// not hold, and against the key text its own header claims (so the fuzzer gets past the key
// check to the lengths and the checksum). A file is either rejected with a reason or accepted
// as exactly encodeFile(key, payload); anything else (a crash, a sanitizer report, an
// exception) is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/Cache.h"

using monogen::runtime::Cache;

namespace {

void check(const std::string& file, const std::string& key) {
  std::vector<uint8_t> payload;
  const std::string why = Cache::decodeFile(file, key, payload);
  if (!why.empty()) return;  // rejected, with a reason
  if (Cache::encodeFile(key, payload) != file) {
    std::fprintf(stderr, "fuzz_cache_entry: accepted a file that is not encodeFile(key, payload)\n");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file(reinterpret_cast<const char*>(data), size);
  check(file, "not the key in the file");
  if (size >= 16) {  // magic, version, keyLen: use the key text the header claims, if it fits
    uint32_t keyLen = 0;
    for (int i = 0; i < 4; ++i) keyLen |= static_cast<uint32_t>(data[12 + i]) << (8 * i);
    if (keyLen <= size - 16) check(file, file.substr(16, keyLen));
  }
  return 0;
}
