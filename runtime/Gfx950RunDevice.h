// The gfx950-run device: real gfx950 code objects on AMD's CPU simulator of gfx950 (for tests:
// it checks the machine code, not only the IR). One tool run a launch, every rank in one address
// space; host copies of every allocation. Memory map, files and errors: docs/runtime.md.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/Device.h"

namespace monogen::runtime {

struct Gfx950RunOptions {
  std::string tool;             // empty: defaultToolPath()
  double timeoutSeconds = 600;  // --timeout: a run not complete by then is a hang
  int maxRanks = 8;
};

/// What the last launch's result.json said.
struct Gfx950RunStats {
  std::string status;            // completed / hang / error
  double seconds = 0;            // the simulation proper
  double totalSeconds = 0;       // the tool's whole run
  double wallSeconds = 0;        // the whole launch as this device saw it (files, tool, read-back)
  int64_t waveInstructions = 0;
  std::string dir;               // the launch directory (removed unless MONOGEN_GFX950_KEEP)
};

class Gfx950RunDevice : public Device {
 public:
  /// $MONOGEN_GFX950_RUN, else MONOGEN_SOURCE_DIR/../shared/tools/gfx950-run.
  static std::string defaultToolPath();
  /// Whether the tool at `path` (default: defaultToolPath()) exists and is executable.
  static bool toolAvailable(const std::string& path = {});

  /// The handshake a launch makes first: `path --version` must exit 0 within `seconds` with a first
  /// line "gfx950-run <version>". Else RuntimeError naming the path, what it did and what was
  /// expected. A tool that passed is not asked again by this process.
  static void checkTool(const std::string& path, double seconds = 5);

  /// Does not check the tool: a launch does (so a device can be made and filled without it).
  explicit Gfx950RunDevice(Gfx950RunOptions opts = {});

  std::string name() const override { return "gfx950-run"; }
  int maxRanks() const override { return opts_.maxRanks; }
  uint64_t alloc(int rank, int64_t bytes, const std::string& name, int64_t align = 256) override;
  void free(int rank, uint64_t addr) override;
  void upload(int rank, uint64_t dst, const void* src, int64_t bytes) override;
  void download(int rank, void* dst, uint64_t src, int64_t bytes) override;
  /// One run of the tool: plan.ranks GPUs, dispatch r = the code object's (only) kernel with grid
  /// plan.grid.blocks x plan.grid.threads and args.kernargs[r]; see the file comment.
  void launchPacked(const ir::Plan& plan, const CodeObjectBytes& code, const PackedLaunch& args) override;

  const Gfx950RunStats& lastRun() const { return last_; }
  Gfx950RunOptions& options() { return opts_; }

 private:
  struct Allocation {
    int rank = 0;
    std::string name;
    std::vector<uint8_t> data;
  };
  /// Host copy of [addr, addr + bytes), which must lie inside one allocation (else RuntimeError).
  uint8_t* find(uint64_t addr, int64_t bytes, const char* what);

  Gfx950RunOptions opts_;
  std::map<uint64_t, Allocation> allocs_;  // by device address
  uint64_t next_ = 0x2'0000'0000ull;
  Gfx950RunStats last_;
};

}  // namespace monogen::runtime
