// monogen check --launch attention | layer: one seeded launch on the Sim or on gfx950-run (its
// code object, from the launch's Generator), every output of every rank compared bit for bit with
// the native reference under the device's numerics profile.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/Device.h"
#include "runtime/Generator.h"
#include "specs/minimax_m3/reference/RefNumerics.h"
#include "tools/Variant.h"

namespace monogen::tools {

struct CheckLaunchOptions {
  std::string device = "sim";  // sim or gfx950-run
  uint64_t seed = 1;
  double timeoutSeconds = 600;    // gfx950-run: a hang after this
  std::string numerics = "auto";  // auto, ir or gfx950-run
};

/// What a launch's run found: its verdict ("bit-exact", "MISMATCH: ...", "INVALID: ...") and
/// lines to print under it (the mismatch counts).
struct CheckOutcome {
  std::string verdict;
  std::vector<std::string> details;
};

/// One launch kind's part of a check; runCheck does the rest (device, code object, lines).
struct CheckedLaunch {
  std::string launch;  // "attention", "layer": for messages
  ir::Key key;
  int tp = 1, blocks = 0, threads = 0;
  runtime::Generator generator;  // the launch's, as a user makes it: the Plan and code object
  /// Makes the seeded inputs and the reference under `numerics`; returns the inputs' description.
  std::function<std::string(specs::minimax_m3::RefNumerics numerics)> prepare;
  /// Runs the launch on a fresh `dev` and judges it against the reference prepare made.
  std::function<CheckOutcome(runtime::Device& dev, const runtime::CodeObjectBytes& code, const ir::Plan& plan)> run;
};

/// Opens o's device (refusing any but sim and gfx950-run, and a missing gfx950-run), prints the
/// variant, the code object's resources, the inputs, the launch and "verdict: ...". Returns 0
/// only when the launch is bit-exact (every output, every rank's error word 0), else 1.
int runCheck(const CheckLaunchOptions& o, CheckedLaunch& c);

/// The attention launch (spec minimax_m3.attention) at v's rows, tp, knobs and context.
int checkAttention(const VariantOptions& v, const CheckLaunchOptions& o);

/// The one-launch decoder layer (spec minimax_m3.layer) at v's rows, tp, --cache, --layer-type
/// and context; the FFN's natural routing. The caller refuses the options it does not take.
int checkLayer(const VariantOptions& v, const CheckLaunchOptions& o);

}  // namespace monogen::tools
