#include "runtime/Generator.h"

namespace monogen::runtime {

Generator::Generator(PlanFn plan, CompileFn compile, std::shared_ptr<Cache> cache, LayoutFn layouts)
    : planFn_(std::move(plan)), compileFn_(std::move(compile)), cache_(std::move(cache)), layoutFn_(std::move(layouts)) {}

Generator::Slot& Generator::slot(const ir::Key& key) {
  std::lock_guard<std::mutex> g(mu_);
  auto& s = slots_[key.canonical()];
  if (!s) s = std::make_unique<Slot>();
  return *s;
}

std::shared_ptr<const Variant> Generator::variant(const ir::Key& key, bool withCode) {
  Slot& s = slot(key);
  Variant& v = *s.variant;
  std::call_once(s.planOnce, [&] {
    v.plan = planFn_(key);
    ++plansBuilt_;
  });
  if (withCode)
    std::call_once(s.codeOnce, [&] {
      auto compile = [&] {
        ++compiles_;
        return compileFn_(v.plan);
      };
      if (cache_) {
        v.code = cache_->get(key, compile, &v.source);
        return;
      }
      auto e = std::make_shared<CacheEntry>();
      e->keyText = key.canonical();
      e->bytes = compile();
      v.code = e;
      v.source = CacheSource::Compiled;
    });
  return s.variant;
}

void Generator::launch(Device& device, const ir::Key& key, const std::vector<RankArgs>& ranks) {
  // The Plan first: the arguments are checked against it before anything is compiled or run.
  const auto v = variant(key, false);
  const PackedLaunch packed = packLaunch(v->plan, ranks, argLayouts(v->plan));  // checked and packed once
  if (device.runsCodeObjects()) variant(key, true);
  static const CodeObjectBytes kNone;
  device.launch(v->plan, v->code ? v->code->bytes : kNone, packed);
}

}  // namespace monogen::runtime
