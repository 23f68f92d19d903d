// Codegen: kernel IR -> LLVM IR -> gfx950 code object, linked in-process, metadata read back
// and checked. Plans are built by hand with ir::Builder (512-thread CTAs, a few arguments).
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "codegen/Compiler.h"
#include "codegen/Internal.h"
#include "ir/Builder.h"
#include "ir/Error.h"

using namespace monogen;
using namespace monogen::ir;

namespace {

/// A Plan with 512-thread CTAs and pointer and scalar arguments of mixed sizes.
Plan basePlan(const std::string& spec, int64_t ldsBytes) {
  Plan p;
  p.key.spec = spec;
  p.key.params = {{"S", 1}, {"TP", 1}};  // the names below read "..._S1_TP1"
  p.key.target = gfx950();
  p.grid = {4, 512};
  p.ldsBytes = ldsBytes;
  p.args = {
      {"out", true, Scalar::F32, {4096}, ArgRole::Output, 16, ""},
      {"in", true, Scalar::BF16, {8192}, ArgRole::Input, 16, ""},
      {"flags", true, Scalar::I64, {64}, ArgRole::Scratch, 8, ""},
      {"err", true, Scalar::I32, {2}, ArgRole::Control, 4, ""},
      {"tag", false, Scalar::I32, {}, ArgRole::Control, 4, ""},
      {"bound", false, Scalar::I64, {}, ArgRole::Control, 8, ""},
      {"seed", false, Scalar::I32, {}, ArgRole::Control, 4, ""},
  };
  Stage s;
  s.name = "main";
  s.tasks = 4;
  p.stages.push_back(s);
  p.kernel.name = spec;
  return p;
}

struct Args {
  Val out, in, flags, err, tag, bound, seed;
};
Args args(Builder& b) {
  const Type g = Type::ptr(AddrSpace::Global);
  return {b.arg(0, g, "out"), b.arg(1, g, "in"), b.arg(2, Type::ptr(AddrSpace::Peer), "flags"), b.arg(3, g, "err"),
          b.arg(4, Type::i32(), "tag"), b.arg(5, Type::i64(), "bound"), b.arg(6, Type::i32(), "seed")};
}

/// One kernel that uses every opcode of the IR.
Plan everyOpPlan() {
  Plan p = basePlan("test.codegen.all_ops", 8192);
  Builder b(p.kernel);
  Args a = args(b);
  b.stage(0, [&] {
    Val tid = b.tid(), lane = b.lane(), wave = b.wave(), blk = b.block();
    // Integer arithmetic.
    Val x = tid + a.seed;
    x = x - b.i32(1);
    x = x * 3;
    x = x / (lane - 7);  // a variable divisor: the -1 / 0 guards stay
    x = x + (tid % 5);
    x = x + b.udiv(tid, b.i32(3)) + b.urem(tid, b.i32(6));
    x = (x & 0xff) | (x ^ lane);
    x = (x << wave) + b.lshr(x, b.i32(3)) + (x >> 2);
    x = b.min(x, blk) + b.max(x, b.i32(4)) + b.umin(x, b.i32(9)) + b.umax(x, lane);
    // Float arithmetic and comparisons.
    Val f = b.siToFp(x) + 1.5;
    f = (f - 0.25) * 3.0 / b.uiToFp(lane + 1);
    f = b.fma(b.min(f, b.f32(100)), b.max(f, b.f32(-2)), f);
    Val c = f > 2.0;
    f = b.select(c, f, -f);
    // Conversions.
    Val fbits = b.bitcast(f, Type::i32());
    Val h = b.zext(b.trunc(fbits, Type::i16()), Type::i32());
    Val wide = b.sext(x, Type::i64());
    Val bf = b.f32ToBf16(f);
    Val g = b.bf16ToF32(bf) + b.bf16ToF32(b.bf16(2.0));
    g = g + b.fp4ToF32(h & 15, b.e8m0ToF32(h >> 4)) + b.fp8ToF32(h & 0xff);
    g = g + b.bf16ToF32(b.extract(b.fp4x8ToBf16x8(fbits, b.e8m0ToF32(h >> 8)), 5));
    Val q = b.f32ToFp8(g) + b.f32x2ToFp8x2(g, f) + b.fpToSi(g, Type::i32());
    // Math.
    g = b.exp2(g) + b.rcp(g) + b.rsq(b.sqrt(g)) + b.unary(OpCode::Abs, g);
    // Pointers and memory.
    Val inRow = b.ptrAdd(a.in, b.zext(tid, Type::i64()) * 16);
    Val va = b.load(Type::vec(Type::bf16(), 8), inRow);
    Val vb = b.load(Type::vec(Type::bf16(), 8), b.ptrAdd(inRow, int64_t{8192}));
    Val acc = b.splat(g, 4);
    acc = b.insert(acc, b.siToFp(q), 1);
    acc = b.mfma(MfmaKind::F32_16x16x32_BF16, va, vb, acc);
    acc = b.mfma(MfmaKind::F32_16x16x4_F32, b.extract(acc, 0), b.extract(acc, 1), acc);
    Val words = b.load(Type::vec(Type::i32(), 4), inRow);
    acc = b.mfmaScale(b.concat(words, b.bitcast(vb, Type::vec(Type::i32(), 4))), words, acc, h, h >> 8);
    Val outAddr = b.ptrToInt(a.out);
    Val out = b.intToPtr(outAddr, AddrSpace::Global);
    Val lds = b.intToPtr(tid * 16, AddrSpace::Lds);
    b.store(lds, acc);
    b.barrier();
    Val peerLds = b.intToPtr((b.ptrToInt(lds) + 16) & 8191, AddrSpace::Lds);
    Val back = b.load(Type::vec(Type::f32(), 4), peerLds);
    Val s = b.extract(back, 0) + b.extract(back, 3);
    // Wave ops.
    s = b.butterfly(s, {32, 16, 8, 4, 2, 1});
    Val w64 = b.shuffle(wide, lane ^ 1);
    Val bal = b.ballot(c);
    Val cnt = b.popcount(bal) + b.popcount(h);
    Val first = b.readFirstLane(x) + b.ctaUniform(b.block());
    // Atomics and fences.
    Val ctr = b.ptrAdd(a.err, int64_t{4});
    Val old = b.atomicRmw(RmwOp::Add, ctr, b.i32(1));
    Val prev = b.cmpXchg(a.err, b.i32(0), b.i32(7));
    b.atomicRmw(RmwOp::Add, b.ptrAdd(out, int64_t{64}), s);
    b.fence(MemOrder::Release, MemScope::Agent);
    Val relaxed = b.load(Type::i32(), a.err, MemOrder::Relaxed, MemScope::Agent);
    Val acq = b.load(Type::i64(), a.flags, MemOrder::Acquire, MemScope::System);
    b.store(b.ptrAdd(a.err, int64_t{8}), relaxed + old, MemOrder::Relaxed, MemScope::Workgroup);
    b.store(b.ptrAdd(a.flags, int64_t{8}), acq + w64, MemOrder::Release, MemScope::Agent);
    // Sync.
    Val pair = b.ptrAdd(a.flags, b.zext(blk, Type::i64()) * 8);
    b.if_(tid == 0, [&] { b.publish(pair, cnt + prev + first, a.tag); });
    Val seen = b.wait(b.ptrAdd(a.flags, int64_t{256}), a.tag, a.bound, a.err, b.i32(3), 1, MemOrder::Acquire,
                      MemScope::System);
    // Time.
    Val t0 = b.realtime();
    b.sleep(2);
    // Variables and control flow.
    Var sum = b.var(s, "sum");
    b.for_(b.i32(0), seen & 7, b.i32(1), [&](Val i) { b.set(sum, b.get(sum) + b.siToFp(i)); });
    Var n = b.var(b.i32(0), "n");
    b.while_([&] { return b.get(n) < 3; }, [&] { b.set(n, b.get(n) + 1); });
    b.if_(
        c, [&] { b.set(sum, b.get(sum) * 2.0); }, [&] { b.set(sum, b.get(sum) - 1.0); });
    Val res = b.get(sum) + b.siToFp(b.trunc(b.realtime() - t0, Type::i32())) + b.siToFp(b.get(n));
    b.store(b.ptrAdd(out, b.zext(tid, Type::i64()) * 4), res);
  });
  return p;
}

void collect(const Region& r, std::set<OpCode>& seen) {
  for (const Op& op : r.ops) {
    seen.insert(op.code);
    for (const Region& sub : op.regions) collect(sub, seen);
  }
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  pclose(f);
  return out;
}

template <class F>
std::string codegenError(F&& f, const Plan& p) {
  try {
    f();
  } catch (const CodegenError& e) {
    CHECK(e.where() == p.key.variantName());
    return e.what();
  }
  FAIL("expected a CodegenError");
  return {};
}

}  // namespace

