// The pair protocol: a stage publishes a tagged 8-byte pair, another awaits its tag (ir/Builder's
// publish / wait), each through SyncHooks so a test can mutate the site.
#pragma once
#include "ir/Builder.h"
#include "specs/common/SyncHooks.h"

namespace monogen::specs {

/// Stores `value` with `tag` to the pair at `pair`, ordered (o, s).
void publishPair(ir::Builder& b, ir::Val pair, ir::Val value, ir::Val tag, ir::MemOrder o, ir::MemScope s,
                 SyncHooks& hooks);
/// Waits until the pair at `pair` carries `tag`, at most `bound` ticks; past it, errCode goes to
/// errWord (first failure wins). Returns the pair's value.
ir::Val awaitPair(ir::Builder& b, ir::Val pair, ir::Val tag, ir::Val bound, ir::Val errWord, ir::Val errCode,
                  int site, ir::MemOrder o, ir::MemScope s, SyncHooks& hooks);

}  // namespace monogen::specs
