// The per-rank runtime (runtime/RankRuntime.h), one process a rank, on the Sim: TP child
// processes (fork), each a SimRankDevice whose symmetric buffer is POSIX shared memory, handle
// bytes exchanged through the parent as a framework's all_gather_object would. Back-to-back
// launches of one packed argument set (the replay) are bit-exact on every rank; a rank killed
// mid-launch leaves every other rank INVALID within the wait bound, naming it; and the API's
// refusals (another node's handle, a bad handle, binding the runtime's own buffers, run-only).
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "ir/Error.h"
#include "runtime/Cache.h"
#include "runtime/HipRankDevice.h"
#include "runtime/RankRuntime.h"
#include "runtime/RankProcesses.h"
#include "runtime/sim/SimRankDevice.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/testing/RankHarness.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "tests/test_rank_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using nlohmann::json;

namespace {

using ranktest::Outcome;

/// Runs `job` on TP processes; `onReport` may kill a rank; `edit` may change the inputs first.
Outcome runRanks(int tp, const SimRankJob& job, const ranktest::OnReport& onReport = {},
                 const std::function<void(SimRankData&)>& edit = {}) {
  const ModelConfig cfg = ModelConfig::reduced();
  SimRankData data = makeSimRankData(cfg, job, tp);  // once, before the fork: the ranks share it
  if (edit) edit(data);
  return ranktest::runRankProcesses(
      tp, [&](runtime::RankChannel& ch) { return runSimRank(cfg, job, data, ch); }, 120, onReport);
}

}  // namespace

TEST_CASE("rank runtime: TP processes, one a rank, replay the same packed arguments bit-exact", "[rank]") {
  for (int tp : {2, 4}) {
    SimRankJob job;
    job.rows = {2};
    job.launches = 3;
    job.seed = 40 + tp;
    job.waitTicks = 2'000'000'000;  // 20 s of idle: never reached by a healthy launch here
    const Outcome o = runRanks(tp, job);
    INFO("TP " << tp);
    for (int r = 0; r < tp; ++r) {
      INFO("rank " << r << " " << o.errors[r]);
      CHECK(o.status[r] == 0);
      REQUIRE(o.done[r].size() == 3);
      for (int k = 0; k < 3; ++k) {
        const json& d = o.done[r][k];
        INFO(d.dump());
        CHECK(d["verdict"] == "bit-exact");
        CHECK(d["tag"] == k + 1);  // the device epoch moves the tag on: nothing in the arguments changed
      }
    }
    double launchSec = 0;
    for (int r = 0; r < tp; ++r)
      for (const json& d : o.done[r]) launchSec = std::max(launchSec, d["seconds"].get<double>());
    WARN(fmt::format("TP {}: {} processes x 3 launches in {:.2f} s (slowest launch {:.3f} s)", tp, tp, o.seconds,
                     launchSec));
  }
}

TEST_CASE("rank runtime: both inputs, attn (o_proj in the launch, the default) and part, bit-exact per rank", "[rank]") {
  for (FfnInput input : {FfnInput::Attn, FfnInput::Part}) {
    SimRankJob job;
    job.rows = {3};
    job.launches = 1;
    job.seed = 61;
    job.knobs.input = input;
    job.waitTicks = 2'000'000'000;
    const Outcome o = runRanks(2, job);
    for (int r = 0; r < 2; ++r) {
      INFO("input " << ffnInputName(input) << " rank " << r << " " << o.errors[r]);
      CHECK(o.status[r] == 0);
      REQUIRE(o.done[r].size() == 1);
      CHECK(o.done[r][0]["verdict"] == "bit-exact");
    }
  }
  // with o_proj in the launch the harness compares the quant's scales and the partial push sent:
  // a reference partial off by one bit in rank 1 is caught there, before the all-reduce
  SimRankJob job;
  job.rows = {3};
  job.launches = 1;
  job.seed = 61;
  job.waitTicks = 2'000'000'000;
  const Outcome bad = runRanks(2, job, {}, [](SimRankData& d) { d.want.at(3)[0].at("opart.r1").data[6] ^= 1; });
  REQUIRE(bad.done[1].size() == 1);
  CHECK(bad.done[0][0]["verdict"] == "bit-exact");
  CHECK(bad.done[1][0]["verdict"].get<std::string>().rfind("MISMATCH: opart.r1[3]", 0) == 0);
}

