// monogen check --launch attention: one seeded attention launch on the Sim or on gfx950-run (its
// code object), every output of every rank compared bit for bit with the native reference under
// the device's numerics profile.
#pragma once
#include <cstdint>
#include <string>

#include "tools/Variant.h"

namespace monogen::tools {

struct CheckAttentionOptions {
  std::string device = "sim";  // sim or gfx950-run
  uint64_t seed = 1;
  double timeoutSeconds = 600;    // gfx950-run: a hang after this
  std::string numerics = "auto";  // auto, ir or gfx950-run
};

/// Runs it and prints the variant, the code object, the inputs, the launch and "verdict: ...".
/// Returns 0 only when every output is bit-exact and every rank's error word is 0, else 1.
int checkAttention(const VariantOptions& v, const CheckAttentionOptions& o);

}  // namespace monogen::tools
