// Runs the MiniMax-M3 FFN launch on a device (the Sim by default; any runtime::Device) for every
// rank at once and compares every rank's results bit-exact with the native reference, on seeded
// inputs (MoeInputs.h). Tensor names: docs/minimax-m3-kernel.md, "The Sim harness".
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/Plan.h"
#include "runtime/Device.h"
#include "runtime/sim/SimDevice.h"
#include "specs/minimax_m3/kernel/FfnVariant.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "runtime/sim/SimDeviceAdapter.h"
#include "runtime/Tensor.h"
#include "runtime/Trace.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/reference/MoeReference.h"

namespace monogen::specs::minimax_m3 {

/// moeReference's outputs in runOnSim's naming for every rank r: rstd.rR, xn.rR, picks.rR,
/// weights.rR, slot_expert.rR, slot_count.rR, slot_row.rR, slot_pick.rR (CTA 0's table),
/// mid.rR (used columns), down.rR (rank R's partial as every rank received it, read on rank 0)
/// and out.rR, fed `run`'s own sres.r0 / ssq.r0. The knobs come from `experts` and `quant`.
runtime::TensorMap moeReferenceOutputs(const ModelConfig& cfg, int rows, int tp, const runtime::TensorMap& inputs,
                                       const runtime::TensorMap& runOutputs, MoeExperts experts = MoeExperts::All,
                                       MoeQuant quant = MoeQuant::A16w4, RefNumerics numerics = RefNumerics::Ir);

/// How one launch is fed, with the fault knobs the tests use.
struct LaunchParams {
  int32_t tag = 0x2a5eed01;       // the launch's tag, 1 .. 2^30: the session sets each rank's epoch to
                                  // epochBefore(tag) before the launch (the kernel reads it there)
  bool replay = false;            // leave the epochs as the last launch left them (a graph replay):
                                  // the launch's tag is then launchTagAfter(epoch); tag is ignored
  int64_t waitTicks = 100'000'000;  // a wait's bound: 1 s at 100 MHz
  std::map<int, int32_t> rankTag; // rank -> a different tag for that rank alone (not with replay)
  int lostFrom = -1, lostTo = -1; // rank lostFrom's peers entry for rank lostTo points at a
                                  // buffer nobody reads: its pushes to lostTo never land
  bool handshake = false;         // the step's last launch: trade the ranks' failure flags
  int injectRank = -1;            // fault injection: this rank stalls at the handshake, then fails
  int32_t injectTicks = 0;        // ... for this many realtime ticks
};

/// One launch's results. `valid` is false when any rank's error word is set: then no output
/// of the launch is to be taken as a result (`error` says which rank failed where), whatever
/// its bits are. Outputs also hold "epoch.r<r>" (i32 [1]) and, with the trace knob,
/// "trace.r<r>" (u64 [blocks][stages][2]).
struct SimRun {
  int32_t tag = 0;  // the tag rank 0's launch ran on
  runtime::TensorMap outputs;
  runtime::SimStats stats;
  bool valid = false;
  std::string error;  // empty when valid: "rank 1: error word 0x10b (site 11, rank 1, token 0), 1 failure"
};

/// What the host zeroes once per rank, after allocating and before the first launch: every flag
/// array of the Plan (a pair must start with a tag no launch has), the epoch, the error word and
/// its count. Every other byte the launch writes before reading (docs/minimax-m3-kernel.md).
struct ZeroOnce {
  std::string arg;       // the Plan argument (buffer) it lies in
  int64_t offset = 0;    // bytes into it
  int64_t bytes = 0;
  std::string what;      // the flag array, "epoch" or "error word"
};
std::vector<ZeroOnce> zeroAtAllocation(const ir::Plan& plan);

/// Every rank's buffers on one device, kept across launches (flags are never reset; a new
/// launch needs a new tag). The buffers are allocated uninitialized (poisoned on the Sim) and
/// zeroAtAllocation's ranges zeroed once, in the constructor.
class SimSession {
 public:
  /// On a Sim device of its own.
  explicit SimSession(const FfnVariant& v);
  /// On `device` (not owned: it must outlive the session). A device that runs code objects
  /// runs `code`; when empty, the session compiles the Plan (codegen::compile) once, here.
  SimSession(const FfnVariant& v, runtime::Device& device, runtime::CodeObjectBytes code = {});
  /// The same for FfnVariant::make(cfg, key) (the tests' way in).
  SimSession(const ModelConfig& cfg, const ir::Key& key);
  SimSession(const ModelConfig& cfg, const ir::Key& key, runtime::Device& device, runtime::CodeObjectBytes code = {});
  /// The FFN stages of a larger launch (the layer launch, LayerSpec.h) on `device`: the session
  /// runs `plan` (`code`, its code object, on a device that runs code objects: required there),
  /// whose FFN arguments are v's, and allocates those. The launch itself writes attn and res_in,
  /// so they are not uploaded; launch()'s `extra` binds each rank's other arguments, whose
  /// buffers (their flags zeroed) are the caller's.
  SimSession(const FfnVariant& v, ir::Plan plan, runtime::Device& device, runtime::CodeObjectBytes code = {});
  const ir::Plan& plan() const { return plan_; }
  const FfnVariant& variant() const { return v_; }
  const Layout& layout() const { return v_.layout; }
  /// The Sim device the session runs on; throws RuntimeError when it runs on another device.
  runtime::SimDevice& device();
  /// The device the session runs on.
  runtime::Device& target() { return *dev_; }
  /// Device address of rank r's "scratch", "sym", "epoch", "err", "attn" or "res_in" buffer (for
  /// tests that look inside them); throws InputError for another name or rank.
  uint64_t bufferOf(const std::string& name, int r) const;
  /// Uploads the inputs, runs every rank at once and reads every rank's results back. `opts`
  /// steer a Sim device (ignored by others); SimRun::stats is the Sim's (zero on others).
  /// `extra[r]` adds rank r's arguments the session does not own (the layer launch's).
  SimRun launch(const runtime::TensorMap& inputs, const runtime::SimOptions& opts, const LaunchParams& params = {},
                const std::vector<runtime::RankArgs>& extra = {});