TEST_CASE("a kernel using every opcode compiles, links and meets the limits", "[codegen]") {
  const Plan p = everyOpPlan();
  std::set<OpCode> seen;
  collect(p.kernel.body, seen);
  for (int c = 0; c <= static_cast<int>(OpCode::StageScope); ++c) {
    INFO("opcode " << opName(static_cast<OpCode>(c)));
    CHECK(seen.count(static_cast<OpCode>(c)) == 1);
  }

  const auto t0 = std::chrono::steady_clock::now();
  const codegen::CodeObject co = codegen::compile(p);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN(fmt::format("compile of {}: {:.3f} s (lower {:.3f}, O3 {:.3f}, codegen {:.3f}, link {:.3f}); {} VGPR, {} AGPR, "
                   "{} SGPR, {} bytes",
                   p.key.variantName(), secs, co.times.wall.lower, co.times.wall.optimize, co.times.wall.codegen, co.times.wall.link,
                   co.info.vgprs, co.info.agprs, co.info.sgprs, co.bytes.size()));

  const codegen::CodeObjectInfo& info = co.info;
  CHECK(info.kernelSymbol == codegen::kernelSymbol(p));
  CHECK(info.kernelSymbol == "monogen_test_codegen_all_ops_S1_TP1");
  CHECK(info.target == "amdgcn-amd-amdhsa--gfx950:sramecc+:xnack-");
  CHECK(info.scratchBytes == 0);
  CHECK(info.vgprSpills == 0);
  CHECK(info.sgprSpills == 0);
  CHECK(info.wavefrontSize == 64);
  CHECK(info.maxFlatWorkgroupSize == 512);
  CHECK(info.ldsBytes == 8192);
  CHECK(info.vgprs > 0);
  CHECK(info.vgprs <= p.target().regBudgetPerWave(512));

  // The explicit arguments sit at the Plan's kernarg offsets, with its sizes and names.
  const std::vector<int> offs = p.kernargOffsets();
  REQUIRE(offs == std::vector<int>{0, 8, 16, 24, 32, 40, 48});
  std::vector<codegen::ArgMeta> explicitArgs;
  for (const auto& a : info.args)
    if (a.valueKind.rfind("hidden_", 0) != 0) explicitArgs.push_back(a);
  REQUIRE(explicitArgs.size() == p.args.size());
  for (size_t i = 0; i < p.args.size(); ++i) {
    INFO("argument " << p.args[i].name);
    CHECK(explicitArgs[i].offset == offs[i]);
    CHECK(explicitArgs[i].size == p.args[i].kernargSize());
    CHECK(explicitArgs[i].name == p.args[i].name);
    CHECK(explicitArgs[i].valueKind == (p.args[i].isPointer ? "global_buffer" : "by_value"));
  }
  CHECK_NOTHROW(codegen::checkLimits(info, p));

  // The same facts from llvm-readelf on the file.
  char dir[] = "/tmp/monogen-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string file = std::string(dir) + "/k.hsaco";
  {
    std::ofstream f(file, std::ios::binary);
    f.write(reinterpret_cast<const char*>(co.bytes.data()), static_cast<std::streamsize>(co.bytes.size()));
  }
  const std::string elf = run("/usr/lib/llvm-22/bin/llvm-readelf --notes -h " + file + " 2>&1");
  std::remove(file.c_str());
  rmdir(dir);
  CHECK(elf.find("DYN (Shared object file)") != std::string::npos);
  CHECK(elf.find("gfx950") != std::string::npos);
  CHECK(elf.find("NT_AMDGPU_METADATA") != std::string::npos);
  CHECK(elf.find(".vgpr_count") != std::string::npos);
}

