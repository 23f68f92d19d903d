#include "specs/minimax_m3/kernel/Mxfp8.h"

#include <fmt/format.h>

#include "support/Error.h"

namespace monogen::specs::minimax_m3 {

using ir::Builder;
using ir::Type;
using ir::Val;

Val mxfp8ScaleCode(Builder& b, Val amax) {
  // amax = 1.m 2^(e - 127): amax / 448 = (1.m / 1.75) 2^(e - 135), whose ceil_pow2 is 2^(e - 135) when
  // 1.m <= 1.75 (m <= 0x600000) and 2^(e - 134) above; f32's smallest normal power floors it.
  Val bits = b.bitcast(amax, Type::i32());
  Val e = b.lshr(bits, b.i32(23));
  Val up = b.zext((bits & 0x7fffff) > 0x600000, Type::i32());
  Val code = b.max(e - 8 + up, b.i32(1));
  code = b.select(bits == 0, b.i32(0), code);
  return b.select(e == 255, b.i32(255), code);
}

Val mxfp8InvScale(Builder& b, Val code) {
  // Codes 0 .. 247 (the finite amaxes) give the normal f32 2^(127 - code); 255 (an Inf) gives 0.
  Val inv = b.bitcast((254 - code) << 23, Type::f32());
  return b.select(code == 255, b.f32(0.0), inv);
}

Val mxfp8Encode(Builder& b, Val x, Val inv) { return b.f32ToFp8(x * inv); }

Val mxfp8Amax(Builder& b, const std::vector<Val>& xs) {
  Val m = b.f32(0.0);
  for (Val x : xs) m = b.max(m, b.unary(ir::OpCode::Abs, x));
  return m;
}

Mxfp8Operand mxfp8QuantizeA(Builder& b, const std::vector<Val>& xs) {
  if (xs.size() != 32)
    throw InputError("mxfp8QuantizeA", fmt::format("{} values: expected 32, a lane's share of the 16 x 128 A tile",
                                                   xs.size()));
  std::vector<Val> v;
  for (Val x : xs) v.push_back(x.type() == Type::f32() ? x : b.bf16ToF32(x));
  Val lane = b.lane();
  Val group = b.lshr(lane, b.i32(4));
  // Half h (elements 16 h .. 16 h + 15) is K block 2 h + group / 2 of the row; lanes l and l ^ 16
  // hold its two halves.
  Val code[2], inv[2];
  for (int h = 0; h < 2; ++h) {
    Val amax = mxfp8Amax(b, std::vector<Val>(v.begin() + 16 * h, v.begin() + 16 * h + 16));
    amax = b.max(amax, b.shuffle(amax, lane ^ 16));
    code[h] = mxfp8ScaleCode(b, amax);
    inv[h] = mxfp8InvScale(b, code[h]);
  }
  Val a = b.splat(b.i32(0), 8);
  for (int w = 0; w < 8; ++w) {
    Val word = b.i32(0);
    for (int k = 0; k < 4; ++k) {
      const int e = 4 * w + k;
      word = word | (mxfp8Encode(b, v[e], inv[e / 16]) << (8 * k));
    }
    a = b.insert(a, word, w);
  }
  // Lane 16 t + i holds block t's scale: lane group g' offers its half g' % 2 (block 2 (g' % 2) + g' / 2),
  // so group t reads group 2 (t % 2) + t / 2, the same row.
  Val offer = b.select((group & 1) == 1, code[1], code[0]);
  Val src = (((group & 1) << 1) | b.lshr(group, b.i32(1))) * 16 + (lane & 15);
  return {a, b.shuffle(offer, src)};
}

}  // namespace monogen::specs::minimax_m3
