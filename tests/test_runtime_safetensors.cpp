// .safetensors read/write: round trip, and rejection of truncated and malformed files.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "ir/Error.h"
#include "runtime/Safetensors.h"

using namespace monogen;
using namespace monogen::runtime;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("monogen-st-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TensorMap sample() {
  TensorMap m;
  HostTensor a = HostTensor::zeros(DType::F32, {2, 3});
  for (int i = 0; i < 6; ++i) a.as<float>()[i] = 0.25f * i - 1;
  HostTensor b = HostTensor::zeros(DType::BF16, {5});
  for (int i = 0; i < 5; ++i) b.as<uint16_t>()[i] = static_cast<uint16_t>(0x3f80 + i);
  HostTensor c = HostTensor::zeros(DType::U8, {3, 1, 7});
  for (int i = 0; i < 21; ++i) c.data[i] = static_cast<uint8_t>(200 + i);
  HostTensor d = HostTensor::zeros(DType::I64, {});
  d.as<int64_t>()[0] = -123456789012345;
  HostTensor e = HostTensor::zeros(DType::I32, {0, 4});
  m["a.weight"] = a;
  m["b"] = b;
  m["c"] = c;
  m["d_scalar"] = d;
  m["e_empty"] = e;
  return m;
}

std::string readAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void writeAll(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(s.data(), static_cast<std::streamsize>(s.size()));
}

/// A file with the given JSON header and `data` bytes after it.
std::string fileWith(const std::string& header, const std::string& data) {
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return len + header + data;
}

void expectRejected(const fs::path& p, std::vector<std::string> parts) {
  try {
    readSafetensors(p);
    FAIL("accepted; expected an InputError mentioning " << parts.front());
  } catch (const InputError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK_THAT(msg, Catch::Contains(p.string()));
    for (const auto& s : parts) CHECK_THAT(msg, Catch::Contains(s));
  }
}

}  // namespace

TEST_CASE("safetensors: round trip with metadata") {
  TempDir t;
  const fs::path p = t.path / "x.safetensors";
  const TensorMap m = sample();
  writeSafetensors(p, m, {{"format", "pt"}, {"variant", "S4-TP2"}});
  const SafetensorsFile f = readSafetensorsFile(p);
  REQUIRE(f.tensors.size() == m.size());
  for (const auto& [name, want] : m) {
    INFO(name);
    const HostTensor& got = f.tensors.at(name);
    CHECK(got.dtype == want.dtype);
    CHECK(got.shape == want.shape);
    CHECK(got.data == want.data);
  }
  CHECK(f.metadata.at("format") == "pt");
  CHECK(f.metadata.at("variant") == "S4-TP2");
  // The layout: header length, then a JSON header whose length keeps the data 8-aligned.
  const std::string raw = readAll(p);
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= static_cast<uint64_t>(static_cast<uint8_t>(raw[i])) << (8 * i);
  CHECK(hlen % 8 == 0);
  CHECK(raw[8] == '{');
  CHECK_THAT(raw.substr(8, hlen), Catch::Contains("\"data_offsets\"") && Catch::Contains("\"BF16\""));
  // No temp file left behind.
  int n = 0;
  for (auto& de : fs::directory_iterator(t.path)) (void)de, ++n;
  CHECK(n == 1);
}

TEST_CASE("safetensors: parseSafetensors reads a file's bytes as the file reader does") {
  TempDir t;
  const fs::path p = t.path / "x.safetensors";
  writeSafetensors(p, sample(), {{"format", "pt"}});
  const std::string raw = readAll(p);
  const SafetensorsFile a = readSafetensorsFile(p), b = parseSafetensors(raw, "in-memory");
  CHECK(b.metadata == a.metadata);
  REQUIRE(b.tensors.size() == a.tensors.size());
  for (const auto& [name, want] : a.tensors) {
    INFO(name);
    CHECK(b.tensors.at(name).dtype == want.dtype);
    CHECK(b.tensors.at(name).shape == want.shape);
    CHECK(b.tensors.at(name).data == want.data);
  }
  // The same checks, naming what it was given.
  CHECK_THROWS_WITH(parseSafetensors(raw.substr(0, raw.size() - 3), "in-memory"),
                    Catch::Contains("safetensors in-memory") && Catch::Contains("out of range"));
  CHECK_THROWS_WITH(parseSafetensors(raw.substr(0, 5), "in-memory"), Catch::Contains("too short"));
}

TEST_CASE("safetensors: rewriting replaces the file whole") {
  TempDir t;
  const fs::path p = t.path / "x.safetensors";
  writeSafetensors(p, sample());
  TensorMap small;
  small["only"] = HostTensor::zeros(DType::F64, {2});
  writeSafetensors(p, small);
  const TensorMap back = readSafetensors(p);
  CHECK(back.size() == 1);
  CHECK(back.count("only") == 1);
}

TEST_CASE("safetensors: a truncated file is rejected") {
  TempDir t;
  const fs::path p = t.path / "x.safetensors";
  writeSafetensors(p, sample());
  const std::string raw = readAll(p);
  SECTION("data cut short") {
    writeAll(p, raw.substr(0, raw.size() - 3));
    expectRejected(p, {"out of range", "truncated"});
  }
  SECTION("header cut short") {
    writeAll(p, raw.substr(0, 30));
    expectRejected(p, {"header length", "runs past the file"});
  }
  SECTION("shorter than the length field") {
    writeAll(p, raw.substr(0, 5));
    expectRejected(p, {"too short"});
  }
}

