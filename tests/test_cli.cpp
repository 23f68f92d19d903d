// The monogen CLI end to end: bad arguments, emitted code objects read by LLVM's own tools,
// the cache across processes, dumps, and the sim verdict over the whole launch.
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <set>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/Safetensors.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/testing/SaveLaunch.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "test_shell.h"

namespace fs = std::filesystem;
namespace mm = monogen::specs::minimax_m3;

namespace {

struct Result {
  int code;
  std::string out;
};

// Runs a shell command, returning its exit code and stdout + stderr.
Result sh(const std::string& cmd) {
  int code = -1;
  std::string out = runShell(cmd, code);
  return {code, std::move(out)};
}

// $MONOGEN_TEST_BINARY runs these tests against another build (e.g. an older one, to show a
// check fails there).
const std::string kMonogen = std::getenv("MONOGEN_TEST_BINARY") && *std::getenv("MONOGEN_TEST_BINARY")
                                 ? std::string(std::getenv("MONOGEN_TEST_BINARY"))
                                 : std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";
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
                        Case{"frobnicate", "frobnicate"},
                        // the stage-parity knob is --sum; --experts is a count of distinct experts
                        Case{"dump --what plan --config reduced --sum bogus", "--sum"},
                        Case{"sim --config reduced --rows 2 --tp 2 --experts shared", "--experts"},
                        Case{"sim --config reduced --rows 2 --tp 2 --experts 3",
                             "N = 3: expected top-k 4 .. min(experts 16, valid rows 2 x top-k 4) = 8, or 0 for natural"},
                        Case{"sim --config reduced --rows 2 --tp 2 --experts 9", "N = 9: expected top-k 4 .. min("},
                        Case{"sim --config reduced --rows 2 --tp 2 --experts -1", "N = -1: expected top-k 4"},
                        Case{"sim --config reduced --rows 3 --tp 2 --experts 12 --padded-rows 1",
                             "min(experts 16, valid rows 2 x top-k 4) = 8"},
                        Case{"sim --config reduced --rows 2 --tp 2 --experts 4 --padded-rows 2", "all 2 rows are padded"},
                        Case{"sim --config reduced --rows 2 --tp 2 --padded-rows 3", "--padded-rows: K = 3: expected 0..S"},
                        Case{"sim --config reduced --rows 2 --tp 2 --experts 4 --inputs /", "--inputs excludes --experts"},
                        // a negative seed is refused, not wrapped to 2^64 - 1
                        Case{"sim --config reduced --rows 1 --tp 1 --seed -1", "--seed: '-1' is not an integer in 0 .. 18446744073709551615"},
                        Case{"trace --config reduced --rows 1 --tp 1 --seed -1 -o x.json", "--seed: '-1'"},
                        Case{"bench --rows 1 --tp 1 --experts 4 --seed -1", "--seed: '-1'"},
                        // a wait's bound is at least one tick
                        Case{"sim --config reduced --rows 1 --tp 1 --wait-ticks -5", "--wait-ticks: '-5' is out of range: expected an integer in 1 .. 9223372036854775807"},
                        Case{"sim --config reduced --rows 1 --tp 1 --wait-ticks 0", "--wait-ticks: '0' is out of range: expected an integer in 1 .."},
                        Case{"trace --config reduced --rows 1 --tp 1 --wait-ticks -5 -o x.json", "--wait-ticks"},
                        // a stall with no rank to stall is refused, not silently ignored
                        Case{"sim --config reduced --rows 1 --tp 1 --inject-ticks 5", "--inject-ticks requires --inject-rank"},
                        Case{"sim --config reduced --rows 1 --tp 1 --inject-ticks 5 --inject-rank -1",
                             "--inject-ticks: a stall needs a rank to stall"},
                        Case{"trace --config reduced --rows 1 --tp 1 --inject-ticks 5 -o x.json",
                             "--inject-ticks requires --inject-rank"}}) {
    INFO(c.args);
    const Result r = sh(kMonogen + " " + c.args);
    CHECK(r.code == 2);  // every usage error, CLI11's own too
    CHECK(r.out.find(c.expect) != std::string::npos);
  }
}

TEST_CASE("numeric flags: one checked parser naming the flag, value and range, no NaN, wrap, saturation or long echo",
          "[cli]") {
  const std::string digits(250, '9');
  struct Case {
    std::string args, expect;
  };
  for (const Case& c : {
           Case{"check --config reduced --device gfx950-run --timeout nan", "--timeout: 'nan' is not a finite number"},
           Case{"check --config reduced --device gfx950-run --timeout inf", "--timeout: 'inf' is not a finite number"},
           Case{"check --config reduced --device gfx950-run --timeout 0", "--timeout: '0' is out of range: expected a "
                                                                          "number in 0.001 .. 86400"},
           Case{"check --config reduced --per-rank --wait-seconds nan", "--wait-seconds: 'nan' is not a finite number"},
           Case{"check --config reduced --per-rank --wait-seconds -nan", "--wait-seconds: '-nan'"},
           Case{"check --config reduced --device gfx950-run --timeout " + digits,
                "--timeout: '99999999999999999999999999999999...' (250 characters) is out of range: expected a "
                "number in 0.001 .. 86400"},
           Case{"cache prune --max-bytes " + digits, "--max-bytes: '99999999999999999999999999999999...' (250 "
                                                     "characters) is out of range: expected an integer in 0 .. "
                                                     "9223372036854775807"},
           Case{"cache prune --max-bytes -1", "--max-bytes: '-1' is out of range"},
           Case{"check --config reduced --seed -1", "--seed: '-1' is not an integer in 0 .. 18446744073709551615"},
           Case{"sim --config reduced --rows 1 --tp 1 --seed 18446744073709551616",
                "--seed: '18446744073709551616' is out of range: expected an integer in 0 .. 18446744073709551615"},
           Case{"sim --config reduced --rows 1 --tp 1 --wait-ticks 9223372036854775808",
                "--wait-ticks: '9223372036854775808' is out of range: expected an integer in 1 .. 9223372036854775807"},
           Case{"sim --config reduced --rows 1 --tp 1 --inject-rank 0 --inject-ticks 4294967296",
                "--inject-ticks: '4294967296' is out of range: expected an integer in 0 .. 1073741824"},
           Case{"sim --config reduced --rows 1 --tp 1 --experts 4294967300", "--experts: '4294967300' is out of range"},
           Case{"emit --rows 8x --tp 4 -o x.co", "--rows: '8x' is not an integer in 1 .. 16"},
           Case{"emit --rows 0x8 --tp 4 -o x.co", "--rows: '0x8' is not an integer"},
           Case{"emit --rows 8.0 --tp 4 -o x.co", "--rows: '8.0' is not an integer"},
           Case{"emit --rows 8 --tp 4 -j 0 --all -o d", "--jobs: '0' is out of range: expected an integer in 1 .. 64"},
           Case{"info --rows 1 99", "--rows: '99' is out of range"},
           Case{"bench --rows 1-99999999999 --no-sim", "--rows: '99999999999' is out of range: expected an integer in "
                                                      "0 .. 4096"},
           // CLI11's own errors exit 2 as well (an unknown flag was 109, a missing value 114)
           Case{"info --bogus", "was not expected: --bogus"},
           Case{"emit --rows", "--rows"},
           Case{"sim --races=maybe", "--races"},
       }) {
    INFO(c.args);
    const Result r = sh(kMonogen + " " + c.args);
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find(c.expect) != std::string::npos);
    CHECK(r.out.find(digits.substr(0, 40)) == std::string::npos);  // never the whole value
  }
  // in range, the value reaches the command as written
  const Result ok = sh(kMonogen + " info --rows +2 --tp 4");
  CHECK(ok.code == 0);
  CHECK(ok.out.find("\n  2   4 ") != std::string::npos);
}

