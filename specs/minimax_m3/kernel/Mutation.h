// Test-only mutations of the MiniMax-M3 FFN launch: one synchronization op at one site made
// wrong, so that a test can show the Sim's race detector (runtime/sim/SimRaces.h) reports it
// (tests/test_spec_races.cpp). Production keys carry none.
//
// A site is (stage, helper, ordinal): the ordinal-th call, in build order, of one of
// KernelContext's sync helpers (publish, wait, ctaSync(drain=true), ctaSync(drain=false)) inside
// the Plan stage of that name. Every publish, wait and CTA barrier the stages emit goes through
// those helpers, so every one is a site. The kinds (issue 9's list):
//   publish_relaxed   a publish's release turned relaxed          (publish site)
//   wait_relaxed      a wait's acquire turned relaxed             (wait site)
//   no_drain          a ctaSync(drain) before a publish removed   (drain site: fence and barrier)
//   push_agent        a system-scope peer push at agent scope     (publish site, system scope)
//   publish_workgroup an agent-scope publish at workgroup scope   (publish site, agent scope)
//   no_barrier        a CTA barrier removed between an LDS write and another wave's read
//                     (barrier site: ctaSync(drain=false))
// A mutation whose site does not hold what it changes (push_agent on an agent-scope publish), or
// that the build never reaches (an ordinal past the stage's calls), is an InputError: a mutation
// test cannot pass by mutating nothing.
//
// Never confusable with a real variant: the mutation is a knob (FfnKnobs::mutation, Knobs.h), so it
// is in the key's canonical text ("mutate=wait_relaxed@norm.0"), hence in the variant name and
// the cache digest; the CLI has no flag that sets it; and makeGenerator (the only path to the
// code-object cache and a device) refuses a mutated key (Generate.cpp). Mutated Plans are built
// with buildPlan and run on the Sim device only.
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
