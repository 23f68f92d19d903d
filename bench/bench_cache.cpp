// bench_cache: the warm paths of the code-object cache, side by side in one run: a memory hit
// through Cache::get (key -> code object), a memory hit through Generator::variant (key -> the
// verified Plan and code object ready to launch), and a disk hit in a fresh Cache (what a new
// process pays: open the directory, read the file, check its header and SHA-256, hand it over),
// for a full-dims code object. The disk cache lives in a private temp directory.
//
//   ./build/bench/bench_cache [--benchmark_repetitions=N]
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "codegen/Toolchain.h"
#include "runtime/Cache.h"
#include "runtime/Generator.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/kernel/Spec.h"

namespace {

using namespace monogen;
namespace fs = std::filesystem;
namespace mm = specs::minimax_m3;

/// One full-dims variant's code object, compiled once, and a cache directory holding it.
fs::path freshDir() {
  const fs::path d = fs::temp_directory_path() / ("monogen-bench-cache-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

struct Fixture {
  mm::ModelConfig cfg = mm::ModelConfig::byName("full");
  ir::Key key = mm::makeKey(cfg, 8, 4);
  fs::path dir = freshDir();
  std::shared_ptr<runtime::Cache> cache =
      std::make_shared<runtime::Cache>(dir, codegen::toolchainId(), runtime::CacheOptions{});
  runtime::Generator generator = mm::makeGenerator(cfg, cache);
  runtime::Generator* gen = &generator;
  std::vector<uint8_t> bytes = gen->variant(key, true)->code->bytes;  // compiled and written to disk
  ~Fixture() { fs::remove_all(dir); }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void memoryHitCache(benchmark::State& st) {
  Fixture& f = fixture();
  auto compile = [&] { return f.bytes; };
  for (auto _ : st) benchmark::DoNotOptimize(f.cache->get(f.key, compile));
}

void memoryHitGenerator(benchmark::State& st) {
  Fixture& f = fixture();
  for (auto _ : st) benchmark::DoNotOptimize(f.gen->variant(f.key, true));
}

void diskHitNewCache(benchmark::State& st) {
  Fixture& f = fixture();
  runtime::CacheOptions o;
  auto compile = [&]() -> std::vector<uint8_t> { throw std::runtime_error("the disk hit must not compile"); };
  for (auto _ : st) {
    runtime::Cache fresh(f.dir, codegen::toolchainId(), o);  // a new process's cache
    runtime::CacheSource src = runtime::CacheSource::Compiled;
    benchmark::DoNotOptimize(fresh.get(f.key, compile, &src));
    if (src != runtime::CacheSource::Disk) st.SkipWithError("not a disk hit");
  }
  st.counters["code_object_bytes"] = static_cast<double>(f.bytes.size());
}

}  // namespace

BENCHMARK(memoryHitCache)->Name("memory_hit_Cache::get")->Unit(benchmark::kMicrosecond);
BENCHMARK(memoryHitGenerator)->Name("memory_hit_Generator::variant")->Unit(benchmark::kMicrosecond);
BENCHMARK(diskHitNewCache)->Name("disk_hit_new_Cache")->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
