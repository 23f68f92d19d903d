// The per-rank device seam on one GPU through libamdhip64 (runtime/HipApi.h): an uncached IPC
// symmetric buffer, launches on the caller's stream with nothing else on that path. Not run on a
// GPU here: its HIP call sequence is checked against tests/fake_hip. docs/runtime.md.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/CoResidency.h"
#include "runtime/RankDevice.h"

namespace monogen::runtime {

struct HipApi;  // runtime/HipApi.h

class HipRankDevice : public RankDevice {
 public:
  static std::vector<std::string> defaultLibraryNames();
  /// Loads libamdhip64, resolves every entry point, selects the GPU. RuntimeError naming each
  /// library tried, the missing symbol, or that no GPU is present.
  HipRankDevice(int rank, int tp, int deviceOrdinal = -1, std::vector<std::string> libraryNames = defaultLibraryNames());
  ~HipRankDevice() override;

  std::string name() const override;
  int rank() const override { return rank_; }
  int tp() const override { return tp_; }
  bool runsCodeObjects() const override { return true; }
  uint64_t alloc(int64_t bytes, const std::string& name, int64_t align = 256) override;
  uint64_t allocSymmetric(int64_t bytes, const std::string& name) override;
  std::vector<uint8_t> exportSymmetric() override;
  uint64_t openPeer(int peer, const std::vector<uint8_t>& handle) override;
  void upload(uint64_t dst, const void* src, int64_t bytes) override;
  void download(void* dst, uint64_t src, int64_t bytes) override;
  void zero(uint64_t dst, int64_t bytes) override;
  LoadedKernel load(const ir::Plan& plan, const CodeObjectBytes& code) override;
  void launch(const LoadedKernel& k, const std::vector<uint64_t>& values, std::vector<uint8_t>& kernargs,
              void* stream) override;
  void synchronize(void* stream) override;
  /// What `enqueue` puts on `stream` took on the GPU, in ms: an event recorded before and after it,
  /// the second synchronized, hipEventElapsedTime between them. Both events are destroyed.
  double elapsedMs(void* stream, const std::function<void()>& enqueue);

  /// A stream of this rank's GPU (hipStreamCreate), for a caller that launches on its own stream;
  /// destroyStream (hipStreamDestroy) ends it. RuntimeError naming the call when HIP refuses.
  void* createStream();
  void destroyStream(void* stream);

  const std::string& library() const { return library_; }
  /// This rank's GPU as hipDeviceGetAttribute reports it (name with the arch, CU count, ...).
  DeviceLimits limits() const;
  /// The loaded entry points (HipApi::describe() names the library and runtime version).
  const HipApi& api() const;

 private:
  void select(const std::string& where);
  std::unique_ptr<HipApi> api_;
  std::string library_;
  int rank_, tp_, device_;
  int deviceCount_ = 0;
  uint64_t sym_ = 0;
  int64_t symBytes_ = 0;
  std::vector<void*> allocations_, opened_, modules_;
  std::vector<CodeObjectBytes> codes_;  // a loaded module's bytes stay alive with it
};

/// A stream created on `device` and destroyed with this object (errors at destruction ignored).
class HipStream {
 public:
  explicit HipStream(HipRankDevice& device) : device_(device), stream_(device.createStream()) {}
  ~HipStream();
  HipStream(const HipStream&) = delete;
  HipStream& operator=(const HipStream&) = delete;
  void* get() const { return stream_; }

 private:
  HipRankDevice& device_;
  void* stream_;
};

}  // namespace monogen::runtime
