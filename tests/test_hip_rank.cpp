// The HIP per-rank path without a GPU: HipRankDevice and RankRuntime on the fake HIP library, checking
// the HIP calls they make (uncached IPC buffer, co-residency before load, one launch call on the
// caller's stream, identical replayed kernargs), and `monogen check --device hip` against it.
#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <unistd.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "ir/Error.h"
#include "runtime/HipApi.h"
#include "runtime/HipRankDevice.h"
#include "runtime/RankRuntime.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/testing/RankHarness.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "tests/fake_hip/FakeHip.h"
#include "tests/test_shell.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

namespace {

const std::string kFakeHip = MONOGEN_FAKE_HIP;
const std::string kMonogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";

/// The fake's call log: the same library HipApi dlopen'd (dlopen of the same path is the same handle).
std::vector<FakeHipCall>& fakeLog() {
  void* h = dlopen(kFakeHip.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h);
  auto fn = reinterpret_cast<std::vector<FakeHipCall>* (*)()>(dlsym(h, "fakeHipLog"));
  REQUIRE(fn);
  return *fn();
}

std::vector<FakeHipCall> callsSince(size_t mark) {
  const auto& log = fakeLog();
  return std::vector<FakeHipCall>(log.begin() + static_cast<std::ptrdiff_t>(mark), log.end());
}

/// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const std::string& v) : name(n) { setenv(n, v.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

/// Rank r of TP on the fake library (GPU r).
struct FakeRank {
  runtime::HipRankDevice dev;
  runtime::RankRuntime rt;
  FakeRank(runtime::Generator& gen, const ModelConfig& cfg, int r, int tp, int rows)
      : dev(r, tp, -1, {kFakeHip}), rt(gen, dev, rankRuntimeOptions(cfg, r, tp, {rows})) {}
};

}  // namespace

TEST_CASE("hip rank on the fake HIP library: the library loads and the GPU is a gfx950", "[hip][fake]") {
  const runtime::HipApi api = runtime::HipApi::load({kFakeHip}, "test");
  CHECK(api.library == kFakeHip);
  CHECK(api.discover() == 8);
  const runtime::DeviceLimits l = api.limits(3);
  CHECK(l.name == "HIP device 3 (gfx950)");
  CHECK(l.computeUnits == 256);
  {
    ScopedEnv arch("MONOGEN_FAKE_HIP_ARCH", "9.4");
    CHECK_THROWS_WITH(api.discover(), Catch::Contains("no gfx950 GPU is present") &&
                                          Catch::Contains("compute capability 9.4, not gfx950"));
    CHECK_THROWS_WITH(runtime::HipRankDevice(0, 2, -1, {kFakeHip}), Catch::Contains("no gfx950 GPU is present"));
  }
  {
    ScopedEnv none("MONOGEN_FAKE_HIP_DEVICES", "0");
    CHECK_THROWS_WITH(runtime::HipRankDevice(0, 2, -1, {kFakeHip}),
                      Catch::Contains("no gfx950 GPU is present") && Catch::Contains("entry points resolved"));
  }
  {
    ScopedEnv lib("MONOGEN_HIP_LIBRARY", kFakeHip);
    CHECK(runtime::HipApi::defaultLibraryNames() == std::vector<std::string>{kFakeHip});
  }
}