TEST_CASE("a --config path of a directory, a device or an oversized file is an InputError (exit 2) before it is read",
          "[cli][files]") {
  TempDir d;
  const fs::path big = d.path / "big.json";
  std::ofstream(big) << std::string(2 << 20, ' ');
  for (const auto& [path, expect] :
       {std::pair<std::string, std::string>{d.path.string(), "is not a regular file"},
        {"/dev/zero", "'/dev/zero' is not a regular file"},
        {big.string(), "holds 2097152 bytes: a config.json is at most 1048576 bytes"}}) {
    INFO(path);
    const Result r = sh("timeout 20 " + kMonogen + " info --rows 1 --tp 1 --config " + path);
    CHECK(r.code == 2);
    CHECK(r.out.find("--config: ") != std::string::npos);
    CHECK(r.out.find(expect) != std::string::npos);
  }
}

TEST_CASE("docs/architecture.md's quote of monogen info for S=8 TP=4 is what the tool prints", "[cli][docs]") {
  std::ifstream f(std::string(MONOGEN_SOURCE_DIR) + "/docs/architecture.md");
  const std::string doc((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  int vgpr = -1, sgpr = -1;
  long lds = -1;
  const size_t at = doc.find("S=8 TP=4 uses ");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(doc.c_str() + at, "S=8 TP=4 uses %d VGPRs, %d SGPRs, %ld B of LDS", &vgpr, &sgpr, &lds) == 3);
  TempDir d;
  const Result r = sh(withCache(d) + kMonogen + " info --config full --rows 8 --tp 4");
  REQUIRE(r.code == 0);
  INFO(r.out);
  // the row:  S  TP  VGPR  AGPR  SGPR  LDS B ...
  std::istringstream row(r.out.substr(r.out.find('\n') + 1));
  int S = 0, tp = 0, v = 0, agpr = 0, s = 0;
  long l = 0;
  row >> S >> tp >> v >> agpr >> s >> l;
  CHECK(S == 8);
  CHECK(tp == 4);
  CHECK(v == vgpr);
  CHECK(s == sgpr);
  CHECK(l == lds);
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
  for (const char* arg : {"attn", "wo", "wo_scale", "res_in", "res_out", "peers", "epoch"}) {  // the default input
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

namespace {

/// The paragraph of `doc` (under the source dir) that starts with `start`, up to its blank line,
/// its line breaks and runs of spaces made one space.
std::string docParagraph(const std::string& doc, const std::string& start) {
  std::ifstream f(std::string(MONOGEN_SOURCE_DIR) + "/" + doc);
  const std::string text{std::istreambuf_iterator<char>(f), {}};
  const size_t at = text.find(start);
  if (at == std::string::npos) return "";
  return std::regex_replace(text.substr(at, text.find("\n\n", at) - at), std::regex("\\s+"), " ");  // one line
}

/// The last non-empty line of a command's output.
std::string lastLine(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') + 1);
}

}  // namespace

TEST_CASE("README.md is a front door: short and every time in its tables measured or modeled", "[cli][docs]") {
  // Measured and modeled detail goes to docs/ (timing.md, layer.md); a table's row of times says
  // which it is (or that it is a floor, a bound no launch reaches).
  std::ifstream f(std::string(MONOGEN_SOURCE_DIR) + "/README.md");
  REQUIRE(f);
  int lines = 0;
  std::vector<std::string> unlabelled;
  const std::regex timeCell("\\d us\\b"), label("measured|modeled|floor");
  for (std::string line; std::getline(f, line); ++lines)
    if (line.rfind('|', 0) == 0 && std::regex_search(line, timeCell) && !std::regex_search(line, label))
      unlabelled.push_back(line);
  CHECK(lines <= 150);
  CHECK(unlabelled == std::vector<std::string>{});
}

TEST_CASE("the exit codes docs/cli.md quotes are the ones monogen returns", "[cli][docs]") {
  // "Exit codes: 0 when ... 1 for ... 2 for ... 3 for": those four codes and no other.
  const std::string codes = docParagraph("docs/cli.md", "Exit codes:");
  INFO(codes);
  REQUIRE_FALSE(codes.empty());
  std::set<int> quoted;
  const std::regex codeSaid("(\\d+) (when|for) "), exitSaid("exit (\\d+)");
  for (std::sregex_iterator it(codes.begin(), codes.end(), codeSaid), end; it != end; ++it)
    quoted.insert(std::stoi((*it)[1]));
  CHECK(quoted == std::set<int>{0, 1, 2, 3});
  // What each code is said to cover, as run below.
  const auto said = [&](const char* from, const char* to) {
    const size_t a = codes.find(from), b = codes.find(to);
    return a == std::string::npos || b == std::string::npos ? std::string() : codes.substr(a, b - a);
  };
  const std::string one = said("1 for", "2 for"), two = said("2 for", "3 for");
  for (const char* w : {"MISMATCH", "INVALID", "RACE", "UNINIT", "ERROR", "cache verify"}) CHECK_THAT(one, Catch::Contains(w));
  for (const char* w : {"usage", "input error", "runtime error", "could not start"}) CHECK_THAT(two, Catch::Contains(w));
  const std::string verdicts = docParagraph("docs/cli.md", "`bit-exact` (exit 0)");
  std::set<int> cliCodes;
  for (std::sregex_iterator it(verdicts.begin(), verdicts.end(), exitSaid), end; it != end; ++it)
    cliCodes.insert(std::stoi((*it)[1]));
  CHECK(cliCodes == std::set<int>{0, 1, 2, 3});

  // 0: the command did what it says; for sim every output bit-exact.
  const std::string small = " --config reduced --rows 1 --tp 1 ";
  Result r = sh(kMonogen + " sim" + small);
  CHECK(r.code == 0);
  CHECK(lastLine(r.out) == "verdict: bit-exact under 1 seed");
  // 1: any other verdict, named on the last line.
  r = sh(kMonogen + " sim" + small + "--drop-mark 0");
  CHECK(r.code == 1);
  CHECK(lastLine(r.out).rfind("verdict: INVALID under 1 of 1 seed; the first, seed 1: INVALID: ", 0) == 0);
  // 1: a bad entry found by cache verify.
  TempDir d;
  const fs::path cache = d.path / "cache";
  fs::create_directories(cache);
  fs::permissions(cache, fs::perms::owner_all, fs::perm_options::replace);
  std::ofstream(cache / (std::string(64, 'a') + ".co")) << "not a code object";
  r = sh(kMonogen + " cache --dir " + cache.string() + " verify");
  CHECK(r.code == 1);
  CHECK(lastLine(r.out).find("0 good, 1 bad") != std::string::npos);
  // 2: a usage error (CLI11's own too), an input error, a runtime error (a cache others can access).
  for (const std::string& args : {std::string(" sim --bogus-flag"), std::string(" sim --rows"),
                                  std::string(" sim --config /nonexistent.json")}) {
    r = sh(kMonogen + args);
    INFO(args << ": " << r.out);
    CHECK(r.code == 2);
  }
  fs::permissions(cache, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec,
                  fs::perm_options::replace);
  r = sh("MONOGEN_CACHE_DIR=" + cache.string() + " " + kMonogen + " emit" + small + "-o " + (d.path / "v.co").string());
  CHECK(r.code == 2);
  CHECK(r.out.find("runtime error at cache directory") != std::string::npos);
  // 3, an internal error, is a bug in monogen: no input is meant to reach it, so none is run here.
}

TEST_CASE("dump prints the plan, kernel IR, LLVM IR and ISA", "[cli]") {
  Result r = sh(kMonogen + " dump --rows 3 --tp 2 --config reduced --what ir");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("stage 0 \"mark\"") != std::string::npos);
  CHECK(r.out.find("stage 1 \"push\"") != std::string::npos);
  CHECK(r.out.find("stage 2 \"reduce\"") != std::string::npos);
  r = sh(kMonogen + " dump --rows 3 --tp 2 --config reduced --what llvm");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("amdgpu_kernel") != std::string::npos);
  r = sh(kMonogen + " dump --rows 3 --tp 2 --config reduced --what isa");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("s_barrier") != std::string::npos);
  CHECK(r.out.find("s_memrealtime") != std::string::npos);
}

