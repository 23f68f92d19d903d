// monogen sim: runs one variant's whole launch (push, reduce, norm, router, route, table, up,
// down, final) on the Sim device, every CTA of every rank, and compares every output with the
// native reference bit for bit: the all-reduce's (res_out, sres, ssq, err) and the MoE's (rstd,
// xn, picks, weights, the slot table, mid, down, out) of every rank. Exit 0 only when every
// output is bit-exact, every rank's error word is 0 (a launch with an error word set is never
// called bit-exact) and, with --experts N, the rows pick exactly N distinct routed experts.
//
// The inputs are makeLaunchInputs's (weights in the contract layout, partials, residual, slots),
// steered by --experts / --padded-rows, or read back from what --save wrote (--inputs).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>

#include "ir/Error.h"
#include "runtime/Safetensors.h"
#include "runtime/sim/timing/TimingParams.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/reference/MoeReference.h"
#include "specs/minimax_m3/testing/SaveLaunch.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "tools/Commands.h"
#include "tools/TimedCells.h"
#include "tools/TimedIsa.h"
#include "tools/Variant.h"
#include "tools/SimAttention.h"
#include "tools/SimLayer.h"
#include "tools/Verdict.h"
#include "tools/NumericFlag.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

namespace {

/// A launch's inputs and where they came from.
struct LaunchInputs {
  runtime::TensorMap tensors;
  std::map<std::string, std::string> metadata;  // the file's __metadata__ (empty when generated)
};

/// The inputs --inputs names: a directory --save wrote (loadLaunch) or one inputs .safetensors.
/// Refuses a launch saved for other dims, and names the first tensor the launch needs that the
/// file lacks (the Sim harness would run a missing weight as zeros).
LaunchInputs readInputs(const std::string& path, const mm::ModelConfig& cfg, int S, int TP, mm::FfnInput input) {
  LaunchInputs in;
  if (std::filesystem::is_directory(path)) {
    if (!std::filesystem::exists(std::filesystem::path(path) / "inputs.safetensors"))
      throw InputError("--inputs", fmt::format("directory '{}' has no inputs.safetensors: expected a directory "
                                               "`monogen sim --save` wrote, or an inputs .safetensors file",
                                               path));
    runtime::SafetensorsFile f = mm::loadLaunchInputs(path);  // the outputs and reference are not needed
    in.tensors = std::move(f.tensors);
    in.metadata = std::move(f.metadata);
  } else {
    runtime::SafetensorsFile f = runtime::readSafetensorsFile(path);
    mm::declareSavedScales(f.tensors, f.metadata);  // its "scales" metadata, as --save writes it
    in.tensors = std::move(f.tensors);
    in.metadata = std::move(f.metadata);
  }
  const auto meta = [&](const char* k) {
    auto it = in.metadata.find(k);
    return it == in.metadata.end() ? std::string() : it->second;
  };
  if (meta("launch") == "attention")
    throw InputError("--inputs", fmt::format("'{}' holds an attention launch (`sim --launch attention --save`): "
                                             "--inputs replays an FFN launch only",
                                             path));
  const std::string rows = meta("rows"), tp = meta("tp"), config = meta("config");
  if ((!rows.empty() && rows != std::to_string(S)) || (!tp.empty() && tp != std::to_string(TP)))
    throw InputError("--inputs", fmt::format("'{}' holds a launch of S={} TP={}, not S={} TP={}: pass --rows {} --tp {}",
                                             path, rows, tp, S, TP, rows, tp));
  if (!config.empty() && config != cfg.canonical())
    throw InputError("--inputs", fmt::format("'{}' holds a launch of config '{}', not '{}': pass its --config", path,
                                             config, cfg.canonical()));
  if (const std::string kind = mm::savedInputKind(in.tensors, in.metadata); kind != mm::ffnInputName(input))
    throw InputError("--inputs", fmt::format("'{}' holds a launch of --input {}, not --input {}: pass --input {}", path,
                                             kind, mm::ffnInputName(input), kind));
  std::vector<std::string> needed;
  for (int r = 0; r < TP; ++r) needed.push_back(mm::rankName("part", r));
  for (const char* n : {"res_in", "slots", "norm_w", "router_w", "bias"}) needed.push_back(n);
  for (int r = 0; r < TP; ++r)
    for (const char* n : {"w13", "s13", "w2", "s2"}) needed.push_back(mm::rankName(n, r));
  const bool attn = input == mm::FfnInput::Attn;  // o_proj in the launch: its inputs too
  if (attn) {
    for (int r = 0; r < TP; ++r)
      for (const char* n : {"attn", "wo"}) needed.push_back(mm::rankName(n, r));
    needed.push_back("wo_scale");
  }
  for (const std::string& n : needed)
    if (!in.tensors.count(n))
      throw InputError("--inputs",
                       fmt::format("'{}' has no tensor '{}': the launch needs part.rR, res_in, slots, norm_w, "
                                   "router_w, bias, w13.rR, s13.rR, w2.rR and s2.rR{} for R = 0..{} (as `monogen sim "
                                   "--save` writes them){}",
                                   path, n, attn ? ", attn.rR, wo.rR and wo_scale" : "", TP - 1,
                                   attn ? "; a launch saved from an --input part variant has no attention rows: "
                                          "replay it with --input part"
                                        : ""));
  // The reference follows what the kernel reads: o_proj's partials, sres and ssq made again.
  const std::vector<std::string> stale = mm::rederiveDerivedInputs(cfg, S, TP, input, in.tensors);
  if (!stale.empty())
    fmt::print("inputs: {} made again from the inputs the kernel reads (the saved ones disagreed)\n",
               fmt::join(stale, ", "));
  return in;
}

/// The timing model's figures for one launch: every one labelled modeled.
}  // namespace

