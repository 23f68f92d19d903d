#include "specs/common/Pairs.h"

namespace monogen::specs {

void publishPair(ir::Builder& b, ir::Val pair, ir::Val value, ir::Val tag, ir::MemOrder o, ir::MemScope s,
                 SyncHooks& hooks) {
  hooks.publish(o, s);
  b.publish(pair, value, tag, o, s);
}

ir::Val awaitPair(ir::Builder& b, ir::Val pair, ir::Val tag, ir::Val bound, ir::Val errWord, ir::Val errCode,
                  int site, ir::MemOrder o, ir::MemScope s, SyncHooks& hooks) {
  hooks.wait(o, s);
  return b.wait(pair, tag, bound, errWord, errCode, site, o, s);
}

AwaitedPair awaitPairChecked(ir::Builder& b, ir::Val pair, ir::Val tag, ir::Val bound, ir::Val errWord,
                             ir::Val errCode, int site, ir::MemOrder o, ir::MemScope s, SyncHooks& hooks) {
  hooks.wait(o, s);
  b.wait(pair, tag, bound, errWord, errCode, site, o, s);
  // The wait's own result cannot tell a timeout; one load of value and tag together can: a pair
  // is one 8-byte store, and it is not rewritten within the launch once it carries the tag.
  ir::Val word = b.load(ir::Type::i64(), pair, ir::MemOrder::Relaxed, s);
  ir::Val value = b.trunc(word, ir::Type::i32());
  ir::Val got = b.trunc(b.lshr(word, b.i64(32)), ir::Type::i32());
  return {value, got == tag};
}

AwaitedPair guardIndex(ir::Builder& b, const AwaitedPair& w, int64_t lo, int64_t hi, ir::Val fallback) {
  ir::Val ok = w.ok & (w.value >= b.i32(lo)) & (w.value < b.i32(hi));
  return {b.select(ok, w.value, fallback), ok};
}

}  // namespace monogen::specs