TEST_CASE("sim runs the whole launch bit-exact, steers to N distinct experts and saves it", "[cli]") {
  const mm::ModelConfig cfg = mm::ModelConfig::reduced();
  TempDir d;
  const fs::path save = d.path / "run";
  Result r = sh(kMonogen + " sim --rows 3 --tp 2 --config reduced --seeds 2 --experts 6 --save " + save.string());
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("verdict: bit-exact under 2 seeds") != std::string::npos);
  CHECK(r.out.find("  seed 2 ") != std::string::npos);  // one line a seed
  CHECK(r.out.find("pick 6 distinct routed experts") != std::string::npos);
  for (const char* f : {"inputs.safetensors", "outputs.safetensors", "reference.safetensors"})
    CHECK(fs::file_size(save / f) > 0);
  for (const auto& e : fs::directory_iterator(save)) CHECK(e.path().extension() == ".safetensors");  // no temp files

  const mm::SavedLaunch s = mm::loadLaunch(save);
  // The inputs: makeLaunchInputs's for the seed and --experts, weights in the contract layout.
  mm::LaunchInputOptions io;
  io.distinctExperts = 6;
  const monogen::runtime::TensorMap gen = mm::makeLaunchInputs(cfg, 3, 2, 1, io);
  for (const char* n : {"part.r0", "part.r1", "res_in", "slots", "norm_w", "router_w", "bias", "w13.r0", "s13.r0",
                        "w2.r0", "s2.r0", "w13.r1", "s13.r1", "w2.r1", "s2.r1"}) {
    INFO(n);
    REQUIRE(s.inputs.count(n));
    CHECK(s.inputs.at(n).shape == gen.at(n).shape);
    CHECK(s.inputs.at(n).data == gen.at(n).data);
  }
  CHECK(s.metadata.at("verdict") == "bit-exact");
  CHECK(s.metadata.at("seed") == "1");
  CHECK(s.metadata.at("inputs") == "experts=6");
  CHECK(s.metadata.at("variant") == "minimax_m3.ffn-S3-TP2");
  CHECK(s.metadata.at("rows") == "3");
  CHECK(s.metadata.at("tp") == "2");
  CHECK(s.metadata.at("scales") == "e8m0_shuffle");  // the default variant's layout, said and declared
  CHECK(s.inputs.at("s2.r1").layout == "e8m0_shuffle");
  CHECK(r.out.find("inputs with scales e8m0_shuffle") != std::string::npos);

  // Every output of every rank (o_proj's too: the default variant), against the reference
  // computed here from the saved inputs, bit for bit.
  const monogen::runtime::TensorMap want = mm::launchReferenceOutputs(cfg, 3, 2, s.inputs);
  for (const char* n :
       {"xscale", "opart", "res_out", "out", "picks", "weights", "xn", "rstd", "slot_expert", "mid", "down"})
    for (int rank = 0; rank < 2; ++rank) {
      const std::string name = std::string(n) + ".r" + std::to_string(rank);
      INFO(name);
      REQUIRE(s.outputs.count(name));
      REQUIRE(s.reference.count(name));
      CHECK(s.reference.at(name).data == want.at(name).data);
    }
  const auto mismatch = mm::firstMismatch(s.outputs, want);
  INFO((mismatch ? mm::describe(*mismatch) : std::string("no mismatch")));
  CHECK_FALSE(mismatch.has_value());
  // The MoE ran on real weights: out is not all zeros.
  const auto& out = s.outputs.at("out.r0");
  CHECK(std::any_of(out.data.begin(), out.data.end(), [](uint8_t b) { return b != 0; }));
  // --experts 6: the kernel's picks on every rank hold exactly 6 distinct experts.
  for (int rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank);
    CHECK(mm::distinctPicked(s.outputs.at("picks.r" + std::to_string(rank))).size() == 6);
  }

  // The saved launch replays to the same verdict, from the directory or its inputs file.
  r = sh(kMonogen + " sim --rows 3 --tp 2 --config reduced --seed 3 --inputs " + save.string());
  CHECK(r.code == 0);
  CHECK(r.out.find("verdict: bit-exact under 1 seed") != std::string::npos);
  CHECK(r.out.find("experts=6 (from ") != std::string::npos);
  r = sh(kMonogen + " sim --rows 3 --tp 2 --config reduced --inputs " + (save / "inputs.safetensors").string());
  CHECK(r.code == 0);
  // ... but not for other dims
  r = sh(kMonogen + " sim --rows 4 --tp 2 --config reduced --inputs " + save.string());
  CHECK(r.code != 0);
  CHECK(r.out.find("S=3 TP=2, not S=4 TP=2") != std::string::npos);

  // An inputs file that lacks a tensor the launch needs is refused, naming it.
  monogen::runtime::TensorMap partial = s.inputs;
  partial.erase("w2.r1");
  const fs::path partialFile = d.path / "partial.safetensors";
  monogen::runtime::writeSafetensors(partialFile, partial);
  r = sh(kMonogen + " sim --rows 3 --tp 2 --config reduced --inputs " + partialFile.string());
  CHECK(r.code != 0);
  CHECK(r.out.find("no tensor 'w2.r1'") != std::string::npos);
  CHECK(r.out.find("seed 1 ") == std::string::npos);  // nothing ran
}

