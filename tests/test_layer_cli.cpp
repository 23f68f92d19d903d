// The layer launch on the CLI: `monogen sim` and `monogen check` run it against the composed
// references; `monogen dump --what plan --launch layer` prints the layer's placement per S; every
// other command, dump's other outputs and the options none reads refuse it, naming them (exit 2).
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/Gfx950RunDevice.h"
#include "specs/minimax_m3/kernel/LayerPlacement.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "test_shell.h"

using namespace monogen::specs::minimax_m3;

namespace {

const std::string kMonogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";

std::string runMonogen(const std::string& args, int& code) { return runShell(kMonogen + " " + args, code); }

}  // namespace

TEST_CASE("dump --launch layer prints the placement of every S, or of --rows, with the knobs given", "[layer_cli]") {
  int code = -1;
  const std::string all = runMonogen("dump --what plan --launch layer --config reduced --tp 2", code);
  INFO(all);
  REQUIRE(code == 0);
  const ModelConfig reduced = ModelConfig::reduced();
  size_t at = all.find("--config reduced, TP 2, wide_from 5, ag_rs_from 12\n");
  CHECK(at != std::string::npos);
  for (int S = 1; S <= reduced.maxRows; ++S) {  // each S once, in order
    const size_t next = all.find(LayerPlacement::make(reduced, S, 2).describe(), at);
    CHECK(next != std::string::npos);
    at = next == std::string::npos ? at : next;
  }

  const std::string one = runMonogen("dump --launch layer --rows 3 --tp 8 --wide-from 3 --ag-rs-from 2", code);
  INFO(one);
  REQUIRE(code == 0);
  const LayerPlacement p = LayerPlacement::make(ModelConfig{}, 3, 8, {3, 2});
  CHECK(p.wideMoe);
  CHECK(p.reduceScatter);
  CHECK(one.find(p.describe()) != std::string::npos);
  CHECK(one.find("layer placement: S = ") == one.rfind("layer placement: S = "));  // --rows: that S alone
}

TEST_CASE("sim --launch layer runs the layer launch and prints the verdict line", "[layer_cli]") {
  int code = -1;
  const std::string out = runMonogen("sim --launch layer --config reduced --rows 2 --tp 2 --context 129 --padded-rows 1", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("minimax_m3.layer-S2-TP2 on the Sim device") != std::string::npos);
  CHECK(out.find("verdict: bit-exact under 1 seed") != std::string::npos);
}

TEST_CASE("sim --launch layer --timed: one modeled timeline through the attention and FFN stages", "[layer_cli]") {
  int code = -1;
  const std::string out = runMonogen("sim --launch layer --config reduced --rows 2 --tp 2 --context 129 --timed", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("verdict: bit-exact under 1 seed") != std::string::npos);
  double us = 0;
  const size_t at = out.find("modeled launch time: ");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(out.c_str() + at, "modeled launch time: %lf us", &us) == 1);
  const size_t ends = out.find("modeled stage ends");
  REQUIRE(ends != std::string::npos);
  const std::string line = out.substr(ends, out.find('\n', ends) - ends);
  // the attention rows before o_proj's push reads them; the launch ends after both sides
  const size_t merge = line.find(" attn_merge "), push = line.find(" push ");
  REQUIRE(merge != std::string::npos);
  REQUIRE(push != std::string::npos);
  CHECK(merge < push);  // the line lists the stages by their end
  CHECK(std::stod(line.substr(merge + 12)) < us);
}

TEST_CASE("check --launch layer on the Sim: the Generator's Plan, one seeded launch, every output bit-exact",
          "[layer_cli]") {
  int code = -1;
  const std::string out = runMonogen(
      "check --launch layer --device sim --config reduced --rows 2 --tp 2 --cache atom --layer-type full --context 129 "
      "--seed 3",
      code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("minimax_m3.layer-S2-TP2-cache=atom,layer=full on the sim device: 2 ranks x ") != std::string::npos);
  CHECK(out.find("inputs: seed 3, ") != std::string::npos);
  CHECK(out.find("reference numerics: the IR's declared models") != std::string::npos);
  CHECK(out.find("  bit-exact\nverdict: bit-exact\n") != std::string::npos);
}

TEST_CASE("check --launch layer on gfx950-run: the layer Generator's code object, every output bit-exact",
          "[layer_cli][gfx950run]") {
  if (!monogen::runtime::Gfx950RunDevice::toolAvailable()) {
    WARN("gfx950-run not found at '" << monogen::runtime::Gfx950RunDevice::defaultToolPath()
                                     << "' (set MONOGEN_GFX950_RUN): the executor check is skipped");
    return;
  }
  int code = -1;
  const std::string out = runMonogen(
      "check --launch layer --device gfx950-run --config reduced --rows 2 --tp 2 --context 129 --no-cache", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("minimax_m3.layer-S2-TP2 on the gfx950-run device") != std::string::npos);
  CHECK(out.find(" B LDS, 0 B scratch") != std::string::npos);
  CHECK(out.find("reference numerics: gfx950-run's") != std::string::npos);
  CHECK(out.find("verdict: bit-exact\n") != std::string::npos);
}

