// The code-object cache: memory and disk layers, corrupt files, directory permissions; and
// the one file writer every output goes through (support/AtomicFile.h).
#include <signal.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include "ir/Error.h"
#include "support/AtomicFile.h"
#include "runtime/Cache.h"

using namespace monogen;
using namespace monogen::runtime;
using namespace monogen::support;
namespace fs = std::filesystem;

namespace {

/// A fresh private directory under the build tree (or /tmp), removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() /
           ("monogen-cache-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, ec);
    fs::remove_all(path, ec);
  }
};

ir::Key testKey(int rows = 4, int tp = 2) {
  ir::Key k;
  k.params = {{"S", rows}, {"TP", tp}};
  k.target = ir::gfx950();
  k.config = "hidden=1536 experts=16";
  return k;
}

std::vector<uint8_t> codeObject(uint8_t seed, size_t n = 4096) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

std::string readAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void writeAll(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(s.data(), static_cast<std::streamsize>(s.size()));
}

mode_t modeOf(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

const std::string kToolchain = "llvm-22.test";

/// Fills the cache for testKey() with codeObject(1) and returns the file it wrote.
fs::path populate(const fs::path& dir) {
  Cache c(dir, kToolchain);
  int calls = 0;
  c.get(testKey(), [&] { ++calls; return codeObject(1); });
  REQUIRE(calls == 1);
  REQUIRE(fs::exists(c.pathFor(testKey())));
  return c.pathFor(testKey());
}

/// A second process's view: must reject the file, recompile (returning the compiled bytes,
/// never the file's), and rewrite a good file.
void expectRejectedAndRegenerated(const fs::path& dir, const fs::path& file) {
  Cache c(dir, kToolchain);
  int calls = 0;
  CacheSource src = CacheSource::Memory;
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  std::shared_ptr<const CacheEntry> e;
  try {
    e = c.get(testKey(), [&] { ++calls; return codeObject(2); }, &src);
  } catch (...) {
    std::cerr.rdbuf(old);
    throw;
  }
  std::cerr.rdbuf(old);
  // The warning names the file and says why.
  CHECK_THAT(err.str(), Catch::Contains(file.string()) && Catch::Contains("rejected:"));
  INFO(err.str());
  CHECK(calls == 1);
  CHECK(src == CacheSource::Compiled);
  CHECK(e->bytes == codeObject(2));
  CHECK(c.stats().rejectedFiles == 1);
  CHECK(c.stats().diskHits == 0);
  // Rewritten: a third process now loads the new bytes from disk.
  Cache c3(dir, kToolchain);
  int calls3 = 0;
  auto e3 = c3.get(testKey(), [&] { ++calls3; return codeObject(3); }, &src);
  CHECK(calls3 == 0);
  CHECK(src == CacheSource::Disk);
  CHECK(e3->bytes == codeObject(2));
  CHECK(c3.stats().rejectedFiles == 0);
}

}  // namespace

TEST_CASE("cache: a miss compiles once, then memory, then a new process loads from disk") {
  TempDir t;
  int calls = 0;
  auto compile = [&] { ++calls; return codeObject(1); };
  {
    Cache c(t.path, kToolchain);
    CacheSource src = CacheSource::Memory;
    auto e1 = c.get(testKey(), compile, &src);
    CHECK(src == CacheSource::Compiled);
    CHECK(calls == 1);
    CHECK(e1->bytes == codeObject(1));
    CHECK(e1->digest == keyDigest(testKey(), kToolchain));
    CHECK(e1->keyText == keyText(testKey(), kToolchain));
    auto e2 = c.get(testKey(), compile, &src);
    CHECK(src == CacheSource::Memory);
    CHECK(calls == 1);
    CHECK(e2 == e1);
    CHECK(c.stats().compiles == 1);
    CHECK(c.stats().memoryHits == 1);
    CHECK(c.stats().diskWrites == 1);
    const fs::path f = c.pathFor(testKey());
    CHECK(f.filename().string() == keyDigest(testKey(), kToolchain) + ".co");
    CHECK(modeOf(f) == 0600);
  }
  {
    Cache c(t.path, kToolchain);  // "a new process"
    CacheSource src = CacheSource::Memory;
    auto e = c.get(testKey(), compile, &src);
    CHECK(calls == 1);
    CHECK(src == CacheSource::Disk);
    CHECK(e->origin == CacheSource::Disk);
    CHECK(e->bytes == codeObject(1));
    CHECK(c.stats().diskHits == 1);
    CHECK(c.stats().compiles == 0);
  }
  // No temp files are left behind: the entry, its lock and its hit count.
  std::set<std::string> exts;
  for (auto& de : fs::directory_iterator(t.path)) {
    CHECK(de.path().filename().string().find(".tmp.") == std::string::npos);
    exts.insert(de.path().extension().string());
  }
  CHECK(exts == std::set<std::string>{".co", ".hits", ".lock"});
}