TEST_CASE("the ISA text and the LLVM IR show the lowered ops", "[codegen]") {
  const Plan p = everyOpPlan();
  const std::string isa = codegen::isaText(p);
  CHECK(isa.find("v_mfma_f32_16x16x32_bf16") != std::string::npos);
  CHECK(isa.find("v_mfma_f32_16x16x4_f32") != std::string::npos);
  CHECK(isa.find("s_barrier") != std::string::npos);
  CHECK(isa.find("global_load") != std::string::npos);
  CHECK(isa.find("ds_bpermute_b32") != std::string::npos);
  CHECK(isa.find("s_memrealtime") != std::string::npos);
  CHECK(isa.find("s_sleep") != std::string::npos);
  // GFX942 memory model (gfx950 follows it): agent release, agent and system acquire.
  CHECK(isa.find("buffer_wbl2 sc1") != std::string::npos);
  CHECK(isa.find("buffer_inv sc1") != std::string::npos);
  CHECK(isa.find("buffer_inv sc0 sc1") != std::string::npos);
  CHECK(isa.find("scratch_") == std::string::npos);

  const std::string raw = codegen::llvmIr(p, false);
  CHECK(raw.find("define amdgpu_kernel void @monogen_test_codegen_all_ops_S1_TP1(") != std::string::npos);
  CHECK(raw.find("\"amdgpu-flat-work-group-size\"=\"512,512\"") != std::string::npos);
  CHECK(raw.find("\"uniform-work-group-size\"=\"true\"") != std::string::npos);
  CHECK(raw.find("@monogen.lds = internal addrspace(3) global [8192 x i8] poison, align 16") != std::string::npos);
  CHECK(raw.find("alloca") != std::string::npos);
  CHECK(raw.find("syncscope(\"agent\") release") != std::string::npos);
  CHECK(raw.find("fence syncscope(\"workgroup\") acquire") != std::string::npos);
  const std::string opt = codegen::llvmIr(p, true);
  CHECK(opt.find("alloca") == std::string::npos);  // mem2reg/SROA removed every variable
  CHECK(opt.find(" fast ") == std::string::npos);
}

