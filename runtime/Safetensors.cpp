#include "runtime/Safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <vector>

#include "ir/Error.h"
#include "support/AtomicFile.h"
#include "runtime/JsonBrief.h"

namespace monogen::runtime {

namespace {

constexpr DType kAllDTypes[] = {DType::BF16, DType::F32, DType::F64, DType::I32, DType::I64, DType::U8, DType::U64};
constexpr uint64_t kMaxHeader = 100ull << 20;  // as the safetensors format bounds it

std::string shapeText(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// numel * elemBytes, or -1 on a negative dim or overflow.
int64_t byteSize(const std::vector<int64_t>& shape, int elemBytes) {
  int64_t n = elemBytes;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

std::string knownDTypes() {
  std::string s;
  for (DType d : kAllDTypes) s += (s.empty() ? "" : ", ") + std::string(dtypeName(d));
  return s;
}

}  // namespace

bool dtypeFromName(const std::string& name, DType& out) {
  for (DType d : kAllDTypes)
    if (name == dtypeName(d)) {
      out = d;
      return true;
    }
  return false;
}

void writeSafetensors(const std::filesystem::path& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string file = path.string();
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const std::string where = "safetensors " + file + ", tensor '" + name + "'";
    if (name == "__metadata__") throw InputError(where, "the name is reserved for the metadata map");
    const int64_t want = byteSize(t.shape, dtypeBytes(t.dtype));
    if (want < 0) throw InputError(where, "invalid shape " + shapeText(t.shape));
    if (static_cast<int64_t>(t.data.size()) != want)
      throw InputError(where, "holds " + std::to_string(t.data.size()) + " bytes, but " + dtypeName(t.dtype) + " " +
                                  shapeText(t.shape) + " needs " + std::to_string(want));
    header[name] = {{"dtype", dtypeName(t.dtype)},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + static_cast<uint64_t>(want)}}};
    offset += static_cast<uint64_t>(want);
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // the data starts 8-aligned
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((static_cast<uint64_t>(h.size()) >> (8 * i)) & 0xff);
  std::string data;
  data.reserve(offset);
  for (const auto& [name, t] : tensors) data.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  support::writeFileAtomically(path, {len, h, data}, 0644);
}

namespace {

/// Copies n bytes at `offset` of the file into dst; false if they cannot be read.
using ReadAt = std::function<bool(uint64_t offset, void* dst, uint64_t n)>;

/// The checks and the decoding, for a file of fileSize bytes read through readAt: one code
/// path for readSafetensorsFile (a stream) and parseSafetensors (bytes in memory).
SafetensorsFile parseFrom(const std::string& where, uint64_t fileSize, const ReadAt& readAt) {
  if (fileSize < 8)
    throw InputError(where, "is " + std::to_string(fileSize) + " bytes, too short for the 8-byte header length");
  uint8_t lenBytes[8];
  if (!readAt(0, lenBytes, 8)) throw InputError(where, "could not read the 8-byte header length: is it a regular file?");
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= static_cast<uint64_t>(lenBytes[i]) << (8 * i);
  if (hlen == 0 || hlen > kMaxHeader || hlen > fileSize - 8)
    throw InputError(where, "header length " + std::to_string(hlen) + " runs past the file (" +
                                std::to_string(fileSize) + " bytes; expected 1.." + std::to_string(fileSize - 8) +
                                "): truncated or not a safetensors file");
  std::string htext(hlen, '\0');
  if (!readAt(8, htext.data(), hlen)) throw InputError(where, "could not read the header");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(htext);
  } catch (const nlohmann::json::exception& e) {  // parse_error; out_of_range for a number like 1e400
    throw InputError(where, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) throw InputError(where, "header is not a JSON object");

  const uint64_t dataStart = 8 + hlen;
  const uint64_t dataSize = fileSize - dataStart;
  SafetensorsFile out;
  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) throw InputError(where + ", __metadata__", "is not a JSON object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          throw InputError(where + ", __metadata__", "entry '" + m.key() + "' is not a string");
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string tw = where + ", tensor '" + name + "'";
    if (!v.is_object()) throw InputError(tw, "entry is not a JSON object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) throw InputError(tw, "no \"dtype\" string");
    HostTensor t;
    const std::string dt = v["dtype"].get<std::string>();
    if (!dtypeFromName(dt, t.dtype)) throw InputError(tw, "unknown dtype \"" + dt + "\" (known: " + knownDTypes() + ")");
    if (!v.contains("shape") || !v["shape"].is_array()) throw InputError(tw, "no \"shape\" array");
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        throw InputError(tw, "shape " + jsonBrief(v["shape"]) + " has an entry that is not a non-negative integer");
      t.shape.push_back(d.get<int64_t>());
    }
    // By reference: a copy of a hostile value recurses once a nesting level, like dump().
    const auto offs = v.find("data_offsets");
    if (offs == v.end() || !offs->is_array() || offs->size() != 2 || !(*offs)[0].is_number_unsigned() ||
        !(*offs)[1].is_number_unsigned())
      throw InputError(tw, "no \"data_offsets\" pair of non-negative integers");
    const uint64_t b = (*offs)[0].get<uint64_t>(), e = (*offs)[1].get<uint64_t>();
    if (b > e || e > dataSize)
      throw InputError(tw, "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                               "] out of range: the data section has " + std::to_string(dataSize) +
                               " bytes (truncated file?)");
    const int64_t want = byteSize(t.shape, dtypeBytes(t.dtype));
    if (want < 0 || static_cast<uint64_t>(want) != e - b)
      throw InputError(tw, "data_offsets span " + std::to_string(e - b) + " bytes, but " + dt + " " +
                               shapeText(t.shape) + " needs " + std::to_string(want));
    t.data.resize(e - b);
    if (!readAt(dataStart + b, t.data.data(), e - b)) throw InputError(tw, "could not read its data");
    spans.push_back({b, e, name});
    out.tensors.emplace(name, std::move(t));
  }
  // An empty tensor overlaps nothing; each other one must start at or past the end of the
  // non-empty one before it (in start order), not just of its neighbour, which may be empty.
  std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) { return x.begin < y.begin; });
  const Span* prev = nullptr;
  for (const Span& s : spans) {
    if (s.begin == s.end) continue;
    if (prev && s.begin < prev->end)
      throw InputError(where + ", tensor '" + s.name + "'", "data overlaps tensor '" + prev->name + "'");
    prev = &s;
  }
  return out;
}

}  // namespace

SafetensorsFile readSafetensorsFile(const std::filesystem::path& path) {
  const std::string where = "safetensors " + path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(where, std::string("cannot open it: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();  // -1 for a pipe; a directory opens, then reads fail
  if (end < 0) throw InputError(where, "cannot tell its size: is it a regular file?");
  const auto fileSize = static_cast<uint64_t>(end);
  in.seekg(0);
  return parseFrom(where, fileSize, [&](uint64_t offset, void* dst, uint64_t n) {
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    return static_cast<bool>(in);
  });
}

SafetensorsFile parseSafetensors(std::string_view bytes, const std::string& name) {
  return parseFrom("safetensors " + name, bytes.size(), [&](uint64_t offset, void* dst, uint64_t n) {
    if (offset > bytes.size() || n > bytes.size() - offset) return false;
    if (n) std::memcpy(dst, bytes.data() + offset, n);  // dst may be null when n is 0
    return true;
  });
}

TensorMap readSafetensors(const std::filesystem::path& path) { return readSafetensorsFile(path).tensors; }

}  // namespace monogen::runtime
