#include "runtime/RankDevice.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>

#include "ir/Error.h"

namespace monogen::runtime {

RankDevice::~RankDevice() = default;

void RankDevice::zero(uint64_t dst, int64_t bytes) {
  const std::vector<uint8_t> z(static_cast<size_t>(bytes), 0);
  upload(dst, z.data(), bytes);
}

std::string nodeBootId() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(f, id);
  if (id.empty())
    throw RuntimeError("node identity", "cannot read /proc/sys/kernel/random/boot_id (needed to refuse a "
                                        "handle from another node)");
  return id;
}

std::string nodeHostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

int64_t wholePages(int64_t bytes) {
  constexpr int64_t kPage = 4096;
  return std::max<int64_t>(kPage, (bytes + kPage - 1) / kPage * kPage);
}

std::vector<uint8_t> writeHandle(const HandleEnvelope& h) {
  nlohmann::json j = h.fields.is_object() ? h.fields : nlohmann::json::object();
  j["monogen_handle"] = 1;
  j["device"] = h.device;
  j["rank"] = h.rank;
  j["tp"] = h.tp;
  j["bytes"] = h.bytes;
  j["boot_id"] = nodeBootId();
  j["host"] = nodeHostName();
  const std::string s = j.dump();
  return {s.begin(), s.end()};
}

HandleEnvelope readHandle(const std::vector<uint8_t>& bytes, const std::string& device, int peer, int tp) {
  const std::string where = fmt::format("rank {}'s symmetric-buffer handle", peer);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where, fmt::format("{} bytes that are not a monogen handle (expected the JSON object "
                                        "exportSymmetric wrote): {}",
                                        bytes.size(), e.what()));
  }
  auto field = [&](const char* name, nlohmann::json::value_t type, const char* typeName) -> const nlohmann::json& {
    if (!j.is_object() || !j.contains(name))
      throw InputError(where, fmt::format("no '{}' field; expected the object exportSymmetric wrote", name));
    const nlohmann::json& v = j.at(name);
    const bool ok = type == nlohmann::json::value_t::number_integer ? v.is_number_integer() : v.type() == type;
    if (!ok) throw InputError(where, fmt::format("'{}' is {}, expected {}", name, v.dump(), typeName));
    return v;
  };
  using VT = nlohmann::json::value_t;
  if (field("monogen_handle", VT::number_integer, "an integer").get<int64_t>() != 1)
    throw InputError(where, fmt::format("handle version {}, expected 1", j.at("monogen_handle").dump()));
  HandleEnvelope h;
  h.device = field("device", VT::string, "a string").get<std::string>();
  h.rank = static_cast<int>(field("rank", VT::number_integer, "an integer").get<int64_t>());
  h.tp = static_cast<int>(field("tp", VT::number_integer, "an integer").get<int64_t>());
  h.bytes = field("bytes", VT::number_integer, "an integer").get<int64_t>();
  const std::string boot = field("boot_id", VT::string, "a string").get<std::string>();
  const std::string host = field("host", VT::string, "a string").get<std::string>();
  if (h.device != device)
    throw InputError(where, fmt::format("a '{}' device's handle; this rank runs on the '{}' device", h.device, device));
  if (h.rank != peer) throw InputError(where, fmt::format("exported by rank {}, expected rank {}", h.rank, peer));
  if (h.tp != tp) throw InputError(where, fmt::format("exported for TP = {}, this rank runs TP = {}", h.tp, tp));
  if (h.bytes <= 0) throw InputError(where, fmt::format("a buffer of {} bytes", h.bytes));
  if (boot != nodeBootId())
    throw InputError(where, fmt::format("comes from another node (host '{}', boot id {}; this node is '{}', boot id "
                                        "{}): symmetric buffers are opened over IPC within one node only",
                                        host, boot, nodeHostName(), nodeBootId()));
  h.fields = std::move(j);
  return h;
}

}  // namespace monogen::runtime
