// The Sim device's race detector (SimOptions::races, runtime/sim/SimRaces.h): small hand-built
// kernels with and without the release/acquire, barrier or scope they need. Each racy case
// checks the report names both ops and the missing edge; each clean case checks no race at all,
// over several scheduler seeds (the detector's verdict must not depend on the interleaving).
#include <catch2/catch.hpp>

#include <string>

#include "test_sim_util.h"

using namespace simtest;
using monogen::ir::AddrSpace;
using monogen::ir::MemOrder;
using monogen::ir::MemScope;

namespace {

std::string joined(const runtime::SimStats& st) {
  std::string s;
  for (const std::string& r : st.races) s += r + "\n";
  return s;
}

/// CTA 0 (one wave) stores data[lane] = lane, then lane 0 publishes the pair with pubOrder at
/// pubScope; CTA 1 waits for the pair with waitOrder at waitScope, then reads data[lane] into
/// out[lane]. Returns the stats of `seeds` runs, all races of all of them.
struct ProducerConsumer {
  Kit k{2, 64};
  uint64_t data, pair, out, err;
  ProducerConsumer(MemOrder pubOrder, MemOrder waitOrder, MemScope pubScope = MemScope::Agent,
                   MemScope waitScope = MemScope::Agent, bool fences = false) {
    auto& b = k.b;
    Val d = k.gptr(0), p = k.gptr(1), o = k.gptr(2), e = k.gptr(3);
    Val lane = b.lane();
    Val off = b.sext(lane * 4, Type::i64());
    b.if_(b.block() == 0,
          [&] {
            b.stage(0, [&] {
              b.store(b.ptrAdd(d, off), lane);
              if (fences) b.fence(MemOrder::Release, pubScope);
              b.if_(lane == 0, [&] { b.publish(p, b.i32(7), b.i32(1), pubOrder, pubScope); });
            });
          },
          [&] {
            b.stage(1, [&] {
              b.wait(p, b.i32(1), b.i64(1'000'000), e, b.i32(1), 1, waitOrder, waitScope);
              if (fences) b.fence(MemOrder::Acquire, waitScope);
              b.store(b.ptrAdd(o, off), b.load(Type::i32(), b.ptrAdd(d, off)));
            });
          });
    data = k.alloc(256, "data");
    pair = k.alloc(8, "pair");
    out = k.alloc(256, "out");
    err = k.alloc(8, "err");
  }
  runtime::SimStats run(uint64_t seed) {
    k.write<uint64_t>(pair, {0});  // memory outlives a launch: unpublish the pair
    return k.runRaces({{data, pair, out, err}}, seed);
  }
};

}  // namespace

TEST_CASE("races: a release publish read by an acquire wait orders the data around it") {
  ProducerConsumer pc(MemOrder::Release, MemOrder::Acquire);
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto st = pc.run(seed);
    INFO(joined(st));
    CHECK(st.raceCount == 0);
    CHECK(st.races.empty());
  }
  CHECK(pc.k.read<int32_t>(pc.out, 3) == std::vector<int32_t>{0, 1, 2});
}

TEST_CASE("races: a release fence before a relaxed publish, a relaxed wait then an acquire fence: no race") {
  ProducerConsumer pc(MemOrder::Relaxed, MemOrder::Relaxed, MemScope::Agent, MemScope::Agent, /*fences=*/true);
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto st = pc.run(seed);
    INFO(joined(st));
    CHECK(st.raceCount == 0);
  }
}

TEST_CASE("races: a relaxed publish is a race on the data, naming both ops and the missing release") {
  ProducerConsumer pc(MemOrder::Relaxed, MemOrder::Acquire);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const auto st = pc.run(seed);
    const std::string r = joined(st);
    INFO(r);
    REQUIRE(st.raceCount >= 1);
    // The data word: CTA 0's store (op #..., stage 'first') then CTA 1's load (stage 'second').
    CHECK_THAT(r, Catch::Contains("race on 'data' (rank 0) + 0") && Catch::Contains("write by stage 'first'") &&
                      Catch::Contains("store (rank 0 CTA 0 wave 0)") && Catch::Contains("read by stage 'second'") &&
                      Catch::Contains("load (rank 0 CTA 1 wave 0)") &&
                      Catch::Contains("missing release") && Catch::Contains("publish"));
    // The pair itself is an atomic 8-byte access: never a race.
    CHECK_THAT(r, !Catch::Contains("'pair'"));
  }
}