TEST_CASE("sim --scales rowmajor saves row-major scales and says so, and the default variant refuses them", "[cli]") {
  const mm::ModelConfig cfg = mm::ModelConfig::reduced();
  TempDir d;
  const fs::path save = d.path / "run";
  Result r = sh(kMonogen + " sim --rows 1 --tp 2 --config reduced --scales rowmajor --save " + save.string());
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("minimax_m3.ffn-S1-TP2-scales=rowmajor on the Sim device") != std::string::npos);
  CHECK(r.out.find("inputs with scales rowmajor") != std::string::npos);
  const mm::SavedLaunch s = mm::loadLaunch(save);
  CHECK(s.metadata.at("scales") == "rowmajor");
  CHECK(s.metadata.at("variant") == "minimax_m3.ffn-S1-TP2-scales=rowmajor");
  mm::LaunchInputOptions io;
  io.scales = mm::ScaleLayout::RowMajor;
  const monogen::runtime::TensorMap gen = mm::makeLaunchInputs(cfg, 1, 2, 1, io);
  for (const char* n : {"s13.r0", "s2.r1"}) {
    INFO(n);
    CHECK(s.inputs.at(n).layout == "rowmajor");
    CHECK(s.inputs.at(n).shape == gen.at(n).shape);  // s2 [17, 1536, 12]: unpadded
    CHECK(s.inputs.at(n).data == gen.at(n).data);
  }
  // replayed by its own variant: bit-exact; by the default (e8m0_shuffle) one: refused before it runs
  r = sh(kMonogen + " sim --rows 1 --tp 2 --config reduced --scales rowmajor --inputs " + save.string());
  CHECK(r.code == 0);
  CHECK(r.out.find("verdict: bit-exact under 1 seed") != std::string::npos);
  r = sh(kMonogen + " sim --rows 1 --tp 2 --config reduced --inputs " + save.string());
  INFO(r.out);
  CHECK(r.code != 0);
  // s13 has the same shape in both layouts at TP 2: its declaration tells them apart
  CHECK(r.out.find("s13.r0") != std::string::npos);
  CHECK(r.out.find("'e8m0_shuffle'") != std::string::npos);
  CHECK(r.out.find("'rowmajor'") != std::string::npos);
  CHECK(r.out.find("seed 1 ") == std::string::npos);  // nothing ran
}

TEST_CASE("sim --experts with --padded-rows: exactly N distinct picks over the valid rows", "[cli]") {
  TempDir d;
  const fs::path save = d.path / "run";
  const Result r = sh(kMonogen + " sim --rows 3 --tp 1 --config reduced --experts 5 --padded-rows 1 --save " +
                      save.string());
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("verdict: bit-exact under 1 seed") != std::string::npos);
  const monogen::runtime::SafetensorsFile f = monogen::runtime::readSafetensorsFile(save / "outputs.safetensors");
  const monogen::runtime::HostTensor& picks = f.tensors.at("picks.r0");
  REQUIRE(picks.shape == std::vector<int64_t>{3, 4});
  CHECK(mm::distinctPicked(picks).size() == 5);
  for (int k = 0; k < 4; ++k) CHECK(picks.as<int32_t>()[2 * 4 + k] == -1);  // the padded row picks nothing
  CHECK(f.metadata.at("inputs") == "experts=5 padded=1");
}

TEST_CASE("sim --save of an INVALID launch saves it, and its metadata says so", "[cli]") {
  TempDir d;
  const fs::path save = d.path / "run";
  const Result r = sh(kMonogen + " sim --rows 2 --tp 2 --config reduced --inject-rank 1 --inject-ticks 3000 --save " +
                      save.string());
  INFO(r.out);
  CHECK(r.code == 1);
  CHECK(r.out.find("INVALID: rank") != std::string::npos);
  CHECK(r.out.find("bit-exact") == std::string::npos);  // never called bit-exact
  const mm::SavedLaunch s = mm::loadLaunch(save);
  CHECK(s.metadata.at("verdict").rfind("INVALID: rank", 0) == 0);
  CHECK(s.outputs.count("out.r0"));
  CHECK(s.outputs.at("err.r1").as<int32_t>()[0] != 0);
}

