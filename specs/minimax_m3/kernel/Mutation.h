// Test-only mutations of the MiniMax-M3 FFN launch: one sync op at one site (stage, helper,
// ordinal) made wrong, so a test shows the Sim's race detector reports it; production keys carry
// none, makeGenerator refuses them. Kinds and safeguards: docs/minimax-m3-kernel.md.
#pragma once
#include <string>

#include "ir/Plan.h"
#include "specs/common/SyncHooks.h"

namespace monogen::specs::minimax_m3 {

enum class MutationKind { None, PublishRelaxed, WaitRelaxed, NoDrain, PushAgent, PublishWorkgroup, NoBarrier };
const char* mutationKindName(MutationKind k);  // "publish_relaxed", ...; "none"

/// The helper whose calls a kind's site counts.
enum class SyncHelper { Publish, Wait, Drain, Barrier };
SyncHelper helperOf(MutationKind k);

struct Mutation {
  MutationKind kind = MutationKind::None;
  std::string stage;  // the Plan stage's name
  int ordinal = 0;    // the ordinal-th call of helperOf(kind) in that stage, from 0

  explicit operator bool() const { return kind != MutationKind::None; }
  bool operator==(const Mutation&) const = default;
  /// "kind@stage.ordinal" ("" for none).
  std::string canonical() const;
  /// Reads canonical() text; anything else is an InputError at `where`.
  static Mutation parse(const std::string& text, const std::string& where);
};

/// Applies one Mutation while a Plan is built: KernelContext's sync helpers ask it at each call.
class Mutator : public SyncHooks {
 public:
  Mutator() = default;
  explicit Mutator(Mutation m) : m_(std::move(m)) {}
  /// The stage being built (KernelContext::stage).
  void enterStage(const std::string& name) { stage_ = name; }
  /// A publish about to be emitted with (o, s): changed in place when it is the site.
  void publish(ir::MemOrder& o, ir::MemScope& s) override;
  /// A wait about to be emitted with (o, s).
  void wait(ir::MemOrder& o, ir::MemScope& s) override;
  /// A ctaSync(drain) about to be emitted: false when the site removes it.
  bool keepCtaSync(bool drain) override;
  /// After the build: throws InputError (at `where`) when the site was never reached.
  void finish(const std::string& where) const;

 private:
  bool at(SyncHelper h);
  Mutation m_;
  std::string stage_;
  int seen_ = 0;  // calls of the site's helper in the site's stage so far
  bool hit_ = false;
};

/// Where a mutated Plan differs from the real one: the first op, in the IR's 1-based preorder
/// numbering (what race reports call "op #N"), at which the two kernels' op sequences part.
struct MutationSite {
  std::string stage;  // the Plan stage it is in
  int opNum = 0;      // in the mutated Plan: the changed op, or the op now where the removed ones were
  std::string op;     // the changed op's name in the mutated Plan ("publish", "wait"), or the removed
                      // op's name in the real one ("fence", "barrier")
  bool removed = false;
};
/// Compares the two Plans' kernels op by op; throws RuntimeError when they do not differ.
MutationSite locateMutation(const ir::Plan& real, const ir::Plan& mutated);
/// The 1-based preorder number of the first op with `code` at or after op #from in `plan`'s
/// kernel, inside stage `stage` (0 when there is none).
int nextOpNum(const ir::Plan& plan, const std::string& stage, int from, ir::OpCode code);

}  // namespace monogen::specs::minimax_m3
