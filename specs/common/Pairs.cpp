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

}  // namespace monogen::specs
