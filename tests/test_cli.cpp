// The monogen CLI end to end: bad arguments, emitted code objects read by LLVM's own tools,
// the cache across processes, dumps, and the sim verdict.
#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string out;
};

// Runs a shell command, returning its exit code and stdout + stderr.
Result sh(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

const std::string kMonogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";
const std::string kReadelf = "/usr/lib/llvm-22/bin/llvm-readelf";

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "monogen-cli-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()));
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string withCache(const TempDir& d) { return "MONOGEN_CACHE_DIR=" + (d.path / "cache").string() + " "; }

}  // namespace

TEST_CASE("bad arguments are refused with a clear message", "[cli]") {
  struct Case {
    std::string args, expect;
  };
  for (const Case& c : {Case{"emit --rows 0 --tp 4 -o x.co", "--rows"}, Case{"emit --rows 17 --tp 4 -o x.co", "--rows"},
                        Case{"emit --rows 8 --tp 3 -o x.co", "--tp"},
                        Case{"emit --rows 8 --tp 4 --arch gfx942 -o x.co", "unknown arch 'gfx942'"},
                        Case{"dump --what bogus", "--what"}, Case{"sim --config /nonexistent.json", "/nonexistent.json"},
                        Case{"frobnicate", "frobnicate"}}) {
    INFO(c.args);
    const Result r = sh(kMonogen + " " + c.args);
    CHECK(r.code != 0);
    CHECK(r.out.find(c.expect) != std::string::npos);
  }
}

TEST_CASE("every command has --help", "[cli]") {
  for (const char* cmd : {"", "emit", "dump", "sim", "info"}) {
    const Result r = sh(kMonogen + " " + cmd + " --help");
    INFO(cmd);
    CHECK(r.code == 0);
    CHECK(r.out.find("--help") != std::string::npos);
  }
}

TEST_CASE("emit writes a gfx950 ET_DYN code object with the Plan's kernarg layout", "[cli]") {
  TempDir d;
  const std::string co = (d.path / "v.co").string();
  const Result r = sh(withCache(d) + kMonogen + " emit --rows 8 --tp 4 -o " + co);
  REQUIRE(r.code == 0);
  const Result notes = sh(kReadelf + " --notes -h " + co);
  REQUIRE(notes.code == 0);
  CHECK(notes.out.find("DYN (Shared object file)") != std::string::npos);
  CHECK(notes.out.find("amdgcn-amd-amdhsa--gfx950:sramecc+:xnack-") != std::string::npos);
  CHECK(notes.out.find(".name:           monogen_") != std::string::npos);
  CHECK(notes.out.find(".private_segment_fixed_size: 0") != std::string::npos);
  // The Plan's kernel arguments, by name, in the metadata.
  const Result plan = sh(kMonogen + " dump --rows 8 --tp 4 --what plan");
  REQUIRE(plan.code == 0);
  for (const char* arg : {"part", "res_in", "res_out", "peers", "tag"}) {
    INFO(arg);
    CHECK(plan.out.find(std::string(" ") + arg + " ") != std::string::npos);
    CHECK(notes.out.find(std::string(".name:           ") + arg) != std::string::npos);
  }
}

TEST_CASE("the cache: a miss compiles, the next process loads from disk, a bad file is regenerated", "[cli]") {
  TempDir d;
  const std::string co = (d.path / "v.co").string();
  const std::string emit = withCache(d) + kMonogen + " emit --rows 3 --tp 2 --config reduced -o " + co;
  Result r = sh(emit);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("compiled") != std::string::npos);
  r = sh(emit);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("disk") != std::string::npos);

  // Corrupt the cached file: it is detected, never loaded, and regenerated.
  fs::path cached;
  for (auto& e : fs::directory_iterator(d.path / "cache"))
    if (e.path().extension() == ".co") cached = e.path();
  REQUIRE(!cached.empty());
  const auto size = fs::file_size(cached);
  {
    std::fstream f(cached, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 100));
    f.put('\x5a');
  }
  r = sh(emit);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("compiled") != std::string::npos);
  CHECK(r.out.find(cached.filename().string()) != std::string::npos);  // the warning names the file
  fs::resize_file(cached, size / 2);
  r = sh(emit);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("compiled") != std::string::npos);
  r = sh(emit);
  CHECK(r.out.find("disk") != std::string::npos);

  // A cache directory others can write to is refused.
  REQUIRE(chmod((d.path / "cache").c_str(), 0777) == 0);
  r = sh(emit);
  CHECK(r.code != 0);
  CHECK(r.out.find((d.path / "cache").string()) != std::string::npos);
}