TEST_CASE("LDS over 160 KiB is refused, naming the variant", "[codegen]") {
  Plan p = basePlan("test.codegen.big_lds", 200 * 1024);
  Builder b(p.kernel);
  Args a = args(b);
  Val lds = b.intToPtr(b.tid() * 4, AddrSpace::Lds);
  b.store(lds, b.tid());
  b.barrier();
  b.store(b.ptrAdd(a.out, b.zext(b.tid(), Type::i64()) * 4), b.load(Type::i32(), lds));

  std::string msg = codegenError([&] { codegen::compile(p); }, p);
  CHECK(msg.find("test.codegen.big_lds-S1-TP1") != std::string::npos);
  CHECK(msg.find("204800") != std::string::npos);
  CHECK(msg.find("163840") != std::string::npos);

  // checkLimits itself, on a code object that does fit, against an oversized Plan/read-back.
  Plan small = p;
  small.ldsBytes = 4096;
  const codegen::CodeObject co = codegen::compile(small);
  CHECK(co.info.ldsBytes == 4096);
  msg = codegenError([&] { codegen::checkLimits(co.info, p); }, p);
  CHECK(msg.find("204800") != std::string::npos);
  codegen::CodeObjectInfo big = co.info;
  big.ldsBytes = 170 * 1024;
  msg = codegenError([&] { codegen::checkLimits(big, small); }, small);
  CHECK(msg.find("174080 bytes of LDS") != std::string::npos);
  CHECK(msg.find("163840") != std::string::npos);
}

