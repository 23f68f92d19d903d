// MiniMax-M3.1-Flash's own dims (hidden 6144, 128 routed experts + the shared one, intermediate
// 3072, 256 CTAs) on the Sim device, the whole launch bit for bit against the references, at S=8
// and S=1, TP=4, and at S=1 on TP=2 and TP=1, where a rank's w13 is 1.2 GB and 2.4 GB (over
// 2^31 bytes: its expert offsets must be 64-bit). Its own executable and CTest label
// (test_spec_full); each case holds about 8 GB (the ranks' contract weights, 3.9 GB in all,
// held by the inputs and by the Sim device), so CTest runs them one at a time. They run the default
// variant, o_proj inside the launch (input=attn: the partial, xscale and everything downstream
// checked); the last case runs the o_proj partial as the input (input=part) at S=1 TP=4.
#include <catch2/catch.hpp>

#include "specs/minimax_m3/testing/MoeInputs.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

TEST_CASE("full dims: the whole launch at S=8 TP=4 and S=1 TP=4 equals the reference bit for bit",
          "[spec][full]") {
  const ModelConfig cfg = ModelConfig::flash();
  REQUIRE(cfg.experts == 128);
  REQUIRE(cfg.hidden == 6144);
  for (int S : {8, 1}) {
    const runtime::TensorMap in = makeLaunchInputs(cfg, S, 4, 90 + S, LaunchInputOptions{});
    REQUIRE(in.at("w13.r3").shape == std::vector<int64_t>{129, 2 * 3072 / 4, 6144 / 2});
    REQUIRE(cfg.heads * cfg.headDim == 8192);
    REQUIRE(in.at("wo.r3").shape == std::vector<int64_t>{6144, 8192 / 4});  // the default: o_proj in the launch
    checkWholeLaunch(cfg, S, 4, in, 3 + S);
  }
}

TEST_CASE("full dims: S=1 TP=2 equals the reference bit for bit", "[spec][full]") {
  const ModelConfig cfg = ModelConfig::flash();
  const runtime::TensorMap in = makeLaunchInputs(cfg, 1, 2, 95, LaunchInputOptions{});
  REQUIRE(static_cast<int64_t>(in.at("w13.r1").data.size()) == int64_t{129} * 3072 * 3072);
  checkWholeLaunch(cfg, 1, 2, in, 5);
}

TEST_CASE("full dims: S=1 TP=1 equals the reference bit for bit (w13 over 2^31 bytes)", "[spec][full]") {
  const ModelConfig cfg = ModelConfig::flash();
  const runtime::TensorMap in = makeLaunchInputs(cfg, 1, 1, 96, LaunchInputOptions{});
  REQUIRE(static_cast<int64_t>(in.at("w13.r0").data.size()) > (int64_t{1} << 31));
  checkWholeLaunch(cfg, 1, 1, in, 6);
}

TEST_CASE("full dims: the o_proj partial as the input (input=part) at S=1 TP=4 equals the reference bit for bit",
          "[spec][full]") {
  const ModelConfig cfg = ModelConfig::flash();
  LaunchInputOptions o;
  o.oproj = false;
  const runtime::TensorMap in = makeLaunchInputs(cfg, 1, 4, 97, o);
  REQUIRE(in.count("attn.r0") == 0);
  FfnKnobs k;
  k.input = FfnInput::Part;
  checkWholeLaunch(cfg, 1, 4, in, schedSeed(7), k);
}