TEST_CASE("sim --races: the reduced launch is race-free under the Sim's race detector", "[cli]") {
  const Result r = sh(kMonogen + " sim --rows 2 --tp 2 --config reduced --races");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("RACE") == std::string::npos);
  CHECK(r.out.find("race on") == std::string::npos);
  CHECK(r.out.find("UNINIT") == std::string::npos);  // and reads nothing the launch did not write
  CHECK(r.out.find("uninitialized read") == std::string::npos);
  CHECK(r.out.find("verdict: bit-exact under 1 seed") != std::string::npos);
  CHECK(r.out.find("race detector: on, clean") != std::string::npos);  // a clean run says the detector ran
}

TEST_CASE("sim --sum: the stage-parity knob sums one side and stays bit-exact", "[cli]") {
  const Result r = sh(kMonogen + " sim --rows 2 --tp 2 --config reduced --sum shared --experts 4");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("minimax_m3.ffn-S2-TP2-experts=shared on the Sim device") != std::string::npos);
  CHECK(r.out.find("verdict: bit-exact under 1 seed") != std::string::npos);
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

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void spit(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << s;
}

/// The directory's entry names that start with `prefix` (e.g. a temp file ".v.co.tmp.").
std::vector<std::string> entriesStartingWith(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().filename().string());
  return out;
}

const std::string kSmall = " --config reduced --rows 1 --tp 1 ";

}  // namespace

TEST_CASE("emit -o: a symlink planted at the destination is refused and its target is unchanged", "[cli][files]") {
  TempDir d;
  const fs::path target = d.path / "precious", link = d.path / "v.co";
  spit(target, "precious\n");
  fs::create_symlink(target, link);
  const Result r = sh(withCache(d) + kMonogen + " emit" + kSmall + "-o " + link.string());
  INFO(r.out);
  CHECK(r.code != 0);
  CHECK(r.out.find("'" + link.string() + "' is a symbolic link") != std::string::npos);
  CHECK(r.out.find("compiled") == std::string::npos);  // refused before the compile
  CHECK(fs::is_symlink(link));
  CHECK(slurp(target) == "precious\n");
}

TEST_CASE("emit --all -o DIR: a symlink planted at one variant's file is refused before any compile",
          "[cli][files]") {
  TempDir d;
  const fs::path dir = d.path / "objs", target = d.path / "precious";
  fs::create_directories(dir);
  spit(target, "precious\n");
  const fs::path link = dir / "minimax_m3.ffn-S1-TP8.co";  // the last variant --all builds
  fs::create_symlink(target, link);
  const Result r = sh(withCache(d) + kMonogen + " emit --all --config reduced -o " + dir.string());
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK(r.out.find("'" + link.string() + "' is a symbolic link") != std::string::npos);
  CHECK(r.out.find("[ 1/64]") == std::string::npos);  // nothing compiled
  CHECK(slurp(target) == "precious\n");
  CHECK(fs::is_symlink(link));
}

TEST_CASE("emit -o and trace -o: symlinks planted at guessable temp names are not followed", "[cli][files]") {
  TempDir d;
  const fs::path target = d.path / "precious";
  spit(target, "precious\n");
  // `exec` keeps the shell's pid, so $$ is the pid monogen runs as: the old temp names were
  // ".NAME.tmp.PID" (the tools) and "NAME.tmp.PID.N" (support/AtomicFile).
  const auto plantAndRun = [&](const std::string& name, const std::string& args) {
    std::string plant;
    for (const std::string& t : {"." + name + ".tmp.$$", name + ".tmp.$$"}) {
      plant += "ln -s " + target.string() + " " + (d.path / t).string() + "; ";
      for (int n = 0; n < 128; ++n)
        plant += "ln -s " + target.string() + " " + (d.path / t).string() + "." + std::to_string(n) + "; ";
    }
    return sh(withCache(d) + "sh -c '" + plant + "exec " + kMonogen + args + " -o " + (d.path / name).string() + "'");
  };
  // (output file, command, what its content holds, at its start or anywhere)
  using Case = std::tuple<std::string, std::string, std::string, bool>;
  for (auto [name, cmd, marker, atStart] : {Case{"v.co", " emit", "\x7f" "ELF", true},
                                            Case{"t.json", " trace", "traceEvents", false}}) {
    INFO(cmd);
    const Result r = plantAndRun(name, cmd + kSmall);
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(slurp(target) == "precious\n");
    CHECK(fs::is_regular_file(fs::symlink_status(d.path / name)));
    const size_t at = slurp(d.path / name).find(marker);
    CHECK((atStart ? at == 0 : at != std::string::npos));
    // the planted links are still links, and no temp file of ours is left
    for (const std::string& e : entriesStartingWith(d.path, "." + name + ".tmp.")) CHECK(fs::is_symlink(d.path / e));
  }
}

TEST_CASE("trace -o: a FIFO or a directory at the destination is refused before the launch", "[cli][files]") {
  TempDir d;
  const fs::path fifo = d.path / "t.json";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  Result r = sh("timeout 20 " + kMonogen + " trace" + kSmall + "-o " + fifo.string());
  INFO(r.out);
  CHECK(r.code != 0);
  CHECK(r.code != 124);  // no hang
  CHECK(r.out.find("'" + fifo.string() + "' is a FIFO, not a regular file") != std::string::npos);
  CHECK(r.out.find("on the Sim device") == std::string::npos);  // nothing ran
  struct stat st {};
  REQUIRE(lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));  // not replaced
  r = sh(kMonogen + " trace" + kSmall + "-o " + d.path.string());
  CHECK(r.code != 0);
  CHECK(r.out.find("'" + d.path.string() + "' is a directory") != std::string::npos);
  r = sh(kMonogen + " trace" + kSmall + "-o " + (d.path / "no" / "t.json").string());
  CHECK(r.code != 0);
  CHECK(r.out.find("directory '" + (d.path / "no").string() + "'") != std::string::npos);
  CHECK(r.out.find("does not exist") != std::string::npos);
}

