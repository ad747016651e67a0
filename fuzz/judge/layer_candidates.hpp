// The routings a layer that returns none may have used for a token: the binary32 spec's, the
// kept set ranked on the logits, the near-ties' single swaps at the kept boundary and every
// filling of the boundary from a group of keys within 2^-14 of the last kept one, each
// kept only when the router verdict accepts it. Its gates are the binary32 spec formula on
// that set, widened per slot by an allowance: what the router verdict lets a gate stray.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/layer_case.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

struct CandidateRouting {
  std::vector<int32_t> experts;  // rank order, as slots
  std::vector<double> gates, allowance;
  std::string reason;  // the router verdict's acceptable reason ("" when exact)
};

// Never empty for a real row: the binary32 spec's routing comes first. `unenumerated`, when
// given, says whether the near-tie group at the kept boundary had more fillings than are
// tried (then some acceptable routings are not among the candidates).
std::vector<CandidateRouting> candidateRoutings(const LayerCase& c, int32_t t,
                                                const Contract& contract, Judge& routeJudge,
                                                bool* unenumerated = nullptr);

// Judges one token's (ids, gates) with the router verdict: moe_route_v2's when the case has a
// family, else moe_route_v1's.
Verdict judgeRouting(const LayerCase& c, int32_t t, std::span<const int32_t> ids,
                     std::span<const float> gates, const Contract& contract, Judge& routeJudge);

}  // namespace moe::fuzz
