// The generate-and-launch API, what a serving framework calls at run time: ask for a variant by
// key, launch it on a Device. The Plan comes from a spec and the code object from a compiler,
// both callbacks (the runtime does not depend on LLVM); code objects are JIT-compiled the first
// time a variant is needed and cached in memory and on disk (runtime/Cache.h).
//
//   Generator gen(planFn, compileFn, cache);        // specs/minimax_m3/kernel/Generate.h wires one up
//   gen.launch(device, key, rankArgs);               // checks every argument, then runs
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/Plan.h"
#include "runtime/Cache.h"
#include "runtime/Device.h"
#include "runtime/Launch.h"

namespace monogen::runtime {

/// One generated variant: its verified Plan and, once a device needed it, its code object.
struct Variant {
  ir::Plan plan;
  std::shared_ptr<const CacheEntry> code;  // null until compiled (a Sim launch never needs it)
  CacheSource source = CacheSource::Compiled;
};

class Generator {
 public:
  /// Builds and verifies the Plan of a key (throws InputError / IrError).
  using PlanFn = std::function<ir::Plan(const ir::Key&)>;
  /// Compiles a Plan into a checked code object (throws CodegenError).
  using CompileFn = std::function<std::vector<uint8_t>(const ir::Plan&)>;

  /// The layouts a Plan's tensor arguments must declare (Launch.h ArgLayouts); none when empty.
  using LayoutFn = std::function<ArgLayouts(const ir::Plan&)>;

  /// `cache` may be null: code objects are then kept in this Generator's memory only.
  Generator(PlanFn plan, CompileFn compile, std::shared_ptr<Cache> cache, LayoutFn layouts = {});

  /// The layouts the variant's tensor arguments must declare (empty without a LayoutFn).
  ArgLayouts argLayouts(const ir::Plan& plan) const { return layoutFn_ ? layoutFn_(plan) : ArgLayouts{}; }

  /// The variant of `key`, with its code object when withCode. Plans are built once per key;
  /// concurrent callers share them. Thread-safe.
  std::shared_ptr<const Variant> variant(const ir::Key& key, bool withCode = true);

  /// Checks `ranks` against the variant's Plan (InputError before anything runs: shapes,
  /// dtypes, alignment, peer count = TP, declared layouts), compiles if the device runs code objects, launches.
  void launch(Device& device, const ir::Key& key, const std::vector<RankArgs>& ranks);

  /// How many Plans were built and code objects compiled by this Generator (for tests).
  int plansBuilt() const { return plansBuilt_; }
  int compiles() const { return compiles_; }

 private:
  PlanFn planFn_;
  CompileFn compileFn_;
  std::shared_ptr<Cache> cache_;
  LayoutFn layoutFn_;
  // One slot a key: the Plan and the code object are each made once (std::call_once; a
  // failure is rethrown to the caller and the next call tries again).
  struct Slot {
    std::once_flag planOnce, codeOnce;
    std::shared_ptr<Variant> variant = std::make_shared<Variant>();
  };
  Slot& slot(const ir::Key& key);

  std::mutex mu_;  // guards slots_ only; plans and compiles run outside it
  std::map<std::string, std::unique_ptr<Slot>> slots_;  // by canonical key text
  std::atomic<int> plansBuilt_{0}, compiles_{0};
};

}  // namespace monogen::runtime