TEST_CASE("sim --save: a path the save would fail on is refused before the launch runs", "[cli][files]") {
  TempDir d;
  SECTION("an existing regular file") {
    const fs::path file = d.path / "file";
    spit(file, "x");
    const Result r = sh(kMonogen + " sim" + kSmall + "--save " + file.string());
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find("--save: '" + file.string() + "' is a regular file, not a directory") != std::string::npos);
    CHECK(r.out.find("seed 1 ") == std::string::npos);  // nothing ran
    CHECK(slurp(file) == "x");
  }
  SECTION("a symlink planted for one of its files") {
    const fs::path dir = d.path / "run", target = d.path / "precious";
    fs::create_directories(dir);
    spit(target, "precious\n");
    fs::create_symlink(target, dir / "outputs.safetensors");
    const Result r = sh(kMonogen + " sim" + kSmall + "--save " + dir.string());
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find("'" + (dir / "outputs.safetensors").string() + "' is a symbolic link") != std::string::npos);
    CHECK(r.out.find("seed 1 ") == std::string::npos);
    CHECK(slurp(target) == "precious\n");
    CHECK(fs::is_symlink(dir / "outputs.safetensors"));
  }
  SECTION("a directory under a regular file") {
    const fs::path file = d.path / "file";
    spit(file, "x");
    const Result r = sh(kMonogen + " sim" + kSmall + "--save " + (file / "run").string());
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find(file.string()) != std::string::npos);
    CHECK(r.out.find("seed 1 ") == std::string::npos);
  }
}

TEST_CASE("a failed write names the errno text and leaves the destination as it was", "[cli][files]") {
  TempDir d;
  SECTION("a directory this user cannot write into: Permission denied") {
    // As root every directory is writable: run as nobody then (the cache is off, it is root's).
    std::string as;
    if (geteuid() == 0) {
      as = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
      if (sh(as + "test -x " + kMonogen).code != 0) {
        WARN("cannot run the binary as nobody here; the unwritable-directory case is not exercised");
        return;
      }
    }
    REQUIRE(chmod(d.path.c_str(), 0755) == 0);
    const fs::path ro = d.path / "ro";
    fs::create_directories(ro);
    REQUIRE(chmod(ro.c_str(), 0555) == 0);
    Result r = sh(as + kMonogen + " emit --no-cache" + kSmall + "-o " + (ro / "v.co").string());
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find((ro / "v.co").string()) != std::string::npos);
    CHECK(r.out.find("Permission denied") != std::string::npos);
    r = sh(as + kMonogen + " sim" + kSmall + "--save " + (ro / "run").string());
    CHECK(r.code == 2);
    CHECK(r.out.find("Permission denied") != std::string::npos);
    CHECK(r.out.find("seed 1 ") == std::string::npos);
  }
  SECTION("a write over the file size limit: File too large") {
    // The code object comes from the cache (no compile, whose temp files the limit would hit).
    const fs::path co = d.path / "v.co";
    REQUIRE(sh(withCache(d) + kMonogen + " emit" + kSmall + "-o " + co.string()).code == 0);
    spit(co, "the previous file\n");
    const Result r = sh(withCache(d) + "sh -c \"trap '' XFSZ; ulimit -f 8; exec " + kMonogen + " emit" + kSmall +
                        "-o " + co.string() + "\"");
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find("runtime error at " + co.string()) != std::string::npos);
    CHECK(r.out.find("File too large") != std::string::npos);
    CHECK(slurp(co) == "the previous file\n");
    CHECK(entriesStartingWith(d.path, ".v.co.tmp.").empty());  // the temp file is removed
  }
}

TEST_CASE("a failed write to stdout exits non-zero with a message on stderr", "[cli]") {
  TempDir d;
  for (const std::string& args :
       {std::string(" info --config reduced --rows 1 --tp 1"), " dump" + kSmall, std::string(" --help"), " sim" + kSmall}) {
    INFO(args);
    // stdout to /dev/full, stderr to the pipe runShell reads
    const Result r = sh("{ " + withCache(d) + kMonogen + args + " > /dev/full; }");
    INFO(r.out);
    CHECK(r.code != 0);
    CHECK(r.out.find("standard output: a write failed") != std::string::npos);
    CHECK(r.out.find("No space left on device") != std::string::npos);
  }
}

TEST_CASE("a FIFO in the cache directory does not hang emit", "[cli][files]") {
  TempDir d;
  const fs::path co = d.path / "v.co";
  const std::string emit = withCache(d) + "timeout 20 " + kMonogen + " emit" + kSmall + "-o " + co.string();
  REQUIRE(sh(emit).code == 0);
  fs::path cached;
  for (const auto& e : fs::directory_iterator(d.path / "cache"))
    if (e.path().extension() == ".co") cached = e.path();
  REQUIRE(!cached.empty());
  fs::remove(cached);
  REQUIRE(mkfifo(cached.c_str(), 0600) == 0);
  fs::remove(co);
  const Result r = sh(emit);
  INFO(r.out);
  CHECK(r.code == 0);  // 124: timed out, blocked opening the FIFO
  CHECK(r.out.find("rejected: not a regular file (a FIFO)") != std::string::npos);
  CHECK(r.out.find("compiled") != std::string::npos);
  CHECK(fs::file_size(co) > 0);
}