 private:
  struct RankBuffers {
    uint64_t part = 0, attn = 0, wo = 0, woScale = 0, resIn = 0, resOut = 0, scratch = 0, sym = 0, peers = 0, err = 0, lost = 0;
    uint64_t epoch = 0, inject = 0, trace = 0;
    std::map<std::string, uint64_t> moe;  // the MoE's arguments by name
  };
  void allocate();
  /// Whether `name` is a buffer bufferOf knows (the rest of a larger launch's are its caller's).
  bool ownsBuffer(const std::string& name) const;
  void readMoe(int rank, int32_t tag, runtime::TensorMap& outputs);
  std::vector<uint8_t> read(int rank, uint64_t addr, int64_t bytes);
  FfnVariant v_;
  ir::Plan plan_;
  std::unique_ptr<runtime::SimDeviceAdapter> own_;  // the default device
  runtime::Device* dev_ = nullptr;
  runtime::CodeObjectBytes code_;
  std::vector<RankBuffers> bufs_;
  bool attnWritten_ = false;  // a larger launch writes attn and res_in itself
};

/// Reads [addr, addr + bytes) of one rank's device memory.
using RankReader = std::function<std::vector<uint8_t>(uint64_t addr, int64_t bytes)>;
/// Rank r's MoE outputs from its buffers (scratch: its scratch argument, outAddr: its `out`):
/// xn, rstd, out, picks, weights, the slot table (CTA 0's), mid, named "<name>.r<r>".
void readMoeOutputs(const Layout& L, int r, uint64_t scratch, uint64_t outAddr, const RankReader& read,
                    runtime::TensorMap& o);
/// Rank src's combined partial of the launch of `tag` as a rank received it: its sym's FFN area
/// (`ffnBytes`, L.ffn.bytes from the sym argument + L.ffn.offset), this tag's parity half.
runtime::HostTensor downPartial(const Layout& L, int src, int32_t tag, const std::vector<uint8_t>& ffnBytes);

/// The trace knob's buffers of a run (its "trace.r<r>" outputs) with the Plan's stage names and
/// clock, for runtime::decodeTrace / chromeTrace. Throws InputError when the run has no trace.
runtime::TraceBuffers traceOf(const ir::Plan& plan, const SimRun& run);

/// One launch on a fresh Sim device.
SimRun runOnSim(const FfnVariant& v, const runtime::TensorMap& inputs, const runtime::SimOptions& opts,
                const LaunchParams& params = {});
SimRun runOnSim(const ModelConfig& cfg, const ir::Key& key, const runtime::TensorMap& inputs,
                const runtime::SimOptions& opts, const LaunchParams& params = {});
/// One launch on `device` (a new session's buffers; the Plan compiled if the device needs it).
SimRun runOnDevice(runtime::Device& device, const FfnVariant& v, const runtime::TensorMap& inputs,
                   const LaunchParams& params = {});
SimRun runOnDevice(runtime::Device& device, const ModelConfig& cfg, const ir::Key& key,
                   const runtime::TensorMap& inputs, const LaunchParams& params = {});

/// The reference's outputs in runOnSim's naming (res_out, sres, ssq and err of every rank).
runtime::TensorMap referenceOutputs(const ModelConfig& cfg, int rows, int tp, const runtime::TensorMap& inputs);

/// With o_proj in the launch (`inputs` from makeLaunchInputs with oproj: attn.rR there), every
/// rank's xscale.rR (the quant's per-token scales, OprojReference.h quantizeRows of attn.rR) and
/// opart.rR (the partial push sends: part.rR, which makeLaunchInputs derived through the o_proj
/// reference); empty without attn.r0.
runtime::TensorMap oprojReferenceOutputs(const ModelConfig& cfg, int rows, int tp, const runtime::TensorMap& inputs,
                                         RefNumerics numerics = RefNumerics::Ir);

/// Every output's reference in runOnSim's naming, the whole launch: oprojReferenceOutputs (with
/// o_proj in the launch), referenceOutputs (the all-reduce's) plus moeReferenceOutputs fed the reference all-reduce's SRES / SSQ, computed
/// under `numerics` (RefNumerics.h: Ir for the Sim device, Gfx950Run for the executor), the
/// experts under `quant` (the layer launch's knob; the FFN launch is A16W4).
runtime::TensorMap launchReferenceOutputs(const ModelConfig& cfg, int rows, int tp, const runtime::TensorMap& inputs,
                                          MoeExperts experts = MoeExperts::All, MoeQuant quant = MoeQuant::A16w4,
                                          RefNumerics numerics = RefNumerics::Ir);
/// The same for v's config, S, TP and experts knob.
runtime::TensorMap launchReferenceOutputs(const FfnVariant& v, const runtime::TensorMap& inputs,
                                          RefNumerics numerics = RefNumerics::Ir);

/// The Plan stage that writes each output a launch reads back (SimRun's and moeReferenceOutputs'
/// names without ".rR"), a stage's outputs in the order it writes them; nullptr for err and
/// trace, which every stage may write (they come after the last stage). The stage order itself
/// is the Plan's (tests/test_spec_ffn.cpp checks that every output a launch reads back is here,
/// and every stage named here is in the Plan).
struct OutputWriter {
  const char* output;
  const char* stage;
};
inline constexpr OutputWriter kOutputWriters[] = {
    {"xscale", "push"},        {"opart", "push"},  // input=attn: the quant's scales (XSCALE), the o_proj partial (OPART)
    {"res_out", "reduce"},     {"sres", "reduce"},       {"ssq", "reduce"},      {"ssq_tag", "reduce"},
    {"rstd", "norm"},          {"xn", "norm"},           {"picks", "route"},     {"weights", "route"},
    {"slot_expert", "table"},  {"slot_count", "table"},  {"slot_row", "table"},  {"slot_pick", "table"},
    {"mid", "up"},             {"down", "down"},         {"out", "final"},       {"epoch", "epoch"},
    {"err", nullptr},          {"trace", nullptr}};
/// The outputs another stage writes when the Plan has that stage (the layer's all-reduces as
/// reduce-scatter + all-gather, docs/layer.md): the all-gather's stage, after the owner's sum.
inline constexpr OutputWriter kGatherWriters[] = {
    {"res_out", "reduce_ag"}, {"sres", "reduce_ag"}, {"ssq", "reduce_ag"}, {"ssq_tag", "reduce_ag"},
    {"out", "final_ag"}};
/// The stage that writes output `name` ("out.r0" or "out") in a Plan of stages `stages`
/// (kGatherWriters' when `stages` has it, else kOutputWriters'); "" when neither table knows it.
std::string writerStage(const std::string& name, const std::vector<std::string>& stages = {});

/// The names of `m` in the launch's dataflow order: by the position of the stage that writes
/// them (kOutputWriters) in the Plan's stage list, then rank ascending, then kOutputWriters'
/// order within a stage; names the table does not know come last, alphabetically.
std::vector<std::string> dataflowOrder(const runtime::TensorMap& m);

struct Mismatch {
  std::string tensor;
  int64_t index = -1;  // element index (row-major); -1: the tensor is missing or its shape differs
  std::string got, want;
  std::string stage;  // the stage that writes the tensor (writerStage), "" if unknown
};
/// The first element whose bits differ in `got` of the first tensor of `want` in dataflow order
/// (dataflowOrder: the earliest stage's, the lowest rank's) that differs, so a wrong value is
/// reported where it entered, not where it ended up. Tensors only in `got` are ignored; nullopt
/// if every bit agrees. `stages`: the launch Plan's stage names, to name the writer (writerStage).
std::optional<Mismatch> firstMismatch(const runtime::TensorMap& got, const runtime::TensorMap& want,
                                      const std::vector<std::string>& stages = {});
std::string describe(const Mismatch& m);
/// How many elements of each tensor in `want` differ in bits in `got`, in dataflow order (only
/// tensors with a difference; a missing or reshaped tensor counts as all of its elements).
std::vector<std::pair<std::string, int64_t>> mismatchCounts(const runtime::TensorMap& got,
                                                            const runtime::TensorMap& want);

}  // namespace monogen::specs::minimax_m3