Run addSim(CLI::App& app) {
  struct Options {
    VariantOptions v;
    uint64_t seed = 1;
    int seeds = 1;
    int experts = 0;     // --experts N: distinct routed experts the rows pick (0: natural routing)
    int paddedRows = 0;  // --padded-rows K: the last K rows get slot -1
    bool races = false;  // --races: the Sim's happens-before race detector
    bool timed = false;  // --timed: the gfx950 timing model (docs/timing.md)
    std::string timingParams;  // --timing-params FILE: JSON overrides of its parameters
    bool irIssue = false;      // --ir-issue: charge issue by IR op class, not the compiled ISA
    std::string inputs, save;
    mm::LaunchParams launch;
    SimAttentionOptions attention;  // --launch attention (SimAttention.h)
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("sim", "run a variant's whole launch on the Sim device and compare with the reference");
  addVariantOptions(c, o->v, true);
  c->add_option("--seed", o->seed, "scheduler seed (and input seed unless --inputs)")
      ->check(numeric<uint64_t>(0, std::numeric_limits<uint64_t>::max()))
      ->capture_default_str();
  c->add_option("--seeds", o->seeds, "run this many scheduler seeds, seed .. seed + n - 1")->check(numeric(1, 1000));
  CLI::Option* inputs = c->add_option("--inputs", o->inputs,
                                      "the launch's inputs: a directory --save wrote, or an inputs .safetensors file")
                            ->check(CLI::ExistingPath);
  c->add_option("--experts,-N", o->experts,
                "distinct routed experts the rows pick (router-bias steering): top-k .. min(experts, valid rows x "
                "top-k); 0: natural routing")
      ->check(numeric(std::numeric_limits<int>::min(), std::numeric_limits<int>::max()))  // range: below
      ->capture_default_str()
      ->excludes(inputs);
  c->add_option("--padded-rows", o->paddedRows, "the last K rows are padded (slot -1): 0..S")
      ->check(numeric(0, 16))
      ->capture_default_str()
      ->excludes(inputs);
  c->add_option("--save", o->save,
                "write the whole launch here: inputs.safetensors (weights, partials, residual, slots; --launch "
                "attention: rows, weights, metadata, the caches' touched blocks), outputs.safetensors and "
                "reference.safetensors; their metadata holds the seed, inputs, variant and verdict");
  c->add_option("--wait-ticks", o->launch.waitTicks, "a wait's bound in 100 MHz ticks, 1 or more")
      ->check(numeric<int64_t>(1, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  c->add_flag("--races", o->races,
              "run the Sim device's race detector (happens-before with scopes) and its uninitialized-read check: a "
              "race makes the verdict RACE, a read of LDS, scratch or an output no op of the launch wrote UNINIT; "
              "the first few are listed, naming the accesses and the missing edge or the region");
  c->add_flag("--timed", o->timed,
              "run under the gfx950 timing model (docs/timing.md): print the modeled launch time and the critical "
              "path (the stage, CTA and rank that end last, split into issue, memory stall, flag wait and barrier)");
  c->add_flag("--ir-issue", o->irIssue,
              "with --timed: charge each op's issue by its IR class, not by the compiled ISA LLVM attributes to it");
  c->add_option("--timing-params", o->timingParams,
                "with --timed: a JSON object {\"parameter\": value} overriding the timing model's parameters "
                "(runtime/sim/timing/Gfx950Timing.def, in their units)")
      ->check(CLI::ExistingFile);
  addContextOption(c, o->v);
  addAgRsFromOption(c, o->v);
  c->add_flag("--share-sequence", o->attention.share, "--launch attention or layer: the rows share one sequence");
  c->add_flag("--handshake", o->launch.handshake, "run it as the step's last launch (the ranks trade failure flags)");
  CLI::Option* rank = c->add_option("--inject-rank", o->launch.injectRank,
                                    "fault injection (implies --handshake): this rank stalls at the handshake, then "
                                    "fails")
                          ->check(numeric(-1, 7));
  CLI::Option* ticks = c->add_option("--inject-ticks", o->launch.injectTicks,
                                     "fault injection (needs --inject-rank): the stall in 100 MHz ticks")
                           ->check(numeric(0, 1 << 30))
                           ->needs(rank);
  return [o, ticks] {
    if (!o->timingParams.empty() && !o->timed)
      throw InputError("--timing-params", "sets the timing model's parameters: it needs --timed");
    if (o->irIssue && !o->timed) throw InputError("--ir-issue", "sets how the timing model issues: it needs --timed");
    std::shared_ptr<runtime::timing::TimingParams> timing;
    if (o->timed) {
      timing = std::make_shared<runtime::timing::TimingParams>();
      if (!o->timingParams.empty()) timing->load(o->timingParams);
    }
    auto attentionOptions = [&] {  // the attention and layer launches' options
      SimAttentionOptions a = o->attention;
      a.context = o->v.context;
      a.cache = o->v.cache;
      a.layer = o->v.layerType;
      a.agRsFrom = o->v.agRsFrom;
      a.wideFrom = o->v.wideFrom;
      a.indexCpFrom = o->v.indexCpFrom;
      a.rows = o->v.rows;
      a.tp = o->v.tp;
      a.paddedRows = o->paddedRows;
      a.seed = o->seed;
      a.seeds = o->seeds;
      a.races = o->races;
      a.save = o->save;
      a.timing = timing;
      a.irIssue = o->irIssue;
      a.moe = o->v.moe;
      return a;
    };
    if (isLayer(o->v)) {  // the layer launch: the attention launch's inputs, then the FFN's
      if (optionGiven(o->v, "--save"))
        throw InputError("--save", "the layer launch's inputs are not saved yet: no file holds the attention launch's "
                                   "inputs with the FFN launch's, and no --inputs reads them back (docs/layer.md, "
                                   "What is to come). The attention half is what `sim --launch attention --save DIR` "
                                   "writes with the same --config, --rows, --tp, --cache, --layer-type, --context and "
                                   "--seed; the FFN half takes its rows and residual from that half in the launch");
      for (const char* n : {"--spec", "--arch", "--sum", "--scales", "--input", "--trace", "--drop-mark", "--no-cache",
                            "--experts", "--inputs", "--save", "--handshake", "--inject-rank", "--inject-ticks",
                            "--wait-ticks"})
        if (optionGiven(o->v, n))
          throw InputError(n, "does not apply to sim --launch layer: it takes --config, --rows, --tp, --cache, "
                              "--layer-type, --moe, --context, --ag-rs-from, --index-cp-from, --share-sequence, "
                              "--padded-rows, --seed, "
                              "--seeds, "
                              "--races and --timed");
      return simLayer(configOf(o->v), attentionOptions());
    }
    refuseAgRsFrom(o->v);
    refuseOtherLaunchOptions(o->v,
                             {"--experts", "--inputs", "--handshake", "--inject-rank", "--wait-ticks"},
                             {"--share-sequence"});
    if (isAttention(o->v)) return simAttention(configOf(o->v), attentionOptions());
    checkInjection(o->launch.injectRank, *ticks);
    const auto cfg = configOf(o->v);
    const mm::FfnVariant v = mm::FfnVariant::make(cfg, keyOf(o->v, cfg, o->v.rows, o->v.tp));
    const ir::Key& key = v.key;
    const int S = v.layout.rows, TP = v.layout.tp;
    mm::LaunchParams launch = o->launch;
    if (launch.injectRank >= TP)
      throw InputError("--inject-rank", fmt::format("rank {}: expected -1 (none) or 0..{}", launch.injectRank, TP - 1));
    launch.handshake = launch.handshake || launch.injectRank >= 0;  // the stall happens at the handshake
    mm::LaunchInputOptions io = inputOptionsOf(cfg, S, o->experts, o->paddedRows);
    io.matchVariant(v.knobs);  // scales as it reads them; input=attn: attn.rR, wo.rR, wo_scale
    if (!o->save.empty()) mm::checkSaveDir(o->save, "--save");  // before the launch, not after it
    if (timing && !o->irIssue) timing->isa = timedIsa(mm::buildPlan(v));
    fmt::print("{} on the Sim device: {} ranks x {} CTAs x {} threads\n", key.variantName(), TP, cfg.blocks,
               cfg.threads);
    flushStdout();

    // The inputs and the reference of every output (the MoE's fed the reference all-reduce's SRES / SSQ).
    LaunchInputs in;
    std::string inputsText, inputSeed;
    if (o->inputs.empty()) {
      in.tensors = mm::makeLaunchInputs(cfg, S, TP, o->seed, io);
      inputsText = io.describe();
      inputSeed = std::to_string(o->seed);
    } else {
      in = readInputs(o->inputs, cfg, S, TP, v.knobs.input);
      const auto it = in.metadata.find("inputs");
      inputsText = fmt::format("{} (from {})", it == in.metadata.end() ? "unknown" : it->second, o->inputs);
      inputSeed = in.metadata.count("seed") ? in.metadata.at("seed") : "unknown";
    }
    const runtime::TensorMap& inputs = in.tensors;
    const runtime::TensorMap want = mm::launchReferenceOutputs(v, inputs);
    const std::vector<int> picked = mm::distinctPicked(want.at(mm::rankName("picks", 0)));
    fmt::print("inputs: seed {}, {}; the reference's rows pick {} distinct routed expert{}: {}\n", inputSeed,
               inputsText, picked.size(), picked.size() == 1 ? "" : "s", fmt::join(picked, " "));
    const bool steeringMissed = io.distinctExperts != 0 && static_cast<int>(picked.size()) != io.distinctExperts;
    if (steeringMissed)
      fmt::print("steering missed: the rows pick {} distinct experts, --experts asked {}\n", picked.size(),
                 io.distinctExperts);
    flushStdout();

    SeedTally tally;
    std::optional<mm::SimRun> saved;  // the first failing run, else the last
    std::string savedVerdict;
    uint64_t savedSeed = 0;
    for (int i = 0; i < o->seeds; ++i) {
      runtime::SimOptions so;
      so.seed = o->seed + static_cast<uint64_t>(i);
      so.races = o->races;
      so.timing = timing;
      const auto t0 = std::chrono::steady_clock::now();
      // a long launch (full dims: minutes) reports on stderr every 20M ops
      so.progress = [&, seed = so.seed](const runtime::SimProgress& p) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "  seed %llu: %lld M ops, %lld ticks, %lld of %lld waves done, %.0f s\n",
                     static_cast<unsigned long long>(seed), static_cast<long long>(p.steps / 1'000'000),
                     static_cast<long long>(p.ticks), static_cast<long long>(p.wavesTotal - p.wavesLeft),
                     static_cast<long long>(p.wavesTotal), s);
      };
      mm::SimRun run = mm::runOnSim(v, inputs, so, launch);
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const std::string verdict = withFindings(verdictOf(run, mm::firstMismatch(run.outputs, want)), run.stats);
      tally.add(verdict, so.seed);
      fmt::print("  seed {:<4} {:>10} ops {:>8} ticks {:6.2f} s ({:.1f} M ops/s)  {}\n", so.seed, run.stats.steps,
                 run.stats.ticks, sec, sec > 0 ? run.stats.steps / sec / 1e6 : 0.0, verdict);
      if (run.stats.timed.on) printTimed(run.stats.timed);
      printFindings(run.stats, o->races);
      flushStdout();
      if (!saved || savedVerdict == "bit-exact") {  // keep the first failing run
        saved = std::move(run);
        savedVerdict = verdict;
        savedSeed = so.seed;
      }
    }
    std::string overall = tally.overall();
    if (steeringMissed)
      overall += fmt::format("; steering missed: {} distinct experts picked, {} asked", picked.size(),
                             io.distinctExperts);
    if (!o->save.empty()) {
      std::map<std::string, std::string> meta = {{"seed", inputSeed},
                                                 {"inputs", inputsText},
                                                 {"variant", key.variantName()},
                                                 {"sched_seed", std::to_string(savedSeed)},
                                                 {"verdict", savedVerdict},
                                                 {"seeds_verdict", overall},
                                                 {"picked_experts", std::to_string(picked.size())}};
      mm::saveLaunch(o->save, cfg, S, TP, inputs, saved->outputs, want, meta);
      fmt::print("saved the launch (inputs with scales {}, scheduler seed {}'s outputs: {}; reference) to {}\n",
                 mm::savedScaleLayout(inputs), savedSeed,
                 savedVerdict == "bit-exact" ? "bit-exact" : savedVerdict.substr(0, savedVerdict.find(':')), o->save);
    }
    fmt::print("verdict: {}\n", overall);
    return tally.bad() || steeringMissed ? 1 : 0;
  };
}

}  // namespace monogen::tools