TEST_CASE("races: a relaxed wait is a race on the data, naming the missing acquire") {
  ProducerConsumer pc(MemOrder::Release, MemOrder::Relaxed);
  const auto st = pc.run(1);
  const std::string r = joined(st);
  INFO(r);
  REQUIRE(st.raceCount >= 1);
  CHECK_THAT(r, Catch::Contains("race on 'data'") && Catch::Contains("missing acquire") && Catch::Contains("wait") &&
                    Catch::Contains("relaxed, not an acquire"));
}

TEST_CASE("races: a workgroup-scope publish read by another CTA is a race (scope)") {
  ProducerConsumer pc(MemOrder::Release, MemOrder::Acquire, MemScope::Workgroup, MemScope::Agent);
  const auto st = pc.run(1);
  const std::string r = joined(st);
  INFO(r);
  REQUIRE(st.raceCount >= 1);
  CHECK_THAT(r, Catch::Contains("race on 'data'") && Catch::Contains("scope: the release at workgroup scope") &&
                    Catch::Contains("CTAs 0 and 1"));
  // The pair too: a workgroup-scope atomic read by another CTA.
  CHECK_THAT(r, Catch::Contains("race on 'pair'") &&
                    Catch::Contains("scope: atomics at workgroup and agent scope do not cover CTAs 0 and 1"));
}

TEST_CASE("races: an LDS write read by another wave needs a barrier") {
  for (bool barrier : {false, true}) {
    Kit k(1, 128, 256);
    auto& b = k.b;
    Val o = k.gptr(0);
    Val lane = b.lane();
    Val lds = b.intToPtr(b.i32(0), AddrSpace::Lds);
    Val slot = b.ptrAdd(lds, lane * 4);
    b.stage(0, [&] { b.if_(b.wave() == 0, [&] { b.store(slot, lane + 100); }); });
    if (barrier) b.barrier();
    b.stage(1, [&] {
      b.if_(b.wave() == 1, [&] { b.store(b.ptrAdd(o, b.sext(lane * 4, Type::i64())), b.load(Type::i32(), slot)); });
    });
    const uint64_t out = k.alloc(256, "out");
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      const auto st = k.runRaces({{out}}, seed);
      const std::string r = joined(st);
      INFO("barrier " << barrier << ", seed " << seed << "\n" << r);
      if (barrier) {
        CHECK(st.raceCount == 0);
      } else {
        REQUIRE(st.raceCount >= 1);
        // Whichever ran first: a write then a read, or a read then a write (write-after-read).
        CHECK_THAT(r, Catch::Contains("race on LDS of CTA 0 (rank 0) + 0") && Catch::Contains("rank 0 CTA 0 wave 0") &&
                          Catch::Contains("rank 0 CTA 0 wave 1") && Catch::Contains("no barrier"));
      }
    }
  }
}

