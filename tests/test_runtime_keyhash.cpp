// Cache keys: the hashed text and its SHA-256, checked against coreutils' sha256sum.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
  k.spec = "minimax_m3.ffn";
  k.specVersion = 1;
  k.rows = 8;
  k.tp = 4;
  k.config = "hidden=6144 experts=128 topk=4 inter=3072 blocks=256";
  return k;
}

}  // namespace

TEST_CASE("keyhash: the hashed text is the canonical key, the generator version and the toolchain") {
  const ir::Key k = fixedKey();
  const std::string expected = k.canonical() + "\ngenerator=" + MONOGEN_VERSION + "\ntoolchain=llvm-22.1.0";
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
  k.rows = 9;
  add(k, tc, "S");
  k = base;
  k.tp = 8;
  add(k, tc, "TP");
  k = base;
  k.experts = ir::Experts::Shared;
  add(k, tc, "experts");
  k = base;
  k.trace = true;
  add(k, tc, "trace");
  k = base;
  k.dropMark = 3;
  add(k, tc, "dropMark");
  k = base;
  k.specVersion = 2;
  add(k, tc, "spec version");
  k = base;
  k.config += " x";
  add(k, tc, "config");
  k = base;
  k.target = "gfx942:sramecc+:xnack-";
  add(k, tc, "target");
  add(base, "llvm-22.1.1", "toolchain");
}

TEST_CASE("keyhash: a toolchain id must be one non-empty line") {
  CHECK_THROWS_AS(keyText(fixedKey(), ""), InputError);
  CHECK_THROWS_AS(keyText(fixedKey(), "llvm\n22"), InputError);
}