TEST_CASE("checkLimits names every figure against its limit", "[codegen]") {
  Plan p = basePlan("test.codegen.limits", 0);
  codegen::CodeObjectInfo ok;
  ok.target = "amdgcn-amd-amdhsa--gfx950:sramecc+:xnack-";
  ok.vgprs = 128;
  ok.maxFlatWorkgroupSize = 512;
  ok.wavefrontSize = 64;
  const auto offs = p.kernargOffsets();
  for (size_t i = 0; i < p.args.size(); ++i)
    ok.args.push_back({p.args[i].name, offs[i], p.args[i].kernargSize(), p.args[i].isPointer ? "global_buffer" : "by_value"});
  ok.args.push_back({"", 56, 4, "hidden_block_count_x"});
  CHECK_NOTHROW(codegen::checkLimits(ok, p));

  auto bad = ok;
  bad.vgprs = 200;
  bad.agprs = 64;  // 136 arch VGPRs + 64 AGPRs within the unified count 200: fits
  CHECK_NOTHROW(codegen::checkLimits(bad, p));
  bad.vgprs = 260;
  CHECK(codegenError([&] { codegen::checkLimits(bad, p); }, p).find("260 VGPRs + AGPRs") != std::string::npos);
  bad = ok;
  bad.scratchBytes = 16;
  CHECK(codegenError([&] { codegen::checkLimits(bad, p); }, p).find("16 bytes of scratch") != std::string::npos);
  bad = ok;
  bad.vgprSpills = 3;
  CHECK(codegenError([&] { codegen::checkLimits(bad, p); }, p).find("3 VGPRs spilled") != std::string::npos);
  bad = ok;
  bad.maxFlatWorkgroupSize = 1024;
  CHECK(codegenError([&] { codegen::checkLimits(bad, p); }, p).find("max flat workgroup size 1024") !=
        std::string::npos);
  bad = ok;
  bad.args[5].offset = 36;
  CHECK(codegenError([&] { codegen::checkLimits(bad, p); }, p).find("'bound' at kernarg offset 36") !=
        std::string::npos);
  bad = ok;
  bad.args.erase(bad.args.begin() + 6);
  CHECK(codegenError([&] { codegen::checkLimits(bad, p); }, p).find("6 kernel arguments; the Plan has 7") !=
        std::string::npos);
}

TEST_CASE("a kernel that needs too many registers is reported, naming the variant", "[codegen]") {
  Plan p = basePlan("test.codegen.pressure", 0);
  Builder b(p.kernel);
  Args a = args(b);
  Val base = b.ptrAdd(a.in, b.zext(b.tid(), Type::i64()) * 4);
  // 320 f32 values live in one lane across a barrier (the budget is 256), summed at the end.
  const int n = 320;
  std::vector<Val> vals;
  for (int i = 0; i < n; ++i) vals.push_back(b.load(Type::f32(), b.ptrAdd(base, int64_t{i} * 2048)));
  b.barrier();
  Val s = b.f32(0);
  for (int i = n - 1; i >= 0; --i) s = s * 1.0001 + vals[i];
  b.store(b.ptrAdd(a.out, b.zext(b.tid(), Type::i64()) * 4), s);

  const std::string msg = codegenError([&] { codegen::compile(p); }, p);
  CHECK(msg.find("test.codegen.pressure-S1-TP1") != std::string::npos);
  const bool named = msg.find("scratch") != std::string::npos || msg.find("spilled") != std::string::npos ||
                     msg.find("VGPRs + AGPRs") != std::string::npos;
  CHECK(named);
  WARN(msg);

  // The error carries the refused object's figures: those of a compile that does not check them.
  codegen::CompileOptions unchecked;
  unchecked.checkLimits = false;
  const codegen::CodeObject co = codegen::compile(p, unchecked);
  try {
    codegen::compile(p);
    FAIL("a kernel over its limits compiled");
  } catch (const codegen::LimitsError& e) {
    CHECK(e.info.vgprs == co.info.vgprs);
    CHECK(e.info.scratchBytes == co.info.scratchBytes);
    CHECK(e.info.vgprSpills == co.info.vgprSpills);
    CHECK(e.info.sgprs == co.info.sgprs);
    CHECK(e.codeBytes == co.bytes.size());
  }
}

TEST_CASE("dump the every-op kernel (run explicitly)", "[.dump]") {
  const Plan p = everyOpPlan();
  std::ofstream(MONOGEN_BINARY_DIR "/all_ops.ll") << codegen::llvmIr(p, false);
  std::ofstream(MONOGEN_BINARY_DIR "/all_ops.opt.ll") << codegen::llvmIr(p, true);
  std::ofstream(MONOGEN_BINARY_DIR "/all_ops.s") << codegen::isaText(p);
  const codegen::CodeObject co = codegen::compile(p);
  std::ofstream(MONOGEN_BINARY_DIR "/all_ops.hsaco", std::ios::binary)
      .write(reinterpret_cast<const char*>(co.bytes.data()), static_cast<std::streamsize>(co.bytes.size()));
}