TEST_CASE("races: a publish to the other rank needs system scope") {
  for (MemScope scope : {MemScope::Agent, MemScope::System}) {
    Kit k(1, 64);
    auto& b = k.b;
    Val ownData = k.gptr(0);
    Val peerData = b.arg(1, Type::ptr(AddrSpace::Peer), "peerData");
    Val ownPair = k.gptr(2);
    Val peerPair = b.arg(3, Type::ptr(AddrSpace::Peer), "peerPair");
    Val o = k.gptr(4), e = k.gptr(5);
    Val rank = b.arg(6, Type::i32(), "rank");
    Val lane = b.lane();
    Val off = b.sext(lane * 4, Type::i64());
    b.if_(rank == 0,
          [&] {
            b.stage(0, [&] {
              b.store(b.ptrAdd(peerData, off), lane);
              b.if_(lane == 0, [&] { b.publish(peerPair, b.i32(7), b.i32(1), MemOrder::Release, scope); });
            });
          },
          [&] {
            b.stage(1, [&] {
              b.wait(ownPair, b.i32(1), b.i64(1'000'000), e, b.i32(1), 1, MemOrder::Acquire, scope);
              b.store(b.ptrAdd(o, off), b.load(Type::i32(), b.ptrAdd(ownData, off)));
            });
          });
    std::vector<uint64_t> data, pairs, outs, errs;
    for (int r = 0; r < 2; ++r) {
      data.push_back(k.alloc(256, "data", r));
      pairs.push_back(k.alloc(8, "pair", r));
      outs.push_back(k.alloc(256, "out", r));
      errs.push_back(k.alloc(8, "err", r));
    }
    const auto st = k.runRaces({{data[0], data[1], pairs[0], pairs[1], outs[0], errs[0], 0},
                                {data[1], data[0], pairs[1], pairs[0], outs[1], errs[1], 1}});
    const std::string r = joined(st);
    INFO(r);
    CHECK(k.read<int32_t>(outs[1], 2) == std::vector<int32_t>{0, 1});
    if (scope == MemScope::System) {
      CHECK(st.raceCount == 0);
    } else {
      REQUIRE(st.raceCount >= 1);
      CHECK_THAT(r, Catch::Contains("race on 'data' (rank 1) + 0") && Catch::Contains("store (rank 0 CTA 0 wave 0)") &&
                        Catch::Contains("load (rank 1 CTA 0 wave 0)") &&
                        Catch::Contains("scope: the release at agent scope") && Catch::Contains("ranks 0 and 1") &&
                        Catch::Contains("scope: atomics at agent and agent scope do not cover ranks 0 and 1"));
    }
  }
}

TEST_CASE("races: atomics of a covering scope do not race with each other, but do with plain accesses") {
  for (bool plainRead : {false, true}) {
    Kit k(2, 64);
    auto& b = k.b;
    Val c = k.gptr(0), o = k.gptr(1);
    b.if_(b.lane() == 0, [&] {
      b.atomicRmw(monogen::ir::RmwOp::Add, c, b.i32(1));
      if (plainRead) b.store(b.ptrAdd(o, b.sext(b.block() * 4, Type::i64())), b.load(Type::i32(), c));
    });
    const uint64_t cnt = k.zeroed(8, "counter"), out = k.alloc(8, "out");
    const auto st = k.runRaces({{cnt, out}});
    const std::string r = joined(st);
    INFO(r);
    CHECK(k.read<int32_t>(cnt, 1)[0] == 2);
    if (!plainRead) CHECK(st.raceCount == 0);
    else CHECK_THAT(r, Catch::Contains("race on 'counter'") && Catch::Contains("atomic write by"));
  }
}