TEST_CASE("rank runtime: an input=attn rank without o_proj's FP8 weight is an error naming it", "[rank]") {
  SimRankJob job;
  job.rows = {2};
  job.launches = 1;
  job.seed = 62;
  job.waitTicks = 100'000'000;  // 1 s: rank 1 waits for rank 0's pairs, which never come
  const Outcome o = runRanks(2, job, {}, [](SimRankData& d) { d.inputs.at(2)[0].erase("wo.r0"); });
  INFO(o.errors[0]);
  CHECK(o.status[0] == 2);
  CHECK(o.errors[0].find("rank 0: no 'wo.r0' among the inputs: the input=attn variant reads o_proj's rowwise-FP8 "
                         "copy") != std::string::npos);
  REQUIRE(o.done[1].size() == 1);
  CHECK(o.done[1][0]["verdict"].get<std::string>().rfind("INVALID", 0) == 0);
}

TEST_CASE("rank runtime: the same check fails when every launch runs on one tag (a replayed tag argument)",
          "[rank]") {
  SimRankJob job;
  job.rows = {2};
  job.launches = 2;
  job.seed = 50;
  job.waitTicks = 200'000'000;  // 2 s of idle: the second launch may also time out waiting
  job.fixedTag = 5;
  const Outcome o = runRanks(2, job);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << " " << o.errors[r]);
    REQUIRE(o.done[r].size() == 2);
    CHECK(o.done[r][0]["verdict"] == "bit-exact");
    const std::string v = o.done[r][1]["verdict"];
    CHECK(v != "bit-exact");  // the waits took the first launch's pairs as this launch's
    CHECK(o.status[r] == 1);
    WARN("rank " << r << ", second launch on the same tag: " << v.substr(0, 160));
  }
}

TEST_CASE("rank runtime: S = 1 and S = 8 interleaved on the same ranks, each S its own regions", "[rank]") {
  SimRankJob job;
  job.rows = {1, 8};
  job.launches = 2;
  job.seed = 7;
  job.waitTicks = 2'000'000'000;
  const Outcome o = runRanks(2, job);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << " " << o.errors[r]);
    CHECK(o.status[r] == 0);
    REQUIRE(o.done[r].size() == 4);
    for (int k = 0; k < 4; ++k) {
      INFO(o.done[r][k].dump());
      CHECK(o.done[r][k]["verdict"] == "bit-exact");
      CHECK(o.done[r][k]["tag"] == k + 1);  // one epoch for every S
    }
  }
}

TEST_CASE("rank runtime: a rank killed mid-launch leaves the others INVALID within the bound, naming it", "[rank]") {
  const int tp = 4, victim = 2;
  SimRankJob job;
  job.rows = {2};
  job.launches = 2;
  job.seed = 11;
  job.waitTicks = 200'000'000;  // 2 s of idle (100 MHz ticks): short, yet not reached by a healthy launch under ctest -j2
  bool killed = false;
  std::chrono::steady_clock::time_point killedAt;
  std::vector<double> endAfterKill(tp, -1);
  const Outcome o = runRanks(tp, job, [&](runtime::RankProcesses& p, int r, const json& j) {
    if (!killed && r == victim && j["event"] == "start" && j["launch"] == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // inside the launch
      p.kill(victim);
      killed = true;
      killedAt = std::chrono::steady_clock::now();
    }
    if (killed && j["event"] == "done" && j["launch"] == 1)
      endAfterKill[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - killedAt).count();
  });
  REQUIRE(killed);
  CHECK(o.status[victim] == 128 + SIGKILL);
  for (int r = 0; r < tp; ++r) {
    if (r == victim) continue;
    INFO("rank " << r << " " << o.errors[r]);
    REQUIRE(o.done[r].size() == 2);
    CHECK(o.done[r][0]["verdict"] == "bit-exact");  // the launch before the kill
    const json& d = o.done[r][1];
    INFO(d.dump());
    CHECK(d["valid"] == false);
    const std::string v = d["verdict"];
    CHECK(v.rfind("INVALID: rank " + std::to_string(r) + ": error word", 0) == 0);
    // names the missing rank: the first wait past its bound may be a local one (the error word holds
    // the first), so the verdict also lists the ranks whose pairs never came (after its first timeout
    // a rank stops sleeping, so a live peer's late pairs may be listed too)
    const size_t list = v.find("this launch's pairs never came from ");
    REQUIRE(list != std::string::npos);
    CHECK(v.find(fmt::format("rank {} (", victim), list) != std::string::npos);
    CHECK(o.status[r] == 1);
    // Every wait past the bound costs at most the bound of idle time, and the stages time out one
    // after another; a minute would mean the bound has no real-time meaning.
    CHECK(endAfterKill[r] >= 0);
    CHECK(endAfterKill[r] < 90);
    WARN(fmt::format("rank {} ended {:.2f} s after rank {} was killed: {}", r, endAfterKill[r], victim, v));
  }
}