TEST_CASE("a cache directory group or others can access (0755) is refused", "[cli][files]") {
  TempDir d;
  const fs::path cache = d.path / "cache";
  fs::create_directories(cache);
  REQUIRE(chmod(cache.c_str(), 0755) == 0);
  const Result r = sh(withCache(d) + kMonogen + " emit" + kSmall + "-o " + (d.path / "v.co").string());
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK(r.out.find("cache directory " + cache.string() + ": has mode 0755") != std::string::npos);
  CHECK(r.out.find("expected 0700") != std::string::npos);
  CHECK_FALSE(fs::exists(d.path / "v.co"));
  // a cache directory it creates is private
  const fs::path fresh = d.path / "fresh" / "cache";
  REQUIRE(sh("MONOGEN_CACHE_DIR=" + fresh.string() + " " + kMonogen + " emit" + kSmall + "-o " +
             (d.path / "v.co").string())
              .code == 0);
  struct stat st {};
  REQUIRE(stat(fresh.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("cache ls and verify report a 0777 cache directory and a 0666 entry as unsafe", "[cli][files][cache]") {
  TempDir d;
  const fs::path cache = d.path / "cache";
  REQUIRE(sh(withCache(d) + kMonogen + " emit" + kSmall + "-o " + (d.path / "v.co").string()).code == 0);
  const std::string dir = " cache --dir " + cache.string();
  REQUIRE(chmod(cache.c_str(), 0777) == 0);
  Result r = sh(kMonogen + dir + " ls");
  INFO(r.out);
  CHECK(r.out.find("UNSAFE  cache directory " + cache.string() + ": has mode 0777") != std::string::npos);
  CHECK(r.out.find("chmod 700 " + cache.string() + "\n") != std::string::npos);
  r = sh(kMonogen + dir + " verify");
  CHECK(r.code == 1);
  CHECK(r.out.find("has mode 0777") != std::string::npos);
  CHECK(r.out.find("1 good, 0 bad; the directory is UNSAFE") != std::string::npos);
  REQUIRE(chmod(cache.c_str(), 0700) == 0);
  r = sh(kMonogen + dir + " verify");
  CHECK(r.code == 0);
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().extension() == ".co") REQUIRE(chmod(e.path().c_str(), 0666) == 0);
  r = sh(kMonogen + dir + " verify");
  CHECK(r.code == 1);
  CHECK(r.out.find("has mode 0666: group or others can write it") != std::string::npos);
}

TEST_CASE("cache --dir that is a file, a symlink loop or a name too long is an input error, exit 2",
          "[cli][files][cache]") {
  TempDir d;
  const fs::path file = d.path / "file", loop = d.path / "loop";
  { std::ofstream(file) << "x"; }
  fs::create_symlink(loop, loop);
  const std::string tooLong = (d.path / std::string(300, 'x')).string();
  for (const auto& [dir, what] : {std::pair{file.string(), "is a file"}, std::pair{loop.string(), "cannot be read"},
                                  std::pair{tooLong, "cannot be read: File name too long"}})
    for (const char* cmd : {" ls", " verify", " clear"}) {
      const Result r = sh(kMonogen + " cache --dir " + dir + cmd);
      INFO(cmd << ": " << r.out);
      CHECK(r.code == 2);
      CHECK(r.out.find("input error at --dir: '" + dir + "' " + what) != std::string::npos);
      CHECK(r.out.find("expected the cache directory") != std::string::npos);
    }
  const Result r = sh(kMonogen + " cache --dir " + (d.path / "absent").string() + " ls");
  CHECK(r.code == 0);
  CHECK(r.out.find("no cache directory at ") != std::string::npos);
}

TEST_CASE("sim --inputs DIR needs only the inputs: no outputs.safetensors or reference.safetensors", "[cli][files]") {
  TempDir d;
  const fs::path save = d.path / "run";
  Result r = sh(kMonogen + " sim" + kSmall + "--experts 4 --save " + save.string());
  REQUIRE(r.code == 0);
  fs::remove(save / "outputs.safetensors");
  fs::remove(save / "reference.safetensors");
  r = sh(kMonogen + " sim" + kSmall + "--inputs " + save.string());
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("experts=4 (from ") != std::string::npos);
  CHECK(r.out.find("verdict: bit-exact under 1 seed") != std::string::npos);
}

TEST_CASE("sim --inputs refuses a save of the other --input kind before it runs and names both", "[cli][files]") {
  TempDir d;
  const fs::path attn = d.path / "attn", part = d.path / "part";
  REQUIRE(sh(kMonogen + " sim" + kSmall + "--save " + attn.string()).code == 0);
  REQUIRE(sh(kMonogen + " sim" + kSmall + "--input part --save " + part.string()).code == 0);
  CHECK(mm::loadLaunch(attn).metadata.at("input") == "attn");
  CHECK(mm::loadLaunch(part).metadata.at("input") == "part");
  for (const auto& [dir, given, held] : {std::tuple{attn, "part", "attn"}, std::tuple{part, "attn", "part"}}) {
    const Result r = sh(kMonogen + " sim" + kSmall + "--input " + given + " --inputs " + dir.string());
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find(fmt::format("holds a launch of --input {}, not --input {}: pass --input {}", held, given, held)) !=
          std::string::npos);
    CHECK(r.out.find("seed 1 ") == std::string::npos);  // nothing ran
  }
}

TEST_CASE("sim --inputs: an edited attention row (a NaN) replays bit-exact with its derived tensors made again",
          "[cli][files]") {
  TempDir d;
  const fs::path save = d.path / "run";
  REQUIRE(sh(kMonogen + " sim" + kSmall + "--save " + save.string()).code == 0);
  mm::SavedLaunch s = mm::loadLaunch(save);
  monogen::runtime::HostTensor& attn = s.inputs.at("attn.r0");
  const uint16_t nan = 0x7fc0;
  std::memcpy(attn.data.data() + 2 * 7, &nan, 2);  // row 0, column 7
  monogen::runtime::writeSafetensors(save / "inputs.safetensors", s.inputs, s.metadata);
  const Result r = sh(kMonogen + " sim" + kSmall + "--inputs " + save.string());
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("inputs: part.r0, sres, ssq made again from the inputs the kernel reads") != std::string::npos);
  CHECK(r.out.find("verdict: bit-exact under 1 seed") != std::string::npos);
  // an unedited save replays without a word about it
  REQUIRE(sh(kMonogen + " sim" + kSmall + "--save " + (d.path / "clean").string()).code == 0);
  const Result c = sh(kMonogen + " sim" + kSmall + "--inputs " + (d.path / "clean").string());
  CHECK(c.code == 0);
  CHECK(c.out.find("made again") == std::string::npos);
}