TEST_CASE("hip rank on the fake HIP library: the symmetric buffer is uncached, whole pages, exported and opened by IPC",
          "[hip][fake]") {
  const ModelConfig cfg = ModelConfig::reduced();
  runtime::Generator gen = makeGenerator(cfg, nullptr);
  FakeRank r0(gen, cfg, 0, 2, 1), r1(gen, cfg, 1, 2, 1);
  const size_t mark = fakeLog().size();
  r0.rt.allocate();
  r1.rt.allocate();
  // Each rank's one hipExtMallocWithFlags: uncached, whole 4 KiB pages, on its own GPU.
  std::vector<FakeHipCall> ext;
  for (const FakeHipCall& c : callsSince(mark))
    if (c.name == "hipExtMallocWithFlags") ext.push_back(c);
  REQUIRE(ext.size() == 2);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << ext[r].size << " bytes, flags " << ext[r].flags);
    CHECK(ext[r].flags == runtime::hip::kDeviceMallocUncached);
    CHECK(ext[r].size % 4096 == 0);
    CHECK(ext[r].size > 0);
    CHECK(ext[r].device == r);
  }
  CHECK(r0.rt.buffer(1, arg::kSym) >= ext[0].pointer);  // the runtime's sym region lies in that buffer
  CHECK(r0.rt.buffer(1, arg::kSym) < ext[0].pointer + ext[0].size);
  // Export, exchange, open: rank 0 opens rank 1's buffer by IPC (and its own without).
  const size_t exported = fakeLog().size();
  const std::vector<std::vector<uint8_t>> handles{r0.rt.exportHandle(), r1.rt.exportHandle()};
  r0.rt.openPeers(handles);
  r1.rt.openPeers(handles);
  int gets = 0, opens = 0;
  for (const FakeHipCall& c : callsSince(exported)) {
    gets += c.name == "hipIpcGetMemHandle";
    if (c.name == "hipIpcOpenMemHandle") {
      ++opens;
      CHECK(c.flags == runtime::hip::kIpcMemLazyEnablePeerAccess);
      CHECK(c.size == ext[0].size);
    }
  }
  CHECK(gets == 2);
  CHECK(opens == 2);
  // The peer table rank 0 holds: entry 1 is rank 1's buffer as opened here; a write through
  // rank 1's own mapping is read through it.
  std::vector<uint64_t> table(2);
  r0.dev.download(table.data(), r0.rt.buffer(1, arg::kPeers), 16);
  CHECK(table[0] == r0.rt.buffer(1, arg::kSym));
  CHECK(table[1] != r1.rt.buffer(1, arg::kSym));  // another mapping of the same segment
  const uint64_t word = 0x5eed'1234'abcd'0001;
  r1.dev.upload(r1.rt.buffer(1, arg::kSym), &word, 8);
  uint64_t seen = 0;
  r0.dev.download(&seen, table[1], 8);
  CHECK(seen == word);
}

TEST_CASE("hip rank on the fake HIP library: a symmetric buffer of any size is rounded up to whole pages",
          "[hip][fake]") {
  runtime::HipRankDevice dev(1, 2, -1, {kFakeHip});
  const size_t mark = fakeLog().size();
  const uint64_t at = dev.allocSymmetric(5000, "odd");
  const std::vector<FakeHipCall> calls = callsSince(mark);
  REQUIRE(calls.size() >= 1);
  const FakeHipCall& ext = calls.back();
  CHECK(ext.name == "hipExtMallocWithFlags");
  CHECK(ext.size == 8192);  // two pages for 5000 bytes
  CHECK(ext.flags == runtime::hip::kDeviceMallocUncached);
  CHECK(ext.pointer == at);
  CHECK_NOTHROW(dev.exportSymmetric());  // the fake refuses, as HIP does, an uncached buffer of part pages
}