TEST_CASE("lld and metadata failures are CodegenErrors, lld runs again afterwards", "[codegen]") {
  const std::vector<uint8_t> junk = {0x7f, 'E', 'L', 'F', 1, 2, 3};
  try {
    codegen::detail::link(junk, "test.variant");
    FAIL("linking junk succeeded");
  } catch (const CodegenError& e) {
    CHECK(e.where() == "test.variant");
    CHECK(std::string(e.what()).find("ld.lld") != std::string::npos);
  }
  CHECK_THROWS_AS(codegen::readMetadata(junk), CodegenError);

  const Plan p = everyOpPlan();
  const codegen::CodeObject co = codegen::compile(p);  // lld works after a failed link
  auto patched = co.bytes;
  patched[16] = 1;  // e_type ET_REL
  CHECK_THROWS_WITH(codegen::readMetadata(patched), Catch::Contains("expected ET_DYN"));
  patched = co.bytes;
  patched[48] = 0x4c;  // e_flags mach gfx942
  CHECK_THROWS_WITH(codegen::readMetadata(patched), Catch::Contains("expected gfx950"));
  patched = co.bytes;
  patched[49] ^= 0x04;  // e_flags: sramecc on -> any
  CHECK_THROWS_WITH(codegen::readMetadata(patched), Catch::Contains("sramecc+ xnack-"));
}

TEST_CASE("compiles on several threads at once", "[codegen]") {
  std::vector<codegen::CodeObject> results(3);
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&, i] {
      Plan p = everyOpPlan();
      p.key.setParam("S", i + 1);
      try {
        results[i] = codegen::compile(p);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 3; ++i) {
    INFO(errors[i]);
    CHECK(errors[i].empty());
    CHECK(results[i].info.kernelSymbol == fmt::format("monogen_test_codegen_all_ops_S{}_TP1", i + 1));
  }
}

