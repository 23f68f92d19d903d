// The MiniMax-M3 FFN launch under the Sim's happens-before race detector (issue 9,
// runtime/sim/SimRaces.h): the launch is race-free over the bit-exact matrix on the reduced
// config, and each test-only mutation of one sync site (specs/minimax_m3/Mutation.h) is reported,
// naming that site (stage and op number) and the edge it took away. The mutation tests are what
// shows the detector sees: each would pass a detector that never reports, so each requires a
// report. The full-dims case (S=8 TP=4 with the detector on) has its own label,
// test_spec_races_full (tests/CMakeLists.txt).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <string>

#include "ir/Error.h"
#include "ir/Op.h"
#include "specs/minimax_m3/Generate.h"
#include "specs/minimax_m3/MoeInputs.h"
#include "specs/minimax_m3/Mutation.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

namespace {

runtime::SimOptions racesOn(uint64_t sched) {
  runtime::SimOptions o = schedSeed(sched);
  o.races = true;
  return o;
}

std::string joined(const runtime::SimStats& st) {
  std::string s;
  for (const std::string& r : st.races) s += r + "\n";
  return s;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The reduced matrix S x the given TPs, one scheduler seed a cell, the detector on: every output
/// bit-exact and no race (checkWholeLaunch checks both when opts.races is on).
void raceFreeMatrix(std::initializer_list<int> tps) {
  const ModelConfig cfg = ModelConfig::reduced();
  const auto t0 = std::chrono::steady_clock::now();
  int runs = 0;
  for (int S : {1, 3, 5, 8, 9, 16})
    for (int TP : tps) {
      const uint64_t sched = 1 + (S + TP) % 8;
      checkWholeLaunch(cfg, S, TP, makeLaunchInputs(cfg, S, TP, 700 + 10 * S + TP, edgeCases()), racesOn(sched));
      ++runs;
    }
  WARN(fmt::format("{} reduced launches with the race detector in {:.1f} s", runs, secondsSince(t0)));
}

struct MutantRun {
  MutationSite site;
  SimRun run;
  std::string reports;
  std::string variant;
};

/// Builds (S, TP) with mutation m, runs it on the Sim device with the detector on, and locates
/// the mutated op against the real Plan.
MutantRun runMutant(const Mutation& m, int S, int TP, uint64_t sched = 2) {
  const ModelConfig cfg = ModelConfig::reduced();
  FfnKnobs knobs;
  knobs.mutation = m;
  const ir::Key key = makeKey(cfg, S, TP, knobs);
  MutantRun r;
  r.variant = key.variantName();
  r.site = locateMutation(buildPlan(cfg, makeKey(cfg, S, TP)), buildPlan(cfg, key));
  r.run = runOnSim(cfg, key, makeLaunchInputs(cfg, S, TP, 800 + S + TP, edgeCases()), racesOn(sched));
  r.reports = joined(r.run.stats);
  return r;
}

/// The report lines that contain every one of `parts`.
int linesWith(const std::string& reports, std::initializer_list<std::string> parts) {
  int n = 0;
  size_t at = 0;
  while (at < reports.size()) {
    size_t end = reports.find('\n', at);
    if (end == std::string::npos) end = reports.size();
    const std::string line = reports.substr(at, end - at);
    bool all = true;
    for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
    n += all;
    at = end + 1;
  }
  return n;
}

Mutation mut(MutationKind k, const char* stage, int ordinal) { return Mutation{k, stage, ordinal}; }

}  // namespace

TEST_CASE("races: the whole launch is race-free and bit-exact, TP 1 and 2 (reduced config)", "[spec][races]") {
  raceFreeMatrix({1, 2});
}

TEST_CASE("races: the whole launch is race-free and bit-exact, TP 4 (reduced config)", "[spec][races]") {
  raceFreeMatrix({4});
}

TEST_CASE("races: the whole launch is race-free and bit-exact, TP 8 (reduced config)", "[spec][races]") {
  raceFreeMatrix({8});
}

TEST_CASE("races: a mutation is in the key, refused by the generator, and must hit its site", "[spec][races]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const Mutation m = mut(MutationKind::WaitRelaxed, "norm", 0);
  FfnKnobs k;
  k.mutation = m;
  const ir::Key key = makeKey(cfg, 2, 2, k);
  CHECK(key.knobs == "mutate=wait_relaxed@norm.0");
  CHECK(key.variantName() != makeKey(cfg, 2, 2).variantName());
  CHECK(knobsOf(key).mutation == m);
  CHECK(Mutation::parse(m.canonical(), "t") == m);
  CHECK_THROWS_AS(Mutation::parse("wait_relaxed@norm", "t"), InputError);
  CHECK_THROWS_AS(Mutation::parse("sleepy@norm.0", "t"), InputError);
  // a site past the stage's calls, or one that does not hold what the mutation changes
  k.mutation = mut(MutationKind::WaitRelaxed, "norm", 5);
  CHECK_THROWS_WITH(buildPlan(cfg, makeKey(cfg, 2, 2, k)), Catch::Contains("the site was never built"));
  k.mutation = mut(MutationKind::PushAgent, "norm", 0);  // norm's publishes are agent scope
  CHECK_THROWS_WITH(buildPlan(cfg, makeKey(cfg, 2, 2, k)), Catch::Contains("not a system-scope push"));
  k.mutation = mut(MutationKind::PublishRelaxed, "push", 0);  // push is relaxed already
  CHECK_THROWS_WITH(buildPlan(cfg, makeKey(cfg, 2, 2, k)), Catch::Contains("not a release"));
  // the generator (cache, devices) never takes one
  auto gen = makeGenerator(cfg, nullptr);
  CHECK_THROWS_WITH(gen.variant(key, /*withCode=*/false), Catch::Contains("runs on the Sim device only"));
  // the mutated Plan differs from the real one at exactly the site: norm's first wait
  const MutationSite s = locateMutation(buildPlan(cfg, makeKey(cfg, 2, 2)), buildPlan(cfg, key));
  CHECK(s.stage == "norm");
  CHECK(s.op == "wait");
  CHECK_FALSE(s.removed);
}

// Each mutation below: the launch is reported (RACE), and a report line names the mutated site
// (stage, op number in the mutated Plan, op) and the missing edge.

TEST_CASE("races mutation: a publish's release turned relaxed (norm's XRDY) is a missing release", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::PublishRelaxed, "norm", 1), 8, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "norm");
  REQUIRE(r.site.op == "publish");
  REQUIRE(r.run.stats.raceCount > 0);
  // XN, written by the norm, read by up after its wait on XRDY
  CHECK(linesWith(r.reports, {"write by stage 'norm'", "read by stage 'up'",
                              fmt::format("missing release: op #{} publish", r.site.opNum),
                              "is relaxed, not a release"}) > 0);
}