TEST_CASE("check --launch layer catches a broken reference: the executor's numerics against the Sim's", "[layer_cli]") {
  // The Sim computes the IR's exp2 and quotients; a reference under gfx950-run's differs in bits.
  int code = -1;
  const std::string out =
      runMonogen("check --launch layer --config reduced --rows 2 --tp 2 --context 129 --numerics gfx950-run", code);
  INFO(out);
  CHECK(code == 1);
  CHECK(out.find("  MISMATCH: ") != std::string::npos);
  CHECK(out.find(" elements differ\n") != std::string::npos);
  CHECK(out.find("verdict: MISMATCH\n") != std::string::npos);
}

TEST_CASE("the layer launch: --launch layer is refused where there is none, naming the option", "[layer_cli]") {
  struct Case {
    std::string args;
    std::string error;
  };
  const std::string simOnly = "runs on sim and check";
  const Case cases[] = {
      {"check --launch layer --config reduced --device hip", "input error at --device: 'hip': --launch layer runs on sim "
                                                             "or gfx950-run"},
      {"check --launch layer --config reduced --per-rank", "input error at --per-rank"},
      {"check --launch layer --config reduced --launches 2", "input error at --launches"},
      {"check --launch layer --config reduced --input part", "input error at --input"},
      {"check --launch layer --config reduced --sum shared", "input error at --sum"},
      {"check --launch layer --config reduced --spec minimax_m3.attention", "input error at --spec"},
      {"check --launch layer --config reduced --layer-type dense", "--layer-type"},
      {"check --launch layer --config reduced --tp 3", "--tp"},
      {"sim --launch layer --config reduced --input part", "input error at --input"},
      {"sim --launch layer --config reduced --experts 4", "input error at --experts"},
      {"sim --launch layer --config reduced --scales rowmajor", "input error at --scales"},
      {"sim --launch layer --config reduced --save /tmp/never", "input error at --save"},
      {"trace --launch layer --config reduced -o " + std::string(MONOGEN_BINARY_DIR) + "/layer-cli-trace.json",
       "input error at --launch"},
      {"emit --launch layer --config reduced -o /dev/null", "input error at --launch"},
      {"info --launch layer --config reduced --rows 1 --tp 1", "input error at --launch"},
      {"cache key --launch layer --config reduced", "input error at --launch"},
      {"dump --launch layer --config reduced --what isa", "input error at --what"},
      {"dump --launch layer --config reduced --what ir", "input error at --what"},
      {"dump --launch layer --config reduced --input part", "input error at --input"},
      {"dump --launch layer --config reduced --cache atom", "input error at --cache"},
      {"dump --launch layer --config reduced --pipeline O3", "input error at --pipeline"},
      {"dump --launch layer --spec minimax_m3.attention", "input error at --spec"},
      {"dump --config reduced --wide-from 3", "input error at --wide-from"},
      {"dump --launch attention --config reduced --ag-rs-from 3", "input error at --ag-rs-from"},
      {"dump --launch layer --config reduced --wide-from 0", "--wide-from"},
      {"dump --launch layer --config reduced --ag-rs-from 18", "ag_rs_from = 18: expected 1..17"},
  };
  for (const Case& c : cases) {
    int code = -1;
    const std::string out = runMonogen(c.args, code);
    INFO(c.args << "\n" << out);
    CHECK(code == 2);
    CHECK(out.find(c.error) != std::string::npos);
    if (c.error == "input error at --launch" || c.error == "input error at --what")
      CHECK(out.find(simOnly) != std::string::npos);
  }
}

TEST_CASE("docs/layer.md's quote of dump --launch layer is what the tool prints", "[layer_cli][docs]") {
  std::ifstream f(std::string(MONOGEN_SOURCE_DIR) + "/docs/layer.md");
  std::stringstream doc;
  doc << f.rdbuf();
  const std::string cmd = "$ monogen dump --what plan --launch layer --rows 4 --tp 4\n";
  const size_t at = doc.str().find(cmd);
  REQUIRE(at != std::string::npos);
  const size_t from = at + cmd.size(), to = doc.str().find("```", from);
  int code = -1;
  const std::string out = runMonogen(cmd.substr(10, cmd.size() - 11), code);
  CHECK(code == 0);
  CHECK(doc.str().substr(from, to - from) == out);
}
