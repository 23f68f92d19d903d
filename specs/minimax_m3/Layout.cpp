#include "specs/minimax_m3/Layout.h"

#include <fmt/format.h>

#include "ir/Error.h"

namespace monogen::specs::minimax_m3 {

namespace {

int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// Hands out aligned byte ranges of one buffer, in order.
class AreaAlloc {
 public:
  explicit AreaAlloc(std::string buffer) : buffer_(std::move(buffer)) {}
  Area bytes(std::string name, int64_t bytes, std::string doc) {
    Area a{std::move(name), buffer_, end_, bytes, 0, false, std::move(doc)};
    end_ = alignUp(end_ + bytes, kRegionAlign);
    return a;
  }
  Area pairs(std::string name, int64_t pairs, bool peer, std::string doc) {
    Area a = bytes(std::move(name), pairs * kPairBytes, std::move(doc));
    a.pairs = pairs;
    a.peer = peer;
    return a;
  }
  /// Two parity halves of `pairsPerHalf` pairs each (a launch uses half tag & 1).
  Area parityPairs(std::string name, int64_t pairsPerHalf, bool peer, std::string doc) {
    Area a = pairs(std::move(name), 2 * pairsPerHalf, peer, std::move(doc));
    a.parity = true;
    return a;
  }
  int64_t end() const { return end_; }

 private:
  std::string buffer_;
  int64_t end_ = 0;
};

}  // namespace

std::vector<Area> Layout::areas() const { return {sres, ssq, marks, attn, faults}; }
std::vector<Pool> Layout::pools() const { return {red}; }
std::vector<Placement> Layout::placements() const { return {push, reduce}; }

Layout Layout::make(const ModelConfig& cfg, int rows, int tp) {
  const std::string where = "minimax_m3 layout";
  cfg.validate(where);
  if (rows < 1 || rows > cfg.maxRows)
    throw InputError(where, fmt::format("S = {} rows: expected 1..{}", rows, cfg.maxRows));
  bool tpOk = false;
  for (int t : kAllowedTp) tpOk = tpOk || t == tp;
  if (!tpOk) throw InputError(where, fmt::format("TP = {}: expected one of 1, 2, 4, 8", tp));
  if (cfg.hidden % kTaskColumns != 0)
    throw InputError(where, fmt::format("hidden {} is not a multiple of {} (a push / reduce task's columns)",
                                        cfg.hidden, kTaskColumns));
  if (rows * kTaskPairs > cfg.threads)
    throw InputError(where, fmt::format("S = {} rows x {} pairs a task need more than the CTA's {} threads",
                                        rows, kTaskPairs, cfg.threads));

  Layout L;
  L.rows = rows;
  L.tp = tp;
  L.hidden = cfg.hidden;
  L.blocks = cfg.blocks;
  L.threads = cfg.threads;
  L.waves = cfg.threads / 64;

  // Push and reduce run task t on the same CTA: a CTA pushes its columns, then reduces them.
  const int64_t taskCount = cfg.hidden / kTaskColumns;
  L.push = Placement{"push", taskCount, 0};
  L.reduce = Placement{"reduce", taskCount, 0};

  AreaAlloc scratch("scratch");
  L.sres = scratch.bytes("SRES", int64_t{rows} * cfg.hidden * 4,
                         "f32 [S][hidden]: the all-reduced bf16 + residual in f32, the norm's input");
  L.ssq = scratch.pairs("SSQ", int64_t{rows} * taskCount, false,
                        "pairs [S][reduce tasks]: a reduce task's f32 sum of squares of its 32 columns, a row");
  L.marks = scratch.pairs("MARKS", cfg.blocks, false,
                          "pairs [blocks]: CTA b's mark (value and tag: the launch's tag) once its work is done");
  L.scratchBytes = scratch.end();

  AreaAlloc sym("sym");
  L.attn = sym.parityPairs("ATTN", int64_t{tp} * rows * (cfg.hidden / 2), true,
                           "pairs [parity][src rank][S][hidden / 2]: each rank's o_proj partial as bf16 pairs, "
                           "pushed by the source rank into half (tag & 1)");
  L.faults = sym.parityPairs("FAULTS", tp, true,
                             "pairs [parity][src rank]: the handshake's failure flags, each rank's error word "
                             "(0: no failure), published by the source rank at the step's last launch");
  L.symBytes = sym.end();

  // red: the block sums' words, WAVES a slot (block_sum: each wave's butterfly, then the waves
  // in order). One slot: the norm's sum of squares.
  L.redSlots = 1;
  L.red = Pool{"red", 0, int64_t{L.redSlots} * L.waves * 4,
               "f32 [slots][WAVES]: a block sum's per-wave partials (slot 0: the norm's sum of squares)"};
  L.ldsBytes = L.red.offset + L.red.bytes;
  return L;
}

}  // namespace monogen::specs::minimax_m3
