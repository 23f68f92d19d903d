// Wait site ids of the MiniMax-M3 FFN launch and the error code a wait past its bound (or a
// pair whose value is out of range) writes.
//
// The error word holds the first failure of a launch: site | rank << 8 | token << 16, where
// `rank` is the rank that owed the missing pair (the source rank for a peer wait, this rank
// for a wait on its own scratch) and `token` the row it was for (0 where no row applies).
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace monogen::specs::minimax_m3 {

enum Site : int32_t {
  kSiteReduce = 1,  // reduce: the ranks' ATTN pairs
  kSiteNorm = 2,    // norm: SSQ of every reduce task
  kSiteRouter = 3,  // router: XRDY
  kSiteRoute = 4,   // route: the router's logit parts
  kSiteTable = 5,   // table: the routed picks
  kSiteUp = 6,      // up: XRDY / the table's slots
  kSiteDown = 7,    // down: UPF of the slot's tiles
  kSiteFinal = 8,   // final: the ranks' FFN pairs
  kSiteEpoch = 9,   // epoch end: every CTA's mark (rank: this rank, token: the CTA whose mark is missing)
  kSiteInject = 10, // fault injection (qualification; rank: the stalled rank, this one)
  kSiteHandshake = 11,  // the step's last launch: a rank's failure flag (rank: the failed rank,
                        // token: the site in its error word, 0 when its flag never came)
  kSitePick = 12,       // table: a pick that came with its tag but no expert id (row: token)
  kSiteFinalAg = 13,    // final (reduce-scatter form): the owner rank's reduced row in FFN_AG
  kSiteReduceAg = 14,   // reduce (reduce-scatter form): the owner rank's reduced row in A_AG
  kSiteLast = kSiteReduceAg,
};

/// The error word's value for a wait at `site` on a pair `rank` owed for row `token`.
constexpr int32_t errorCode(int32_t site, int32_t rank, int32_t token) {
  return site | rank << 8 | token << 16;
}
constexpr int32_t errorSite(int32_t code) { return code & 0xff; }
constexpr int32_t errorRank(int32_t code) { return (code >> 8) & 0xff; }
constexpr int32_t errorToken(int32_t code) { return (code >> 16) & 0xffff; }

/// The stage a wait site is in ("reduce", ...; "site N" for an unknown one).
inline std::string siteName(int32_t site) {
  static const char* const names[] = {"?",     "reduce", "norm",  "router", "route",    "table",
                                      "up",    "down",   "final", "epoch",  "inject",   "handshake",
                                      "pick",  "final_ag", "reduce_ag"};
  return site >= 1 && site <= kSiteLast ? names[site] : fmt::format("site {}", site);
}

/// What an error word says, in words, naming the rank at fault: "reduce waited past its bound for
/// rank 2's pair (row 0)"; "" for 0.
inline std::string errorMeaning(int32_t code) {
  if (code == 0) return "";
  const int32_t site = errorSite(code), rank = errorRank(code), token = errorToken(code);
  switch (site) {
    case kSiteEpoch: return fmt::format("epoch: CTA {}'s mark on rank {} never came", token, rank);
    case kSiteInject: return fmt::format("fault injection: rank {} stalled", rank);
    case kSiteHandshake:
      return token ? fmt::format("handshake: rank {} failed ({} in its error word)", rank, siteName(token))
                   : fmt::format("handshake: rank {}'s failure flag never came (rank {} is missing)", rank, rank);
    case kSitePick:
      return fmt::format("table: row {}'s pick on rank {} came with an expert id out of range; the row was dropped",
                         token, rank);
    default: return fmt::format("{} waited past its bound for rank {}'s pair (row {})", siteName(site), rank, token);
  }
}

}  // namespace monogen::specs::minimax_m3
