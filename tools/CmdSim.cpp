// monogen sim: runs one variant on the Sim device (every CTA of every rank) and compares its
// outputs with the native reference, bit for bit. Exit 0 only when every output is bit-exact
// and every rank's error word is 0 (a launch with an error word set is never called bit-exact).
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "ir/Error.h"
#include "runtime/Safetensors.h"
#include "specs/minimax_m3/SimHarness.h"
#include "tools/Commands.h"
#include "tools/Variant.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

Run addSim(CLI::App& app) {
  struct Options {
    VariantOptions v;
    uint64_t seed = 1;
    int seeds = 1;
    std::string inputs, save;
    mm::LaunchParams launch;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("sim", "run a variant on the Sim device and compare with the reference");
  addVariantOptions(c, o->v, true);
  c->add_option("--seed", o->seed, "scheduler seed (and input seed unless --inputs)")->capture_default_str();
  c->add_option("--seeds", o->seeds, "run this many scheduler seeds, seed .. seed + n - 1")->check(CLI::Range(1, 1000));
  c->add_option("--inputs", o->inputs, "a .safetensors file of inputs (as --save writes them)")
      ->check(CLI::ExistingFile);
  c->add_option("--save", o->save, "write inputs.safetensors, outputs.safetensors and reference.safetensors here");
  c->add_option("--wait-ticks", o->launch.waitTicks, "a wait's bound in 100 MHz ticks")->capture_default_str();
  c->add_flag("--handshake", o->launch.handshake, "run it as the step's last launch (the ranks trade failure flags)");
  c->add_option("--inject-rank", o->launch.injectRank,
                "fault injection (implies --handshake): this rank stalls at the handshake, then fails")
      ->check(CLI::Range(-1, 7));
  c->add_option("--inject-ticks", o->launch.injectTicks, "fault injection: the stall in 100 MHz ticks")
      ->check(CLI::Range(0, 1 << 30));
  return [o] {
    const auto cfg = configOf(o->v);
    const ir::Key key = keyOf(o->v, cfg, o->v.rows, o->v.tp);
    const runtime::TensorMap inputs =
        o->inputs.empty() ? mm::makeInputs(cfg, key.rows, key.tp, o->seed) : runtime::readSafetensors(o->inputs);
    const runtime::TensorMap want = mm::referenceOutputs(cfg, key.rows, key.tp, inputs);
    fmt::print("{} on the Sim device: {} ranks x {} CTAs x {} threads\n", key.variantName(), key.tp, cfg.blocks,
               cfg.threads);
    mm::LaunchParams launch = o->launch;
    if (launch.injectRank >= key.tp)
      throw InputError("--inject-rank", fmt::format("rank {}: expected -1 (none) or 0..{}", launch.injectRank, key.tp - 1));
    launch.handshake = launch.handshake || launch.injectRank >= 0;  // the stall happens at the handshake
    int bad = 0;
    mm::SimRun last;
    for (int i = 0; i < o->seeds; ++i) {
      runtime::SimOptions so;
      so.seed = o->seed + static_cast<uint64_t>(i);
      const auto t0 = std::chrono::steady_clock::now();
      last = mm::runOnSim(cfg, key, inputs, so, launch);
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto mismatch = mm::firstMismatch(last.outputs, want);
      fmt::print("  seed {:<4} {:>10} ops {:>8} ticks {:6.2f} s  ", so.seed, last.stats.steps, last.stats.ticks, sec);
      if (!last.valid) {  // an error word is set: no output of this launch is a result
        ++bad;
        fmt::print("INVALID: {}\n", last.error);
      } else if (mismatch) {
        ++bad;
        fmt::print("MISMATCH: {}[{}] = {}, reference {}\n", mismatch->tensor, mismatch->index, mismatch->got,
                   mismatch->want);
      } else {
        fmt::print("bit-exact\n");
      }
      std::fflush(stdout);
    }
    if (!o->save.empty()) {
      std::filesystem::create_directories(o->save);
      runtime::writeSafetensors((std::filesystem::path(o->save) / "inputs.safetensors").string(), inputs);
      runtime::writeSafetensors((std::filesystem::path(o->save) / "outputs.safetensors").string(), last.outputs);
      runtime::writeSafetensors((std::filesystem::path(o->save) / "reference.safetensors").string(), want);
      fmt::print("saved inputs, outputs and reference to {}\n", o->save);
    }
    fmt::print("verdict: {}\n", bad ? fmt::format("MISMATCH or INVALID under {} of {} seeds", bad, o->seeds)
                                    : fmt::format("bit-exact under {} seed{}", o->seeds, o->seeds > 1 ? "s" : ""));
    return bad ? 1 : 0;
  };
}

}  // namespace monogen::tools