TEST_CASE("races: a relaxed store beside a counter in one 8-byte word keeps the counter's release") {
  // CTA 0 writes data, then counts itself on cnt[1] (acq_rel); CTA 1, after it, resets cnt[0]
  // (relaxed); CTA 2 acquires cnt[1] and reads the data: ordered through cnt[1] alone.
  Kit k(3, 64);
  auto& b = k.b;
  Val d = k.gptr(0), cnt = k.gptr(1), f1 = k.gptr(2), f2 = k.gptr(3), o = k.gptr(4), e = k.gptr(5);
  Val lane = b.lane();
  Val off = b.sext(lane * 4, Type::i64());
  b.if_(b.block() == 0, [&] {
    b.store(b.ptrAdd(d, off), lane);
    b.if_(lane == 0, [&] {
      b.atomicRmw(monogen::ir::RmwOp::Add, b.ptrAdd(cnt, b.i64(4)), b.i32(1), MemOrder::AcqRel, MemScope::Agent);
      b.publish(f1, b.i32(1), b.i32(1));
    });
  });
  b.if_((b.block() == 1) & (lane == 0), [&] {
    b.wait(f1, b.i32(1), b.i64(1'000'000), e, b.i32(1), 1);
    b.store(cnt, b.i32(0), MemOrder::Relaxed, MemScope::Agent);
    b.publish(f2, b.i32(1), b.i32(1));
  });
  b.if_(b.block() == 2, [&] {
    b.wait(f2, b.i32(1), b.i64(1'000'000), e, b.i32(2), 2, MemOrder::Relaxed);
    Val n = b.load(Type::i32(), b.ptrAdd(cnt, b.i64(4)), MemOrder::Acquire, MemScope::Agent);
    b.store(b.ptrAdd(o, off), b.load(Type::i32(), b.ptrAdd(d, off)) + n);
  });
  const uint64_t data = k.alloc(256, "data"), c = k.zeroed(8, "counter"), p1 = k.zeroed(8, "f1"),
                 p2 = k.zeroed(8, "f2"), out = k.alloc(256, "out"), err = k.zeroed(8, "err");
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    k.write<int32_t>(c, {0, 0});
    k.write<uint64_t>(p1, {0});
    k.write<uint64_t>(p2, {0});
    const auto st = k.runRaces({{data, c, p1, p2, out, err}}, seed);
    INFO(joined(st));
    CHECK(st.raceCount == 0);
    CHECK(k.read<int32_t>(out, 2) == std::vector<int32_t>{1, 2});
  }
}

TEST_CASE("races: the detector is off by default and reports nothing") {
  ProducerConsumer pc(MemOrder::Relaxed, MemOrder::Relaxed);
  const auto st = pc.k.run({{pc.data, pc.pair, pc.out, pc.err}});
  CHECK(st.raceCount == 0);
  CHECK(st.races.empty());
}

TEST_CASE("races: a publish needs the other waves drained into it (their release fence, then a barrier)") {
  // mode 0: no barrier; 1: a barrier without the fence (ctaSync(false)); 2: ctaSync(drain=true).
  for (int mode : {0, 1, 2}) {
    const bool drain = mode == 2;
    // CTA 0: wave 1 stores the data, wave 0 publishes (release); CTA 1: wait (acquire), read.
    Kit k(2, 128);
    auto& b = k.b;
    Val d = k.gptr(0), p = k.gptr(1), o = k.gptr(2), e = k.gptr(3);
    Val lane = b.lane();
    Val off = b.sext(lane * 4, Type::i64());
    b.if_(b.block() == 0,
          [&] {
            b.stage(0, [&] {
              b.if_(b.wave() == 1, [&] { b.store(b.ptrAdd(d, off), lane); });
              if (drain) b.fence(MemOrder::Release, MemScope::Agent);
              if (mode >= 1) b.barrier();
              b.if_(b.wave() == 0, [&] {
                b.sleep(127);  // let wave 1 store first, so the report is the write-then-read one
                b.if_(lane == 0, [&] { b.publish(p, b.i32(7), b.i32(1)); });
              });
            });
          },
          [&] {
            b.stage(1, [&] {
              b.if_(b.wave() == 0, [&] {
                b.wait(p, b.i32(1), b.i64(1'000'000), e, b.i32(1), 1);
                b.store(b.ptrAdd(o, off), b.load(Type::i32(), b.ptrAdd(d, off)));
              });
            });
          });
    const uint64_t data = k.alloc(256, "data"), pair = k.alloc(8, "pair"), out = k.alloc(256, "out"),
                   err = k.alloc(8, "err");
    int drainNamed = 0;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      k.write<uint64_t>(pair, {0});
      const auto st = k.runRaces({{data, pair, out, err}}, seed);
      const std::string r = joined(st);
      INFO("mode " << mode << ", seed " << seed << "\n" << r);
      if (drain) {
        CHECK(st.raceCount == 0);
      } else {
        CHECK_THAT(r, Catch::Contains("race on 'data' (rank 0) + 0"));
        drainNamed += r.find("missing drain: the release op #") != std::string::npos &&
                      r.find("by wave 0 (acquired by op #") != std::string::npos &&
                      r.find("does not carry wave 1's access") != std::string::npos;
      }
    }
    if (!drain) CHECK(drainNamed > 0);
  }
}

