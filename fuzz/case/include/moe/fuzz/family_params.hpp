// A case's family as the oracle's RouteParams (oracle/family.hpp), for the binary32 spec
// router and the verdicts alike: the one conversion to the oracle's words. Parameters
// outside the domain are the caller's to rule out first (familyInvalidReason). The bias is a view
// of f.bias: f must outlive the result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "moe/fuzz/family.hpp"
#include "moe/oracle/family.hpp"

namespace moe::fuzz {

inline oracle::RouteParams<float> familyRouteParams(const Family& f, int32_t k) {
  oracle::RouteParams<float> p;
  p.k = static_cast<std::size_t>(k);
  p.score =
      f.score == ScoreFunction::kSigmoid ? oracle::ScoreFn::sigmoid : oracle::ScoreFn::softmax;
  p.bias = std::span<const float>(f.bias);
  p.groups = static_cast<std::size_t>(f.groups);
  p.topkGroups = static_cast<std::size_t>(f.topkGroups);
  p.groupScore = f.groupScore == GroupScoreFunction::kTop2Sum ? oracle::GroupScore::top2Sum
                                                              : oracle::GroupScore::max;
  p.renormalize = f.renormalize == 1;
  p.scale = f.scale;
  return p;
}

}  // namespace moe::fuzz
