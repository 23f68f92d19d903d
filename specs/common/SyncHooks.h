// The hooks a test-only mutation uses to weaken or drop one sync site while a kernel is built.
#pragma once
#include "ir/Op.h"

namespace monogen::specs {

/// Asked at every sync site the common helpers emit (CtaSync.h, Pairs.h); the defaults keep it.
struct SyncHooks {
  virtual ~SyncHooks() = default;
  /// A ctaSync(drain) about to be emitted: false drops it.
  virtual bool keepCtaSync(bool /*drain*/) { return true; }
  /// A publish / wait about to be emitted with (o, s), changed in place to mutate it.
  virtual void publish(ir::MemOrder& /*o*/, ir::MemScope& /*s*/) {}
  virtual void wait(ir::MemOrder& /*o*/, ir::MemScope& /*s*/) {}
};

}  // namespace monogen::specs