TEST_CASE("ops over every type width and vector shape lower and compile", "[codegen]") {
  Plan p = basePlan("test.codegen.types", 4096);
  Builder b(p.kernel);
  Args a = args(b);
  Val tid = b.tid(), lane = b.lane();
  Val row = b.ptrAdd(a.in, b.zext(tid, Type::i64()) * 16);
  const Type bf8 = Type::vec(Type::bf16(), 8), f4 = Type::vec(Type::f32(), 4), i2 = Type::vec(Type::i32(), 2);
  // bf16 vectors: arithmetic, min/max, compare, select, conversions.
  Val v = b.load(bf8, row);
  Val w = b.load(bf8, b.ptrAdd(row, int64_t{8192}));
  Val bsum = b.max(b.min(v * w + v, w - v), v / w);
  Val bsel = b.select(b.cmp(CmpPred::Olt, v, w), bsum, v);
  Val wide = b.bf16ToF32(bsel);  // <8 x f32>
  Val f4v = b.load(f4, b.ptrAdd(a.out, int64_t{16}));
  f4v = b.fma(b.extract(f4v, 0), b.extract(f4v, 1), b.extract(wide, 7)) + b.extract(f4v / f4v, 2);
  // Narrow and wide integers, and integer vectors.
  Val i16v = b.trunc(tid, Type::i16());
  i16v = (i16v * i16v) + b.udiv(i16v, b.constInt(Type::i16(), 3)) + (i16v >> b.constInt(Type::i16(), 17));
  Val i8v = b.trunc(tid, Type::i8()) ^ b.constInt(Type::i8(), 0x5a);
  Val i64v = b.sext(tid, Type::i64());
  i64v = i64v / b.i64(-3) + i64v % b.i64(7) + b.urem(i64v, b.i64(11)) + (i64v << b.i64(70));
  Val iv2 = b.load(i2, b.ptrAdd(a.err, int64_t{0}));
  iv2 = (iv2 << b.splat(b.i32(33), 2)) + b.umax(iv2, b.splat(lane, 2));
  // Booleans in memory and in variables; shuffles and readfirstlane of every width.
  Val flag = b.load(Type::i1(), b.ptrAdd(a.err, int64_t{12}));
  Var bv = b.var(flag, "bv");
  b.set(bv, b.get(bv) ^ (lane > 5));
  b.store(b.ptrAdd(a.err, int64_t{13}), b.shuffle(b.get(bv), lane + 1));
  Val sb = b.shuffle(b.extract(v, 0), lane ^ 3);
  Val s8 = b.shuffle(v, lane ^ 7);
  Val sp = b.shuffle(a.out, lane);
  Val lds = b.intToPtr(tid * 8, AddrSpace::Lds);
  Val slds = b.shuffle(lds, lane ^ 1);
  Val rp = b.readFirstLane(a.out);
  Val r64 = b.readFirstLane(i64v);
  Val rb = b.readFirstLane(b.extract(w, 1));
  Val r16 = b.readFirstLane(i16v);
  // LDS atomics and ordered accesses of non-integer types.
  b.store(slds, b.f32(1.0));
  b.atomicRmw(RmwOp::Add, lds, b.f32(2.0), MemOrder::Relaxed, MemScope::Workgroup);
  b.atomicRmw(RmwOp::UMax, b.ptrAdd(lds, int64_t{4}), tid, MemOrder::AcqRel, MemScope::Workgroup);
  b.cmpXchg(b.ptrAdd(a.flags, int64_t{0}), i64v, r64, MemOrder::SeqCst, MemScope::System);
  b.fence(MemOrder::SeqCst, MemScope::Workgroup);
  b.fence(MemOrder::AcqRel, MemScope::System);
  Val fa = b.load(Type::f32(), lds, MemOrder::Acquire, MemScope::Workgroup);
  Val pa = b.load(Type::ptr(AddrSpace::Global), b.ptrAdd(a.flags, int64_t{8}), MemOrder::Acquire, MemScope::Agent);
  b.store(pa, fa, MemOrder::Release, MemScope::System);
  b.store(b.ptrAdd(rp, int64_t{32}), b.roundBf16(f4v), MemOrder::Relaxed, MemScope::Agent);
  b.store(b.ptrAdd(sp, int64_t{64}), s8);
  b.store(b.ptrAdd(sp, int64_t{80}), b.bitcast(b.zext(i8v, Type::i32()) + b.zext(r16, Type::i32()), Type::f32()));
  b.store(b.ptrAdd(sp, int64_t{84}), sb);
  b.store(b.ptrAdd(sp, int64_t{88}), rb);
  b.store(b.ptrAdd(sp, int64_t{96}), iv2);
  b.store(b.ptrAdd(sp, int64_t{104}), r64 + b.zext(b.ptrToInt(slds), Type::i64()));
  b.publish(b.ptrAdd(a.flags, int64_t{16}), b.i32(1), a.tag, MemOrder::Relaxed, MemScope::Workgroup);
  b.wait(b.ptrAdd(a.flags, int64_t{24}), a.tag, a.bound, a.err, b.i32(9), 2, MemOrder::Relaxed, MemScope::Agent);

  const codegen::CodeObject co = codegen::compile(p);
  CHECK(co.info.scratchBytes == 0);
  CHECK(co.info.ldsBytes == 4096);
}

TEST_CASE("malformed kernels are CodegenErrors naming the variant and the op", "[codegen]") {
  SECTION("LDS use without an LDS allocation") {
    Plan p = basePlan("test.codegen.no_lds", 0);
    Builder b(p.kernel);
    b.store(b.intToPtr(b.tid() * 4, AddrSpace::Lds), b.tid());
    try {
      codegen::compile(p);
      FAIL("compiled");
    } catch (const CodegenError& e) {
      CHECK(e.where().find("test.codegen.no_lds-S1-TP1, op int_to_ptr") == 0);
      CHECK(std::string(e.what()).find("ldsBytes = 0") != std::string::npos);
    }
  }
  SECTION("a value used outside the region that defines it") {
    Plan p = basePlan("test.codegen.scope", 0);
    Builder b(p.kernel);
    Args a = args(b);
    Val inner;
    b.if_(b.tid() < 3, [&] { inner = b.tid() * 2; });
    b.store(a.err, inner);
    const std::string msg = codegenError([&] { codegen::compile(p); }, p);
    CHECK(msg.find("does not verify") != std::string::npos);
  }
  SECTION("an argument index past the Plan's arguments") {
    Plan p = basePlan("test.codegen.arg", 0);
    Builder b(p.kernel);
    b.store(b.arg(0, Type::ptr(AddrSpace::Global), "out"), b.arg(9, Type::i32(), "nine"));
    try {
      codegen::llvmIr(p, false);
      FAIL("lowered");
    } catch (const CodegenError& e) {
      CHECK(e.where().find("test.codegen.arg-S1-TP1, op arg") == 0);
      CHECK(std::string(e.what()).find("index 9 out of range") != std::string::npos);
    }
  }
}

