#include "specs/common/CtaSync.h"

namespace monogen::specs {

using ir::Type;
using ir::Val;

void ctaSync(ir::Builder& b, bool drain, SyncHooks& hooks) {
  if (!hooks.keepCtaSync(drain)) return;
  if (drain) b.fence(ir::MemOrder::Release, ir::MemScope::Agent);
  b.barrier();
}

Val waveSum(ir::Builder& b, Val v) { return b.butterfly(v, {32, 16, 8, 4, 2, 1}); }

Val blockSum(ir::Builder& b, Val v, Val lane, Val wave, Val red, int waves, SyncHooks& hooks) {
  v = waveSum(b, v);
  ctaSync(b, false, hooks);  // the previous block sum's readers are done with red
  b.if_(lane == b.i32(0), [&] { b.store(b.ptrAdd(red, wave * b.i32(4)), v); });
  ctaSync(b, false, hooks);
  Val tot = b.f32(0.0);
  for (int w = 0; w < waves; ++w) tot = tot + b.load(Type::f32(), b.ptrAdd(red, int64_t{w} * 4));
  return tot;
}

}  // namespace monogen::specs