TEST_CASE("cache: different keys and toolchains are different entries") {
  TempDir t;
  Cache c(t.path, kToolchain);
  int calls = 0;
  c.get(testKey(4, 2), [&] { ++calls; return codeObject(1); });
  c.get(testKey(8, 2), [&] { ++calls; return codeObject(2); });
  CHECK(calls == 2);
  Cache other(t.path, "llvm-23.test");
  auto e = other.get(testKey(4, 2), [&] { ++calls; return codeObject(3); });
  CHECK(calls == 3);
  CHECK(e->bytes == codeObject(3));
}

TEST_CASE("cache: a file with one corrupt payload byte is rejected, recompiled and rewritten") {
  TempDir t;
  const fs::path f = populate(t.path);
  std::string s = readAll(f);
  s[s.size() - 100] ^= 0x40;
  writeAll(f, s);
  expectRejectedAndRegenerated(t.path, f);
}

TEST_CASE("cache: a truncated file is rejected, recompiled and rewritten") {
  TempDir t;
  const fs::path f = populate(t.path);
  SECTION("payload cut") {
    fs::resize_file(f, fs::file_size(f) - 1);
    expectRejectedAndRegenerated(t.path, f);
  }
  SECTION("header cut") {
    fs::resize_file(f, 20);
    expectRejectedAndRegenerated(t.path, f);
  }
  SECTION("empty") {
    fs::resize_file(f, 0);
    expectRejectedAndRegenerated(t.path, f);
  }
}

TEST_CASE("cache: a file with trailing garbage is rejected") {
  TempDir t;
  const fs::path f = populate(t.path);
  writeAll(f, readAll(f) + "x");
  expectRejectedAndRegenerated(t.path, f);
}

TEST_CASE("cache: a file whose header holds another key's text is rejected") {
  TempDir t;
  const fs::path f = populate(t.path);
  // A well-formed file for a different key (valid checksum), placed under this key's name.
  writeAll(f, Cache::encodeFile(keyText(testKey(16, 8), kToolchain), codeObject(9)));
  expectRejectedAndRegenerated(t.path, f);
}

TEST_CASE("cache: a file with a bad magic is rejected") {
  TempDir t;
  const fs::path f = populate(t.path);
  std::string s = readAll(f);
  s[0] = 'X';
  writeAll(f, s);
  expectRejectedAndRegenerated(t.path, f);
}

TEST_CASE("cache: decodeFile says why") {
  const std::string text = keyText(testKey(), kToolchain);
  const std::string good = Cache::encodeFile(text, codeObject(5, 100));
  std::vector<uint8_t> out;
  CHECK(Cache::decodeFile(good, text, out).empty());
  CHECK(out == codeObject(5, 100));
  std::string bad = good;
  bad.back() ^= 1;
  CHECK_THAT(Cache::decodeFile(bad, text, out), Catch::Contains("checksum"));
  CHECK_THAT(Cache::decodeFile(good.substr(0, good.size() - 3), text, out), Catch::Contains("truncated"));
  CHECK_THAT(Cache::decodeFile(good, text + "x", out), Catch::Contains("key text"));
  CHECK_THAT(Cache::decodeFile("NOTMONOGENxxxxxxxxxxx", text, out), Catch::Contains("magic"));
}

