// Flag scopes in machine code: every publish, wait and ordered load, store, fence and atomic at
// each scope, compiled for gfx950 and read back as ISA, must carry AMDGPUUsage's GFX942 cache bits
// and writeback / invalidate / wait sequence, in order (the table: docs/memory-model.md).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdio>

#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/Compiler.h"
#include "ir/Builder.h"
#include "ir/Op.h"

using namespace monogen;
using namespace monogen::ir;

namespace {

/// A small Plan: data out/in (16-byte rows, so data accesses are dwordx4 and never look like a
/// site), a flag array, the error word, and a tag.
Plan sitePlan(const std::string& name) {
  Plan p;
  p.key.spec = name;
  p.key.target = gfx950();
  p.grid = {4, 512};
  p.ldsBytes = 0;
  p.args = {
      {"out", true, Scalar::I32, {4096}, ArgRole::Output, 16, ""},
      {"in", true, Scalar::I32, {4096}, ArgRole::Input, 16, ""},
      {"flags", true, Scalar::I64, {64}, ArgRole::Scratch, 8, ""},
      {"err", true, Scalar::I32, {2}, ArgRole::Control, 4, ""},
      {"tag", false, Scalar::I32, {}, ArgRole::Control, 4, ""},
  };
  Stage s;
  s.name = "main";
  s.tasks = 4;
  p.stages.push_back(s);
  p.kernel.name = name;
  return p;
}

struct K {
  Builder& b;
  Val out, in, flags, err, tag;
  Val tid;
  /// A data store before the site (what a release must make visible): dwordx4.
  void dataStore() { b.store(b.ptrAdd(out, b.zext(tid, Type::i64()) * 16), b.splat(tid, 4)); }
  /// A data load after the site (what an acquire must keep from being stale): dwordx4.
  void dataLoad(Val seed) {
    Val v = b.load(Type::vec(Type::i32(), 4), b.ptrAdd(in, b.zext(tid, Type::i64()) * 16));
    Val sum = b.extract(v, 0) + b.extract(v, 1) + b.extract(v, 2) + b.extract(v, 3);
    b.store(b.ptrAdd(out, b.zext(tid + 1024, Type::i64()) * 16), b.splat(sum + seed, 4));
  }
};

/// The ISA of a kernel whose body `f` builds.
std::string isaOf(const std::string& name, const std::function<void(K&)>& f) {
  Plan p = sitePlan(name);
  Builder b(p.kernel);
  const Type g = Type::ptr(AddrSpace::Global);
  K k{b, b.arg(0, g, "out"), b.arg(1, g, "in"), b.arg(2, Type::ptr(AddrSpace::Peer), "flags"), b.arg(3, g, "err"),
      b.arg(4, Type::i32(), "tag"), Val{}};
  b.stage(0, [&] {
    k.tid = b.tid();
    f(k);
  });
  return codegen::isaText(p);
}

/// The instruction lines of an ISA listing (no labels, directives or comments), trimmed.
std::vector<std::string> instructions(const std::string& isa) {
  std::vector<std::string> out;
  std::istringstream in(isa);
  std::string line;
  bool inText = false;
  while (std::getline(in, line)) {
    const auto c = line.find(';');
    if (c != std::string::npos) line.erase(c);
    const auto a = line.find_first_not_of(" \t");
    if (a == std::string::npos) continue;
    line = line.substr(a);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (line.rfind(".section", 0) == 0 || line.rfind(".text", 0) == 0) inText = line.find(".text") != std::string::npos;
    if (line.back() == ':' || line[0] == '.' || line[0] == '-') continue;
    if (!inText && line.find('_') == std::string::npos) continue;
    out.push_back(line);
  }
  return out;
}

/// The cache-policy bits an instruction carries: "" or some of "sc0", "sc1", "nt", in that order.
std::string bits(const std::string& ins) {
  std::string r;
  std::istringstream s(ins);
  std::string w;
  bool sc0 = false, sc1 = false, nt = false;
  while (s >> w) {
    if (w == "sc0") sc0 = true;
    if (w == "sc1") sc1 = true;
    if (w == "nt") nt = true;
  }
  if (sc0) r += "sc0";
  if (sc1) r += (r.empty() ? "" : " ") + std::string("sc1");
  if (nt) r += (r.empty() ? "" : " ") + std::string("nt");
  return r;
}
std::string mnemonic(const std::string& ins) { return ins.substr(0, ins.find_first_of(" \t")); }
bool startsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool waitsVm0(const std::string& ins) { return startsWith(ins, "s_waitcnt") && ins.find("vmcnt(0)") != std::string::npos; }
bool isVmem(const std::string& ins) {
  return startsWith(ins, "global_") || startsWith(ins, "flat_") || startsWith(ins, "buffer_load") ||
         startsWith(ins, "buffer_store") || startsWith(ins, "buffer_atomic");
}

/// Indices of the instructions whose mnemonic is `m`.
std::vector<size_t> find(const std::vector<std::string>& is, const std::string& m) {
  std::vector<size_t> r;
  for (size_t i = 0; i < is.size(); ++i)
    if (mnemonic(is[i]) == m) r.push_back(i);
  return r;
}

/// The one instruction with mnemonic `m` (the site); fails the test if there is not exactly one.
size_t site(const std::vector<std::string>& is, const std::string& m) {
  const auto v = find(is, m);
  INFO("site " << m);
  REQUIRE(v.size() == 1);
  return v[0];
}

/// What the memory model requires at one site, for the messages.
std::string where(const char* op, MemScope s) { return fmt::format("{} at {} scope", op, memScopeName(s)); }

const char* loadBits(MemScope s) { return s == MemScope::Workgroup ? "sc0" : s == MemScope::Agent ? "sc1" : "sc0 sc1"; }
/// buffer_wbl2 / buffer_inv bits at agent / system scope (none at workgroup).
const char* l2Bits(MemScope s) { return s == MemScope::Agent ? "sc1" : "sc0 sc1"; }

/// A release at `s` before the store at `at`: after the last preceding data store, a buffer_wbl2
/// with the scope's bits (agent, system), then an s_waitcnt vmcnt(0) (buffer_wbl2 counts in vmcnt:
/// the wait is what makes the writeback complete before the flag store), then the store; nothing
/// vector-memory between the wait and the store.
void checkRelease(const std::vector<std::string>& is, size_t at, MemScope s, const std::string& what) {
  INFO(what << ": release sequence before `" << is[at] << "`");
  // From the last data store before the site (or the kernel's start when there is none: the
  // release must still wait for its own writeback).
  size_t from = 0;
  for (size_t i = at; i-- > 0;)
    if (mnemonic(is[i]) == "global_store_dwordx4") {
      from = i + 1;
      break;
    }
  size_t wb = std::string::npos, wait = std::string::npos;
  for (size_t i = from; i < at; ++i) {
    if (mnemonic(is[i]) == "buffer_wbl2") {
      if (s == MemScope::Workgroup) FAIL("a workgroup release writes nothing back, found `" << is[i] << "`");
      CHECK(bits(is[i]) == l2Bits(s));
      wb = i;
    }
    if (waitsVm0(is[i]) && wb != std::string::npos) wait = i;
  }
  if (s == MemScope::Workgroup) return;
  REQUIRE(wb != std::string::npos);   // 1. buffer_wbl2
  REQUIRE(wait != std::string::npos);  // 2. s_waitcnt vmcnt(0) after it
  for (size_t i = wait + 1; i < at; ++i) CHECK_FALSE(isVmem(is[i]));
}

/// An acquire at `s` after the load at `at`: an s_waitcnt vmcnt(0), then a buffer_inv with the
/// scope's bits (agent, system), before the first following data load.
void checkAcquire(const std::vector<std::string>& is, size_t at, MemScope s, const std::string& what) {
  INFO(what << ": acquire sequence after `" << is[at] << "`");
  size_t data = std::string::npos;
  for (size_t i = at + 1; i < is.size(); ++i)
    if (mnemonic(is[i]) == "global_load_dwordx4") {
      data = i;
      break;
    }
  REQUIRE(data != std::string::npos);
  size_t wait = std::string::npos, inv = std::string::npos;
  for (size_t i = at + 1; i < data; ++i) {
    if (waitsVm0(is[i]) && inv == std::string::npos) wait = i;
    if (mnemonic(is[i]) == "buffer_inv") {
      if (s == MemScope::Workgroup) FAIL("a workgroup acquire invalidates nothing (not tgsplit), found `" << is[i] << "`");
      CHECK(bits(is[i]) == l2Bits(s));
      inv = i;
    }
  }
  if (s == MemScope::Workgroup) return;
  REQUIRE(wait != std::string::npos);  // 2. s_waitcnt vmcnt(0)
  REQUIRE(inv != std::string::npos);   // 3. buffer_inv
  CHECK(wait < inv);
}

/// No writeback or invalidate anywhere (relaxed sites).
void checkNoCacheOps(const std::vector<std::string>& is, const std::string& what) {
  INFO(what);
  CHECK(find(is, "buffer_wbl2").empty());
  CHECK(find(is, "buffer_inv").empty());
}

constexpr MemScope kScopes[] = {MemScope::Workgroup, MemScope::Agent, MemScope::System};

std::string dump(const std::vector<std::string>& is) {
  std::string r;
  for (const auto& i : is) r += "  " + i + "\n";
  return r;
}

}  // namespace

