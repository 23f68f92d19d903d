// Shared by the spec tests that run launches on the Sim device.
#pragma once
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>

#include "runtime/sim/SimDevice.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/Spec.h"

/// The key of the input=part variant (the o_proj partial as the launch's input) with `knobs`'
/// others: the all-reduce's tests, whose edge cases (makeInputs: bf16 ties, cancelling ranks)
/// are in the partials themselves.
inline monogen::ir::Key partKey(const monogen::specs::minimax_m3::ModelConfig& cfg, int S, int TP,
                                monogen::specs::minimax_m3::FfnKnobs knobs = {}) {
  knobs.input = monogen::specs::minimax_m3::FfnInput::Part;
  return monogen::specs::minimax_m3::makeKey(cfg, S, TP, knobs);
}

/// Scheduler seed s; the quantum (ops a wave runs before the scheduler picks again) cycles
/// through fine and coarse interleavings with the seed.
/// MONOGEN_TEST_RACES=1 turns the Sim's race detector on in every spec test that takes its
/// options from here (checkWholeLaunch then also requires no race); off by default for the CI
/// budget (README, "The race detector").
inline monogen::runtime::SimOptions schedSeed(uint64_t s) {
  static constexpr int kQuantum[] = {32, 1, 7, 32, 2, 16, 3, 64};
  static const bool races = [] {
    const char* v = std::getenv("MONOGEN_TEST_RACES");
    return v && std::string(v) == "1";
  }();
  monogen::runtime::SimOptions o;
  o.seed = s;
  o.maxQuantum = kQuantum[s % 8];
  o.races = races;
  return o;
}

/// The Sim tests' inputs: makeLaunchInputs's EdgeCases values (MoeInputs.h), natural routing.
inline monogen::specs::minimax_m3::LaunchInputOptions edgeCases() {
  monogen::specs::minimax_m3::LaunchInputOptions o;
  o.values = monogen::specs::minimax_m3::InputValues::EdgeCases;
  return o;
}

/// The MoE outputs checked: every stage's (the router's parts are internal; route checks them).
inline const char* const kCheckedMoe[] = {"rstd", "xn",        "picks", "weights", "slot_expert", "slot_count",
                                          "slot_row", "slot_pick", "mid",  "down",    "out"};

/// Runs (S, TP) (the variant of the experts and scales knobs) on the Sim device with `opts` and
/// checks every output of every
/// rank bit for bit: the all-reduce's against referenceOutputs, the MoE's against
/// moeReferenceOutputs (fed the kernel's SRES and SSQ); no wait times out, every error word 0;
/// with opts.races, the race detector found no race.
/// With knobs.input == Attn (o_proj in the launch; `in` from makeLaunchInputs with oproj) also
/// every rank's quant scales and o_proj partial as push sent them (xscale.rR, opart.rR) against
/// oprojReferenceOutputs.
inline monogen::runtime::TensorMap checkWholeLaunch(const monogen::specs::minimax_m3::ModelConfig& cfg, int S, int TP,
                                                    const monogen::runtime::TensorMap& in,
                                                    const monogen::runtime::SimOptions& opts,
                                                    const monogen::specs::minimax_m3::FfnKnobs& knobs) {
  using namespace monogen::specs::minimax_m3;
  const MoeExperts experts = knobs.experts;
  INFO(fmt::format("S={} TP={} scheduler seed {} quantum {} LDS poison seed {} knobs '{}'", S, TP, opts.seed,
                   opts.maxQuantum, opts.poisonSeed ? opts.poisonSeed : opts.seed, knobs.canonical()));
  const monogen::ir::Key key = makeKey(cfg, S, TP, knobs);
  const SimRun run = runOnSim(cfg, key, in, opts);
  if (knobs.input == FfnInput::Attn) {  // the quant's scales and the partial push sent
    const monogen::runtime::TensorMap oproj = oprojReferenceOutputs(cfg, S, TP, in);
    REQUIRE(oproj.size() == 2 * static_cast<size_t>(TP));
    auto pm = firstMismatch(run.outputs, oproj);
    INFO((pm ? "o_proj: " + describe(*pm) : std::string("o_proj: no mismatch")));
    CHECK_FALSE(pm.has_value());
  }
  auto mm = firstMismatch(run.outputs, referenceOutputs(cfg, S, TP, in));
  INFO((mm ? "all-reduce: " + describe(*mm) : std::string("all-reduce: no mismatch")));
  CHECK_FALSE(mm.has_value());
  monogen::runtime::TensorMap want;
  for (const auto& [name, t] : moeReferenceOutputs(cfg, S, TP, in, run.outputs, experts))
    for (const char* c : kCheckedMoe)
      if (name.rfind(std::string(c) + ".r", 0) == 0) want[name] = t;
  REQUIRE(want.size() == std::size(kCheckedMoe) * static_cast<size_t>(TP));  // every output of every rank
  mm = firstMismatch(run.outputs, want);
  INFO((mm ? "moe: " + describe(*mm) : std::string("moe: no mismatch")));
  CHECK_FALSE(mm.has_value());
  CHECK(run.stats.waitTimeouts == 0);
  for (int r = 0; r < TP; ++r) CHECK(run.outputs.at(fmt::format("err.r{}", r)).as<int32_t>()[0] == 0);
  // no race (a race is never bit-exact, whatever the bits); with opts.races also no uninitialized
  // read, and the detector was on
  std::string found;
  for (const std::string& r : run.stats.races) found += r + "\n";
  for (const std::string& r : run.stats.uninit) found += r + "\n";
  INFO(found);
  CHECK(run.stats.raceCount == 0);
  CHECK(run.stats.uninitCount == 0);
  if (opts.races) CHECK(run.stats.raceChecks > 0);
  return run.outputs;
}

/// checkWholeLaunch of the variant of the input `in` holds (attn.r0 there: o_proj in the launch,
/// the default; else input=part) with the experts and scales knobs.
inline monogen::runtime::TensorMap checkWholeLaunch(const monogen::specs::minimax_m3::ModelConfig& cfg, int S, int TP,
                                                    const monogen::runtime::TensorMap& in,
                                                    const monogen::runtime::SimOptions& opts,
                                                    monogen::specs::minimax_m3::MoeExperts experts = monogen::specs::minimax_m3::MoeExperts::All,
                                                    monogen::specs::minimax_m3::ScaleLayout scales = monogen::specs::minimax_m3::ScaleLayout::E8m0Shuffle) {
  monogen::specs::minimax_m3::FfnKnobs knobs;
  knobs.experts = experts;
  knobs.scales = scales;
  knobs.input = in.count("attn.r0") ? monogen::specs::minimax_m3::FfnInput::Attn : monogen::specs::minimax_m3::FfnInput::Part;
  return checkWholeLaunch(cfg, S, TP, in, opts, knobs);
}

/// checkWholeLaunch under scheduler seed `sched` (schedSeed).
inline monogen::runtime::TensorMap checkWholeLaunch(const monogen::specs::minimax_m3::ModelConfig& cfg, int S, int TP,
                                                    const monogen::runtime::TensorMap& in, uint64_t sched,
                                                    monogen::specs::minimax_m3::MoeExperts experts = monogen::specs::minimax_m3::MoeExperts::All) {
  return checkWholeLaunch(cfg, S, TP, in, schedSeed(sched), experts);
}