TEST_CASE("cache: the directory is created 0700 with its parents") {
  TempDir t;
  const fs::path d = t.path / "a" / "b";
  Cache c(d, kToolchain);
  CHECK(fs::is_directory(d));
  CHECK(modeOf(d) == 0700);
  CHECK(modeOf(t.path / "a") == 0700);
  CHECK(modeOf(t.path) == 0700);
}

TEST_CASE("cache: a directory group or others can access is refused") {
  TempDir t;
  fs::create_directories(t.path);
  // the README's "private (0700)": no access at all for group or others, read-only included
  const mode_t mode = GENERATE(0777, 0770, 0702, 0720, 0755, 0750, 0705, 0740, 0704, 0710, 0701);
  REQUIRE(::chmod(t.path.c_str(), mode) == 0);
  try {
    Cache c(t.path, kToolchain);
    FAIL("a directory with mode 0" << std::oct << mode << " was accepted");
  } catch (const RuntimeError& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains(t.path.string()));
    CHECK_THAT(msg, Catch::Contains("chmod 700"));
    char m[8];
    std::snprintf(m, sizeof m, "0%03o", static_cast<unsigned>(mode));
    CHECK_THAT(msg, Catch::Contains(m));
    CHECK_THAT(msg, Catch::Contains("expected 0700"));
  }
  // 0700 (and stricter) is fine.
  REQUIRE(::chmod(t.path.c_str(), 0700) == 0);
  CHECK_NOTHROW(Cache(t.path, kToolchain));
}

TEST_CASE("cache: unsafeDirReason calls a 0777 directory unsafe and never hints a chmod of another directory") {
  TempDir t;
  populate(t.path);
  CHECK(Cache::unsafeDirReason(t.path).empty());
  REQUIRE(::chmod(t.path.c_str(), 0777) == 0);
  const std::string own = Cache::unsafeDirReason(t.path);
  CHECK_THAT(own, Catch::Contains("has mode 0777") && Catch::Contains("chmod 700 " + t.path.string()));
  // The same mode on a directory that also holds another file (a home, /etc): no chmod hint for it.
  writeAll(t.path / "notes.txt", "mine");
  for (const std::string& msg : {Cache::unsafeDirReason(t.path), [&] {
         try {
           Cache c(t.path, kToolchain);
         } catch (const RuntimeError& e) {
           return std::string(e.what());
         }
         return std::string("accepted");
       }()}) {
    INFO(msg);
    CHECK_THAT(msg, Catch::Contains("has mode 0777") && Catch::Contains("'notes.txt'"));
    CHECK_THAT(msg, !Catch::Contains("chmod 700"));
  }
}

TEST_CASE("cache: an entry group or others can write is rejected then recompiled and rewritten 0600") {
  TempDir t;
  const fs::path f = populate(t.path);
  const mode_t mode = GENERATE(0620, 0602, 0666);
  REQUIRE(::chmod(f.c_str(), mode) == 0);
  const auto files = Cache::scan(t.path);
  REQUIRE(files.size() == 1);
  CHECK_THAT(files[0].problem, Catch::Contains("group or others can write it"));
  expectRejectedAndRegenerated(t.path, f);
  CHECK(modeOf(f) == 0600);
}

TEST_CASE("cache: a path that is a file is refused") {
  TempDir t;
  fs::create_directories(t.path);
  writeAll(t.path / "f", "x");
  CHECK_THROWS_AS(Cache(t.path / "f", kToolchain), RuntimeError);
}

