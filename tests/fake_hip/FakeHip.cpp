// The fake HIP runtime (see FakeHip.h). Signatures as hip_runtime_api.h declares them, with the
// types spelled as runtime/HipApi.h spells them (hipError_t = int, handles = void*).
#include "tests/fake_hip/FakeHip.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {

constexpr int kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kInvalidDevice = 101, kNoDevice = 100,
              kInvalidImage = 200, kInvalidHandle = 400;
constexpr unsigned kUncached = 0x3;  // hipDeviceMallocUncached
constexpr size_t kHandleSize = 64;
struct IpcHandle {
  char reserved[kHandleSize];
};

struct Segment {
  std::string name;
  size_t size = 0;
  unsigned flags = 0;
  bool owned = false;  // allocated here (hipFree unlinks), else opened (hipIpcCloseMemHandle unmaps)
};

std::mutex mu;
std::vector<FakeHipCall> calls;
std::map<void*, Segment> segments;  // by address: ExtMalloc'd and opened segments
thread_local int current = 0;
int counter = 0;

int envInt(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}
int deviceCount() { return envInt("MONOGEN_FAKE_HIP_DEVICES", 8); }

FakeHipCall& record(const char* name) {
  calls.push_back(FakeHipCall{});
  calls.back().name = name;
  calls.back().device = current;
  return calls.back();
}

void* mapSegment(const std::string& name, size_t size, bool create) {
  const int fd = shm_open(name.c_str(), create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
  if (fd < 0) return nullptr;
  if (create && ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    shm_unlink(name.c_str());
    return nullptr;
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    if (create) shm_unlink(name.c_str());
    return nullptr;
  }
  return p;
}

// A stream is a unique handle; MONOGEN_FAKE_HIP_STREAM_LOG=FILE appends "create|launch|destroy
// <handle>" lines to FILE (every process of a run: a test reads what its ranks did).
void streamLog(const char* what, void* stream) {
  const char* path = std::getenv("MONOGEN_FAKE_HIP_STREAM_LOG");
  if (!path || !*path) return;
  const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd < 0) return;
  char line[96];
  const int n = std::snprintf(line, sizeof line, "%d %s %p\n", static_cast<int>(getpid()), what, stream);
  if (write(fd, line, static_cast<size_t>(n)) != n) {}
  close(fd);
}

}  // namespace

