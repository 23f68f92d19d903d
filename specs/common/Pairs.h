// The pair protocol: a stage publishes a tagged 8-byte pair, another awaits its tag (ir/Builder's
// publish / wait), each through SyncHooks so a test can mutate the site.
#pragma once
#include <cstdint>

#include "ir/Builder.h"
#include "specs/common/SyncHooks.h"

namespace monogen::specs {

/// Stores `value` with `tag` to the pair at `pair`, ordered (o, s).
void publishPair(ir::Builder& b, ir::Val pair, ir::Val value, ir::Val tag, ir::MemOrder o, ir::MemScope s,
                 SyncHooks& hooks);
/// Waits until the pair at `pair` carries `tag`, at most `bound` ticks; past it, errCode goes to
/// errWord (first failure wins). Returns the pair's value: after a timeout a stale one, data at
/// most; a value that reaches an address, an index or a bound takes awaitPairChecked.
ir::Val awaitPair(ir::Builder& b, ir::Val pair, ir::Val tag, ir::Val bound, ir::Val errWord, ir::Val errCode,
                  int site, ir::MemOrder o, ir::MemScope s, SyncHooks& hooks);

/// A wait's value and whether it came: ok (i1) is true only if the 8-byte load `value` is from
/// carried the tag. Under !ok the value is whatever the pair held and must reach no address.
struct AwaitedPair {
  ir::Val value;
  ir::Val ok;
};
/// awaitPair, then one relaxed 8-byte load of the pair at the wait's scope: its value, and ok when
/// its tag is `tag` (a timed-out wait's stale pair fails it; its site is in errWord already).
AwaitedPair awaitPairChecked(ir::Builder& b, ir::Val pair, ir::Val tag, ir::Val bound, ir::Val errWord,
                             ir::Val errCode, int site, ir::MemOrder o, ir::MemScope s, SyncHooks& hooks);
/// w with ok also requiring lo <= value < hi, and value := `fallback` where that fails, so the
/// result may reach an address whatever the pair held.
AwaitedPair guardIndex(ir::Builder& b, const AwaitedPair& w, int64_t lo, int64_t hi, ir::Val fallback);

}  // namespace monogen::specs