TEST_CASE("a Plan for another target or CTA size is refused before lowering", "[codegen]") {
  Plan p = basePlan("test.codegen.target", 0);
  Builder b(p.kernel);
  b.store(b.arg(3, Type::ptr(AddrSpace::Global), "err"), b.tid());
  p.key.target.arch = "gfx942";
  CHECK(codegenError([&] { codegen::compile(p); }, p).find("the Plan targets gfx942:sramecc+:xnack-") !=
        std::string::npos);
  p.key.target.arch = "gfx950";
  p.grid.threads = 500;
  CHECK(codegenError([&] { codegen::compile(p); }, p).find("a CTA of 500 threads") != std::string::npos);
  p.grid.threads = 256;
  const codegen::CodeObject co = codegen::compile(p);
  CHECK(co.info.maxFlatWorkgroupSize == 256);
}

TEST_CASE("codegen picks its target by the Plan's arch and has none for another", "[codegen]") {
  Plan p = basePlan("test.codegen.arch", 0);
  Builder b(p.kernel);
  b.store(b.arg(3, Type::ptr(AddrSpace::Global), "err"), b.tid());
  CHECK(codegen::llvmIr(p, false).find("amdgpu_kernel") != std::string::npos);
  p.key.target.arch = "gfx942";
  CHECK(codegenError([&] { codegen::llvmIr(p, false); }, p).find("no code generator for arch 'gfx942'") !=
        std::string::npos);
}

TEST_CASE("compile time of a larger kernel (run explicitly)", "[.bench]") {
  // Nine stages, each a K loop of 16 unrolled bf16 MFMAs fed from global memory and LDS, a
  // wave butterfly, a barrier, a publish and a wait: roughly the shape of the FFN launch.
  Plan p = basePlan("test.codegen.bench", 64 * 1024);
  Builder b(p.kernel);
  Args a = args(b);
  const Type bf8 = Type::vec(Type::bf16(), 8);
  for (int s = 0; s < 9; ++s) {
    b.stage(0, [&] {
      Val tid = b.tid();
      Var acc = b.var(b.splat(b.f32(0), 4), "acc");
      b.for_(b.i32(0), a.seed, b.i32(1), [&](Val k) {
        for (int u = 0; u < 16; ++u) {
          Val off = b.zext((k * 16 + u) * 512 + tid, Type::i64()) * 16;
          Val x = b.load(bf8, b.ptrAdd(a.in, off));
          Val y = b.load(bf8, b.intToPtr(((tid + u * 512) * 16) & 65535, AddrSpace::Lds));
          b.set(acc, b.mfma(MfmaKind::F32_16x16x32_BF16, x, y, b.get(acc)));
        }
      });
      Val v = b.butterfly(b.extract(b.get(acc), 0) + b.extract(b.get(acc), 3), {32, 16, 8, 4, 2, 1});
      b.store(b.intToPtr(tid * 4, AddrSpace::Lds), v);
      b.barrier();
      b.if_(tid == 0, [&] { b.publish(b.ptrAdd(a.flags, int64_t{8} * s), b.fpToSi(v, Type::i32()), a.tag); });
      Val got = b.wait(b.ptrAdd(a.flags, int64_t{8} * (s + 1)), a.tag, a.bound, a.err, b.i32(s + 1), s + 1);
      b.store(b.ptrAdd(a.out, b.zext(tid, Type::i64()) * 4 + 2048 * s), v + b.siToFp(got));
    });
  }
  const auto t0 = std::chrono::steady_clock::now();
  const codegen::CodeObject co = codegen::compile(p);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN(fmt::format("compile: {:.3f} s (lower {:.3f}, O3 {:.3f}, codegen {:.3f}, link {:.3f}); {} VGPR, {} AGPR, {} bytes",
                   secs, co.times.wall.lower, co.times.wall.optimize, co.times.wall.codegen, co.times.wall.link, co.info.vgprs,
                   co.info.agprs, co.bytes.size()));
}
