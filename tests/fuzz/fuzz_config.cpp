// libFuzzer target: ModelConfig::fromHfJson, the config.json loader behind --config. The
// loader takes a path, so each input is written to a memfd and read back through
// /proc/self/fd (the loader's own file reading included). A config is either refused with an
// InputError or accepted as one that passes validate(); anything else (a crash, a sanitizer
// report, another exception) is a bug.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

using namespace monogen;
using monogen::specs::minimax_m3::ModelConfig;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("fuzz-config.json", MFD_CLOEXEC);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    std::perror("fuzz_config: memfd");
    std::abort();
  }
  ModelConfig c;
  try {
    c = ModelConfig::fromHfJson(path);
  } catch (const InputError&) {
    return 0;  // refused, with a message
  }
  try {
    c.validate("an accepted config");
  } catch (const InputError& e) {
    std::fprintf(stderr, "fuzz_config: fromHfJson accepted a config that validate() refuses: %s\n", e.what());
    std::abort();
  }
  (void)c.canonical();
  return 0;
}