TEST_CASE("publish: an 8-byte store with the scope's bits, and a release writes L2 back first", "[codegen][scopes]") {
  for (MemScope s : kScopes)
    for (MemOrder o : {MemOrder::Release, MemOrder::Relaxed}) {
      const std::string what = where(o == MemOrder::Release ? "publish release" : "publish relaxed", s);
      const auto is = instructions(isaOf("test.scopes.publish", [&](K& k) {
        k.dataStore();
        k.b.publish(k.b.ptrAdd(k.flags, k.b.zext(k.tid, Type::i64()) * 8), k.tid, k.tag, o, s);
      }));
      INFO(what << "\n" << dump(is));
      const size_t at = site(is, "global_store_dwordx2");
      CHECK(bits(is[at]) == loadBits(s));  // store atomic monotonic / release: sc0 | sc1 | sc0 sc1
      if (o == MemOrder::Release) checkRelease(is, at, s, what);
      else checkNoCacheOps(is, what);
    }
}

TEST_CASE("a release with no store outstanding still waits for its writeback", "[codegen][scopes]") {
  // LLVM 22.1's SIInsertWaitcnts does not count buffer_wbl2 in vmcnt, so it drops the memory
  // legalizer's s_waitcnt vmcnt(0) after the writeback when nothing else is outstanding
  // (llvm/llvm-project#178316, "Fix missing waitcnt after buffer_wbl2", merged for LLVM 23):
  // the flag store could then overtake its own writeback. codegen/Lowering.cpp adds the wait.
  for (MemScope s : {MemScope::Agent, MemScope::System}) {
    const auto pub = instructions(isaOf("test.scopes.publish_alone", [&](K& k) {
      k.b.publish(k.b.ptrAdd(k.flags, k.b.zext(k.tid, Type::i64()) * 8), k.tid, k.tag, MemOrder::Release, s);
    }));
    {
      INFO("publish release alone\n" << dump(pub));
      checkRelease(pub, site(pub, "global_store_dwordx2"), s, where("publish release, nothing before it", s));
    }
    const auto st = instructions(isaOf("test.scopes.store_alone", [&](K& k) {
      k.b.store(k.b.ptrAdd(k.err, int64_t{4}), k.tid, MemOrder::Release, s);
    }));
    {
      INFO("store release alone\n" << dump(st));
      checkRelease(st, site(st, "global_store_dword"), s, where("store release, nothing before it", s));
    }
    const auto rmw = instructions(isaOf("test.scopes.rmw_alone", [&](K& k) {
      k.b.atomicRmw(RmwOp::Add, k.err, k.tid, MemOrder::AcqRel, s);
    }));
    {
      INFO("atomicrmw acq_rel alone\n" << dump(rmw));
      checkRelease(rmw, site(rmw, "global_atomic_add"), s, where("atomicrmw acq_rel, nothing before it", s));
    }
  }
}