namespace {

/// A /proc/<pid>/status field in kB (VmHWM: the peak resident set), or -1.
int64_t procStatusKb(const std::string& pid, const char* field) {
  std::ifstream f("/proc/" + pid + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field) + 1));
  return -1;
}

/// Samples a child's peak RSS every 20 ms until destroyed; growthMb() is that peak less this
/// process's resident set at the start (a forked child starts with its parent's pages).
struct PeakRss {
  explicit PeakRss(pid_t pid) : base_(procStatusKb("self", "VmRSS:")), th_([this, pid] {
    while (!stop_) {
      peak_ = std::max<int64_t>(peak_, procStatusKb(std::to_string(pid), "VmHWM:"));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }) {}
  ~PeakRss() {
    stop_ = true;
    th_.join();
  }
  double growthMb() const { return static_cast<double>(peak_ - base_) / 1024.0; }
  int64_t base_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> peak_{0};
  std::thread th_;
};

/// TP 2, one launch with a 3 s bound; `hurt` acts on rank 1 20 ms into it and `rank0Done` runs when
/// rank 0 gives its verdict. Returns rank 0's verdict and the seconds from `hurt` to it.
std::pair<std::string, double> hurtPeer(const std::function<void(runtime::RankProcesses&)>& hurt,
                                        const std::function<void(runtime::RankProcesses&)>& rank0Done, Outcome* out,
                                        double* growthMb) {
  SimRankJob job;
  job.rows = {2};
  job.launches = 1;
  job.seed = 5;
  job.waitTicks = 300'000'000;  // 3 s of idle
  bool hurtDone = false;
  std::chrono::steady_clock::time_point at;
  double after = -1;
  std::unique_ptr<PeakRss> rss;
  *out = runRanks(2, job, [&](runtime::RankProcesses& p, int r, const json& j) {
    if (!rss) rss = std::make_unique<PeakRss>(p.pid(0));
    if (!hurtDone && r == 1 && j["event"] == "start") {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // inside the launch
      hurt(p);
      hurtDone = true;
      at = std::chrono::steady_clock::now();
    }
    if (hurtDone && r == 0 && j["event"] == "done") {
      after = std::chrono::duration<double>(std::chrono::steady_clock::now() - at).count();
      if (rank0Done) rank0Done(p);
    }
  });
  REQUIRE(hurtDone);
  *growthMb = rss->growthMb();
  REQUIRE(out->done[0].size() == 1);
  return {out->done[0][0]["verdict"].get<std::string>(), after};
}

}  // namespace

// A wait re-checked on every idle poll used to add a watcher and a deadline each time (35 MB/s), and
// every later wait slept its own bound; now memory stays flat and the verdict comes one bound (+ the
// launch's own simulation, a few seconds under ctest -j2) after the peer went away.
TEST_CASE("rank runtime: a killed peer: flat memory, INVALID within the bound + 5 s", "[rank]") {
  Outcome o;
  double mb = 0;
  const auto [verdict, sec] = hurtPeer([](runtime::RankProcesses& p) { p.kill(1); }, {}, &o, &mb);
  WARN(fmt::format("killed peer, 3 s bound: rank 0's verdict {:.2f} s after the kill, ranks grew {:.0f} MB: {}", sec,
                   mb, verdict));
  CHECK(o.status[1] == 128 + SIGKILL);
  CHECK(verdict.find("this launch's pairs never came from rank 1 (") != std::string::npos);
  CHECK(verdict.rfind("INVALID", 0) == 0);
  CHECK(sec >= 3);
  CHECK(sec < 3 + 5);
  CHECK(mb < 50);
}

