// The MiniMax-M3 FFN launch under the Sim's happens-before race detector
// (runtime/sim/SimRaces.h): the launch is race-free over the bit-exact matrix on the reduced
// config, and each test-only mutation of one sync site (specs/minimax_m3/kernel/Mutation.h) is reported,
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
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/kernel/Mutation.h"
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
  // The positive control: the same detector sees a race when there is one (a detector that never
  // reports, or is never on, passes every cell above and fails here).
  FfnKnobs knobs;
  knobs.mutation = Mutation{MutationKind::PushAgent, "push", 0};
  const ir::Key key = makeKey(cfg, 1, 2, knobs);
  const SimRun canary = runOnSim(cfg, key, makeLaunchInputs(cfg, 1, 2, 5, edgeCases()), racesOn(1));
  CHECK(canary.stats.raceCount > 0);
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
// (stage, op number in the mutated Plan, op) and the edge it took away. The sites are ones whose
// edge the launch needs: many of its edges are redundant (a publish after ctaSync(drain)'s fence
// releases even when relaxed, since the fence releases the wave's earlier accesses; the chain
// router -> route -> table orders every CTA's up after every norm), and a mutation of a redundant
// edge is, rightly, no race (test_spec_races.cpp's "redundant edges" case).

TEST_CASE("races mutation: norm's RSTD relaxed is no race (the router sums SSQ itself)", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::PublishRelaxed, "norm", 0), 3, 4);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "norm");
  REQUIRE(r.site.op == "publish");
  // RSTD is a checked output the launch never reads back: the router acquires the reduce's SRES
  // from SSQ directly, so no edge of the launch goes through RSTD's release
  CHECK(r.run.stats.raceCount == 0);
  CHECK(r.run.valid);
}

TEST_CASE("races mutation: a publish's release turned relaxed (up's UPF, after its drain) is a missing release",
          "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::PublishRelaxed, "up", 0), 4, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "up");
  REQUIRE(r.run.stats.raceCount > 0);
  // MID by another wave than thread 0's, read by down: the drain's fence precedes the barrier. At S 4:
  // at S 8 a down CTA that ran a norm row acquired the writer CTA's earlier SSQ release, and the
  // report names that (a missing drain) instead
  CHECK(linesWith(r.reports, {"write by stage 'up'", "read by stage 'down'",
                              fmt::format("missing release: op #{} publish", r.site.opNum),
                              "is relaxed; its release is that wave's earlier fence"}) > 0);
}

TEST_CASE("races mutation: a wait's acquire turned relaxed (norm's SSQ) is a missing acquire", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::WaitRelaxed, "norm", 0), 8, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "norm");
  REQUIRE(r.site.op == "wait");
  REQUIRE(r.run.stats.raceCount > 0);
  // SRES, written by the reduce, read by the norm after its wait on SSQ
  CHECK(linesWith(r.reports, {"write by stage 'reduce'", "read by stage 'norm'",
                              fmt::format("missing acquire: op #{} wait", r.site.opNum),
                              "is relaxed, not an acquire"}) > 0);
}

TEST_CASE("races mutation: a wait's acquire turned relaxed (down's UPF) is a missing acquire", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::WaitRelaxed, "down", 0), 8, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "down");
  REQUIRE(r.run.stats.raceCount > 0);
  // MID, written by up, read by down
  CHECK(linesWith(r.reports, {"write by stage 'up'", "read by stage 'down'",
                              fmt::format("missing acquire: op #{} wait", r.site.opNum)}) > 0);
}

TEST_CASE("races mutation: a wait's acquire turned relaxed (the router's SSQ) is a missing acquire", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::WaitRelaxed, "router", 0), 1, 1);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "router");
  REQUIRE(r.run.stats.raceCount > 0);
  CHECK(linesWith(r.reports, {"write by stage 'reduce'", "read by stage 'router'",
                              fmt::format("missing acquire: op #{} wait", r.site.opNum)}) > 0);
}

TEST_CASE("races mutation: the ctaSync(drain) before norm's XRDY publish removed is a missing drain", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::NoDrain, "norm", 0), 8, 1);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "norm");
  REQUIRE(r.site.removed);
  REQUIRE(r.site.op == "fence");  // ctaSync(drain): the release fence, then the barrier
  REQUIRE(r.run.stats.raceCount > 0);
  // XN, stored by a wave other than the publisher's just before the removed drain (op # below
  // the site), read by up in another CTA: no release of that wave carries it
  bool named = false;
  for (int op = r.site.opNum - 1; op > r.site.opNum - 40 && !named; --op)
    named = linesWith(r.reports, {fmt::format("write by stage 'norm' op #{} store", op), "read by stage 'up'",
                                  "missing drain: the release op #", "needs a release at agent scope"}) > 0;
  CHECK(named);
}

