#pragma once
// Random valid routing parameters of the family (family.hpp) for the property tests: every
// divisor G of E, group sizes of one (G = E), top-2 sums, k past the eligible experts.
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "moe/oracle/family.hpp"
#include "test_support.hpp"

namespace moe::oracle::testing {

// E with many divisors (so that groups are drawn often), plus the general sweep.
inline std::size_t pickFamilyE(std::mt19937_64& rng) {
  static const std::size_t fixed[] = {0, 1, 2, 4, 6, 8, 12, 16, 24, 32, 36, 64};
  if (rng() % 4 != 0) return fixed[rng() % std::size(fixed)];
  return pickE(rng);
}

// Valid parameters for E experts; the bias span is left empty (the caller owns its data).
template <class A>
RouteParams<A> drawParams(std::mt19937_64& rng, std::size_t E) {
  RouteParams<A> p;
  std::vector<std::size_t> divisors;
  for (std::size_t g = 1; g <= std::max<std::size_t>(E, 1); ++g) {
    if (E % g == 0) divisors.push_back(g);
  }
  p.groups = rng() % 3 == 0 ? 1 : divisors[rng() % divisors.size()];
  p.topkGroups = 1 + rng() % p.groups;
  p.groupScore = rng() % 2 ? GroupScore::max : GroupScore::top2Sum;
  if (p.groupScore == GroupScore::top2Sum && p.groups > 1 && E / p.groups < 2) {
    p.groupScore = GroupScore::max;
  }
  p.k = pickK(rng, E);
  p.score = rng() % 2 ? ScoreFn::softmax : ScoreFn::sigmoid;
  p.renormalize = rng() % 2 == 0;
  return p;
}

template <class A>
std::string describeParams(const RouteParams<A>& p) {
  return "k=" + std::to_string(p.k) + (p.score == ScoreFn::softmax ? " softmax" : " sigmoid") +
         (p.bias.empty() ? " no-bias" : " bias") + " G=" + std::to_string(p.groups) +
         " topkGroups=" + std::to_string(p.topkGroups) +
         (p.groupScore == GroupScore::max ? " max" : " top2Sum") +
         (p.renormalize ? " renormalize" : " raw");
}

}  // namespace moe::oracle::testing