TEST_CASE("races mutation: a publish's release turned relaxed (reduce's SSQ) is a missing release", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::PublishRelaxed, "reduce", 0), 3, 1);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "reduce");
  REQUIRE(r.run.stats.raceCount > 0);
  // SRES, written by the reduce, read by the norm after its wait on SSQ
  CHECK(linesWith(r.reports, {"race on 'scratch.r0'", "write by stage 'reduce'", "read by stage 'norm'",
                              fmt::format("missing release: op #{} publish", r.site.opNum)}) > 0);
}

TEST_CASE("races mutation: a wait's acquire turned relaxed (down's UPF) is a missing acquire", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::WaitRelaxed, "down", 0), 8, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "down");
  REQUIRE(r.site.op == "wait");
  REQUIRE(r.run.stats.raceCount > 0);
  // MID, written by up, read by down
  CHECK(linesWith(r.reports, {"write by stage 'up'", "read by stage 'down'",
                              fmt::format("missing acquire: op #{} wait", r.site.opNum),
                              "is relaxed, not an acquire"}) > 0);
}

TEST_CASE("races mutation: a wait's acquire turned relaxed (norm's SSQ) is a missing acquire", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::WaitRelaxed, "norm", 0), 5, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "norm");
  REQUIRE(r.run.stats.raceCount > 0);
  CHECK(linesWith(r.reports, {"write by stage 'reduce'", "read by stage 'norm'",
                              fmt::format("missing acquire: op #{} wait", r.site.opNum)}) > 0);
}

TEST_CASE("races mutation: the ctaSync(drain) before up's UPF publish removed is a missing drain", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::NoDrain, "up", 0), 8, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "up");
  REQUIRE(r.site.removed);
  REQUIRE(r.site.op == "fence");  // ctaSync(drain): the release fence, then the barrier
  const int pub = nextOpNum(buildPlan(ModelConfig::reduced(), makeKey(ModelConfig::reduced(), 8, 2,
                                                                       FfnKnobs{.mutation = mut(MutationKind::NoDrain, "up", 0)})),
                            "up", r.site.opNum, ir::OpCode::Publish);
  REQUIRE(pub > 0);
  REQUIRE(r.run.stats.raceCount > 0);
  // MID written by waves other than thread 0's, read by down after UPF
  CHECK(linesWith(r.reports, {"write by stage 'up'", "read by stage 'down'",
                              fmt::format("missing drain: the release op #{} publish by wave 0", pub)}) > 0);
}

TEST_CASE("races mutation: the ctaSync(drain) before norm's XRDY publish removed is a missing drain", "[spec][races]") {
  const Mutation m = mut(MutationKind::NoDrain, "norm", 0);
  const MutantRun r = runMutant(m, 8, 1);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "norm");
  REQUIRE(r.site.removed);
  const ModelConfig cfg = ModelConfig::reduced();
  const int pub = nextOpNum(buildPlan(cfg, makeKey(cfg, 8, 1, FfnKnobs{.mutation = m})), "norm", r.site.opNum,
                            ir::OpCode::Publish);
  REQUIRE(r.run.stats.raceCount > 0);
  CHECK(linesWith(r.reports, {"write by stage 'norm'", "read by stage 'up'",
                              fmt::format("missing drain: the release op #{} publish by wave 0", pub)}) > 0);
}