TEST_CASE("cache: defaultDir honours MONOGEN_CACHE_DIR, else ~/.cache/monogen") {
  const char* old = std::getenv("MONOGEN_CACHE_DIR");
  const std::string saved = old ? old : "";
  ::setenv("MONOGEN_CACHE_DIR", "/some/where/else", 1);
  CHECK(Cache::defaultDir() == fs::path("/some/where/else"));
  ::unsetenv("MONOGEN_CACHE_DIR");
  const char* home = std::getenv("HOME");
  if (home) CHECK(Cache::defaultDir() == fs::path(home) / ".cache" / "monogen");
  if (old) ::setenv("MONOGEN_CACHE_DIR", saved.c_str(), 1);
}

TEST_CASE("cache: concurrent gets of one key compile once") {
  TempDir t;
  Cache c(t.path, kToolchain);
  std::atomic<int> calls{0};
  std::atomic<bool> go{false};
  auto compile = [&] {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // keep the other thread waiting
    return codeObject(7);
  };
  std::shared_ptr<const CacheEntry> r[4];
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([&, i] {
      while (!go) std::this_thread::yield();
      r[i] = c.get(testKey(), compile);
    });
  go = true;
  for (auto& th : ts) th.join();
  CHECK(calls == 1);
  for (auto& e : r) {
    REQUIRE(e);
    CHECK(e->bytes == codeObject(7));
  }
  CHECK(c.stats().compiles == 1);
  CHECK(c.stats().memoryHits == 3);
}

TEST_CASE("cache: a compile that throws caches nothing and reaches the caller") {
  TempDir t;
  Cache c(t.path, kToolchain);
  CHECK_THROWS_WITH(c.get(testKey(), []() -> std::vector<uint8_t> { throw CodegenError("x", "boom"); }),
                    Catch::Contains("boom"));
  CHECK_FALSE(fs::exists(c.pathFor(testKey())));
  int calls = 0;
  c.get(testKey(), [&] { ++calls; return codeObject(1); });
  CHECK(calls == 1);
}

TEST_CASE("cache: a directory owned by another user is refused") {
  TempDir t;
  fs::create_directories(t.path);
  REQUIRE(::chmod(t.path.c_str(), 0700) == 0);
  const uid_t other = ::geteuid() == 65534 ? 65533 : 65534;
  if (::chown(t.path.c_str(), other, static_cast<gid_t>(-1)) != 0) {
    WARN("cannot chown here (not root); the other-owner refusal is not exercised");
    return;
  }
  CHECK_THROWS_WITH(Cache(t.path, kToolchain),
                    Catch::Contains(t.path.string()) && Catch::Contains("owned by uid " + std::to_string(other)));
  REQUIRE(::chown(t.path.c_str(), ::geteuid(), static_cast<gid_t>(-1)) == 0);
  CHECK_NOTHROW(Cache(t.path, kToolchain));
}