TEST_CASE("rank runtime: a peer stopped past the bound: flat memory, INVALID within the bound + 5 s", "[rank]") {
  Outcome o;
  double mb = 0;
  const auto [verdict, sec] = hurtPeer([](runtime::RankProcesses& p) { ::kill(p.pid(1), SIGSTOP); },
                                       [](runtime::RankProcesses& p) { ::kill(p.pid(1), SIGCONT); }, &o, &mb);
  WARN(fmt::format("peer stopped until rank 0's verdict, 3 s bound: verdict after {:.2f} s, ranks grew {:.0f} MB: {}",
                   sec, mb, verdict));
  CHECK(verdict.rfind("INVALID", 0) == 0);
  CHECK(sec >= 3);
  CHECK(sec < 3 + 5);
  CHECK(mb < 50);
  CHECK(o.done[1].size() == 1);  // resumed, it ends its launch
}

TEST_CASE("rank runtime: a peer stopped 4 s within a 20 s bound: flat memory, bit-exact", "[rank]") {
  SimRankJob job;
  job.rows = {2};
  job.launches = 1;
  job.seed = 6;
  job.waitTicks = 2'000'000'000;
  std::thread resume;
  std::unique_ptr<PeakRss> rss;
  const Outcome o = runRanks(2, job, [&](runtime::RankProcesses& p, int r, const json& j) {
    if (!rss) rss = std::make_unique<PeakRss>(p.pid(0));
    if (r == 1 && j["event"] == "start" && !resume.joinable()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const pid_t pid = p.pid(1);
      ::kill(pid, SIGSTOP);
      resume = std::thread([pid] {
        std::this_thread::sleep_for(std::chrono::seconds(4));
        ::kill(pid, SIGCONT);
      });
    }
  });
  if (resume.joinable()) resume.join();
  REQUIRE(rss);
  const double mb = rss->growthMb();
  WARN(fmt::format("peer stopped 4 s: ranks grew {:.0f} MB", mb));
  for (int r = 0; r < 2; ++r) {
    REQUIRE(o.done[r].size() == 1);
    CHECK(o.done[r][0]["verdict"] == "bit-exact");
  }
  CHECK(mb < 50);
}

