// Shared by the attention tests: launch inputs each broken in one way the host must refuse before
// any work (validateAttentionLaunch), with the words its error must hold.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"

namespace attention_test {

/// A good launch the edits below break: S 4 sharing a sequence at positions 300 .. 303, TP 2,
/// vllm, a sparse layer.
inline monogen::specs::minimax_m3::AttentionLaunch hostileBase(const monogen::specs::minimax_m3::ModelConfig& cfg) {
  monogen::specs::minimax_m3::AttentionInputOptions o;
  o.context = 300;
  o.shareSequence = true;
  return monogen::specs::minimax_m3::makeAttentionLaunch(cfg, 4, 2, 3, o);
}

struct HostileEdit {
  std::string what;
  std::function<void(monogen::specs::minimax_m3::AttentionLaunch&)> edit;
  std::vector<std::string> says;  // each a part of the error's text
};

/// One edit per hostile input of the launch contract (docs/attention.md, "The cache contract").
inline std::vector<HostileEdit> hostileEdits() {
  using L = monogen::specs::minimax_m3::AttentionLaunch;
  return {
      {"a position at its sequence's length", [](L& l) { l.rows.positions[1] = l.rows.seqLens[1]; },
       {"row 1: position 302 is at or past its sequence's length 302"}},
      {"a block-table entry out of range", [](L& l) { l.rows.tables[2 * l.rows.tableWidth + 1] = 1000; },
       {"row 2: block-table column 1", "entry 1000"}},
      {"an index block-table entry out of range", [](L& l) { l.rows.indexTables[3 * l.rows.tableWidth] = -1; },
       {"row 3: index block-table column 0 = -1"}},
      {"a negative slot", [](L& l) { l.rows.slots[0] = -5; }, {"row 0: slot -5"}},
      {"a negative index slot", [](L& l) { l.rows.indexSlots[1] = -7; }, {"row 1: slot", "index slot -7"}},
      {"seq_len 0", [](L& l) { l.rows.seqLens[3] = 0; }, {"row 3: seq_len 0"}},
      {"two rows writing one slot",
       [](L& l) {
         l.rows.slots[1] = l.rows.slots[0];
         l.rows.positions[1] = l.rows.positions[0];
         l.rows.indexSlots[1] = l.rows.indexSlots[0];
       },
       {"rows 0 and 1 both write slot"}},
      {"a slot not the row's own address", [](L& l) { l.rows.slots[2] += 1; }, {"is not position 302's address"}},
  };
}

/// The InputError's text `f` throws, or "" when it throws none.
inline std::string inputErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const monogen::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace attention_test