TEST_CASE("wait: the poll has the scope's bits, and an acquire waits and invalidates before the data loads", "[codegen][scopes]") {
  for (MemScope s : kScopes)
    for (MemOrder o : {MemOrder::Acquire, MemOrder::Relaxed}) {
      const std::string what = where(o == MemOrder::Acquire ? "wait acquire" : "wait relaxed", s);
      const auto is = instructions(isaOf("test.scopes.wait", [&](K& k) {
        Val v = k.b.wait(k.b.ptrAdd(k.flags, k.b.zext(k.tid, Type::i64()) * 8), k.tag, k.b.i64(1000), k.err,
                         k.b.i32(5), 1, o, s);
        k.dataLoad(v);
      }));
      INFO(what << "\n" << dump(is));
      // The poll (LLVM peels the first iteration: two loads); every one with the scope's bits.
      const auto polls = find(is, "global_load_dwordx2");
      REQUIRE(!polls.empty());
      for (size_t i : polls) CHECK(bits(is[i]) == loadBits(s));
      const size_t at = polls.back();
      if (o == MemOrder::Acquire) checkAcquire(is, at, s, what);
      else checkNoCacheOps(is, what);
      // The timeout path's error word: cmpxchg and add at agent (system for a system wait).
      for (const char* m : {"global_atomic_cmpswap", "global_atomic_add"}) {
        const size_t e = site(is, m);
        CHECK(bits(is[e]) == (s == MemScope::System ? "sc1" : ""));
      }
    }
}