TEST_CASE("cache: a FIFO planted at an entry is rejected without blocking, and left alone") {
  TempDir t;
  Cache c(t.path, kToolchain);
  const fs::path f = c.pathFor(testKey());
  REQUIRE(::mkfifo(f.c_str(), 0600) == 0);
  ::alarm(20);  // a blocking open of the FIFO (no writer ever comes) would hang here: die instead
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  std::shared_ptr<const CacheEntry> e;
  CacheSource src = CacheSource::Memory;
  try {
    e = c.get(testKey(), [] { return codeObject(4); }, &src);
  } catch (...) {
    std::cerr.rdbuf(old);
    throw;
  }
  std::cerr.rdbuf(old);
  ::alarm(0);
  INFO(err.str());
  CHECK(e->bytes == codeObject(4));
  CHECK(src == CacheSource::Compiled);
  CHECK(c.stats().rejectedFiles == 1);
  CHECK(c.stats().diskWriteErrors == 1);  // not replaced: the writer refuses a non-regular destination
  CHECK_THAT(err.str(), Catch::Contains(f.string()) && Catch::Contains("not a regular file (a FIFO)"));
  struct stat st {};
  REQUIRE(::lstat(f.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("atomic file: a symlink, a directory or a FIFO at the destination is refused and left as it was") {
  TempDir t;
  fs::create_directories(t.path);
  const fs::path target = t.path / "precious";
  writeAll(target, "precious");
  SECTION("symlink") {
    const fs::path link = t.path / "out";
    fs::create_symlink(target, link);
    CHECK_THROWS_WITH(writeFileAtomically(link, {"new bytes"}),
                      Catch::Contains("'" + link.string() + "' is a symbolic link"));
    CHECK_THROWS_AS(checkOutputFile(link, "-o"), InputError);
    CHECK(fs::is_symlink(link));
    CHECK(readAll(target) == "precious");
  }
  SECTION("FIFO") {
    const fs::path fifo = t.path / "out";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    ::alarm(20);
    CHECK_THROWS_WITH(writeFileAtomically(fifo, {"new bytes"}), Catch::Contains("is a FIFO, not a regular file"));
    CHECK_THROWS_WITH(checkOutputFile(fifo, "-o"), Catch::Contains("is a FIFO"));
    ::alarm(0);
    CHECK(fs::is_fifo(fs::symlink_status(fifo)));
  }
  SECTION("directory") {
    fs::create_directories(t.path / "out");
    CHECK_THROWS_WITH(writeFileAtomically(t.path / "out", {"new bytes"}), Catch::Contains("is a directory"));
    CHECK(fs::is_directory(t.path / "out"));
  }
  // nothing else was left in the directory (no temp file)
  for (const auto& de : fs::directory_iterator(t.path))
    CHECK((de.path().filename() == "precious" || de.path().filename() == "out"));
}

TEST_CASE("atomic file: symlinks planted at guessable temp names are not followed") {
  TempDir t;
  fs::create_directories(t.path);
  const fs::path target = t.path / "precious", out = t.path / "out";
  writeAll(target, "precious");
  // every name an earlier writer used: "NAME.tmp.PID.N" (N a counter) and ".NAME.tmp.PID"
  const std::string pid = std::to_string(::getpid());
  fs::create_symlink(target, t.path / (".out.tmp." + pid));
  for (int n = 0; n < 256; ++n) fs::create_symlink(target, t.path / ("out.tmp." + pid + "." + std::to_string(n)));
  writeFileAtomically(out, {"new ", "bytes"}, 0644);
  CHECK(readAll(out) == "new bytes");
  CHECK(fs::is_regular_file(fs::symlink_status(out)));
  CHECK(readAll(target) == "precious");
  CHECK(modeOf(out) == (0644 & ~[] { const mode_t m = ::umask(0); ::umask(m); return m; }()));
  int links = 0;
  for (const auto& de : fs::directory_iterator(t.path)) links += fs::is_symlink(de.symlink_status());
  CHECK(links == 257);  // still there, none replaced
}

TEST_CASE("atomic file: a failed write names the errno text and leaves the old file and no temp file") {
  TempDir t;
  fs::create_directories(t.path);
  const fs::path out = t.path / "out";
  writeAll(out, "the previous file");
  struct rlimit old {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  auto* oldHandler = ::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG
  const std::string big(64 << 10, 'x');
  std::string msg;
  try {
    writeFileAtomically(out, {big});
  } catch (const RuntimeError& e) {
    msg = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, oldHandler);
  CHECK_THAT(msg, Catch::Contains(out.string()) && Catch::Contains("write to the temp file") &&
                      Catch::Contains(std::strerror(EFBIG)));
  CHECK(readAll(out) == "the previous file");
  int files = 0;
  for (const auto& de : fs::directory_iterator(t.path)) {
    ++files;
    CHECK(de.path().filename() == "out");
  }
  CHECK(files == 1);
}

TEST_CASE("atomic file: output paths are checked up front, naming the path and the errno text") {
  TempDir t;
  fs::create_directories(t.path);
  writeAll(t.path / "file", "x");
  CHECK_NOTHROW(checkOutputFile(t.path / "file", "-o"));  // a regular file is replaced
  CHECK_NOTHROW(checkOutputFile(t.path / "new", "-o"));
  CHECK_THROWS_WITH(checkOutputFile(t.path / "no" / "x", "-o"),
                    Catch::Contains("directory '" + (t.path / "no").string() + "'") && Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(checkOutputFile(t.path / "file" / "x", "-o"), Catch::Contains("is a regular file, not a directory"));
  CHECK_THROWS_WITH(checkOutputFile(t.path / "d/", "-o"), Catch::Contains("names a directory"));
  CHECK_THROWS_WITH(checkOutputDir(t.path / "file", "--save"),
                    Catch::Contains("'" + (t.path / "file").string() + "' is a regular file, not a directory"));
  CHECK_THROWS_WITH(checkOutputDir(t.path / "file" / "sub", "--save"), Catch::Contains(std::strerror(ENOTDIR)));
  CHECK_NOTHROW(checkOutputDir(t.path, "--save"));
  CHECK_NOTHROW(checkOutputDir(t.path / "a" / "b", "--save"));  // to be created under a writable directory
  makeDirectories(t.path / "a" / "b", 0750, "test");
  CHECK(modeOf(t.path / "a" / "b") == (0750 & ~[] { const mode_t m = ::umask(0); ::umask(m); return m; }()));
  CHECK_THROWS_WITH(makeDirectories(t.path / "file", 0700, "test"), Catch::Contains("is a regular file, not a directory"));
}

// ---------------------------------------------------------------- knobs, processes, the directory

namespace {

/// Sets an environment variable for the scope, restoring the old value after.
struct EnvVar {
  std::string name, old;
  bool had;
  EnvVar(const char* n, const char* v) : name(n) {
    const char* o = std::getenv(n);
    had = o != nullptr;
    if (had) old = o;
    if (v) ::setenv(n, v, 1);
    else ::unsetenv(n);
  }
  ~EnvVar() {
    if (had) ::setenv(name.c_str(), old.c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

/// Appends one line to `log` (O_APPEND: one write a line, safe across processes).
void logLine(const fs::path& log, const std::string& line) {
  const std::string l = line + "\n";
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, l.data(), l.size()) == static_cast<ssize_t>(l.size()));
  ::close(fd);
}

int countLines(const fs::path& p) {
  std::ifstream f(p);
  int n = 0;
  for (std::string l; std::getline(f, l);) ++n;
  return n;
}

/// The exit status of a child, as a number: its exit code, or 128 + the signal.
int waitChild(pid_t pid) {
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace

TEST_CASE("cache knobs: MONOGEN_CACHE, MONOGEN_RECOMPILE and MONOGEN_RUN_ONLY from the environment") {
  {
    EnvVar a("MONOGEN_CACHE", "off"), b("MONOGEN_RECOMPILE", "1"), c("MONOGEN_RUN_ONLY", "0");
    const CacheOptions o = CacheOptions::fromEnv();
    CHECK_FALSE(o.disk);
    CHECK(o.recompile);
    CHECK_FALSE(o.runOnly);
  }
  {
    EnvVar a("MONOGEN_CACHE", "of");
    try {
      CacheOptions::fromEnv();
      FAIL("no error");
    } catch (const InputError& e) {
      const std::string m = e.what();
      CHECK(m.find("MONOGEN_CACHE") != std::string::npos);
      CHECK(m.find("'of'") != std::string::npos);
      CHECK(m.find("expected off or on") != std::string::npos);
    }
  }
  EnvVar a("MONOGEN_CACHE", nullptr), b("MONOGEN_RECOMPILE", nullptr), c("MONOGEN_RUN_ONLY", nullptr);
  const CacheOptions d = CacheOptions::fromEnv();
  CHECK(d.disk);
  CHECK_FALSE(d.recompile);
  CHECK_FALSE(d.runOnly);
}

TEST_CASE("cache knobs: off keeps memory only and never touches the directory") {
  TempDir t;
  CacheOptions o;
  o.disk = false;
  Cache c(t.path / "never", kToolchain, o);
  int calls = 0;
  c.get(testKey(), [&] { ++calls; return codeObject(1); });
  CacheSource src = CacheSource::Compiled;
  c.get(testKey(), [&] { ++calls; return codeObject(1); }, &src);
  CHECK(calls == 1);
  CHECK(src == CacheSource::Memory);
  CHECK_FALSE(fs::exists(t.path));
}

TEST_CASE("cache knobs: recompile ignores a disk hit and rewrites the file") {
  TempDir t;
  const fs::path f = populate(t.path);
  CacheOptions o;
  o.recompile = true;
  Cache c(t.path, kToolchain, o);
  CacheSource src = CacheSource::Memory;
  auto e = c.get(testKey(), [] { return codeObject(2); }, &src);
  CHECK(src == CacheSource::Compiled);
  CHECK(e->bytes == codeObject(2));
  std::vector<uint8_t> payload;
  CHECK(Cache::decodeFile(readAll(f), keyText(testKey(), kToolchain), payload).empty());
  CHECK(payload == codeObject(2));
}

TEST_CASE("cache knobs: run-only serves hits and refuses a miss, naming the variant") {
  TempDir t;
  populate(t.path);
  CacheOptions o;
  o.runOnly = true;
  Cache c(t.path, kToolchain, o);
  int calls = 0;
  auto compile = [&] { ++calls; return codeObject(3); };
  CacheSource src = CacheSource::Memory;
  CHECK(c.get(testKey(), compile, &src)->bytes == codeObject(1));
  CHECK(src == CacheSource::Disk);
  try {
    c.get(testKey(5, 2), compile);
    FAIL("no error");
  } catch (const RuntimeError& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.find(testKey(5, 2).variantName()) != std::string::npos);
    CHECK(m.find("MONOGEN_RUN_ONLY=1") != std::string::npos);
  }
  CHECK(calls == 0);
}

TEST_CASE("cache across processes: 8 processes asking for one uncached key compile once and load the same file") {
  TempDir t;
  fs::create_directories(t.path);
  fs::permissions(t.path, fs::perms::owner_all);
  const fs::path log = t.path / "compiles.log";  // not a cache file name: the cache leaves it alone
  std::vector<pid_t> kids;
  for (int i = 0; i < 8; ++i) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 1;
      try {
        Cache c(t.path, kToolchain);
        CacheSource src = CacheSource::Memory;
        auto e = c.get(testKey(), [&] {
          logLine(log, "compiled by " + std::to_string(::getpid()));
          std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the others arrive meanwhile
          return codeObject(42, 1 << 20);
        }, &src);
        code = e->bytes == codeObject(42, 1 << 20) ? (src == CacheSource::Compiled ? 10 : 11) : 2;
      } catch (...) {
        code = 3;
      }
      ::_exit(code);
    }
    kids.push_back(pid);
  }
  int compiled = 0, loaded = 0;
  for (pid_t k : kids) {
    const int rc = waitChild(k);
    compiled += rc == 10;
    loaded += rc == 11;
  }
  CHECK(compiled == 1);
  CHECK(loaded == 7);
  CHECK(countLines(log) == 1);
  const auto files = Cache::scan(t.path);
  REQUIRE(files.size() == 1);
  CHECK(files[0].problem.empty());
  CHECK(files[0].hits == 7);
  for (const auto& de : fs::directory_iterator(t.path))  // no temp file is left
    CHECK(de.path().filename().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("cache across processes: a compiler killed with SIGKILL holds no one up, and the next one compiles") {
  TempDir t;
  fs::create_directories(t.path);
  fs::permissions(t.path, fs::perms::owner_all);
  const fs::path started = t.path / "started";
  const pid_t a = ::fork();
  REQUIRE(a >= 0);
  if (a == 0) {
    Cache c(t.path, kToolchain);
    c.get(testKey(), [&] {
      logLine(started, "a");
      std::this_thread::sleep_for(std::chrono::seconds(30));  // killed long before
      return codeObject(1);
    });
    ::_exit(0);
  }
  for (int i = 0; i < 2000 && !fs::exists(started); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(fs::exists(started));  // a holds the lock and is compiling
  ::kill(a, SIGKILL);
  CHECK(waitChild(a) == 128 + SIGKILL);
  Cache c(t.path, kToolchain);
  CacheSource src = CacheSource::Memory;
  CHECK(c.get(testKey(), [] { return codeObject(5); }, &src)->bytes == codeObject(5));
  CHECK(src == CacheSource::Compiled);
  CHECK(Cache::scan(t.path).at(0).problem.empty());
}

TEST_CASE("cache: a temp file a killed writer left is removed by the next cache, a live writer's is not") {
  TempDir t;
  const fs::path f = populate(t.path);
  const std::string digest = f.stem().string();
  // What kill -9 between the temp file's open and its rename leaves: a partial temp file.
  const fs::path stale = t.path / ("." + digest + ".co.tmp.0123456789abcdef");
  writeAll(stale, readAll(f).substr(0, 100));
  // A writer that is alive: a child holding the other entry's lock, its temp file half written.
  const std::string other(64, 'a');
  const fs::path live = t.path / ("." + other + ".co.tmp.fedcba9876543210");
  writeAll(live, "half");
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t w = ::fork();
  REQUIRE(w >= 0);
  if (w == 0) {
    const int fd = ::open((t.path / (other + ".lock")).c_str(), O_RDWR | O_CREAT, 0600);
    ::flock(fd, LOCK_EX);
    (void)::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char x;
  REQUIRE(::read(ready[0], &x, 1) == 1);
  {
    Cache c(t.path, kToolchain);  // a new process opening the cache
    CacheSource src = CacheSource::Memory;
    CHECK(c.get(testKey(), [] { return codeObject(9); }, &src)->bytes == codeObject(1));
    CHECK(src == CacheSource::Disk);
  }
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  ::kill(w, SIGKILL);
  waitChild(w);
  CHECK(Cache::removeStaleTemps(t.path) == 1);  // its writer is gone now
  CHECK_FALSE(fs::exists(live));
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_CASE("cache directory: scan checks every entry, prune drops the least recently used, clear empties it") {
  TempDir t;
  {
    Cache c(t.path, kToolchain);
    for (int s = 1; s <= 3; ++s) c.get(testKey(s, 1), [s] { return codeObject(static_cast<uint8_t>(s), 10000); });
  }
  // An entry's file renamed to another digest, and a corrupt one.
  const auto files = Cache::scan(t.path);
  REQUIRE(files.size() == 3);
  for (const auto& f : files) {
    CHECK(f.problem.empty());
    CHECK(f.keyText.find("S=") != std::string::npos);
  }
  fs::copy_file(files[0].path, t.path / (std::string(64, 'b') + ".co"));
  std::string bad = readAll(files[1].path);
  bad[bad.size() - 10] ^= 0x5a;
  writeAll(files[1].path, bad);
  std::map<std::string, std::string> problem;
  for (const auto& f : Cache::scan(t.path)) problem[f.digest] = f.problem;
  CHECK(problem.at(std::string(64, 'b')).find("not to its file name") != std::string::npos);
  CHECK(problem.at(files[1].digest).find("checksum") != std::string::npos);
  CHECK(problem.at(files[0].digest).empty());
  CHECK(problem.at(files[2].digest).empty());
  // Use one entry: the others are less recently used.
  {
    Cache c(t.path, kToolchain);
    c.get(testKey(3, 1), [] { return codeObject(0); });
  }
  const int64_t one = Cache::scan(t.path).at(0).bytes;
  const auto removed = Cache::prune(t.path, one + 10);
  CHECK(removed.size() == 3);
  const auto left = Cache::scan(t.path);
  REQUIRE(left.size() == 1);
  CHECK(left[0].keyText == keyText(testKey(3, 1), kToolchain));
  CHECK(Cache::clear(t.path) == 1);
  CHECK(Cache::scan(t.path).empty());
  CHECK(fs::is_empty(t.path));
}