namespace {

/// allocate + export on a SimRankDevice of its own (no peers), for the handle checks.
struct OneRank {
  ModelConfig cfg = ModelConfig::reduced();
  runtime::SimRankDevice dev;
  runtime::Generator gen = makeGenerator(cfg, nullptr);
  runtime::RankRuntime rt;
  OneRank(int rank, int tp) : dev(rank, tp), rt(gen, dev, rankRuntimeOptions(cfg, rank, tp, {2})) { rt.allocate(); }
};

std::vector<uint8_t> bytesOf(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

TEST_CASE("rank runtime: handles from another node, of another device or malformed are refused", "[rank]") {
  OneRank a(0, 2), b(1, 2);
  const std::vector<uint8_t> ha = a.rt.exportHandle(), hb = b.rt.exportHandle();
  json j = json::parse(hb.begin(), hb.end());
  auto refused = [&](const std::vector<uint8_t>& h1) {
    try {
      a.rt.openPeers({ha, h1});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  json other = j;
  other["boot_id"] = "00000000-0000-0000-0000-000000000000";
  other["host"] = "node-17";
  CHECK_THAT(refused(bytesOf(other.dump())), Catch::Contains("rank 1's symmetric-buffer handle") &&
                                                 Catch::Contains("comes from another node (host 'node-17'"));
  json hip = j;
  hip["device"] = "hip";
  CHECK_THAT(refused(bytesOf(hip.dump())), Catch::Contains("a 'hip' device's handle"));
  CHECK_THAT(refused(bytesOf("not json")), Catch::Contains("not a monogen handle"));
  json wrongRank = j;
  wrongRank["rank"] = 0;
  CHECK_THAT(refused(bytesOf(wrongRank.dump())), Catch::Contains("exported by rank 0, expected rank 1"));
  json gone = j;
  gone["segment"] = "/monogen-sim-no-such-segment";
  CHECK_THAT(refused(bytesOf(gone.dump())), Catch::Contains("shm_open('/monogen-sim-no-such-segment') failed"));
  json size = j;
  size["bytes"] = j["bytes"].get<int64_t>() + 4096;
  CHECK_THAT(refused(bytesOf(size.dump())), Catch::Contains("the handle says"));
  // and the good one opens
  CHECK_NOTHROW(a.rt.openPeers({ha, hb}));
  // once every rank has opened, the segment's name is gone from /dev/shm
  const std::string seg = json::parse(hb.begin(), hb.end())["segment"];
  b.rt.peersOpened();
  CHECK(access(("/dev/shm" + seg).c_str(), F_OK) != 0);
}

TEST_CASE("rank runtime: bind refuses the runtime's own buffers and checks the caller's once", "[rank]") {
  OneRank a(0, 1);
  a.rt.openPeers({a.rt.exportHandle()});
  a.rt.warmUp();
  const ir::Plan& plan = a.rt.plan(2);
  const RankIo io = allocRankIo(a.dev, plan);
  runtime::RankArgs args = rankArgs(plan, io, 1000);
  args[arg::kScratch] = runtime::LaunchArg::tensor(io.addr.at(arg::kAttn), runtime::DType::U8, {16});
  CHECK_THROWS_WITH(a.rt.bind(2, args), Catch::Contains("argument 'scratch'") && Catch::Contains("the runtime's own"));
  runtime::RankArgs bad = rankArgs(plan, io, 1000);
  bad[arg::kAttn].shape = {3, 3};  // the default variant's input
  CHECK_THROWS_WITH(a.rt.bind(2, bad), Catch::Contains("rank 0, argument 'attn'") && Catch::Contains("shape is [3, 3]"));
  CHECK_THROWS_WITH(a.rt.bind(4, rankArgs(plan, io, 1000)), Catch::Contains("S = 4 is not served here"));
  runtime::BoundLaunch& b = a.rt.bind(2, rankArgs(plan, io, 1000));
  CHECK(b.kernargs.size() == static_cast<size_t>(plan.kernargBytes()));
}

namespace {
/// A device that says it runs code objects, to show warm-up's run-only refusal without a GPU.
struct CodeObjectDevice : runtime::SimRankDevice {
  using SimRankDevice::SimRankDevice;
  bool runsCodeObjects() const override { return true; }
};
}  // namespace

TEST_CASE("rank runtime: in run-only mode a missing code object is an error naming the variant", "[rank]") {
  const ModelConfig cfg = ModelConfig::reduced();
  char dir[] = "/tmp/monogen-rankrt-XXXXXX";
  REQUIRE(mkdtemp(dir));
  runtime::CacheOptions co;
  co.runOnly = true;
  REQUIRE(chmod(dir, 0700) == 0);
  auto cache = std::make_shared<runtime::Cache>(dir, "test-toolchain", co);
  runtime::Generator gen = makeGenerator(cfg, cache);
  CodeObjectDevice dev(0, 1);
  runtime::RankRuntime rt(gen, dev, rankRuntimeOptions(cfg, 0, 1, {3}));
  rt.allocate();
  rt.openPeers({rt.exportHandle()});
  CHECK_THROWS_WITH(rt.warmUp(), Catch::Contains("warm-up of " + makeKey(cfg, 3, 1).variantName()) &&
                                     Catch::Contains("MONOGEN_RUN_ONLY"));
  CHECK(gen.compiles() == 0);
}

TEST_CASE("rank runtime: the HIP rank device without a loadable libamdhip64 is a clear error", "[rank][hip]") {
  try {
    runtime::HipRankDevice dev(0, 2, -1, {"libmonogen-no-such-hip.so"});
    FAIL("constructed");
  } catch (const RuntimeError& e) {
    CHECK_THAT(e.what(), Catch::Contains("cannot load the HIP runtime") &&
                             Catch::Contains("libmonogen-no-such-hip.so"));
  }
  // The default names: no GPU here, so whichever library loads (if any) this must not construct.
  CHECK_THROWS_AS(runtime::HipRankDevice(0, 2), RuntimeError);
}
