// attn_split: one task a (row, local KV head, split t of 8): the split's attention of the KV
// head's qGroup query heads over its keys (AttentionSplit.h, attentionSplit). A tile of 256 keys
// sits 32 a wave, page (i / 16) % 2, lane i % 16: the scores are FP8 MFMAs (A q8, the heads as
// rows; B the keys' K, a page a chain over the channels ascending), P goes to E4M3 through LDS
// (rows = heads, K = the wave's 32 keys) for the PV MFMA against V; the waves' PV and l sum in
// wave order; spans walk their tiles with online softmax. Out: o / l bf16, m, l -> SPLIT_*, SRDY.
#include "specs/common/MfmaTile.h"
#include "specs/minimax_m3/kernel/OprojShape.h"
#include "specs/minimax_m3/kernel/AttentionConstants.h"
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;
namespace a = attn_arg;

namespace {

constexpr int kHeadRows = 16;  // the MFMA's rows: query heads (qGroup of them live)

/// 8 E4M3 codes (i32 each) as one little-endian i64.
Val pack8(ir::Builder& b, const std::vector<Val>& codes) {
  Val w = b.constInt(Type::i64(), 0);
  for (int e = 0; e < 8; ++e) w = w | (b.zext(codes[e], Type::i64()) << b.i64(8 * e));
  return w;
}

/// An LDS f32 at byte `off`.
Val ldsF32(AttentionContext& c, Val off) { return c.b.ptrAdd(c.red, off); }

void stageAttnSplit(AttentionContext& c, Val task) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const AttentionShape& sh = L.shape;
  const int D = sh.headDim, G = sh.qGroup, KV = sh.kvHeads, W = L.waves;
  const bool atom = c.variant.knobs.mode == CacheMode::Atom;
  const bool spans = !atom || c.variant.knobs.fullLayer;
  const int items = kHeadRows * D / L.threads;  // (head, channel) cells a thread combines
  const float smScale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.variant.cfg.headDim)));
  Val s = task % c.i32(kAttnSplits), h = (task / c.i32(kAttnSplits)) % c.i32(KV);
  Val t = task / c.i32(kAttnSplits * KV);
  Val live = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8))) >= b.i64(0);

  const MfmaTile T = MfmaTile::at(c.lane, ir::MfmaKind::F32_16x16x32_FP8, 1);
  // q8 = E4M3(q) at unit scale: A of the score MFMAs, row = head (0 past qGroup), MFMA d the
  // channels 32 d + 8 group + e (a padded row's q is 0); before the selection's wait (HRDY
  // came), every load first
  std::vector<Val> qA;
  {
    Val headOk = T.aRow() < c.i32(G);
    Val qh = t * c.i32(sh.qHeads) + h * c.i32(G) + b.min(T.aRow(), c.i32(G - 1));
    std::vector<Val> qv;
    for (int d = 0; d < D / 32; ++d)
      qv.push_back(b.load(Type::vec(Type::bf16(), 8),
                          b.ptrAdd(c.arg(a::kQ), (qh * c.i32(D) + c.i32(32 * d) + T.group * c.i32(8)) * c.i32(2))));
    for (int d = 0; d < D / 32; ++d) {
      Val v = qv[d];
      std::vector<Val> codes;
      for (int e = 0; e < 8; ++e) codes.push_back(e4m3Writer(b, b.bf16ToF32(b.extract(v, e))));
      qA.push_back(b.select(headOk, pack8(b, codes), b.constInt(Type::i64(), 0)));
    }
  }
  // the attended keys: a full layer's 0 .. seq - 1; a sparse layer's selection (blocks in slot
  // order, its sparse length), once attn_index has published it
  const bool sparse = !c.variant.knobs.fullLayer;
  Val selId = t * c.i32(KV) + h;
  Val seq = b.load(Type::i32(), b.ptrAdd(c.arg(a::kSeqLens), t * c.i32(4)));
  Val ldsSel = b.ptrAdd(c.red, c.i32(L.splitLdsSel));
  Val tables = b.ptrAdd(c.arg(a::kBlockTables), t * c.scalarI32(a::kTableStride) * c.i32(4));
  if (sparse) {
    // the selection's length and its blocks' table entries to LDS once checked: it came (thread
    // 0's wait), 1 <= length <= min(seq, topk x block) and every block it uses below ceil(seq /
    // block) (lane j of wave 0 block j); else the length -1 (INVALID, site sel range)
    Val sel = b.ptrAdd(c.arg(a::kScratch), c.i32(L.selOffset) + selId * c.i32(4 * kSelWords));
    ir::Var came = b.var(b.i1(false), "sel_came"), bad = b.var(b.i1(false), "sel_bad");
    ir::Var lenV = b.var(c.i32(-1), "sel_len");  // thread 0's length, loaded once
    b.if_(live & (c.tid == c.i32(0)), [&] {
      b.set(came, c.awaitChecked(c.pairAt(L.irdyOffset, selId), kSiteAttnSplitSel, selId).ok);
    });
    c.ctaSync(false);
    b.if_(live & (c.tid < c.i32(sh.topk)), [&] {
      Val len = b.load(Type::i32(), b.ptrAdd(sel, c.i32(4 * sh.topk))), blkJ = b.load(Type::i32(), b.ptrAdd(sel, c.tid * c.i32(4)));
      b.set(lenV, len);
      Val nBlk = (seq + c.i32(sh.block - 1)) / c.i32(sh.block);
      Val used = c.tid * c.i32(sh.block) < len;
      Val lenOk = (len >= c.i32(1)) & (len <= b.min(seq, c.i32(sh.topk * sh.block)));
      Val blkOk = (blkJ >= c.i32(0)) & (blkJ < nBlk);
      b.set(bad, (!lenOk) | (used & !blkOk));
      // slot j's block-table entry (block 0's past the length or out of range): the tiles' pages
      Val entry = b.load(Type::i32(), b.ptrAdd(tables, b.select(used & blkOk, blkJ, c.i32(0)) * c.i32(4)));
      b.store(b.ptrAdd(ldsSel, (c.tid + c.i32(1)) * c.i32(4)), entry);
    });
    Val anyBad = b.ballot(b.get(bad)) != b.i64(0);  // lanes 0 .. topk - 1 of wave 0
    b.if_(live & (c.tid == c.i32(0)), [&] {
      b.if_(b.get(came) & anyBad, [&] { c.fail(kSiteAttnSelRange, selId); });
      b.store(ldsSel, b.select(b.get(came) & !anyBad, b.get(lenV), c.i32(-1)));
    });
  }
  c.ctaSync(false);
  ir::Var nVar = b.var(c.i32(0), "n");
  b.if_(live, [&] { b.set(nVar, sparse ? b.load(Type::i32(), ldsSel) : seq); });
  live = live & (b.get(nVar) >= c.i32(0));
  Val n = b.named(b.max(b.get(nVar), c.i32(0)), "n");
  Val begin, end, first, last;
  if (spans) {
    Val span = (n + c.i32(kAttnSplits - 1)) / c.i32(kAttnSplits);
    begin = s * span;
    end = b.min(begin + span, n);
    first = begin / c.i32(kSplitKeys);
    last = b.select(begin < end, (end + c.i32(kSplitKeys - 1)) / c.i32(kSplitKeys), first);
  } else {
    begin = s * c.i32(kSplitKeys);
    end = n;
    first = s;
    last = s + c.i32(1);
  }
  // The tile steps: CTA-uniform (seq_lens are memory), each predicated on the row being live and
  // the tile being the span's: atom's tile 1; a sparse span (<= 256 of <= 2048 keys) meets at
  // most 2; a full layer's at most ceil(stride x block / 8 / 256) + 1. A step takes TT tiles
  // (L.splitPass): their loads and scores at once, their P, l and PV before the online joins.
  const int TT = L.splitPass;
  Val tiles = !spans ? c.i32(1)
              : !c.variant.knobs.fullLayer
                  ? c.i32(2)
                  : (c.scalarI32(a::kTableStride) * c.i32(sh.block / kAttnSplits) + c.i32(kSplitKeys - 1)) /
                            c.i32(kSplitKeys) +
                        c.i32(1);
  Val steps = (tiles + c.i32(TT - 1)) / c.i32(TT);
  Val kScales = c.arg(a::kKScale), vScales = c.arg(a::kVScale), kView = c.arg(a::kKCache);
  Val vView = atom ? c.arg(a::kVCache) : b.ptrAdd(kView, int64_t{KV} * (sh.block / kPage16) * kPage16 * D);
  const int64_t pageBytes = int64_t{kPage16} * D;
  // a tile slot's LDS strides: its wave maxima, l sums, V scale maxima and PV
  const int64_t slotM = 4 * int64_t{W} * kHeadRows, slotV = 4 * int64_t{W}, slotPv = 4 * int64_t{W} * kHeadRows * D;

  // the running state: m and l of head lane % 16 in every lane (a tile's new m between the
  // phases), o of the thread's combine cells (head, channel)
  ir::Var runM = b.var(c.f32(kAttnMasked), "run_m"), runL = b.var(c.f32(0), "run_l");
  std::vector<ir::Var> newM;
  for (int j = 0; j < TT; ++j) newM.push_back(b.var(c.f32(kAttnMasked), "new_m"));
  std::vector<ir::Var> runO;
  for (int k = 0; k < items; ++k) runO.push_back(b.var(c.f32(0), "run_o"));
  Val laneHead = c.lane % c.i32(kHeadRows);
  // a tile's per-lane values across its phases: the lane's 2 keys' scores (4 heads each), pages
  // and V scales, and V bytes (phase 1 -> 2); [tile j of the step]
  std::vector<std::vector<ir::Var>> scV(TT), vsV(TT), vV(TT);
  for (int j = 0; j < TT; ++j) {
    for (int i = 0; i < 8; ++i) scV[j].push_back(b.var(c.f32(0), "score"));
    for (int p = 0; p < 2; ++p) vsV[j].push_back(b.var(c.f32(0), "v_scale"));
    for (int cb = 0; cb < D / 16; ++cb) vV[j].push_back(b.var(b.i64(0), "v_b"));
  }
  // vllm's scalar scales, loaded once
  Val kScalar = atom ? Val{} : b.load(Type::f32(), kScales), vScalar = atom ? Val{} : b.load(Type::f32(), vScales);

  b.for_(c.i32(0), steps, c.i32(1), [&](Val step) {
    auto validOf = [&](Val i) { return (i >= begin) & (i < end); };
    // tile j of the step: live and the span's (active), its wave's first key, the wave's keys
    // (a wave whose 32 keys all lie outside [begin, end) of a tile with a key inside adds exactly
    // nothing (P = 0, its PV and l +0): it skips the work, leaving the masked maxima, a V scale
    // maximum 0 and zeros; a tile with no key, atom's past n, has P = 1: every wave works)
    std::vector<Val> active(TT), key0(TT), waveKeys(TT);
    Val anyKeys = b.i1(false);
    for (int j = 0; j < TT; ++j) {
      Val tile = first + step * c.i32(TT) + c.i32(j);
      active[j] = live & (tile < last);
      key0[j] = tile * c.i32(kSplitKeys) + c.wave * c.i32(32);
      Val tile0 = tile * c.i32(kSplitKeys);
      Val tileKeys = (tile0 < end) & (tile0 + c.i32(kSplitKeys) > begin);
      waveKeys[j] = active[j] & (((key0[j] < end) & (key0[j] + c.i32(32) > begin)) | !tileKeys);
      anyKeys = anyKeys | waveKeys[j];
    }
    // phase 1: the lane's key on page p of the wave: its page-16, K / V scales and scores
    // ((sm x k scale) x the dot from 0 over the channels ascending; masked -3.4e38); the
    // maxima of the 16 lanes -> LDS slot j
    auto storeM = [&](int j, int r, Val mw) {
      b.if_(T.col == c.i32(0), [&] {
        b.store(ldsF32(c, c.i32(L.splitLdsM + j * slotM) + (c.wave * c.i32(kHeadRows) + T.accRow(r)) * c.i32(4)), mw);
      });
    };
    auto storeVm = [&](int j, Val vm) {
      b.if_(c.lane == c.i32(0),
            [&] { b.store(ldsF32(c, c.i32(L.splitLdsV + j * slotV) + c.wave * c.i32(4)), vm); });
    };
    for (int j = 0; j < TT; ++j)
      b.if_(active[j] & !waveKeys[j], [&] {
        for (int r = 0; r < 4; ++r) storeM(j, r, c.f32(kAttnMasked));
        storeVm(j, c.f32(0));
      });
    b.if_(anyKeys, [&] {
      // every global load of the step's tiles (their two pages' table entries, K, V, scales)
      // issued before the first use (a tile past the span loads the last key's, unused)
      std::vector<std::array<Val, 2>> valid(TT), vs(TT), ks(TT), page(TT), tok(TT), entry(TT), inBlock(TT);
      for (int j = 0; j < TT; ++j)
        for (int p = 0; p < 2; ++p) {
          Val i = key0[j] + c.i32(16 * p) + T.bCol();
          valid[j][p] = validOf(i);
          Val ic = b.min(i, n - c.i32(1));  // full layer: key i is position i
          // sparse: key i is position sel[i / block] block + i % block, its entry in LDS
          entry[j][p] = sparse ? b.load(Type::i32(), b.ptrAdd(ldsSel, (c.i32(1) + ic / c.i32(sh.block)) * c.i32(4)))
                               : b.load(Type::i32(), b.ptrAdd(tables, (ic / c.i32(sh.block)) * c.i32(4)));
          inBlock[j][p] = b.sext((ic % c.i32(sh.block)) / c.i32(kPage16), Type::i64());
          tok[j][p] = ic % c.i32(kPage16);
        }
      for (int j = 0; j < TT; ++j)
        for (int p = 0; p < 2; ++p) {
          Val e = b.sext(entry[j][p], Type::i64());
          page[j][p] = atom ? (e * b.i64(KV) + b.sext(h, Type::i64())) * b.i64(sh.block / kPage16) + inBlock[j][p]
                            : (e + b.sext(h, Type::i64())) * b.i64(sh.block / kPage16) + inBlock[j][p];
        }
      std::vector<std::array<std::vector<Val>, 2>> kB(TT);
      for (int j = 0; j < TT; ++j)
        for (int p = 0; p < 2; ++p)
          for (int d = 0; d < D / 32; ++d) {
            Val off = page[j][p] * b.i64(pageBytes) + b.sext(c.i32(2 * d * 256) + T.group / c.i32(2) * c.i32(256) +
                                                                 tok[j][p] * c.i32(16) + (T.group % c.i32(2)) * c.i32(8),
                                                             Type::i64());
            kB[j][p].push_back(b.load(Type::i64(), b.ptrAdd(kView, off)));
          }
      // V: B of the PV MFMA, keys 8 group .. of the wave's page group / 2
      for (int j = 0; j < TT; ++j) {
        Val vPage = b.select(T.group < c.i32(2), page[j][0], page[j][1]);
        for (int cb = 0; cb < D / 16; ++cb) {
          Val off = vPage * b.i64(pageBytes) +
                    b.sext((c.i32(16 * cb) + T.col) * c.i32(kPage16) + (T.group % c.i32(2)) * c.i32(8), Type::i64());
          b.set(vV[j][cb], b.load(Type::i64(), b.ptrAdd(vView, off)));
        }
      }
      for (int j = 0; j < TT; ++j)
        for (int p = 0; p < 2; ++p) {
          Val si = page[j][p] * b.i64(kPage16) + b.sext(tok[j][p], Type::i64());
          ks[j][p] = atom ? b.load(Type::f32(), b.ptrAdd(kScales, si * b.i64(4))) : kScalar;
          vs[j][p] = atom ? b.load(Type::f32(), b.ptrAdd(vScales, si * b.i64(4))) : vScalar;
        }
      for (int j = 0; j < TT; ++j) {
        Val sc[2][4];
        for (int p = 0; p < 2; ++p) {
          Val acc = b.splat(c.f32(0), 4);
          for (int d = 0; d < D / 32; ++d) acc = b.mfma(T.kind, qA[d], kB[j][p][d], acc);
          for (int r = 0; r < 4; ++r) {
            sc[p][r] = b.select(valid[j][p], (c.f32(smScale) * ks[j][p]) * b.extract(acc, r), c.f32(kAttnMasked));
            b.set(scV[j][4 * p + r], sc[p][r]);
          }
          b.set(vsV[j][p], vs[j][p]);
        }
        b.if_(waveKeys[j], [&] {
          for (int r = 0; r < 4; ++r)
            storeM(j, r, b.butterfly(b.max(sc[0][r], sc[1][r]), {8, 4, 2, 1}, ir::OpCode::Max));
          Val vm = b.max(b.max(c.f32(0), b.select(valid[j][0], vs[j][0], c.f32(0))),
                         b.select(valid[j][1], vs[j][1], c.f32(0)));
          storeVm(j, b.butterfly(vm, {8, 4, 2, 1}, ir::OpCode::Max));
        });
      }
    });
    c.ctaSync(false);
    // the waves' LDS values of a slot, every load issued before the first is combined (in wave order)
    auto wavesOf = [&](int64_t base, int64_t stride, Val idx) {
      std::vector<Val> v;
      for (int w = 0; w < W; ++w) v.push_back(b.load(Type::f32(), ldsF32(c, c.i32(base + stride * w) + idx * c.i32(4))));
      return v;
    };
    auto tileMax = [&](int j, Val head) {
      std::vector<Val> v = wavesOf(L.splitLdsM + j * slotM, 4 * kHeadRows, head);
      Val m = v[0];
      for (int w = 1; w < W; ++w) m = b.max(m, v[w]);
      return m;
    };
    auto tileVmax = [&](int j) {
      std::vector<Val> v = wavesOf(L.splitLdsV + j * slotV, 4, c.i32(0));
      Val vmax = v[0];
      for (int w = 1; w < W; ++w) vmax = b.max(vmax, v[w]);
      return vmax;
    };
    auto pScale = [&](int j) { return atom ? tileVmax(j) * c.f32(kFp8InvMax) : vScalar; };
    // phase 2, a tile at a time: P = exp2((s - m) log2 e); l a lane (0 + P_page0) + P_page1, the
    // 16 lanes' butterfly -> LDS; P8 (atom: P x v scale x 448 / (vmax + 1e-8)) -> LDS
    // [wave][head][key] (the wave's own, read back by it); PV: A = the wave's P8 (row = head, K =
    // its 32 keys ascending), B = V (keys 8 group .., column = a 16-channel block's channel), V
    // outside [begin, end) masked to 0 -> LDS slot j
    auto storeL = [&](int j, Val head, Val ws) {
      b.if_(T.col == c.i32(0), [&] {
        b.store(ldsF32(c, c.i32(L.splitLdsL + j * slotM) + (c.wave * c.i32(kHeadRows) + head) * c.i32(4)), ws);
      });
    };
    auto storePv = [&](int j, int cb, Val pv) {
      T.storeAcc(pv, b.ptrAdd(c.red, c.i32(L.splitLdsPv + j * slotPv)), [&](int r) {
        return (c.wave * c.i32(kHeadRows) + T.accRow(r)) * c.i32(D) + c.i32(16 * cb) + T.accCol();
      });
    };
    for (int j = 0; j < TT; ++j) {
      // tile j's m of head lane % 16 (spans: and the running m, which is tile j - 1's), every
      // wave alike
      b.if_(active[j], [&] {
        Val m = tileMax(j, laneHead);
        b.set(newM[j], spans ? b.max(m, b.get(j == 0 ? runM : newM[j - 1])) : m);
      });
      b.if_(active[j] & !waveKeys[j], [&] {
        for (int r = 0; r < 4; ++r) storeL(j, T.accRow(r), c.f32(0));
        for (int cb = 0; cb < D / 16; ++cb) storePv(j, cb, b.splat(c.f32(0), 4));
      });
      b.if_(waveKeys[j], [&] {
        Val fscale = atom ? c.f32(448) * b.rcp(tileVmax(j) + c.f32(1e-8f)) : Val{};  // atom's P scale
        Val mAll = b.get(newM[j]);
        for (int r = 0; r < 4; ++r) {
          Val head = T.accRow(r);
          Val m = b.shuffle(mAll, head);
          Val ls = c.f32(0);
          for (int p = 0; p < 2; ++p) {
            Val pj = b.exp2((b.get(scV[j][4 * p + r]) - m) * c.f32(kAttnLog2e));
            ls = ls + pj;
            if (atom)
              pj = (b.select(validOf(key0[j] + c.i32(16 * p) + T.bCol()), b.get(vsV[j][p]), c.f32(0)) * fscale) * pj;
            b.store(b.ptrAdd(c.red, c.i32(L.splitLdsP) + (c.wave * c.i32(kHeadRows) + head) * c.i32(32) +
                                        c.i32(16 * p) + T.col),
                    b.trunc(e4m3Writer(b, pj), Type::i8()));
          }
          storeL(j, head, b.butterfly(ls, {8, 4, 2, 1}));
        }
        Val pA = b.load(Type::i64(), b.ptrAdd(c.red, c.i32(L.splitLdsP) +
                                                      (c.wave * c.i32(kHeadRows) + T.aRow()) * c.i32(32) +
                                                      T.group * c.i32(8)));
        Val vKey0 = key0[j] + T.group * c.i32(8);
        Val mask = b.constInt(Type::i64(), 0);
        for (int e = 0; e < 8; ++e)
          mask = mask | b.select(validOf(vKey0 + c.i32(e)), b.i64(int64_t{0xff} << (8 * e)), b.i64(0));
        for (int cb = 0; cb < D / 16; ++cb)
          storePv(j, cb, b.mfma(T.kind, pA, b.get(vV[j][cb]) & mask, b.splat(c.f32(0), 4)));
      });
    }
    c.ctaSync(false);
    // phase 3, the tiles in order: a thread's cells, the waves in order, x the V scale (atom:
    // vmax / 448); online: o x exp2((m_old - m) log2 e) + value, l likewise
    for (int j = 0; j < TT; ++j)
      b.if_(active[j], [&] {
        Val pscale = pScale(j);
        // head lane % 16: l summed over the waves in order; spans: factor = exp2((m_old - m) log2 e)
        std::vector<Val> ls = wavesOf(L.splitLdsL + j * slotM, 4 * kHeadRows, laneHead);
        std::vector<std::vector<Val>> pv;
        for (int k = 0; k < items; ++k) {
          Val cell = c.tid + c.i32(k * L.threads);
          pv.push_back(wavesOf(L.splitLdsPv + j * slotPv, 4 * int64_t{kHeadRows} * D, cell));  // head x D + channel
        }
        Val lsum = ls[0];
        for (int w = 1; w < W; ++w) lsum = lsum + ls[w];
        Val m = b.get(newM[j]), factor = c.f32(0);
        if (spans) {
          factor = b.exp2((b.get(runM) - m) * c.f32(kAttnLog2e));
          lsum = factor * b.get(runL) + lsum;
        }
        b.set(runL, lsum);
        b.set(runM, m);
        for (int k = 0; k < items; ++k) {
          Val cell = c.tid + c.i32(k * L.threads);
          Val head = cell / c.i32(D);
          Val acc = pv[k][0];
          for (int w = 1; w < W; ++w) acc = acc + pv[k][w];
          Val value = pscale * acc;
          if (spans) value = b.get(runO[k]) * b.shuffle(factor, head) + value;
          b.set(runO[k], value);
        }
      });
    c.ctaSync(false);  // LDS is rewritten by the next step
  });
  // the split's outputs: bf16(o x (1 / (l > 0 ? l : 1))), m, l of heads < qGroup
  Val mAll = b.get(runM), lAll = b.get(runL);
  for (int k = 0; k < items; ++k) {
    Val cell = c.tid + c.i32(k * L.threads);
    Val head = cell / c.i32(D), ch = cell % c.i32(D);
    Val l = b.shuffle(lAll, head), m = b.shuffle(mAll, head);
    b.if_(live & (head < c.i32(G)), [&] {
      Val inv = c.f32(1) / b.select(l > c.f32(0), l, c.f32(1));
      Val scratch = c.arg(a::kScratch);
      b.store(b.ptrAdd(scratch, c.i32(L.splitOOffset) + ((task * c.i32(G) + head) * c.i32(D) + ch) * c.i32(2)),
              b.f32ToBf16(b.get(runO[k]) * inv));
      b.if_(ch == c.i32(0), [&] {
        b.store(b.ptrAdd(scratch, c.i32(L.splitMOffset) + (task * c.i32(G) + head) * c.i32(4)), m);
        b.store(b.ptrAdd(scratch, c.i32(L.splitLOffset) + (task * c.i32(G) + head) * c.i32(4)), l);
      });
    });
  }
  c.ctaSync(true);  // the split's stores before SRDY; LDS is rewritten by the CTA's next task
  b.if_(c.tid == c.i32(0), [&] { c.publish(c.pairAt(L.srdyOffset, task)); });
}

}  // namespace

extern const AttentionStageDef kAttnSplitStage = {
    [](const AttentionLaunchLayout& L) { return L.split; },
    [](const AttentionLaunchLayout& L) {
      std::vector<ir::FlagUse> w{{"HRDY", L.rows}};
      if (L.index.tasks > 0) w.push_back({"IRDY", L.index.tasks});
      return w;
    },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"SRDY", L.splitTasks}}; },
    [](const AttentionLaunchLayout& L) {
      return fmt::format("(row, KV head, split of {}) a task, {} query heads: 256-key tiles, 32 keys a wave; FP8 MFMA "
                         "scores, P8 through LDS, FP8 MFMA PV; o / l, m, l -> SPLIT_*, SRDY",
                         kAttnSplits, L.shape.qGroup);
    },
    [](AttentionContext& c) {
      // HRDY of every row, once a CTA: every row's inserts before any row's attention
      c.awaitAllOnce(c.L.split, c.L.hrdyOffset, c.L.rows, kSiteAttnSplit);
      c.forEachTask(c.L.split, [&](Val t) { stageAttnSplit(c, t); });
    },
    "attentionSplit over gatherKeys (AttentionSplit.h, AttentionReference.h)",
};

}  // namespace monogen::specs::minimax_m3