TEST_CASE("ordered loads and stores: the scope's bits, acquire and release sequences", "[codegen][scopes]") {
  for (MemScope s : kScopes) {
    {
      const std::string what = where("load acquire", s);
      const auto is = instructions(isaOf("test.scopes.load", [&](K& k) {
        Val v = k.b.load(Type::i32(), k.b.ptrAdd(k.err, int64_t{4}), MemOrder::Acquire, s);
        k.dataLoad(v);
      }));
      INFO(what << "\n" << dump(is));
      const size_t at = site(is, "global_load_dword");
      CHECK(bits(is[at]) == loadBits(s));
      checkAcquire(is, at, s, what);
    }
    {
      const std::string what = where("load relaxed", s);
      const auto is = instructions(isaOf("test.scopes.load", [&](K& k) {
        k.dataLoad(k.b.load(Type::i32(), k.b.ptrAdd(k.err, int64_t{4}), MemOrder::Relaxed, s));
      }));
      INFO(what << "\n" << dump(is));
      CHECK(bits(is[site(is, "global_load_dword")]) == loadBits(s));
      checkNoCacheOps(is, what);
    }
    for (MemOrder o : {MemOrder::Release, MemOrder::Relaxed}) {
      const std::string what = where(o == MemOrder::Release ? "store release" : "store relaxed", s);
      const auto is = instructions(isaOf("test.scopes.store", [&](K& k) {
        k.dataStore();
        k.b.store(k.b.ptrAdd(k.err, int64_t{4}), k.tid, o, s);
      }));
      INFO(what << "\n" << dump(is));
      const size_t at = site(is, "global_store_dword");
      CHECK(bits(is[at]) == loadBits(s));
      if (o == MemOrder::Release) checkRelease(is, at, s, what);
      else checkNoCacheOps(is, what);
    }
    {
      const std::string what = where("atomicrmw relaxed", s);
      const auto is = instructions(isaOf("test.scopes.rmw", [&](K& k) {
        k.b.atomicRmw(RmwOp::Add, k.err, k.tid, MemOrder::Relaxed, s);
      }));
      INFO(what << "\n" << dump(is));
      CHECK(bits(is[site(is, "global_atomic_add")]) == (s == MemScope::System ? "sc1" : ""));
      checkNoCacheOps(is, what);
    }
  }
}

TEST_CASE("fences: a release writes L2 back then waits, an acquire waits then invalidates", "[codegen][scopes]") {
  for (MemScope s : kScopes) {
    {
      const std::string what = where("fence release", s);
      const auto is = instructions(isaOf("test.scopes.fence_rel", [&](K& k) {
        k.dataStore();
        k.b.fence(MemOrder::Release, s);
        k.b.store(k.b.ptrAdd(k.err, int64_t{4}), k.tid, MemOrder::Relaxed, s);  // the fence-paired atomic
      }));
      INFO(what << "\n" << dump(is));
      checkRelease(is, site(is, "global_store_dword"), s, what);
    }
    {
      const std::string what = where("fence acquire", s);
      const auto is = instructions(isaOf("test.scopes.fence_acq", [&](K& k) {
        Val v = k.b.load(Type::i32(), k.b.ptrAdd(k.err, int64_t{4}), MemOrder::Relaxed, s);  // fence-paired
        k.b.fence(MemOrder::Acquire, s);
        k.dataLoad(v);
      }));
      INFO(what << "\n" << dump(is));
      checkAcquire(is, site(is, "global_load_dword"), s, what);
    }
  }
}

