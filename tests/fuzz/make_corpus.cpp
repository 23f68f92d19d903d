// Writes the generated seeds of the fuzz corpora with the real writers, so they stay valid
// files: corpus/fuzz_safetensors/*.safetensors (writeSafetensors) and
// corpus/fuzz_cache_entry/*.co (Cache::encodeFile). The config.json seeds are written by hand.
// Usage: fuzz_make_corpus <tests/fuzz/corpus>   (then commit what changed)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ir/Plan.h"
#include "runtime/Cache.h"
#include "runtime/KeyHash.h"
#include "runtime/Safetensors.h"

using namespace monogen;
using namespace monogen::runtime;
namespace fs = std::filesystem;

namespace {

HostTensor filled(DType d, std::vector<int64_t> shape, uint8_t first) {
  HostTensor t = HostTensor::zeros(d, std::move(shape));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<uint8_t>(first + 37 * i);
  return t;
}

void writeBytes(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(s.data(), static_cast<std::streamsize>(s.size()));
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <tests/fuzz/corpus>\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  const fs::path st = root / "fuzz_safetensors", co = root / "fuzz_cache_entry";
  fs::create_directories(st);
  fs::create_directories(co);

  // Every dtype, a scalar, an empty tensor, metadata.
  TensorMap all;
  all["a.weight"] = filled(DType::F32, {2, 3}, 1);
  all["b"] = filled(DType::BF16, {5}, 2);
  all["c"] = filled(DType::U8, {3, 1, 7}, 3);
  all["d_scalar"] = filled(DType::I64, {}, 4);
  all["e_empty"] = filled(DType::I32, {0, 4}, 5);
  all["f"] = filled(DType::F64, {1}, 6);
  all["g"] = filled(DType::U64, {2}, 7);
  writeSafetensors(st / "every-dtype.safetensors", all, {{"format", "pt"}, {"variant", "S4-TP2"}});
  // One tensor, no metadata; and no tensors at all.
  TensorMap one;
  one["x"] = filled(DType::BF16, {2, 2}, 8);
  writeSafetensors(st / "one-tensor.safetensors", one);
  writeSafetensors(st / "empty.safetensors", {}, {{"note", "no tensors"}});

  // A cache entry as the cache writes it: a real key text, a small stand-in code object.
  ir::Key key;
  key.params = {{"S", 8}, {"TP", 4}};
  key.target = ir::gfx950();
  key.config = "hidden=1536 experts=16";
  std::vector<uint8_t> payload = {0x7f, 'E', 'L', 'F', 2, 1, 1, 64};
  for (int i = 0; i < 56; ++i) payload.push_back(static_cast<uint8_t>(i * 11));
  writeBytes(co / "entry.co", Cache::encodeFile(keyText(key, "llvm-22.1.8"), payload));
  ir::Key bare;  // no spec, knobs or config
  bare.params = {{"S", 1}, {"TP", 1}};
  bare.target = ir::gfx950();
  writeBytes(co / "empty-payload.co", Cache::encodeFile(keyText(bare, "llvm-22.1.8"), {}));
  std::printf("wrote the seeds under %s\n", root.string().c_str());
  return 0;
}