TEST_CASE("races: a missing drain names the release after the access and not an earlier one the reader took") {
  // CTA 0: wave 0 releases p1 (a release store), wave 1 then stores the data, a barrier without
  // the drain, wave 0 publishes p2. CTA 1 waits for p2, then acquires p1 (the later join), reads
  // the data. The edge a drain would fix is p2; p1 came before the store and carries nothing of it.
  Kit k(2, 128);
  auto& b = k.b;
  Val d = k.gptr(0), p = k.gptr(1), o = k.gptr(2), e = k.gptr(3), q = k.gptr(4);
  Val lane = b.lane();
  Val off = b.sext(lane * 4, Type::i64());
  b.if_(b.block() == 0,
        [&] {
          b.stage(0, [&] {
            b.if_(b.wave() == 0, [&] { b.if_(lane == 0, [&] { b.store(q, b.i32(1), MemOrder::Release); }); });
            b.if_(b.wave() == 1, [&] {
              b.sleep(127);  // after p1
              b.store(b.ptrAdd(d, off), lane);
            });
            b.barrier();
            b.if_(b.wave() == 0, [&] { b.if_(lane == 0, [&] { b.publish(p, b.i32(7), b.i32(1)); }); });
          });
        },
        [&] {
          b.stage(1, [&] {
            b.if_(b.wave() == 0, [&] {
              b.wait(p, b.i32(1), b.i64(1'000'000), e, b.i32(1), 1);
              Val one = b.load(Type::i32(), q, MemOrder::Acquire);
              b.store(b.ptrAdd(o, off), b.load(Type::i32(), b.ptrAdd(d, off)) + one);
            });
          });
        });
  const uint64_t data = k.alloc(256, "data"), pair = k.alloc(8, "pair"), out = k.alloc(256, "out"),
                 err = k.alloc(8, "err"), p1 = k.alloc(4, "p1");
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    k.write<uint64_t>(pair, {0});
    k.write<uint32_t>(p1, {0});
    const auto st = k.runRaces({{data, pair, out, err, p1}}, seed);
    const std::string r = joined(st);
    INFO("seed " << seed << "\n" << r);
    CHECK_THAT(r, Catch::Contains("race on 'data' (rank 0) + 0"));
    CHECK_THAT(r, Catch::Contains("missing drain: the release op #") && Catch::Contains(" publish by wave 0 (acquired by op #") &&
                      Catch::Contains("does not carry wave 1's access"));
    CHECK_THAT(r, !Catch::Contains(" store by wave 0 (acquired by op #"));
  }
}

