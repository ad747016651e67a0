// One token of a moe_route_v2 router's output, judged by the family verdict at a chosen
// exp_max_ulp (the budgets grow with it): what the family verdict's suites share.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz::family_test {

struct Token {
  std::vector<float> x;
  Family f;
  int32_t k = 1;
  std::vector<int32_t> ids;
  std::vector<float> gates;
};

inline Verdict judgeAt(const Token& t, double expMaxUlp, LevelCounters& levels) {
  Contract c;
  c.expMaxUlp = expMaxUlp;
  return judgeFamilyToken(t.x, t.f, t.k, t.ids, t.gates, c, VerdictConfig{}, levels);
}

// The edge of the router's output between violation and acceptance, bisected in
// exp_max_ulp to binary64's resolution: a violation at `violation`, none at `acceptance`.
struct BudgetEdge {
  double violation, acceptance;
};

inline BudgetEdge budgetEdge(const Token& t) {
  double lo = 0, hi = 1e9;  // a violation at lo, none at hi
  LevelCounters scratch;
  EXPECT_EQ(judgeAt(t, lo, scratch).outcome, Outcome::kViolation);
  EXPECT_NE(judgeAt(t, hi, scratch).outcome, Outcome::kViolation);
  for (int i = 0; i < 200; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (mid == lo || mid == hi) break;
    (judgeAt(t, mid, scratch).outcome == Outcome::kViolation ? lo : hi) = mid;
  }
  return {lo, hi};
}

}  // namespace moe::fuzz::family_test