TEST_CASE("races mutation: push's system-scope peer push at agent scope is a scope race across ranks",
          "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::PushAgent, "push", 0), 3, 2);  // the push to rank 0
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "push");
  REQUIRE(r.site.op == "publish");
  REQUIRE(r.run.stats.raceCount > 0);
  // rank 1's pair in rank 0's ATTN, read by rank 0's reduce (the pair is the data: the LL protocol)
  CHECK(linesWith(r.reports, {"race on 'sym.r0'",
                              fmt::format("atomic write by stage 'push' op #{} publish (rank 1", r.site.opNum),
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
                              "atomic read by stage 'final'", "scope: atomics at agent and system scope do not cover ranks"}) > 0);
}

TEST_CASE("races mutation: reduce's agent-scope SSQ publish at workgroup scope is a scope race across CTAs",
          "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::PublishWorkgroup, "reduce", 0), 8, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "reduce");
  REQUIRE(r.site.op == "publish");
  REQUIRE(r.run.stats.raceCount > 0);
  CHECK(linesWith(r.reports, {fmt::format("atomic write by stage 'reduce' op #{} publish", r.site.opNum),
                              "atomic read by stage 'norm'", "scope: atomics at workgroup and agent scope do not cover CTAs"}) > 0);
}

TEST_CASE("races mutation: up's agent-scope UPF publish at workgroup scope is a scope race across CTAs",
          "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::PublishWorkgroup, "up", 0), 8, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "up");
  REQUIRE(r.run.stats.raceCount > 0);
  CHECK(linesWith(r.reports, {fmt::format("atomic write by stage 'up' op #{} publish", r.site.opNum),
                              "atomic read by stage 'down'", "scope: atomics at workgroup and agent scope do not cover CTAs"}) > 0);
}

TEST_CASE("races mutation: the router's barrier between its waves' LDS tiles and their sum removed is an LDS race",
          "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::NoBarrier, "router", 1), 8, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "router");
  REQUIRE(r.site.removed);
  REQUIRE(r.site.op == "barrier");
  REQUIRE(r.run.stats.raceCount > 0);
  // red: a wave's store of its tile (before the site), another wave's load in the sum (after it)
  bool named = false;
  for (int w = r.site.opNum - 60; w < r.site.opNum && !named; ++w)
    for (int rd = r.site.opNum; rd < r.site.opNum + 60 && !named; ++rd)
      named = linesWith(r.reports, {"race on LDS of CTA", fmt::format("write by stage 'router' op #{} store", w),
                                    fmt::format("read by stage 'router' op #{} load", rd),
                                    "no barrier or release/acquire between them"}) > 0;
  CHECK(named);
}

TEST_CASE("races mutation: a block sum's barrier removed (norm) is an LDS race", "[spec][races]") {
  const MutantRun r = runMutant(mut(MutationKind::NoBarrier, "norm", 1), 8, 2);  // blockSum's second barrier
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "norm");
  REQUIRE(r.site.removed);
  REQUIRE(r.run.stats.raceCount > 0);
  CHECK(linesWith(r.reports, {"race on LDS of CTA", "by stage 'norm'", "no barrier or release/acquire between them"}) > 0);
}

TEST_CASE("races mutation: edges the launch does not need are, rightly, no race", "[spec][races]") {
  // reduce's SSQ publish after ctaSync(drain): the fence releases the wave's stores, and a row's
  // SRES and its SSQ publisher are in one wave
  const MutantRun r = runMutant(mut(MutationKind::PublishRelaxed, "reduce", 0), 8, 2);
  INFO(r.variant << "\n" << r.reports);
  CHECK(r.run.stats.raceCount == 0);
  CHECK(r.run.valid);
}

TEST_CASE("races mutation: norm's XRDY at workgroup scope is a race on XN", "[spec][races]") {
  // the norm's rows run on CTAs of their own, off the router's SSQ: the router -> route -> table chain no
  // longer orders XN's stores before up, so XRDY's agent-scope release is the edge
  const MutantRun r = runMutant(mut(MutationKind::PublishWorkgroup, "norm", 1), 8, 2);
  INFO(r.variant << "\n" << r.reports);
  REQUIRE(r.site.stage == "norm");
  REQUIRE(r.run.stats.raceCount > 0);
  CHECK(linesWith(r.reports, {"write by stage 'norm'", "read by stage 'up'", "at workgroup scope"}) > 0);
}
