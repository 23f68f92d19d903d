// monogen trace: runs the traced variant (the trace knob) on the Sim device, every CTA of every
// rank, and writes its per-CTA, per-stage stamps as Chrome / Perfetto trace-event JSON: one
// process a rank, one thread a CTA, one complete event a stage. On the Sim the stamps are the
// simulated 100 MHz realtime clock; with --timed, the gfx950 timing model's (modeled) clock.
// Exit 0 when the launch's outputs are valid and bit-exact.
#include <fmt/format.h>

#include <limits>

#include "ir/Error.h"
#include "support/AtomicFile.h"
#include "runtime/Trace.h"
#include "runtime/sim/timing/TimingParams.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "tools/Commands.h"
#include "tools/TimedIsa.h"
#include "tools/TraceSpans.h"
#include "tools/Variant.h"
#include "tools/NumericFlag.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

Run addTrace(CLI::App& app) {
  struct Options {
    VariantOptions v;
    uint64_t seed = 1;
    std::string out;
    bool handshake = false;
    int injectRank = -1;
    int32_t injectTicks = 0;
    int64_t waitTicks = 100'000'000;
    bool timed = false;
    std::string timingParams;
    int experts = 0;
    bool irIssue = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("trace", "run the traced variant on the Sim device and write trace-event JSON");
  addVariantOptions(c, o->v, true);
  c->add_option("--seed", o->seed, "scheduler and input seed")->check(numeric<uint64_t>(0, std::numeric_limits<uint64_t>::max()))->capture_default_str();
  c->add_option("-o,--output", o->out, "the trace-event JSON file to write (chrome://tracing, ui.perfetto.dev)")
      ->required();
  c->add_flag("--handshake", o->handshake, "run it as the step's last launch (the ranks trade failure flags)");
  CLI::Option* rank =
      c->add_option("--inject-rank", o->injectRank, "fault injection: this rank stalls at the handshake, then fails")
          ->check(numeric(-1, 7));
  CLI::Option* ticks = c->add_option("--inject-ticks", o->injectTicks, "fault injection: the stall in 100 MHz ticks")
                           ->check(numeric(0, 1 << 30))
                           ->needs(rank);
  c->add_option("--wait-ticks", o->waitTicks, "a wait's bound in 100 MHz ticks, 1 or more")
      ->check(numeric<int64_t>(1, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  c->add_option("--experts,-N", o->experts,
                "the rows pick exactly N distinct routed experts (router-bias steering); 0: natural routing")
      ->check(numeric(0, 4096))
      ->capture_default_str();
  c->add_flag("--timed", o->timed,
              "run under the gfx950 timing model (docs/timing.md): every timestamp is the model's clock, in "
              "modeled microseconds");
  c->add_option("--timing-params", o->timingParams, "with --timed: JSON overrides of the timing parameters")
      ->check(CLI::ExistingFile);
  c->add_flag("--ir-issue", o->irIssue, "with --timed: charge issue by IR op class, not by the compiled ISA");
  addContextOption(c, o->v);
  return [o, ticks] {
    refuseOtherLaunchOptions(o->v, {"--handshake", "--inject-rank", "--inject-ticks", "--wait-ticks", "--experts"});
    if (!o->timingParams.empty() && !o->timed) throw InputError("--timing-params", "needs --timed");
    if (o->irIssue && !o->timed) throw InputError("--ir-issue", "sets how the timing model issues: it needs --timed");
    std::shared_ptr<runtime::timing::TimingParams> timing;
    if (o->timed) {
      timing = std::make_shared<runtime::timing::TimingParams>();
      if (!o->timingParams.empty()) timing->load(o->timingParams);
    }
    if (isLayer(o->v)) return traceLayer(o->v, o->seed, o->out, timing, o->irIssue);
    if (isAttention(o->v)) return traceAttention(o->v, o->seed, o->out, timing, o->irIssue);
    checkInjection(o->injectRank, *ticks);
    const auto cfg = configOf(o->v);
    const ir::Key asked = keyOf(o->v, cfg, o->v.rows, o->v.tp);
    mm::FfnKnobs knobs = mm::knobsOf(asked);
    knobs.trace = true;
    const mm::FfnVariant v = mm::FfnVariant::make(cfg, mm::withKnobs(asked, knobs));
    const ir::Key& key = v.key;
    const int TP = v.layout.tp;
    if (o->injectRank >= TP)
      throw InputError("--inject-rank", fmt::format("rank {}: expected -1 (none) or 0..{}", o->injectRank, TP - 1));
    support::checkOutputFile(o->out, "-o");  // before the launch
    mm::LaunchInputOptions io = inputOptionsOf(cfg, v.layout.rows, o->experts, 0);
    io.matchVariant(v.knobs);
    const runtime::TensorMap inputs = mm::makeLaunchInputs(cfg, v.layout.rows, TP, o->seed, io);
    mm::LaunchParams p;
    p.handshake = o->handshake || o->injectRank >= 0;
    p.injectRank = o->injectRank;
    p.injectTicks = o->injectTicks;
    p.waitTicks = o->waitTicks;
    runtime::SimOptions so;
    so.seed = o->seed;
    mm::SimSession session(v);
    if (timing) {
      if (!o->irIssue) timing->isa = timedIsa(session.plan());  // issue by the compiled ISA, as sim --timed
      so.timing = timing;
    }
    const mm::SimRun run = session.launch(inputs, so, p);
    const runtime::TraceBuffers tb = mm::traceOf(session.plan(), run);
    nlohmann::json j = runtime::chromeTrace(tb);
    j["otherData"]["clock"] = o->timed ? "modeled: the Sim's gfx950 timing model (docs/timing.md)"
                                       : "the Sim's op-count clock (not a time)";
    writeOutputFile(o->out, j.dump(1) + "\n");
    size_t spans = 0;
    for (const auto& e : j.at("traceEvents"))
      if (e.at("ph") == "X") ++spans;
    if (o->timed)
      fmt::print("{} on the Sim device, timed: {} ranks x {} CTAs, {} stages, {:.2f} us modeled (timestamps modeled)\n",
                 key.variantName(), TP, cfg.blocks, tb.stages.size(), run.stats.timed.us);
    else
      fmt::print("{} on the Sim device: {} ranks x {} CTAs, {} stages, {} ticks of the Sim's op-count clock (not a "
                 "time: --timed models one)\n",
                 key.variantName(), TP, cfg.blocks, tb.stages.size(), run.stats.ticks);
    fmt::print("wrote {} stage events to {}\n", spans, o->out);
    if (!run.valid) {
      fmt::print("verdict: INVALID: {}\n", run.error);
      return 1;
    }
    const auto mismatch = mm::firstMismatch(run.outputs, mm::launchReferenceOutputs(v, inputs));
    fmt::print("verdict: {}\n", mismatch ? "MISMATCH: " + mm::describe(*mismatch) : std::string("bit-exact"));
    return mismatch ? 1 : 0;
  };
}

}  // namespace monogen::tools
