// Cache keys: the hashed text and its SHA-256, checked against coreutils' sha256sum.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "ir/Error.h"
#include "runtime/KeyHash.h"

using namespace monogen;
using namespace monogen::runtime;

namespace {

/// SHA-256 of `text` as computed by the sha256sum tool, independent of OpenSSL.
std::string sha256sum(const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("monogen-keyhash-" + std::to_string(::getpid()));
  {
    std::ofstream f(path, std::ios::binary);
    f << text;
  }
  const std::string cmd = "sha256sum '" + path.string() + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, p);
  const int rc = ::pclose(p);
  std::filesystem::remove(path);
  REQUIRE(rc == 0);
  REQUIRE(n >= 64);
  return std::string(buf, 64);
}

ir::Key fixedKey() {
  ir::Key k;
  k.spec = "minimax_m3.ffn";  // Key has no default spec
  k.specVersion = 1;
  k.params = {{"S", 8}, {"TP", 4}};
  k.target = ir::gfx950();
  k.config = "hidden=6144 experts=128 topk=4 inter=3072 blocks=256";
  return k;
}

}  // namespace

TEST_CASE("keyhash: the hashed text is the canonical key, the generator version and build id, and the toolchain") {
  const ir::Key k = fixedKey();
  const std::string expected = k.canonical() + "\ngenerator=" + MONOGEN_VERSION + " build=" + generatorBuildId() +
                               "\ntoolchain=llvm-22.1.0";
  CHECK(keyText(k, "llvm-22.1.0") == expected);
  CHECK(std::string(generatorVersion()) == MONOGEN_VERSION);
}

TEST_CASE("keyhash: the digest is the SHA-256 of the key text (checked with sha256sum)") {
  const ir::Key k = fixedKey();
  const std::string text = keyText(k, "llvm-22.1.0");
  const std::string d = keyDigest(k, "llvm-22.1.0");
  CHECK(d.size() == 64);
  CHECK(d == sha256sum(text));
  CHECK(keyDigest(k, "llvm-22.1.0") == d);  // stable
  // The primitive too, on an empty input and on bytes that are not text.
  CHECK(hexDigest(sha256("")) == sha256sum(""));
  const std::string bin("\x00\xff\x10 binary\n", 10);
  CHECK(hexDigest(sha256(bin)) == sha256sum(bin));
}

TEST_CASE("keyhash: every part of the key changes the digest") {
  const ir::Key base = fixedKey();
  const std::string tc = "llvm-22.1.0";
  std::set<std::string> digests{keyDigest(base, tc)};
  auto add = [&](const ir::Key& k, const std::string& toolchain, const char* what) {
    INFO(what);
    CHECK(digests.insert(keyDigest(k, toolchain)).second);
  };
  ir::Key k = base;
  k.setParam("S", 9);
  add(k, tc, "S");
  k = base;
  k.setParam("TP", 8);
  add(k, tc, "TP");
  k = base;
  k.knobs = "experts=shared";
  add(k, tc, "a knob");
  k = base;
  k.knobs = "experts=shared trace=1";
  add(k, tc, "another knob");
  k = base;
  k.specVersion = 2;
  add(k, tc, "spec version");
  k = base;
  k.config += " x";
  add(k, tc, "config");
  k = base;
  k.target.arch = "gfx942";
  add(k, tc, "target arch");
  k = base;
  k.target.features = "sramecc-:xnack-";
  add(k, tc, "target features");
  k = base;
  k.target.computeUnits = 304;
  add(k, tc, "the machine's CU count");
  add(base, "llvm-22.1.1", "toolchain");
}

TEST_CASE("keyhash: a toolchain id must be one non-empty line") {
  CHECK_THROWS_AS(keyText(fixedKey(), ""), InputError);
  CHECK_THROWS_AS(keyText(fixedKey(), "llvm\n22"), InputError);
}

namespace {

/// A shell command's stdout; it must exit 0.
std::string commandOutput(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[512];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  REQUIRE(::pclose(p) == 0);
  return out;
}

/// The build id cmake/GeneratorBuildId.cmake computes over the generator sources under `root`.
std::string buildIdOf(const std::filesystem::path& root) {
  std::string out =
      commandOutput("cmake -DROOT='" + root.string() + "' -P '" MONOGEN_SOURCE_DIR "/cmake/GeneratorBuildId.cmake' 2>&1");
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

TEST_CASE("keyhash: the build id is the digest of the generator's sources, and a changed stage constant changes it") {
  namespace fs = std::filesystem;
  const std::string id = generatorBuildId();
  REQUIRE(id.size() == 64);
  CHECK(buildIdOf(MONOGEN_SOURCE_DIR) == id);  // this build's id is its sources' digest
  CHECK(keyText(fixedKey(), "llvm-22.1.0").find("build=" + id) != std::string::npos);

  // A copy of ir/, codegen/ and specs/ with one constant of a stage changed: a new id.
  const fs::path tmp = fs::temp_directory_path() / ("monogen-buildid-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  for (const char* d : {"ir", "codegen", "specs"})
    fs::copy(fs::path(MONOGEN_SOURCE_DIR) / d, tmp / d, fs::copy_options::recursive);
  CHECK(buildIdOf(tmp) == id);
  const fs::path stage = tmp / "specs" / "minimax_m3" / "kernel" / "stages" / "StageUp.cpp";
  std::string text;
  {
    std::ifstream f(stage, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  const size_t at = text.find_first_of("123456789", text.find("c.i32("));
  REQUIRE(at != std::string::npos);
  std::string changed = text;
  changed[at] = changed[at] == '9' ? '8' : static_cast<char>(changed[at] + 1);
  std::ofstream(stage, std::ios::binary | std::ios::trunc) << changed;
  const std::string changedId = buildIdOf(tmp);
  CHECK(changedId.size() == 64);
  CHECK(changedId != id);
  // A lowering rule and a new file count as well.
  std::ofstream(tmp / "codegen" / "Extra.h") << "// a new pass\n";
  CHECK(buildIdOf(tmp) != changedId);
  fs::remove_all(tmp);
}

TEST_CASE("keyhash: the same key gives the same text and digest in two processes") {
  // `monogen cache key` prints the key text and digest of a variant; two runs must agree.
  const std::string bin = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen cache key --rows 8 --tp 4 --config reduced";
  const std::string a = commandOutput(bin), b = commandOutput(bin);
  INFO(a);
  CHECK(a == b);
  CHECK(a.find(std::string("build=") + generatorBuildId()) != std::string::npos);
  CHECK(a.find("digest ") != std::string::npos);
}