TEST_CASE("safetensors: a bad header is rejected") {
  TempDir t;
  const fs::path p = t.path / "bad.safetensors";
  SECTION("not JSON") {
    writeAll(p, fileWith("{\"a\": {\"dtype\": ", std::string(16, '\0')));
    expectRejected(p, {"not valid JSON"});
  }
  SECTION("a number past double's range (found by fuzz_safetensors)") {
    writeAll(p, fileWith(R"({"w": {"dtype": "U8", "shape": [1e400], "data_offsets": [0, 0]}})", ""));
    expectRejected(p, {"not valid JSON", "number overflow"});
  }
  SECTION("not an object") {
    writeAll(p, fileWith("[1, 2]", ""));
    expectRejected(p, {"not a JSON object"});
  }
  SECTION("unknown dtype") {
    writeAll(p, fileWith(R"({"w": {"dtype": "F8_E5M2", "shape": [4], "data_offsets": [0, 4]}})", "abcd"));
    expectRejected(p, {"tensor 'w'", "unknown dtype", "F8_E5M2"});
  }
  SECTION("offsets disagree with dtype x shape") {
    writeAll(p, fileWith(R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}})", std::string(16, 'x')));
    expectRejected(p, {"tensor 'w'", "8 bytes", "needs 16"});
  }
  SECTION("offsets past the data") {
    writeAll(p, fileWith(R"({"w": {"dtype": "U8", "shape": [8], "data_offsets": [4, 12]}})", std::string(8, 'x')));
    expectRejected(p, {"tensor 'w'", "out of range"});
  }
  SECTION("offsets reversed") {
    writeAll(p, fileWith(R"({"w": {"dtype": "U8", "shape": [0], "data_offsets": [4, 2]}})", std::string(8, 'x')));
    expectRejected(p, {"tensor 'w'", "out of range"});
  }
  SECTION("overlapping tensors") {
    writeAll(p, fileWith(R"({"a": {"dtype": "U8", "shape": [6], "data_offsets": [0, 6]},
                             "b": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]}})",
                         std::string(8, 'x')));
    expectRejected(p, {"tensor 'b'", "overlaps tensor 'a'"});
  }
  SECTION("a tensor inside an earlier one, past an empty one between them") {
    writeAll(p, fileWith(R"({"a": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},
                             "b": {"dtype": "U8", "shape": [0], "data_offsets": [2, 2]},
                             "c": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}})",
                         std::string(8, 'x')));
    expectRejected(p, {"tensor 'c'", "overlaps tensor 'a'"});
  }
  SECTION("empty tensors anywhere are not overlaps") {
    writeAll(p, fileWith(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                             "b": {"dtype": "U8", "shape": [0], "data_offsets": [2, 2]},
                             "c": {"dtype": "U8", "shape": [0], "data_offsets": [4, 4]},
                             "d": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]}})",
                         std::string(8, 'x')));
    CHECK(readSafetensors(p).size() == 4);
  }
  SECTION("missing fields") {
    writeAll(p, fileWith(R"({"w": {"dtype": "U8", "shape": [8]}})", std::string(8, 'x')));
    expectRejected(p, {"tensor 'w'", "data_offsets"});
  }
  SECTION("negative dim") {
    writeAll(p, fileWith(R"({"w": {"dtype": "U8", "shape": [-8], "data_offsets": [0, 8]}})", std::string(8, 'x')));
    expectRejected(p, {"tensor 'w'", "non-negative"});
  }
  SECTION("a shape or data_offsets nested 200000 deep is refused, not a stack overflow") {
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    writeAll(p, fileWith(R"({"w": {"dtype": "U8", "shape": )" + deep + R"(, "data_offsets": [0, 0]}})", ""));
    expectRejected(p, {"tensor 'w'", "shape [[...]] has an entry", "non-negative"});
    writeAll(p, fileWith(R"({"w": {"dtype": "U8", "shape": [0], "data_offsets": )" + deep + "}}", ""));
    expectRejected(p, {"tensor 'w'", "data_offsets"});
  }
  SECTION("metadata not strings") {
    writeAll(p, fileWith(R"({"__metadata__": {"n": 3}})", ""));
    expectRejected(p, {"__metadata__", "not a string"});
  }
  SECTION("header length past the file") {
    std::string f = fileWith("{}", "");
    f[0] = 100;
    writeAll(p, f);
    expectRejected(p, {"header length 100", "runs past the file"});
  }
}

TEST_CASE("safetensors: a missing file is an InputError naming it") {
  TempDir t;
  expectRejected(t.path / "nope.safetensors", {"cannot open"});
}

TEST_CASE("safetensors: a directory or a pipe is an InputError naming it") {
  TempDir t;
  expectRejected(t.path, {"is it a regular file?"});
  const fs::path fifo = t.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::signal(SIGPIPE, SIG_IGN);  // the reader may close before the writer is done
  std::thread writer([&] {  // the reader's open blocks until a writer comes
    std::ofstream w(fifo, std::ios::binary);
    w << std::string(64, '\x01');
  });
  expectRejected(fifo, {"is it a regular file?"});
  writer.join();
}

TEST_CASE("safetensors: writing a tensor whose bytes disagree with its shape is refused") {
  TempDir t;
  TensorMap m;
  HostTensor x = HostTensor::zeros(DType::F32, {4});
  x.data.pop_back();
  m["x"] = x;
  CHECK_THROWS_WITH(writeSafetensors(t.path / "x.safetensors", m),
                    Catch::Contains("tensor 'x'") && Catch::Contains("15 bytes") && Catch::Contains("needs 16"));
  CHECK_FALSE(fs::exists(t.path / "x.safetensors"));
}