TEST_CASE("hip rank on the fake HIP library: co-residency before the first launch, then a launch path of one call",
          "[hip][fake]") {
  const ModelConfig cfg = ModelConfig::reduced();
  runtime::Generator gen = makeGenerator(cfg, nullptr);
  FakeRank r0(gen, cfg, 0, 1, 1);
  r0.rt.allocate();
  r0.rt.openPeers({r0.rt.exportHandle()});
  const ir::Plan& plan = r0.rt.plan(1);
  REQUIRE(plan.grid.blocks > 16);
  {
    // Too few CUs for the grid at one CTA a CU: warm-up refuses, and loads no module.
    ScopedEnv cus("MONOGEN_FAKE_HIP_CUS", "16");
    const size_t mark = fakeLog().size();
    CHECK_THROWS_WITH(r0.rt.warmUp(), Catch::Contains("cannot have every CTA resident at once") &&
                                          Catch::Contains("the device has 16 CUs"));
    for (const FakeHipCall& c : callsSince(mark)) {
      CHECK(c.name != "hipModuleLoadData");
      CHECK(c.name != "hipModuleLaunchKernel");
    }
  }
  // Enough CUs: the attributes are read, then the module loads.
  size_t mark = fakeLog().size();
  r0.rt.warmUp();
  std::vector<FakeHipCall> warm = callsSince(mark);
  ptrdiff_t cuRead = -1, loaded = -1;
  for (size_t i = 0; i < warm.size(); ++i) {
    if (warm[i].name == "hipDeviceGetAttribute" && warm[i].attribute == 63 && cuRead < 0) cuRead = static_cast<ptrdiff_t>(i);
    if (warm[i].name == "hipModuleLoadData" && loaded < 0) loaded = static_cast<ptrdiff_t>(i);
  }
  CHECK(cuRead >= 0);
  CHECK(loaded > cuRead);

  const RankIo io = allocRankIo(r0.dev, plan);
  runtime::BoundLaunch& b = r0.rt.bind(1, rankArgs(plan, io, 1000));
  void* const stream = reinterpret_cast<void*>(0x57ea'0001);
  std::vector<std::vector<uint8_t>> sent;
  for (int k = 0; k < 3; ++k) {  // the replay: the same BoundLaunch three times
    mark = fakeLog().size();
    r0.rt.launch(b, stream);
    const std::vector<FakeHipCall> calls = callsSince(mark);
    std::string names;
    for (const FakeHipCall& c : calls) names += c.name + " ";
    INFO("launch " << k << " made: " << names);
    REQUIRE(calls.size() == 1);  // no allocation, copy, memset, synchronize, module load, set-device
    CHECK(calls[0].name == "hipModuleLaunchKernel");
    CHECK(calls[0].stream == stream);
    CHECK(calls[0].grid == static_cast<unsigned>(plan.grid.blocks));
    CHECK(calls[0].block == static_cast<unsigned>(plan.grid.threads));
    CHECK(calls[0].pointer == reinterpret_cast<uint64_t>(b.kernel.function));
    sent.push_back(calls[0].kernargs);
  }
  CHECK(sent[0].size() == static_cast<size_t>(plan.kernargBytes()));
  CHECK(sent[0] == b.kernargs);
  CHECK(sent[1] == sent[0]);
  CHECK(sent[2] == sent[0]);
}

TEST_CASE("hip rank on the fake HIP library: elapsedMs brackets the launches with two events on the stream",
          "[hip][fake]") {
  const ModelConfig cfg = ModelConfig::reduced();
  runtime::Generator gen = makeGenerator(cfg, nullptr);
  FakeRank r0(gen, cfg, 0, 1, 1);
  r0.rt.allocate();
  r0.rt.openPeers({r0.rt.exportHandle()});
  r0.rt.warmUp();
  const RankIo io = allocRankIo(r0.dev, r0.rt.plan(1));
  runtime::BoundLaunch& b = r0.rt.bind(1, rankArgs(r0.rt.plan(1), io, 1000));
  void* const stream = reinterpret_cast<void*>(0x57ea'0002);
  const size_t mark = fakeLog().size();
  const double ms = r0.dev.elapsedMs(stream, [&] {
    for (int k = 0; k < 3; ++k) r0.rt.launch(b, stream);
  });
  CHECK(ms >= 0);
  std::vector<std::string> names;
  for (const FakeHipCall& c : callsSince(mark)) {
    names.push_back(c.name);
    if (c.name == "hipEventRecord" || c.name == "hipModuleLaunchKernel") CHECK(c.stream == stream);
  }
  const std::vector<std::string> want{"hipEventCreate",        "hipEventCreate",        "hipEventRecord",
                                      "hipModuleLaunchKernel", "hipModuleLaunchKernel", "hipModuleLaunchKernel",
                                      "hipEventRecord",        "hipEventSynchronize",   "hipEventElapsedTime",
                                      "hipEventDestroy",       "hipEventDestroy"};
  CHECK(names == want);
}

TEST_CASE("bench --device hip on the fake HIP library: launches, times and reports each rank, the table and JSON",
          "[hip][fake][cli]") {
  char dir[] = "/tmp/monogen-bench-hip-XXXXXX";
  REQUIRE(mkdtemp(dir));
  const std::string json = std::string(dir) + "/hw.json";
  const std::string env = "MONOGEN_HIP_LIBRARY=" + kFakeHip + " ";
  const std::string cmd = kMonogen + " bench --device hip --config reduced --rows 2 --tp 2 --experts 4 --no-cache "
                                     "--repeats 3 --launches 20 --json " + json;
  int code = 0;
  const std::string out = runShell(env + cmd, code);
  INFO(out);
  CHECK(code == 1);  // nothing ran on the fake: the checked launch is not bit-exact, so the cell is not clean
  CHECK_THAT(out, Catch::Contains("the median of 3 x 20 launches timed by hipEvents"));
  for (int r = 0; r < 2; ++r) CHECK_THAT(out, Catch::Contains(fmt::format("rank {} checked launch (tag 1): MISMATCH", r)));
  CHECK_THAT(out, Catch::Contains("measured us"));
  std::ifstream f(json);
  const nlohmann::json cells = nlohmann::json::parse(f);
  std::remove(json.c_str());
  rmdir(dir);
  REQUIRE(cells.size() == 1);
  const nlohmann::json& c = cells[0];
  CHECK(c["rows"] == 2);
  CHECK(c["tp"] == 2);
  CHECK(c["experts"] == 4);
  CHECK(c["device"] == "hip");
  CHECK(c["verdict"] == "MISMATCH");
  REQUIRE(c["rank_us"].size() == 2);
  CHECK(c["measured_us"].get<double>() == std::max(c["rank_us"][0].get<double>(), c["rank_us"][1].get<double>()));
  CHECK(c["measured_us"].get<double>() > 0);
  CHECK(c["floor_us"].get<double>() > 0);
  CHECK(c["seed_us"].is_null());  // measured figures exist at full dims S8 TP4 only

  const std::string mixed = runShell(env + kMonogen + " bench --device hip --timed --config reduced --rows 2 --tp 2", code);
  CHECK(code == 2);
  CHECK_THAT(mixed, Catch::Contains("cannot go with --timed"));
  const std::string stray = runShell(kMonogen + " bench --config reduced --rows 2 --tp 2 --no-sim --repeats 3", code);
  CHECK(code == 2);
  CHECK_THAT(stray, Catch::Contains("--repeats") && Catch::Contains("--device hip only"));
}

TEST_CASE("check --device hip on the fake HIP library: past discovery, the devices and tags, a non-bit-exact verdict",
          "[hip][fake][cli]") {
  const std::string env = "MONOGEN_HIP_LIBRARY=" + kFakeHip + " ";
  const std::string cmd = kMonogen + " check --device hip --config reduced --rows 1 --tp 2 --no-cache";
  int code = 0;
  const std::string out = runShell(env + cmd, code);
  INFO(out);
  CHECK(code == 1);  // a verdict, not a crash (3) or a runtime error (2)
  CHECK_THAT(out, Catch::Contains("on the hip device, one process a rank (per-rank runtime): 2 processes"));
  for (int r = 0; r < 2; ++r) {
    CHECK_THAT(out, Catch::Contains(fmt::format("rank {}: hip rank {} of 2 (device {}, {}): HIP device {} (gfx950), "
                                                "256 CUs; HIP device ({}, runtime 1, {} entry points resolved)",
                                                r, r, r, kFakeHip, r, kFakeHip, runtime::HipApi::kEntryPoints)));
    CHECK_THAT(out, Catch::Contains(fmt::format("rank {} launch 0 tag 1:", r)));
  }
  CHECK_THAT(out, Catch::Contains("verdict: MISMATCH"));  // nothing ran: the outputs are the zeroed buffers

  const std::string refused = runShell(env + "MONOGEN_FAKE_HIP_CUS=16 " + cmd, code);
  INFO(refused);
  CHECK(code == 2);
  CHECK_THAT(refused, Catch::Contains("the device has 16 CUs") && Catch::Contains("could not start"));
}

// Runs `args` on the fake HIP library with its stream log: every launch is on a stream its own
// process created (never the null stream), `launches` a rank over `tp` processes, each stream destroyed.
static void checkLaunchesOnOwnStreams(const std::string& args, int tp, size_t launchesPerRank) {
  char dir[] = "/tmp/monogen-streams-XXXXXX";
  REQUIRE(mkdtemp(dir));
  const std::string log = std::string(dir) + "/streams.log";
  int code = 0;
  const std::string out =
      runShell("MONOGEN_HIP_LIBRARY=" + kFakeHip + " MONOGEN_FAKE_HIP_STREAM_LOG=" + log + " " + kMonogen + " " + args, code);
  INFO(args << "\n" << out);
  CHECK(code == 1);  // the fake launches nothing: a MISMATCH verdict, not an error
  std::ifstream f(log);
  std::map<std::string, std::set<std::string>> created, destroyed;  // by process
  std::map<std::string, std::vector<std::string>> launches;         // process -> streams launched on
  std::string pid, what, stream;
  while (f >> pid >> what >> stream) {
    if (what == "create") created[pid].insert(stream);
    if (what == "destroy") destroyed[pid].insert(stream);
    if (what == "launch") launches[pid].push_back(stream);
  }
  std::remove(log.c_str());
  rmdir(dir);
  REQUIRE(launches.size() == static_cast<size_t>(tp));  // each rank in its own process
  for (const auto& [p, streams] : launches) {
    CHECK(streams.size() == launchesPerRank);
    for (const std::string& s : streams) {
      INFO("process " << p << " launched on stream " << s);
      CHECK(s != "(nil)");
      CHECK(created[p].count(s) == 1);
    }
  }
  CHECK(created == destroyed);  // every stream created is destroyed, in the process that made it
}

TEST_CASE("check and bench --device hip launch on a stream each rank creates and destroys, never the null stream",
          "[hip][fake][cli]") {
  checkLaunchesOnOwnStreams("check --device hip --config reduced --rows 1 --tp 2 --no-cache", 2, 1);
  // bench: the checked launch, then 2 repeats x 3 timed launches
  checkLaunchesOnOwnStreams("bench --device hip --config reduced --rows 2 --tp 2 --experts 4 --no-cache --repeats 2 "
                            "--launches 3", 2, 7);
}

TEST_CASE("check --launch layer --device hip on the fake HIP library: each rank compiles, launches and reports",
          "[hip][fake][cli]") {
  const std::string env = "MONOGEN_HIP_LIBRARY=" + kFakeHip + " ";
  const std::string cmd = kMonogen + " check --launch layer --device hip --config reduced --rows 3 --tp 2 --no-cache";
  int code = 0;
  const std::string out = runShell(env + cmd, code);
  INFO(out);
  CHECK(code == 1);  // a verdict, not a crash (3) or a runtime error (2)
  CHECK_THAT(out, Catch::Contains("minimax_m3.layer-S3-TP2 on the hip device, one process a rank (per-rank runtime): "
                                  "2 processes"));
  for (int r = 0; r < 2; ++r) {
    CHECK_THAT(out, Catch::Contains(fmt::format("rank {}: hip rank {} of 2 (device {}, {}): HIP device {} (gfx950), "
                                                "256 CUs",
                                                r, r, r, kFakeHip, r)));
    CHECK_THAT(out, Catch::Contains(fmt::format("rank {}: [1/1] minimax_m3.layer-S3-TP2 ready in", r)));
    CHECK_THAT(out, Catch::Contains(fmt::format("rank {} launch 0 tag 1:", r)));
  }
  CHECK_THAT(out, Catch::Contains("verdict: MISMATCH"));  // nothing ran: the outputs are the zeroed buffers

  const std::string refused = runShell(env + "MONOGEN_FAKE_HIP_CUS=16 " + cmd, code);
  INFO(refused);
  CHECK(code == 2);
  CHECK_THAT(refused, Catch::Contains("the device has 16 CUs") && Catch::Contains("could not start"));
}

TEST_CASE("check --launch layer --device hip replays on a stream each rank creates and destroys", "[hip][fake][cli]") {
  checkLaunchesOnOwnStreams("check --launch layer --device hip --config reduced --rows 2 --tp 2 --no-cache --launches 2",
                            2, 2);
}
