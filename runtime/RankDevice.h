// The per-rank device seam: what one serving process holding rank r of TP needs from a device
// (HipRankDevice, SimRankDevice). Handle bytes are one JSON envelope; openPeer refuses another
// node's, another kind's or a malformed one with an InputError naming the peer. docs/runtime.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/Plan.h"

namespace monogen::runtime {

using CodeObjectBytes = std::vector<uint8_t>;

/// A loaded kernel: what RankDevice::load returns and launch takes (a hipFunction_t on HIP).
struct LoadedKernel {
  const ir::Plan* plan = nullptr;
  void* function = nullptr;
};

class RankDevice {
 public:
  virtual ~RankDevice();

  /// "sim rank 1 of 4", "hip rank 1 of 4 (device 1, gfx950, 256 CUs)", for messages.
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int tp() const = 0;
  /// Whether launch runs a code object (HIP) or the Plan's kernel IR (Sim).
  virtual bool runsCodeObjects() const = 0;

  /// `bytes` of this rank's device memory, aligned to `align`. Setup only, never on the launch path.
  virtual uint64_t alloc(int64_t bytes, const std::string& name, int64_t align = 256) = 0;
  /// The symmetric peer buffer: `bytes` rounded up to whole 4 KiB pages, uncached (HIP:
  /// hipExtMallocWithFlags(hipDeviceMallocUncached); an uncached buffer under 2 MB that is not
  /// a whole number of pages cannot be exported). Returns its address; exportSymmetric names it.
  virtual uint64_t allocSymmetric(int64_t bytes, const std::string& name) = 0;
  /// The handle bytes of the buffer allocSymmetric made (throws if there is none).
  virtual std::vector<uint8_t> exportSymmetric() = 0;
  /// Opens rank `peer`'s symmetric buffer from its handle bytes; returns the address this
  /// rank's kernel reaches it at. Throws InputError on another node's or a bad handle.
  virtual uint64_t openPeer(int peer, const std::vector<uint8_t>& handle) = 0;
  /// Call once every rank has opened every handle (after the framework's barrier): the
  /// exporter may then drop what only opening needed (the Sim unlinks its segment's name, so a
  /// killed process leaves nothing in /dev/shm). A no-op on HIP.
  virtual void peersOpened() {}

  /// Host <-> device copies, synchronous. Setup and read-back only, never on the launch path.
  virtual void upload(uint64_t dst, const void* src, int64_t bytes) = 0;
  virtual void download(void* dst, uint64_t src, int64_t bytes) = 0;
  /// Sets [dst, dst + bytes) to zero (buffers whose flags must start at tag 0).
  virtual void zero(uint64_t dst, int64_t bytes);

  /// Warm-up: loads `code` (HIP: hipModuleLoadData + hipModuleGetFunction) for `plan`, which
  /// must outlive the result. The Sim ignores the code object.
  virtual LoadedKernel load(const ir::Plan& plan, const CodeObjectBytes& code) = 0;
  /// Enqueues one launch of `k` with this rank's packed arguments on `stream` (HIP: a
  /// hipStream_t, nullptr the null stream) and returns: no allocation, compile, host copy or
  /// synchronization. `values` are the raw 64-bit argument values (the Sim runs these),
  /// `kernargs` the kernarg segment (HIP). The Sim has no streams: it runs the launch to the end
  /// before it returns.
  virtual void launch(const LoadedKernel& k, const std::vector<uint64_t>& values, std::vector<uint8_t>& kernargs,
                      void* stream) = 0;
  /// Waits for everything enqueued on `stream` (the caller's; tests and qualification only).
  virtual void synchronize(void* stream) = 0;
};

/// The envelope every handle is: {"monogen_handle": 1, "device": kind, "rank", "tp", "boot_id",
/// "host", "bytes", ...fields}.
struct HandleEnvelope {
  std::string device;  // "sim" or "hip"
  int rank = -1, tp = 0;
  int64_t bytes = 0;
  nlohmann::json fields;  // the device's own
};
/// This node's identity: /proc/sys/kernel/random/boot_id (a handle from another node, or from
/// before a reboot, is refused) and the host name.
std::string nodeBootId();
std::string nodeHostName();
std::vector<uint8_t> writeHandle(const HandleEnvelope& h);
/// Parses and checks a peer's handle: JSON, the envelope's fields and types, device == `device`,
/// rank == `peer`, tp == `tp`, and the same boot id as this node. InputError otherwise, naming
/// `peer` and what was wrong.
HandleEnvelope readHandle(const std::vector<uint8_t>& bytes, const std::string& device, int peer, int tp);

/// Whole 4 KiB pages for `bytes` (at least one page).
int64_t wholePages(int64_t bytes);

}  // namespace monogen::runtime