extern "C" {

std::vector<FakeHipCall>* fakeHipLog() { return &calls; }

const char* hipGetErrorString(int rc) {
  switch (rc) {
    case kSuccess: return "hipSuccess";
    case kInvalidValue: return "hipErrorInvalidValue (fake HIP)";
    case kOutOfMemory: return "hipErrorOutOfMemory (fake HIP)";
    case kNoDevice: return "hipErrorNoDevice (fake HIP)";
    case kInvalidDevice: return "hipErrorInvalidDevice (fake HIP)";
    case kInvalidImage: return "hipErrorInvalidImage (fake HIP)";
    case kInvalidHandle: return "hipErrorInvalidHandle (fake HIP)";
    default: return "unknown (fake HIP)";
  }
}

int hipRuntimeGetVersion(int* v) {
  std::lock_guard<std::mutex> g(mu);
  record("hipRuntimeGetVersion");
  *v = 1;  // not a ROCm version: the fake's
  return kSuccess;
}

int hipGetDeviceCount(int* n) {
  std::lock_guard<std::mutex> g(mu);
  record("hipGetDeviceCount");
  *n = deviceCount();
  return *n > 0 ? kSuccess : kNoDevice;
}

int hipSetDevice(int d) {
  std::lock_guard<std::mutex> g(mu);
  record("hipSetDevice").pointer = static_cast<uint64_t>(d);
  if (d < 0 || d >= deviceCount()) return kInvalidDevice;
  current = d;
  return kSuccess;
}

int hipDeviceGetAttribute(int* v, int attr, int device) {
  std::lock_guard<std::mutex> g(mu);
  record("hipDeviceGetAttribute").attribute = attr;
  if (device < 0 || device >= deviceCount()) return kInvalidDevice;
  const char* arch = std::getenv("MONOGEN_FAKE_HIP_ARCH");
  int major = 9, minor = 5;
  if (arch && *arch) std::sscanf(arch, "%d.%d", &major, &minor);
  switch (attr) {
    case 23: *v = major; break;                                    // ComputeCapabilityMajor
    case 61: *v = minor; break;                                    // ComputeCapabilityMinor
    case 56: *v = 1024; break;                                     // MaxThreadsPerBlock
    case 57: *v = 2048; break;                                     // MaxThreadsPerMultiProcessor
    case 63: *v = envInt("MONOGEN_FAKE_HIP_CUS", 256); break;      // MultiprocessorCount
    case 72: *v = 512 * 4 * 64; break;                             // MaxRegistersPerMultiprocessor
    case 74: *v = 160 * 1024; break;                               // MaxSharedMemoryPerBlock
    case 87: *v = 64; break;                                       // WarpSize
    case 10002: *v = 160 * 1024; break;                            // MaxSharedMemoryPerMultiprocessor
    default: return kInvalidValue;
  }
  return kSuccess;
}

int hipMalloc(void** p, size_t size) {
  std::lock_guard<std::mutex> g(mu);
  FakeHipCall& c = record("hipMalloc");
  c.size = size;
  *p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  c.pointer = reinterpret_cast<uint64_t>(*p);
  return *p ? kSuccess : kOutOfMemory;
}

int hipExtMallocWithFlags(void** p, size_t size, unsigned flags) {
  std::lock_guard<std::mutex> g(mu);
  FakeHipCall& c = record("hipExtMallocWithFlags");
  c.size = size;
  c.flags = flags;
  const std::string name = "/monogen-fake-hip-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
  *p = size ? mapSegment(name, size, true) : nullptr;
  if (!*p) return kOutOfMemory;
  segments[*p] = Segment{name, size, flags, true};
  c.pointer = reinterpret_cast<uint64_t>(*p);
  return kSuccess;
}

int hipFree(void* p) {
  std::lock_guard<std::mutex> g(mu);
  record("hipFree").pointer = reinterpret_cast<uint64_t>(p);
  auto it = segments.find(p);
  if (it == segments.end()) {
    std::free(p);
    return kSuccess;
  }
  if (!it->second.owned) return kInvalidValue;
  munmap(p, it->second.size);
  shm_unlink(it->second.name.c_str());
  segments.erase(it);
  return kSuccess;
}

int hipMemcpy(void* dst, const void* src, size_t size, int kind) {
  std::lock_guard<std::mutex> g(mu);
  FakeHipCall& c = record("hipMemcpy");
  c.size = size;
  c.pointer = reinterpret_cast<uint64_t>(dst);
  c.flags = static_cast<unsigned>(kind);
  std::memcpy(dst, src, size);
  return kSuccess;
}

int hipMemset(void* dst, int value, size_t size) {
  std::lock_guard<std::mutex> g(mu);
  FakeHipCall& c = record("hipMemset");
  c.size = size;
  c.pointer = reinterpret_cast<uint64_t>(dst);
  std::memset(dst, value, size);
  return kSuccess;
}

int hipIpcGetMemHandle(IpcHandle* h, void* p) {
  std::lock_guard<std::mutex> g(mu);
  record("hipIpcGetMemHandle").pointer = reinterpret_cast<uint64_t>(p);
  auto it = segments.find(p);
  if (it == segments.end() || !it->second.owned) return kInvalidValue;  // not the start of an ExtMalloc'd buffer
  if ((it->second.flags & kUncached) == kUncached && it->second.size % 4096 != 0) return kInvalidValue;
  std::memset(h->reserved, 0, kHandleSize);
  std::snprintf(h->reserved, kHandleSize, "%s", it->second.name.c_str());
  return kSuccess;
}

int hipIpcOpenMemHandle(void** p, IpcHandle h, unsigned flags) {
  std::lock_guard<std::mutex> g(mu);
  FakeHipCall& c = record("hipIpcOpenMemHandle");
  c.flags = flags;
  const std::string name(h.reserved, strnlen(h.reserved, kHandleSize));
  struct stat st{};
  const int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return kInvalidHandle;
  const bool sized = fstat(fd, &st) == 0;
  close(fd);
  if (!sized) return kInvalidHandle;
  *p = mapSegment(name, static_cast<size_t>(st.st_size), false);
  if (!*p) return kInvalidHandle;
  segments[*p] = Segment{name, static_cast<size_t>(st.st_size), 0, false};
  c.pointer = reinterpret_cast<uint64_t>(*p);
  c.size = static_cast<uint64_t>(st.st_size);
  return kSuccess;
}

int hipIpcCloseMemHandle(void* p) {
  std::lock_guard<std::mutex> g(mu);
  record("hipIpcCloseMemHandle").pointer = reinterpret_cast<uint64_t>(p);
  auto it = segments.find(p);
  if (it == segments.end() || it->second.owned) return kInvalidValue;
  munmap(p, it->second.size);
  segments.erase(it);
  return kSuccess;
}

int hipModuleLoadData(void** module, const void* image) {
  std::lock_guard<std::mutex> g(mu);
  record("hipModuleLoadData").pointer = reinterpret_cast<uint64_t>(image);
  if (!image || std::memcmp(image, "\x7f" "ELF", 4) != 0) return kInvalidImage;
  *module = new int(0);  // a token; modules are never unloaded (HipApi has no hipModuleUnload)
  return kSuccess;
}

int hipModuleGetFunction(void** fn, void* module, const char* name) {
  std::lock_guard<std::mutex> g(mu);
  record("hipModuleGetFunction");
  if (!module || !name) return kInvalidValue;
  *fn = new std::string(name);
  calls.back().pointer = reinterpret_cast<uint64_t>(*fn);
  return kSuccess;
}

int hipModuleLaunchKernel(void* fn, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned, unsigned,
                          void* stream, void**, void** extra) {
  std::lock_guard<std::mutex> g(mu);
  FakeHipCall& c = record("hipModuleLaunchKernel");
  c.pointer = reinterpret_cast<uint64_t>(fn);
  c.stream = stream;
  c.grid = gx;
  c.block = bx;
  // extra: HIP_LAUNCH_PARAM_BUFFER_POINTER (1), ptr, HIP_LAUNCH_PARAM_BUFFER_SIZE (2), &size, END (3).
  const uint8_t* buf = nullptr;
  size_t size = 0;
  for (int i = 0; extra && extra[i] != reinterpret_cast<void*>(3); i += 2) {
    if (extra[i] == reinterpret_cast<void*>(1)) buf = static_cast<const uint8_t*>(extra[i + 1]);
    else if (extra[i] == reinterpret_cast<void*>(2)) size = *static_cast<const size_t*>(extra[i + 1]);
    else return kInvalidValue;
  }
  if (!fn || !buf) return kInvalidValue;
  c.kernargs.assign(buf, buf + size);
  streamLog("launch", stream);
  return kSuccess;
}

int hipStreamCreate(void** stream) {
  std::lock_guard<std::mutex> g(mu);
  FakeHipCall& c = record("hipStreamCreate");
  if (!stream) return kInvalidValue;
  *stream = new int(0);
  c.stream = *stream;
  streamLog("create", *stream);
  return kSuccess;
}

int hipStreamDestroy(void* stream) {
  std::lock_guard<std::mutex> g(mu);
  record("hipStreamDestroy").stream = stream;
  if (!stream) return kInvalidHandle;
  streamLog("destroy", stream);
  delete static_cast<int*>(stream);
  return kSuccess;
}

int hipStreamSynchronize(void* stream) {
  std::lock_guard<std::mutex> g(mu);
  record("hipStreamSynchronize").stream = stream;
  return kSuccess;
}

int hipDeviceSynchronize() {
  std::lock_guard<std::mutex> g(mu);
  record("hipDeviceSynchronize");
  return kSuccess;
}

// Events read the host's steady clock when recorded: an elapsed time is the host's enqueue time.
struct FakeEvent {
  double ms = -1;  // not recorded yet
};

int hipEventCreate(void** event) {
  std::lock_guard<std::mutex> g(mu);
  record("hipEventCreate");
  if (!event) return kInvalidValue;
  *event = new FakeEvent;
  return kSuccess;
}

int hipEventRecord(void* event, void* stream) {
  std::lock_guard<std::mutex> g(mu);
  record("hipEventRecord").stream = stream;
  if (!event) return kInvalidHandle;
  static_cast<FakeEvent*>(event)->ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return kSuccess;
}

int hipEventSynchronize(void* event) {
  std::lock_guard<std::mutex> g(mu);
  record("hipEventSynchronize");
  return event ? kSuccess : kInvalidHandle;
}

int hipEventElapsedTime(float* ms, void* start, void* stop) {
  std::lock_guard<std::mutex> g(mu);
  record("hipEventElapsedTime");
  if (!ms || !start || !stop) return kInvalidValue;
  const FakeEvent *a = static_cast<FakeEvent*>(start), *b = static_cast<FakeEvent*>(stop);
  if (a->ms < 0 || b->ms < 0) return kInvalidHandle;  // hipErrorInvalidHandle for an unrecorded event
  *ms = static_cast<float>(b->ms - a->ms);
  return kSuccess;
}

int hipEventDestroy(void* event) {
  std::lock_guard<std::mutex> g(mu);
  record("hipEventDestroy");
  delete static_cast<FakeEvent*>(event);
  return kSuccess;
}

}  // extern "C"
