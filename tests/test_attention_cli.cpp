// The attention launch (spec minimax_m3.attention) through the CLI and on AMD's gfx950 simulator:
// its code object run by gfx950-run against the reference under the executor's numerics profile,
// and monogen check / emit / dump / info with --launch attention, the other launch's options
// refused. The tests that need the tool skip cleanly (a WARN) when it is absent.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codegen/Compiler.h"
#include "runtime/Gfx950RunDevice.h"
#include "specs/minimax_m3/kernel/AttentionSpec.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
#include "test_shell.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::Gfx950RunDevice;

namespace {

const std::string kMonogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";

bool haveTool() {
  if (Gfx950RunDevice::toolAvailable()) return true;
  WARN("gfx950-run not found at '" << Gfx950RunDevice::defaultToolPath()
                                   << "' (set MONOGEN_GFX950_RUN): the executor test is skipped");
  return false;
}

/// Same size and bits (NaN, the caches' unheld scales, equals itself).
template <class T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

}  // namespace

TEST_CASE("attention launch on gfx950-run: the code object equals the reference and the Sim", "[gfx950run][attention_cli]") {
  if (!haveTool()) return;
  const ModelConfig cfg = ModelConfig::reduced();
  const AttentionKnobs knobs = GENERATE(AttentionKnobs{CacheMode::Vllm, false}, AttentionKnobs{CacheMode::Atom, true});
  const AttentionVariant v = AttentionVariant::make(cfg, makeAttentionKey(cfg, 8, 4, knobs));
  const ir::Plan plan = verifiedAttentionPlan(cfg, v.key);
  const codegen::CodeObject co = codegen::compile(plan);
  AttentionInputOptions io;
  io.mode = knobs.mode;
  io.fullLayer = knobs.fullLayer;
  io.context = 129;
  const AttentionLaunch in = makeAttentionLaunch(cfg, 8, 4, 3, io);
  const AttentionResult ref = attentionReference(cfg, in, RefNumerics::Gfx950Run);
  Gfx950RunDevice dev;
  const AttentionSimRun run = runAttention(dev, co.bytes, plan, v, in);
  const AttentionSimRun sim = runAttentionOnSim(plan, v, in);
  INFO(v.key.variantName());
  REQUIRE(run.ranks.size() == 4);
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    CHECK(run.errorWords[r] == 0);
    CHECK(sameBits(run.ranks[r].h, ref.h));
    CHECK(sameBits(run.ranks[r].rstd, ref.rstd));
    CHECK(sameBits(run.ranks[r].xScale, ref.xScale));
    CHECK(sameBits(run.ranks[r].qkv, ref.ranks[r].qkv));
    CHECK(sameBits(run.ranks[r].q, ref.ranks[r].q));
    if (!knobs.fullLayer) CHECK(sameBits(run.ranks[r].iq, ref.ranks[r].iq));
    CHECK(sameBits(run.ranks[r].caches.k, ref.ranks[r].caches.k));
    CHECK(sameBits(run.ranks[r].caches.v, ref.ranks[r].caches.v));
    CHECK(sameBits(run.ranks[r].caches.kScale, ref.ranks[r].caches.kScale));
    CHECK(sameBits(run.ranks[r].caches.vScale, ref.ranks[r].caches.vScale));
    CHECK(sameBits(run.ranks[r].caches.indexKeys, ref.ranks[r].caches.indexKeys));
    CHECK(sameBits(run.ranks[r].x8, sim.ranks[r].x8));
  }
}

TEST_CASE("monogen check --launch attention on sim and gfx950-run exits 0 only when bit-exact", "[gfx950run][attention_cli]") {
  const std::string args = " check --launch attention --config reduced --rows 8 --tp 4 --context 129 --no-cache";
  int code = -1;
  std::string out = runShell(kMonogen + args + " --device sim", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("minimax_m3.attention-S8-TP4 on the sim device") != std::string::npos);
  CHECK(out.find("verdict: bit-exact") != std::string::npos);
  if (!haveTool()) return;
  out = runShell(kMonogen + args + " --device gfx950-run --cache atom --layer-type full", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("on the gfx950-run device") != std::string::npos);
  CHECK(out.find("0 B scratch") != std::string::npos);
  CHECK(out.find("verdict: bit-exact") != std::string::npos);
}