TEST_CASE("races mutation: push's system-scope peer push at agent scope is a scope race across ranks",
          "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::PushAgent, "push", 0), 3, 2);  // the push to rank 0
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "push");
  REQUIRE(r.site.op == "publish");
  REQUIRE(r.run.stats.raceCount > 0);
  // rank 1's pair in rank 0's ATTN, read by rank 0's reduce
  CHECK(linesWith(r.reports, {"race on 'sym.r0'", fmt::format("atomic write by stage 'push' op #{} publish (rank 1",
                                                              r.site.opNum),
                              "atomic read by stage 'reduce'", "(rank 0",
                              "scope: atomics at agent and system scope do not cover ranks 1 and 0"}) > 0);
}

TEST_CASE("races mutation: down's system-scope FFN push at agent scope is a scope race across ranks",
          "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::PushAgent, "down", 0), 5, 4);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "down");
  REQUIRE(r.run.stats.raceCount > 0);
  CHECK(linesWith(r.reports, {"race on 'sym.r0'", fmt::format("atomic write by stage 'down' op #{} publish", r.site.opNum),
                              "atomic read by stage 'final'", "(rank 0", "scope: atomics at agent and system scope"}) > 0);
}

TEST_CASE("races mutation: norm's agent-scope XRDY publish at workgroup scope is a scope race across CTAs",
          "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::PublishWorkgroup, "norm", 1), 8, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "norm");
  REQUIRE(r.site.op == "publish");
  REQUIRE(r.run.stats.raceCount > 0);
  // the pair itself (read by other CTAs' waits) and the XN it was to release
  CHECK(linesWith(r.reports, {fmt::format("atomic write by stage 'norm' op #{} publish", r.site.opNum),
                              "atomic read by stage 'up'", "scope: atomics at workgroup and agent scope do not cover CTAs"}) > 0);
  CHECK(linesWith(r.reports, {"write by stage 'norm'", "read by stage 'up'",
                              fmt::format("scope: the release at workgroup scope (op #{} publish) does not cover CTAs",
                                          r.site.opNum)}) > 0);
}

TEST_CASE("races mutation: up's agent-scope UPF publish at workgroup scope is a scope race across CTAs",
          "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::PublishWorkgroup, "up", 0), 9, 1);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "up");
  REQUIRE(r.run.stats.raceCount > 0);
  CHECK(linesWith(r.reports, {fmt::format("op #{} publish", r.site.opNum), "read by stage 'down'",
                              "workgroup"}) > 0);
}

TEST_CASE("races mutation: the router's barrier between its waves' LDS tiles and their sum removed is an LDS race",
          "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::NoBarrier, "router", 1), 4, 1);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "router");
  REQUIRE(r.site.removed);
  REQUIRE(r.site.op == "barrier");
  REQUIRE(r.run.stats.raceCount > 0);
  // red: a wave's store of its tile, another wave's load in the sum (or the reverse order: a load
  // then the next task's store), with no barrier between them
  CHECK(linesWith(r.reports, {"race on LDS of CTA", "by stage 'router'", "no barrier or release/acquire between them"}) > 0);
}

TEST_CASE("races mutation: a block sum's barrier removed (norm) is an LDS race", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::NoBarrier, "norm", 1), 2, 2);  // blockSum's second barrier
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "norm");
  REQUIRE(r.site.removed);
  REQUIRE(r.run.stats.raceCount > 0);
  CHECK(linesWith(r.reports, {"race on LDS of CTA", "by stage 'norm'", "no barrier or release/acquire between them"}) > 0);
}

TEST_CASE("explore", "[.explore]") {
  struct C { MutationKind k; const char* st; int o, S, TP; } cs[] = {
      {MutationKind::PublishRelaxed, "up", 0, 8, 2},   {MutationKind::PublishRelaxed, "norm", 0, 1, 1},
      {MutationKind::PublishRelaxed, "norm", 0, 3, 4}, {MutationKind::PublishRelaxed, "norm", 1, 1, 1},
      {MutationKind::PublishRelaxed, "reduce", 0, 16, 2},
      {MutationKind::WaitRelaxed, "norm", 0, 8, 2},    {MutationKind::WaitRelaxed, "down", 0, 8, 2},
      {MutationKind::WaitRelaxed, "up", 0, 1, 1},      {MutationKind::WaitRelaxed, "router", 0, 1, 1},
      {MutationKind::NoBarrier, "router", 1, 8, 2},    {MutationKind::NoBarrier, "norm", 1, 8, 2},
      {MutationKind::NoDrain, "up", 0, 8, 2},
  };
  for (auto c : cs) {
    Mutation m{c.k, c.st, c.o};
    MutantRun r = runMutant(m, c.S, c.TP);
    fmt::print("{} S{} TP{} site #{} {}: {} races\n", m.canonical(), c.S, c.TP, r.site.opNum, r.site.op, r.run.stats.raceCount);
    for (auto& line : r.run.stats.races) fmt::print("   {}\n", line.substr(line.find(": ") + 2, 420));
    std::fflush(stdout);
  }
}