// The launch itself: the reduced S=2 TP=2 FFN kernel, cut into its stages at the "; stage <name>
// arguments" comment each stage's code starts with (codegen/Lowering.cpp, opaqueKernargPtr). Each
// stage's flag sites carry the bits of the scope the spec gives them (specs/minimax_m3/kernel/stages/Stage*.cpp):
// the all-reduce pushes (push, down) are relaxed system-scope 8-byte stores to the peers; the waits
// on them poll at system scope, relaxed (the pairs are the data: neither reduce nor final invalidates);
// the flags between this GPU's CTAs
// (reduce -> norm, router -> up -> down, the marks, done) are agent-scope releases and acquires but
// LOGIT's and ROUTE's, relaxed (router -> route -> table: the pairs are the data); the handshake's fault words are system-scope releases and acquires. Every
// buffer_wbl2 is followed by an s_waitcnt vmcnt(0) before any other vector memory op.
TEST_CASE("the FFN launch's ISA: each stage's flag sites have their scope's bits and sequences", "[codegen][scopes]") {
  // Through the CLI (this test links codegen only): monogen dump --what isa.
  const std::string cmd = MONOGEN_BINARY_DIR "/tools/monogen dump --rows 2 --tp 2 --config reduced --what isa";
  std::string isa;
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) isa.append(buf, n);
  REQUIRE(pclose(f) == 0);
  const auto is = instructions(isa);
  REQUIRE(is.size() > 1000);

  // Per stage: (mnemonic [bits]) -> count, from the stage's marker to the next one.
  std::map<std::string, std::map<std::string, int>> sites;
  {
    std::istringstream in(isa);
    std::string line, stage = "entry";
    const std::regex marker("; stage (\\w+) arguments");
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_search(line, m, marker)) {
        stage = m[1];
        continue;
      }
      for (const auto& ins : instructions(line + "\n")) {
        const std::string mn = mnemonic(ins);
        if (mn == "global_load_dwordx2" || mn == "global_store_dwordx2" || mn == "buffer_wbl2" || mn == "buffer_inv")
          ++sites[stage][mn + " [" + bits(ins) + "]"];
      }
    }
  }
  const std::string poll = "global_load_dwordx2", pair = "global_store_dwordx2";
  struct Want {
    const char* stage;
    std::vector<std::string> present, absent;
  };
  const std::string sys = " [sc0 sc1]", agent = " [sc1]";
  const std::vector<Want> wants = {
      {"push", {pair + sys}, {"buffer_wbl2" + sys, "buffer_wbl2" + agent}},  // relaxed pushes to the peers
      {"reduce", {poll + sys, "buffer_wbl2" + agent, pair + agent}, {poll + agent, "buffer_inv" + sys}},
      {"norm", {poll + agent, "buffer_inv" + agent, "buffer_wbl2" + agent, pair + agent}, {"buffer_inv" + sys, pair + sys}},
      // LOGIT and ROUTE are the data: published and awaited relaxed (the router acquires SSQ)
      {"router", {poll + agent, "buffer_inv" + agent, pair + agent}, {"buffer_wbl2" + agent, "buffer_inv" + sys, pair + sys}},
      {"route", {poll + agent, pair + agent}, {"buffer_inv" + agent, "buffer_wbl2" + agent, "buffer_inv" + sys, pair + sys}},
      {"table", {poll + agent}, {"buffer_inv" + agent, "buffer_inv" + sys}},
      {"up", {poll + agent, "buffer_inv" + agent, "buffer_wbl2" + agent, pair + agent}, {"buffer_inv" + sys}},
      {"down", {poll + agent, "buffer_inv" + agent, pair + sys}, {"buffer_wbl2" + sys}},
      {"final", {poll + sys}, {poll + agent, "buffer_inv" + agent, "buffer_inv" + sys}},
      {"mark", {"buffer_wbl2" + agent, pair + agent}, {"buffer_wbl2" + sys}},
      {"done", {"buffer_wbl2" + agent, pair + agent}, {"buffer_wbl2" + sys}},
      {"handshake", {"buffer_wbl2" + sys, pair + sys, poll + sys, "buffer_inv" + sys}, {}},
  };
  for (const Want& w : wants) {
    REQUIRE(sites.count(w.stage));
    const auto& got = sites.at(w.stage);
    std::string seen;
    for (const auto& [k, c] : got) seen += fmt::format(" {} x{};", k, c);
    INFO("stage " << w.stage << ":" << seen);
    for (const auto& k : w.present) {
      INFO("expected " << k);
      CHECK(got.count(k));
    }
    for (const auto& k : w.absent) {
      INFO("not expected " << k);
      CHECK_FALSE(got.count(k));
    }
  }

  // Every writeback is waited for before the next vector memory op (the release's store).
  int wbl2 = 0;
  for (size_t i = 0; i < is.size(); ++i) {
    if (mnemonic(is[i]) != "buffer_wbl2") continue;
    ++wbl2;
    INFO(is[i] << " at instruction " << i);
    REQUIRE((bits(is[i]) == "sc1" || bits(is[i]) == "sc0 sc1"));
    size_t j = i + 1;
    while (j < is.size() && !waitsVm0(is[j])) {
      CHECK_FALSE(isVmem(is[j]));
      ++j;
    }
    REQUIRE(j < is.size());
  }
  CHECK(wbl2 > 10);
}