TEST_CASE("monogen emit and dump and info --launch attention: the attention variant's code object and resources",
          "[attention_cli]") {
  int code = -1;
  const std::string plan = runShell(kMonogen + " dump --launch attention --config reduced --rows 2 --tp 2 --what plan", code);
  INFO(plan);
  CHECK(code == 0);
  CHECK(plan.find("minimax_m3.attention") != std::string::npos);
  CHECK(plan.find("attn_norm") != std::string::npos);
  const std::string full =
      runShell(kMonogen + " dump --launch attention --config reduced --rows 2 --tp 2 --layer-type full --what plan", code);
  CHECK(code == 0);
  CHECK(full != plan);  // the layer type reaches the key
  const std::string isa = runShell(kMonogen + " dump --launch attention --config reduced --rows 2 --tp 2 --what isa", code);
  CHECK(code == 0);
  CHECK(isa.find("s_endpgm") != std::string::npos);
  const std::string info =
      runShell(kMonogen + " info --launch attention --config reduced --rows 2 --tp 2 --cache atom --no-cache", code);
  INFO(info);
  CHECK(code == 0);
  CHECK(info.find("VGPR") != std::string::npos);
  CHECK(info.find("compiled") != std::string::npos);
  const std::string co = std::string(MONOGEN_BINARY_DIR) + "/attention-cli-test.co";
  const std::string emit =
      runShell(kMonogen + " emit --launch attention --config reduced --rows 2 --tp 2 --no-cache -o " + co, code);
  INFO(emit);
  CHECK(code == 0);
  CHECK(emit.find(" B scratch") != std::string::npos);
  std::remove(co.c_str());
}

TEST_CASE("monogen --launch attention refuses the FFN's options and the reverse, naming the option", "[attention_cli]") {
  struct Case {
    const char* args;
    const char* option;
  };
  const Case cases[] = {
      {"check --launch attention --config reduced --per-rank", "--per-rank"},
      {"check --launch attention --config reduced --scales rowmajor", "--scales"},
      {"dump --launch attention --config reduced --input part", "--input"},
      {"info --launch attention --config reduced --trace", "--trace"},
      {"check --config reduced --cache atom", "--cache"},
      {"dump --config reduced --layer-type full", "--layer-type"},
      {"check --config reduced --context 9", "--context"},
      {"sim --config reduced --layer full", "--layer-type"},
      {"check --launch attention --config reduced --device hip", "--device"},
  };
  for (const Case& c : cases) {
    int code = -1;
    const std::string out = runShell(kMonogen + " " + c.args, code);
    INFO(c.args << "\n" << out);
    CHECK(code == 2);
    CHECK(out.find(std::string("input error at ") + c.option) != std::string::npos);
  }
}

TEST_CASE("monogen trace --launch attention: a span per rank x CTA x stage from the Sim", "[attention_cli]") {
  const std::string out = std::string(MONOGEN_BINARY_DIR) + "/attention-cli-trace.json";
  int code = -1;
  const std::string text = runShell(
      kMonogen + " trace --launch attention --config reduced --rows 8 --tp 2 --context 129 --cache atom -o " + out, code);
  INFO(text);
  CHECK(code == 0);
  CHECK(text.find("verdict: bit-exact") != std::string::npos);
  std::ifstream f(out);
  REQUIRE(f);
  const nlohmann::json j = nlohmann::json::parse(f);
  const ModelConfig cfg = ModelConfig::reduced();
  const ir::Plan plan = verifiedAttentionPlan(cfg, makeAttentionKey(cfg, 8, 2, {CacheMode::Atom, false}));
  std::map<std::string, int> perStage;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X") {
      ++perStage[e.at("name").get<std::string>()];
      CHECK(e.at("dur").get<double>() >= 0);
    }
  REQUIRE(perStage.size() == plan.stages.size());
  for (const ir::Stage& s : plan.stages) CHECK(perStage[s.name] == 2 * cfg.blocks);
  std::remove(out.c_str());
  runShell(kMonogen + " trace --launch attention --config reduced --timed -o " + out, code);
  CHECK(code == 2);
}