TEST_CASE("monogen cache: ls, verify, prune and clear, MONOGEN_RUN_ONLY, MONOGEN_CACHE=off and MONOGEN_DUMP_DIR",
          "[cli][cache]") {
  TempDir d;
  const std::string env = withCache(d);
  const std::string small = " --config reduced --tp 1 --rows ";
  Result r = sh(env + kMonogen + " info" + small + "1");
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("compiled") != std::string::npos);
  r = sh(env + kMonogen + " cache ls");
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("minimax_m3.ffn S=1 TP=1") != std::string::npos);
  CHECK(r.out.find(" ok") != std::string::npos);
  CHECK(r.out.find("generator=") != std::string::npos);  // the key text
  CHECK(r.out.find("1 entries") != std::string::npos);

  // Run-only: a hit is served, a miss names the variant and compiles nothing.
  r = sh(env + "MONOGEN_RUN_ONLY=1 " + kMonogen + " info" + small + "1");
  CHECK(r.code == 0);
  CHECK(r.out.find("disk") != std::string::npos);
  r = sh(env + "MONOGEN_RUN_ONLY=1 " + kMonogen + " info" + small + "2");
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK(r.out.find("minimax_m3.ffn-S2-TP1") != std::string::npos);
  CHECK(r.out.find("MONOGEN_RUN_ONLY=1 forbids compiling") != std::string::npos);
  r = sh(env + "MONOGEN_RUN_ONLY=yes " + kMonogen + " info" + small + "2");
  CHECK(r.code == 2);
  CHECK(r.out.find("MONOGEN_RUN_ONLY") != std::string::npos);

  // Off: nothing is written; the dump directory gets the plan, IR, LLVM IR and ISA.
  const fs::path dump = d.path / "dump";
  r = sh(env + "MONOGEN_CACHE=off MONOGEN_DUMP_DIR=" + dump.string() + " " + kMonogen + " info" + small + "2");
  INFO(r.out);
  REQUIRE(r.code == 0);
  for (const char* ext : {".plan.txt", ".ir.txt", ".ll", ".s"})
    CHECK(fs::file_size(dump / (std::string("minimax_m3.ffn-S2-TP1") + ext)) > 100);
  CHECK(sh(env + kMonogen + " cache ls").out.find("1 entries") != std::string::npos);

  // A corrupt entry: verify says which, and fails.
  r = sh(env + kMonogen + " info" + small + "3");
  REQUIRE(r.code == 0);
  fs::path victim;
  for (const auto& de : fs::directory_iterator(d.path / "cache"))
    if (de.path().extension() == ".co") victim = de.path();
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-20, std::ios::end);
    f.put('\x5a');
  }
  r = sh(env + kMonogen + " cache verify");
  INFO(r.out);
  CHECK(r.code == 1);
  CHECK(r.out.find("BAD") != std::string::npos);
  CHECK(r.out.find("1 bad") != std::string::npos);
  r = sh(env + kMonogen + " cache prune --max-bytes 0");
  CHECK(r.code == 0);
  CHECK(r.out.find("pruned 2 entries") != std::string::npos);
  CHECK(sh(env + kMonogen + " info" + small + "1").code == 0);
  r = sh(env + kMonogen + " cache clear");
  CHECK(r.out.find("removed 1 entries") != std::string::npos);
  CHECK(sh(env + kMonogen + " cache verify").out.find("0 entries checked") != std::string::npos);
}

// The HIP device with a real libamdhip64 and no GPU (Debian's libamdhip64-5, ROCm 5.2, in CI via
// tools/setup.sh): `check --device hip` loads the library, resolves every entry point the runtime
// uses, then says that no gfx950 GPU is present and exits non-zero, before compiling anything.
// Skipped (with a message) where no libamdhip64 is installed, or where /dev/kfd exists (a GPU
// machine: there the command runs the launch instead).
TEST_CASE("check --device hip: with libamdhip64 and no GPU, a clear error naming the library", "[cli][hip]") {
  const char* libs[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
  std::string found;
  for (const char* l : libs)
    if (void* h = found.empty() ? dlopen(l, RTLD_LAZY | RTLD_LOCAL) : nullptr) {
      dlclose(h);
      found = l;
    }
  if (found.empty()) {
    WARN("skipped: no libamdhip64 on the loader path (apt-get install libamdhip64-5, or ROCm 6/7)");
    return;
  }
  if (access("/dev/kfd", F_OK) == 0) {
    WARN("skipped: /dev/kfd exists (a GPU machine); run monogen check --device hip there");
    return;
  }
  const Result r = sh(kMonogen + " check --device hip --rows 1 --tp 1 --config reduced 2>&1");
  INFO(r.out);
  CHECK(r.code != 0);
  CHECK_THAT(r.out, Catch::Contains("HIP device (" + found));
  CHECK_THAT(r.out, Catch::Contains("25 entry points resolved"));  // HipApi::kEntryPoints
  CHECK_THAT(r.out, Catch::Contains("no gfx950 GPU is present"));
  CHECK(r.out.find("code object:") == std::string::npos);  // refused before any compile
}

TEST_CASE("check --device sim --per-rank: one process a rank, a line per rank and launch, the verdict", "[cli][rank]") {
  const Result r = sh(kMonogen + " check --device sim --per-rank --config reduced --rows 2 --tp 2 --launches 2");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("one process a rank (per-rank runtime): 2 processes") != std::string::npos);
  CHECK(r.out.find("rank 1 launch 1 tag 2:") != std::string::npos);
  CHECK(r.out.find("verdict: bit-exact") != std::string::npos);
  const Result bad = sh(kMonogen + " check --device gfx950-run --per-rank --config reduced --rows 2 --tp 2");
  CHECK(bad.code != 0);
  CHECK(bad.out.find("--per-rank") != std::string::npos);
  const Result stray = sh(kMonogen + " check --device sim --launches 3 --config reduced --rows 2 --tp 2");
  CHECK(stray.code != 0);
  CHECK(stray.out.find("take effect with --per-rank only") != std::string::npos);
}

TEST_CASE("an unknown --spec is refused listing the known ones, and monogen specs lists them", "[cli][spec]") {
  const TempDir d;
  const std::string co = (d.path / "x.co").string();
  for (const std::string& cmd : std::vector<std::string>{"dump --what plan --config reduced --rows 1 --tp 1",
                                                        "emit --rows 1 --tp 1 -o " + co,
                                                        "info --config reduced --rows 1 --tp 1", "cache key --rows 1 --tp 1"}) {
    INFO(cmd);
    const Result r = sh(withCache(d) + kMonogen + " " + cmd + " --spec minimax_m3.bogus");
    CHECK(r.code != 0);
    CHECK(r.out.find("--spec") != std::string::npos);
    CHECK(r.out.find("unknown spec 'minimax_m3.bogus': expected one of minimax_m3.ffn") != std::string::npos);
  }
  const Result named = sh(kMonogen + " cache key --rows 1 --tp 1 --spec minimax_m3.ffn");
  const Result dflt = sh(kMonogen + " cache key --rows 1 --tp 1");
  CHECK(named.code == 0);
  CHECK(named.out == dflt.out);  // the default spec is minimax_m3.ffn
  const Result list = sh(kMonogen + " specs");
  CHECK(list.code == 0);
  CHECK(list.out.rfind("minimax_m3.ffn  v3  MiniMax-M3's FFN decode launch", 0) == 0);
}
