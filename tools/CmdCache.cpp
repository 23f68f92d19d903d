// monogen cache: the code-object cache on disk (runtime/Cache.h). `key` prints the text and
// digest a variant is cached under; `ls` every entry with its variant, size, age, hits and key
// text; `verify` checks every file as a load would and says which are bad (exit 1 if any, or if
// the directory is unsafe: not private; `ls` reports that too);
// `clear` removes the cache's files; `prune --max-bytes N` removes the least recently used
// entries until the rest fit in N bytes.
#include <fmt/format.h>

#include <filesystem>

#include "codegen/Toolchain.h"
#include "support/Error.h"
#include "runtime/Cache.h"
#include "runtime/KeyHash.h"
#include "tools/Commands.h"
#include "tools/Variant.h"
#include "tools/NumericFlag.h"

namespace monogen::tools {

namespace {

std::string humanAge(double s) {
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.0f} min", s / 60);
  if (s < 172800) return fmt::format("{:.0f} h", s / 3600);
  return fmt::format("{:.0f} d", s / 86400);
}

/// "minimax_m3.ffn v1 S=8 TP=4 ..." -> "minimax_m3.ffn S=8 TP=4" (the first line's spec, S and TP).
std::string variantOfKeyText(const std::string& text) {
  const std::string first = text.substr(0, text.find('\n'));
  std::string spec = first.substr(0, first.find(' ')), s, tp;
  for (const char* part : {" S=", " TP="}) {
    const size_t at = first.find(part);
    if (at == std::string::npos) continue;
    const size_t end = first.find(' ', at + 1);
    (part[1] == 'S' ? s : tp) = first.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
  }
  return fmt::format("{} {} {}", spec, s, tp);
}

}  // namespace

Run addCache(CLI::App& app) {
  struct Options {
    std::string dir;
    VariantOptions v;
    int64_t maxBytes = -1;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("cache", "the code-object cache: key, ls, verify, clear, prune");
  c->require_subcommand(1);
  c->add_option("--dir", o->dir, "the cache directory (default $MONOGEN_CACHE_DIR, else ~/.cache/monogen)");
  CLI::App* key = c->add_subcommand("key", "the key text and digest a variant is cached under");
  addVariantOptions(key, o->v, true);
  CLI::App* ls = c->add_subcommand("ls", "every entry: variant, size, age, hits and key text");
  CLI::App* verify = c->add_subcommand("verify", "check every file as a load would; exit 1 if any is bad");
  CLI::App* clear = c->add_subcommand("clear", "remove every entry (and the cache's lock, hit and temp files)");
  CLI::App* prune = c->add_subcommand("prune", "remove the least recently used entries until the rest fit");
  prune->add_option("--max-bytes", o->maxBytes, "the size the entries may take, in bytes")
      ->required()
      ->check(numeric<int64_t>(0, std::numeric_limits<int64_t>::max()));
  return [o, key, ls, verify, clear, prune] {
    const std::filesystem::path dir = o->dir.empty() ? runtime::Cache::defaultDir() : std::filesystem::path(o->dir);
    if (key->parsed()) {
      const auto cfg = configOf(o->v);
      const ir::Key k = keyOf(o->v, cfg, o->v.rows, o->v.tp);
      const std::string text = runtime::keyText(k, codegen::toolchainId());
      const std::string digest = runtime::hexDigest(runtime::sha256(text));
      fmt::print("{}\ndigest {}\nfile {}\n", text, digest, (dir / (digest + ".co")).string());
      return 0;
    }
    std::error_code ec;
    const auto status = std::filesystem::status(dir, ec);
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
      throw InputError("--dir", fmt::format("'{}' cannot be read: {}: expected the cache directory", dir.string(),
                                            ec.message()));
    if (std::filesystem::exists(status) && !std::filesystem::is_directory(status))
      throw InputError("--dir", fmt::format("'{}' is a {}: expected the cache directory", dir.string(),
                                            std::filesystem::is_regular_file(status) ? "file" : "special file"));
    if (!std::filesystem::exists(status)) {
      fmt::print("no cache directory at {}\n", dir.string());
      return 0;
    }
    if (clear->parsed()) {
      const int n = runtime::Cache::clear(dir);
      fmt::print("removed {} entries from {}\n", n, dir.string());
      return 0;
    }
    if (prune->parsed()) {
      const auto removed = runtime::Cache::prune(dir, o->maxBytes);
      int64_t freed = 0;
      for (const auto& f : removed) {
        fmt::print("removed {}  {}  {} B, idle {}\n", f.digest.substr(0, 16), variantOfKeyText(f.keyText), f.bytes,
                   humanAge(f.idleSeconds));
        freed += f.bytes;
      }
      fmt::print("pruned {} entries, {} B, from {} (limit {} B)\n", removed.size(), freed, dir.string(), o->maxBytes);
      return 0;
    }
    runtime::Cache::removeStaleTemps(dir);
    const auto files = runtime::Cache::scan(dir);
    const std::string unsafe = runtime::Cache::unsafeDirReason(dir);  // a load would refuse the directory
    if (!unsafe.empty()) fmt::print("UNSAFE  cache directory {}: {}\n", dir.string(), unsafe);
    if (ls->parsed()) {
      fmt::print("{:<16}  {:<26} {:>10} {:>8} {:>6}  {}\n", "digest", "variant", "bytes", "age", "hits", "status");
      int64_t total = 0;
      for (const auto& f : files) {
        total += f.bytes;
        fmt::print("{:<16}  {:<26} {:>10} {:>8} {:>6}  {}\n", f.digest.substr(0, 16),
                   f.keyText.empty() ? "?" : variantOfKeyText(f.keyText), f.bytes, humanAge(f.ageSeconds), f.hits,
                   f.problem.empty() ? "ok" : "BAD: " + f.problem);
        std::string text = f.keyText;
        for (size_t at = 0; !text.empty() && (at = text.find('\n', at)) != std::string::npos; at += 5)
          text.replace(at, 1, "\n    ");
        if (!text.empty()) fmt::print("    {}\n", text);
      }
      fmt::print("{} entries, {} B in {}\n", files.size(), total, dir.string());
      return 0;
    }
    int bad = 0;
    for (const auto& f : files) {
      if (f.problem.empty()) continue;
      ++bad;
      fmt::print("BAD  {}: {}\n", f.path.string(), f.problem);
    }
    fmt::print("{} entries checked in {}: {} good, {} bad{}\n", files.size(), dir.string(), files.size() - bad, bad,
               unsafe.empty() ? "" : "; the directory is UNSAFE");
    return bad || !unsafe.empty() ? 1 : 0;
  };
}

}  // namespace monogen::tools
