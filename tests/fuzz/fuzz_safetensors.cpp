// libFuzzer target: runtime::parseSafetensors (the checks readSafetensorsFile makes) on any
// bytes. An input is either refused with an InputError or read into tensors that agree with
// their dtype x shape and whose data_offsets (as the header gives them) do not overlap;
// anything else (a crash, a sanitizer report, another exception) is a bug.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/Error.h"
#include "runtime/Safetensors.h"

using namespace monogen;
using namespace monogen::runtime;

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_safetensors: accepted an input that breaks the contract: %s\n", what);
  std::abort();
}

/// What the reader accepted, checked again from the header: no two non-empty spans overlap.
void checkNoOverlap(std::string_view bytes) {
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  const auto header = nlohmann::json::parse(bytes.substr(8, hlen));
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto& offs = it.value().at("data_offsets");
    const uint64_t b = offs.at(0).get<uint64_t>(), e = offs.at(1).get<uint64_t>();
    if (b != e) spans.emplace_back(b, e);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second) fail("two tensors' data overlap");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  SafetensorsFile f;
  try {
    f = parseSafetensors(bytes, "fuzz-input");
  } catch (const InputError&) {
    return 0;  // refused, with a message: what hostile bytes should get
  }
  for (const auto& [name, t] : f.tensors)
    if (static_cast<int64_t>(t.data.size()) != t.numel() * dtypeBytes(t.dtype)) fail("bytes disagree with dtype x shape");
  checkNoOverlap(bytes);
  return 0;
}