TEST_CASE("races: two waves storing distinct bytes of one word do not race but overlapping bytes do") {
  // Lane 0 of waves 0 and 1 of one CTA, no barrier between them. halves: bf16-sized stores to
  // bytes 0..1 and 2..3 (the layer's QKV store where a wave boundary splits a word); overlap:
  // wave 0 stores the whole word; read: halves, then wave 1 reads wave 0's half.
  enum Mode { halves, overlap, read };
  for (Mode mode : {halves, overlap, read}) {
    for (bool lds : {false, true}) {
      Kit k(1, 128, 64);
      auto& b = k.b;
      Val d = lds ? b.intToPtr(b.i32(0), AddrSpace::Lds) : k.gptr(0), o = k.gptr(1);
      Val w = b.wave();
      b.stage(0, [&] {
        b.if_((b.lane() == 0) & (w == 0), [&] {
          if (mode == overlap) b.store(d, b.i32(0x11112222));
          else b.store(d, b.trunc(b.i32(0x1111), Type::i16()));
        });
        b.if_((b.lane() == 0) & (w == 1), [&] {
          b.sleep(127);  // wave 0 stores first: the later accesses meet its record
          b.store(b.ptrAdd(d, b.i32(2)), b.trunc(b.i32(0x3333), Type::i16()));
          if (mode == read) b.store(o, b.load(Type::i16(), d));
        });
      });
      const uint64_t data = k.alloc(64, "data"), out = k.alloc(64, "out");
      int writeThenRead = 0;
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        const auto st = k.runRaces({{data, out}}, seed);
        const std::string r = joined(st);
        INFO("mode " << mode << ", lds " << lds << ", seed " << seed << "\n" << r);
        const std::string at = lds ? "race on LDS of CTA 0 (rank 0) + " : "race on 'data' (rank 0) + ";
        if (mode == halves) {
          CHECK(st.raceCount == 0);
          if (!lds) CHECK(k.read<uint16_t>(data, 2) == std::vector<uint16_t>{0x1111, 0x3333});
        } else {
          REQUIRE(st.raceCount >= 1);
          CHECK_THAT(r, Catch::Contains(at + (mode == overlap ? "2" : "0")) &&
                            Catch::Contains("store (rank 0 CTA 0 wave 0)") &&
                            Catch::Contains("(rank 0 CTA 0 wave 1)") && Catch::Contains("no barrier"));
          writeThenRead += r.find("write by stage 'first' op #") != std::string::npos &&
                           r.find("store (rank 0 CTA 0 wave 0), then read by") != std::string::npos;
        }
      }
      if (mode == read) CHECK(writeThenRead > 0);  // wave 0's half kept beside wave 1's later write
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Poison and the uninitialized-read check (SimRaces.h, "Uninitialized reads")

namespace {

std::string joinedUninit(const runtime::SimStats& st) {
  std::string s;
  for (const std::string& r : st.uninit) s += r + "\n";
  return s;
}

/// Declares kernel argument `index` of the Kit's plan: a pointer to `bytes` bytes in `role`.
void declareArg(Kit& k, int index, const char* name, monogen::ir::ArgRole role, int64_t bytes) {
  if (static_cast<int>(k.plan.args.size()) <= index) k.plan.args.resize(static_cast<size_t>(index) + 1);
  monogen::ir::KernelArg& a = k.plan.args[static_cast<size_t>(index)];
  a.name = name;
  a.isPointer = true;
  a.elem = monogen::ir::Scalar::I8;
  a.shape = {bytes};
  a.role = role;
}

bool isF32Nan(uint32_t w) { return (w & 0x7f800000u) == 0x7f800000u && (w & 0x7fffffu) != 0; }
bool isBf16Nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

}  // namespace

TEST_CASE("poison: LDS starts every launch poisoned, CTA by CTA, and so does every allocation") {
  Kit k(2, 64, 1024);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val lane = b.lane();
  Val lds = b.intToPtr(b.i32(0), AddrSpace::Lds);
  for (int i = 0; i < 4; ++i) {  // CTA c copies its LDS words 0..255 to out[c][..]
    Val w = lane + b.i32(64 * i);
    b.store(b.ptrAdd(out, b.sext((b.block() * 256 + w) * 4, Type::i64())), b.load(Type::i32(), b.ptrAdd(lds, w * 4)));
  }
  const uint64_t o = k.alloc(2 * 1024, "out");
  auto ldsWords = [&](uint64_t poisonSeed, uint64_t sched) {
    runtime::SimOptions opt;
    opt.seed = sched;
    opt.poisonSeed = poisonSeed;
    k.dev.run(k.plan, {{o}}, opt);
    return k.read<uint32_t>(o, 512);
  };
  const std::vector<uint32_t> a = ldsWords(0, 1);
  int f32Nan = 0, bf16Nan = 0, zero = 0, differ = 0;
  for (int i = 0; i < 512; ++i) {
    f32Nan += isF32Nan(a[i]);
    bf16Nan += isBf16Nan(static_cast<uint16_t>(a[i])) + isBf16Nan(static_cast<uint16_t>(a[i] >> 16));
    zero += a[i] == 0;
    if (i < 256) differ += a[i] != a[256 + i];
  }
  INFO("f32 NaNs " << f32Nan << ", bf16 NaNs " << bf16Nan << ", zero words " << zero << ", CTA words differing " << differ);
  CHECK(f32Nan > 128);   // a NaN (f32, bf16) wherever a read of unwritten LDS could feed a sum
  CHECK(bf16Nan > 128);
  CHECK(zero == 0);
  CHECK(differ > 240);   // each CTA its own pattern
  CHECK(ldsWords(0, 1) == a);        // seeded: the same launch, the same poison
  CHECK(ldsWords(0, 2) != a);        // by default the scheduler seed seeds it
  CHECK(ldsWords(77, 1) != ldsWords(78, 1));

  // A fresh allocation holds poison too (hipMalloc's memory is not zeroed); two differ.
  const uint64_t x = k.alloc(4096, "x"), y = k.alloc(4096, "y");
  const auto xw = k.read<uint32_t>(x, 1024), yw = k.read<uint32_t>(y, 1024);
  int xNan = 0, xZero = 0;
  for (uint32_t w : xw) {
    xNan += isF32Nan(w);
    xZero += w == 0;
  }
  CHECK(xNan > 256);
  CHECK(xZero == 0);
  CHECK(xw != yw);
}

TEST_CASE("uninit: a read of LDS or of scratch no op of the launch wrote is reported with its site") {
  // Stage 'first': wave 0 writes LDS words 0..63, scratch words 0..63 and the low bf16 of LDS
  // words 96..159; after a barrier wave 1 reads the words written (clean) and an input the host
  // wrote (never checked). Stage 'second': wave 1 reads LDS and scratch words 64..127, which
  // nothing wrote, and LDS words 96..159, half written.
  Kit k(1, 128, 1024);
  auto& b = k.b;
  declareArg(k, 0, "scratch", monogen::ir::ArgRole::Scratch, 512);
  declareArg(k, 1, "in", monogen::ir::ArgRole::Input, 256);
  declareArg(k, 2, "out", monogen::ir::ArgRole::Output, 2048);
  Val scratch = k.gptr(0), in = k.gptr(1), out = k.gptr(2);
  Val lane = b.lane();
  Val lds = b.intToPtr(b.i32(0), AddrSpace::Lds);
  auto g = [&](Val base, Val byteOff) { return b.ptrAdd(base, b.sext(byteOff, Type::i64())); };
  auto o = [&](int col) { return g(out, (lane * 8 + col) * 4); };
  b.stage(0, [&] {
    b.if_(b.wave() == 0, [&] {
      b.store(b.ptrAdd(lds, lane * 4), lane);
      b.store(g(scratch, lane * 4), lane);
      b.store(b.ptrAdd(lds, lane * 4 + 384), b.f32ToBf16(b.f32(1.0)));
    });
    b.barrier();
    b.if_(b.wave() == 1, [&] {
      b.store(o(0), b.load(Type::i32(), b.ptrAdd(lds, lane * 4)));
      b.store(o(1), b.load(Type::i32(), g(scratch, lane * 4)));
      b.store(o(2), b.load(Type::i32(), g(in, lane * 4)));
    });
  });
  b.stage(1, [&] {
    b.if_(b.wave() == 1, [&] {
      b.store(o(3), b.load(Type::i32(), b.ptrAdd(lds, lane * 4 + 256)));
      b.store(o(4), b.load(Type::i32(), g(scratch, lane * 4 + 256)));
      b.store(o(5), b.load(Type::i32(), b.ptrAdd(lds, lane * 4 + 384)));
    });
  });
  const uint64_t s = k.alloc(512, "scratch.r0"), i = k.alloc(256, "in"), ob = k.alloc(2048, "out");
  k.write(i, std::vector<int32_t>(64, 5));
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const auto st = k.runRaces({{s, i, ob}}, seed);
    const std::string r = joinedUninit(st);
    INFO("seed " << seed << "\n" << r);
    CHECK(st.raceCount == 0);
    CHECK(st.uninitCount == 3);
    CHECK(st.findings() == 3);
    REQUIRE(st.uninit.size() == 3);
    // every report is stage 'second', wave 1: the clean reads of stage 'first' are not among them
    for (const std::string& u : st.uninit)
      CHECK_THAT(u, Catch::Contains("by stage 'second' op #") && Catch::Contains(" load (rank 0 CTA 0 wave 1)"));
    CHECK_THAT(r, Catch::Contains("uninitialized read of LDS of CTA 0 (rank 0) + 256: 4 of the 4 bytes read no op of "
                                  "this launch wrote"));
    CHECK_THAT(r, Catch::Contains("uninitialized read of 'scratch.r0' (rank 0) + 256 (argument 'scratch'): 4 of the 4 "
                                  "bytes read"));
    CHECK_THAT(r, Catch::Contains("uninitialized read of LDS of CTA 0 (rank 0) + 386: 2 of the 4 bytes read"));
  }
  // What the unwritten reads returned: the poison, not 0.
  int poisoned = 0;
  const auto got = k.read<uint32_t>(ob, 512);
  for (int l = 0; l < 64; ++l) {
    CHECK(got[l * 8 + 0] == static_cast<uint32_t>(l));
    CHECK(got[l * 8 + 2] == 5u);
    poisoned += got[l * 8 + 3] != 0 && got[l * 8 + 4] != 0;
  }
  CHECK(poisoned == 64);
  // Off (the default), nothing is checked.
  CHECK(k.run({{s, i, ob}}).uninitCount == 0);
}

TEST_CASE("uninit: a wait reading a stale pair is its protocol, an atomic re-read of that pair too, others are not") {
  // mode 0: a bounded wait on a pair that keeps the last launch's tag (it times out), then a
  // relaxed atomic read of the pair's tag (as the handshake does): clean. mode 1: the same, the
  // re-read a plain load: reported. mode 2: an atomic read of a pair no wait read: reported.
  for (int mode : {0, 1, 2}) {
    Kit k(1, 64);
    auto& b = k.b;
    declareArg(k, 0, "scratch", monogen::ir::ArgRole::Scratch, 16);
    declareArg(k, 1, "err", monogen::ir::ArgRole::Control, 8);
    declareArg(k, 2, "out", monogen::ir::ArgRole::Output, 16);
    Val scratch = k.gptr(0), err = k.gptr(1), out = k.gptr(2);
    Val lane = b.lane();
    b.stage(0, [&] {
      b.if_(lane < 2, [&] {
        Val p = b.ptrAdd(scratch, b.sext(lane * 8, Type::i64()));
        Val v = mode == 2 ? b.i32(0) : b.wait(p, b.i32(5), b.i64(200), err, b.i32(1), 1);
        Val tag = b.load(Type::i32(), b.ptrAdd(p, 4), mode == 1 ? MemOrder::Plain : MemOrder::Relaxed, MemScope::Agent);
        b.store(b.ptrAdd(out, b.sext(lane * 8, Type::i64())), v);
        b.store(b.ptrAdd(out, b.sext(lane * 8 + 4, Type::i64())), tag);
      });
    });
    const uint64_t s = k.alloc(16, "scratch.r0"), e = k.zeroed(8, "err"), o = k.alloc(16, "out");
    k.write(s, std::vector<int32_t>{11, 4, 0, 0});  // pair 0 from the last launch (tag 4), pair 1 the host's zero
    const auto st = k.runRaces({{s, e, o}});
    const std::string r = joinedUninit(st);
    INFO("mode " << mode << "\n" << r);
    CHECK(st.raceCount == 0);
    CHECK(st.waitTimeouts == (mode == 2 ? 0 : 2));
    CHECK(k.read<int32_t>(o, 4) == std::vector<int32_t>{mode == 2 ? 0 : 11, 4, 0, 0});
    if (mode == 0) {
      CHECK(st.uninitCount == 0);
    } else {
      CHECK(st.uninitCount == 1);
      CHECK_THAT(r, Catch::Contains("uninitialized read of 'scratch.r0' (rank 0) + 4 (argument 'scratch'): 4 of the 4 "
                                    "bytes read no op of this launch wrote, by stage 'first' op #") &&
                        Catch::Contains(" load (rank 0 CTA 0 wave 0)"));
    }
  }
}
