// monogen emit: writes gfx950 code objects, one variant (-o FILE) or every variant (--all -o DIR).
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include "ir/Error.h"
#include "support/AtomicFile.h"
#include "support/Error.h"
#include "tools/Commands.h"
#include "tools/Variant.h"
#include "tools/NumericFlag.h"

namespace monogen::tools {

namespace {

struct EmitOptions {
  VariantOptions v;
  bool all = false;
  std::string out;
  int jobs = 0;
};

std::string_view bytesOf(const std::vector<uint8_t>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

int emitOne(const EmitOptions& o) {
  const auto cfg = configOf(o.v);
  const ir::Key key = keyOf(o.v, cfg, o.v.rows, o.v.tp);
  support::checkOutputFile(o.out, "-o");  // before the compile
  auto gen = generatorOf(o.v, cfg);
  BuiltVariant b = buildVariant(gen, key);
  writeOutputFile(o.out, bytesOf(b.bytes()));
  fmt::print("{}: {} bytes, {} VGPR, {} AGPR, {} SGPR, {} B LDS, {} B scratch ({} in {:.2f} s)\n", o.out,
             b.bytes().size(), b.info.vgprs, b.info.agprs, b.info.sgprs, b.info.ldsBytes, b.info.scratchBytes,
             runtime::cacheSourceName(b.variant->source), b.seconds);
  return 0;
}

int emitAll(const EmitOptions& o) {
  namespace fs = std::filesystem;
  const auto cfg = configOf(o.v);
  std::vector<std::pair<int, int>> variants;
  // Largest first (more rows, fewer ranks: a longer compile), so the jobs end together: the last
  // compiles to start are the shortest.
  for (int s = cfg.maxRows; s >= 1; --s)
    for (int tp : {1, 2, 4, 8}) variants.push_back({s, tp});
  const auto fileOf = [&](const ir::Key& key) { return (fs::path(o.out) / (key.variantName() + ".co")).string(); };
  // Before the compiles: the directory, and every file in it a symlink or a non-file could block.
  support::checkOutputDir(o.out, "-o");
  if (fs::is_directory(o.out))
    for (const auto& [s, tp] : variants) support::checkOutputFile(fileOf(keyOf(o.v, cfg, s, tp)), "-o");
  support::makeDirectories(o.out, 0755, "-o " + o.out);
  auto gen = generatorOf(o.v, cfg);
  const int jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0}, done{0};
  std::mutex mu;
  std::exception_ptr failure;  // stops the workers: any error but a variant's own compile
  std::vector<std::exception_ptr> refused;  // a variant's CodegenError (its limits)
  const auto t0 = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (size_t i; (i = next++) < variants.size();) {
      {
        std::lock_guard<std::mutex> g(mu);
        if (failure) return;
      }
      const auto [s, tp] = variants[i];
      try {
        const ir::Key key = keyOf(o.v, cfg, s, tp);
        BuiltVariant b = buildVariant(gen, key);
        const std::string file = fileOf(key);
        writeOutputFile(file, bytesOf(b.bytes()));
        std::lock_guard<std::mutex> g(mu);
        fmt::print("[{:2}/{}] S={:<2} TP={} {:>3} VGPR {:>3} AGPR {:>6} B LDS  {:<8} {:5.2f} s  {}\n", ++done,
                   variants.size(), s, tp, b.info.vgprs, b.info.agprs, b.info.ldsBytes,
                   runtime::cacheSourceName(b.variant->source), b.seconds, file);
        flushStdout();
      } catch (const CodegenError& e) {  // this variant's compile: the others go on
        std::lock_guard<std::mutex> g(mu);
        fmt::print("[{:2}/{}] S={:<2} TP={} REFUSED: {}\n", ++done, variants.size(), s, tp, e.what());
        flushStdout();
        refused.push_back(std::current_exception());
      } catch (...) {
        std::lock_guard<std::mutex> g(mu);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int j = 0; j < jobs; ++j) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  fmt::print("emitted {} variants into {} in {:.1f} s ({} jobs)\n", variants.size() - refused.size(), o.out,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), jobs);
  if (!refused.empty()) {
    fmt::print("{} of {} variants refused (above); the first:\n", refused.size(), variants.size());
    flushStdout();
    std::rethrow_exception(refused.front());
  }
  return 0;
}

}  // namespace

Run addEmit(CLI::App& app) {
  auto o = std::make_shared<EmitOptions>();
  CLI::App* c = app.add_subcommand("emit", "write gfx950 code objects: one variant, or every S x TP with --all");
  addVariantOptions(c, o->v, true);
  c->add_flag("--all", o->all, "every variant: S 1..16 x TP 1, 2, 4, 8 (with progress); a variant over the target's "
                              "limits is refused, the others written");
  c->add_option("-o,--output", o->out, "the code object file (one variant) or directory (--all)")->required();
  c->add_option("-j,--jobs", o->jobs, "parallel compiles for --all (default: the cores)")->check(numeric(1, 64));
  return [o] { return o->all ? emitAll(*o) : emitOne(*o); };
}

}  // namespace monogen::tools