TEST_CASE("dump prints the plan, kernel IR, LLVM IR and ISA", "[cli]") {
  Result r = sh(kMonogen + " dump --rows 3 --tp 2 --config reduced --what ir");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("stage 0 \"push\"") != std::string::npos);
  CHECK(r.out.find("stage 1 \"reduce\"") != std::string::npos);
  r = sh(kMonogen + " dump --rows 3 --tp 2 --config reduced --what llvm");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("amdgpu_kernel") != std::string::npos);
  r = sh(kMonogen + " dump --rows 3 --tp 2 --config reduced --what isa");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("s_barrier") != std::string::npos);
  CHECK(r.out.find("s_memrealtime") != std::string::npos);
}

TEST_CASE("sim prints a bit-exact verdict and saves safetensors", "[cli]") {
  TempDir d;
  const std::string save = (d.path / "run").string();
  Result r = sh(kMonogen + " sim --rows 3 --tp 2 --config reduced --seeds 2 --save " + save);
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("verdict: bit-exact under 2 seeds") != std::string::npos);
  for (const char* f : {"inputs.safetensors", "outputs.safetensors", "reference.safetensors"})
    CHECK(fs::file_size(fs::path(save) / f) > 0);
  // The saved inputs replay to the same verdict.
  r = sh(kMonogen + " sim --rows 3 --tp 2 --config reduced --inputs " + save + "/inputs.safetensors");
  CHECK(r.code == 0);
}

TEST_CASE("emit --all: every variant, and the S x TP matrix reads as gfx950 code objects", "[cli]") {
  TempDir d;
  const std::string dir = (d.path / "objs").string();
  const Result r = sh(withCache(d) + kMonogen + " emit --all -o " + dir);
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("[64/64]") != std::string::npos);  // progress
  CHECK(r.out.find("emitted 64 variants") != std::string::npos);
  for (int s : {1, 3, 8, 9, 16})
    for (int tp : {1, 2, 4, 8}) {
      const std::string name = "minimax_m3.ffn-S" + std::to_string(s) + "-TP" + std::to_string(tp);
      INFO(name);
      const Result notes = sh(kReadelf + " --notes -h " + dir + "/" + name + ".co");
      REQUIRE(notes.code == 0);
      CHECK(notes.out.find("DYN (Shared object file)") != std::string::npos);
      CHECK(notes.out.find("gfx950:sramecc+:xnack-") != std::string::npos);
      CHECK(notes.out.find("monogen_minimax_m3_ffn_S" + std::to_string(s) + "_TP" + std::to_string(tp)) !=
            std::string::npos);
      CHECK(notes.out.find(".private_segment_fixed_size: 0") != std::string::npos);
      CHECK(notes.out.find(".vgpr_spill_count: 0") != std::string::npos);
      // The kernarg layout: every argument of the Plan, at the Plan's offset.
      const Result plan = sh(kMonogen + " dump --what plan --rows " + std::to_string(s) + " --tp " + std::to_string(tp));
      REQUIRE(plan.code == 0);
      int checked = 0;
      std::istringstream lines(plan.out);
      for (std::string line; std::getline(lines, line);) {
        const auto at = line.find("@kernarg ");
        if (at == std::string::npos) continue;
        std::istringstream f(line);
        std::string idx, argName;
        f >> idx >> argName;
        const int offset = std::stoi(line.substr(at + 9));
        const std::string meta = ".name:           " + argName + "\n        .offset:         " + std::to_string(offset);
        INFO(argName << " at " << offset);
        CHECK(notes.out.find(meta) != std::string::npos);
        ++checked;
      }
      CHECK(checked >= 10);
    }
}
