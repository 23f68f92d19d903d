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
