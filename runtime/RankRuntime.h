// The per-rank runtime a serving process holding rank r of TP calls, in order: allocate,
// exportHandle, openPeers, peersOpened, warmUp, bind, launch. It owns the Scratch, Peers and
// Control arguments; launch only enqueues, so a captured graph replays it. docs/runtime.md.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/Plan.h"
#include "runtime/Generator.h"
#include "runtime/Launch.h"
#include "runtime/RankDevice.h"

namespace monogen::runtime {

struct RankRuntimeOptions {
  int rank = 0, tp = 1;
  std::vector<int> rows;                  ///< the S values this rank serves (each is warmed up)
  std::function<ir::Key(int rows)> key;   ///< the variant key of S (its Plan must span tp ranks)
  std::string symmetricArg = "sym";       ///< the Scratch argument peers write (the IPC-exported one)
  std::string rankArg = "rank";           ///< the scalar the runtime sets to `rank`
  /// Warm-up progress lines ("rank 1: S=8 ... 0.42 s (disk cache)"); none when empty.
  std::function<void(const std::string&)> progress;
};

/// One buffer set bound for one S: the Plan, the loaded kernel and the packed arguments.
struct BoundLaunch {
  int rows = 0;
  const ir::Plan* plan = nullptr;
  LoadedKernel kernel;
  std::vector<uint64_t> values;    // the raw argument values (the Sim)
  std::vector<uint8_t> kernargs;   // the kernarg segment (HIP)
};

class RankRuntime {
 public:
  /// Neither `gen` nor `device` is owned; both must outlive the runtime.
  RankRuntime(Generator& gen, RankDevice& device, RankRuntimeOptions opts);
  ~RankRuntime();
  RankRuntime(const RankRuntime&) = delete;
  RankRuntime& operator=(const RankRuntime&) = delete;

  int rank() const { return opts_.rank; }
  int tp() const { return opts_.tp; }
  RankDevice& device() { return dev_; }

  /// Builds the Plan of every S (InputError for a key of another TP, an S given twice, a Plan
  /// without the symmetric or the peers argument, a Control tensor whose shape differs between
  /// S in more than its leading rows), allocates the runtime's own buffers and zeroes them. A
  /// Control tensor of S rows (zero between launches) is one buffer of the most rows for every S.
  void allocate();
  /// The handle bytes of this rank's symmetric buffer (after allocate).
  std::vector<uint8_t> exportHandle();
  /// Every rank's handle bytes, in rank order (this rank's own included and checked to be its
  /// own); opens the peers' buffers and writes each S's device table of peer addresses.
  void openPeers(const std::vector<std::vector<uint8_t>>& handles);
  /// After every rank's openPeers (the framework's barrier): RankDevice::peersOpened.
  void peersOpened() { dev_.peersOpened(); }
  /// The code object of every S (compiled, or from the cache; under MONOGEN_RUN_ONLY a miss is
  /// an error naming the variant) loaded on the device, one progress line each. A Sim device
  /// needs no code object: its kernels are the Plans.
  void warmUp();

  /// Checks `args` (the caller's tensors and scalars; never the runtime's own) against S's
  /// Plan, adds the runtime's buffers and packs them once. The result stays valid (and at the
  /// same address) until the runtime dies; bind again for another buffer set.
  BoundLaunch& bind(int rows, const RankArgs& args);
  /// Forgets a BoundLaunch bind returned (it is invalid after): a caller binding fresh buffers
  /// every step keeps a bounded set. InputError if it is not one of this runtime's.
  void unbind(const BoundLaunch& b);
  /// Enqueues one launch of `b` on `stream`. Nothing here allocates, compiles, copies from the
  /// host or synchronizes (the Sim device runs the launch to its end before returning).
  void launch(BoundLaunch& b, void* stream = nullptr);

  /// Device address of a buffer the runtime owns for S (a Scratch, Peers or Control argument's
  /// name), for read-back and tests; InputError otherwise.
  uint64_t buffer(int rows, const std::string& arg) const;
  /// The Plan of S (after allocate).
  const ir::Plan& plan(int rows) const;
  /// Every S of opts.rows.
  const std::vector<int>& rows() const { return opts_.rows; }
  /// Whether `arg` of S's Plan is one the runtime owns (the caller must not bind it).
  bool owns(int rows, const std::string& arg) const;

 private:
  struct PerS {
    std::shared_ptr<const Variant> variant;
    std::map<std::string, uint64_t> owned;  // arg name -> device address
    uint64_t symOffset = 0;
    std::vector<uint64_t> peers;            // opened at openPeers
    LoadedKernel kernel;
    bool warm = false;
  };
  const PerS& perS(int rows, const char* what) const;
  PerS& perS(int rows, const char* what) {
    return const_cast<PerS&>(static_cast<const RankRuntime*>(this)->perS(rows, what));
  }
  std::string where() const;

  Generator& gen_;
  RankDevice& dev_;
  RankRuntimeOptions opts_;
  std::map<int, PerS> byRows_;
  uint64_t sym_ = 0;
  int64_t symBytes_ = 0;
  bool allocated_ = false, opened_ = false;
  std::vector<std::unique_ptr<BoundLaunch>> bound_;
};

}  // namespace monogen::runtime
