// judgeFamilyToken on hand-built tokens (issue 16): a selection difference that binary64
// cannot place against its budget goes to the oracle's MPFR level and is judged there, and
// the selection levels count once per token.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "family_token.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {
namespace {

using family_test::budgetEdge;
using family_test::judgeAt;
using family_test::Token;

// The budget grows with the contract's exp_max_ulp; budgetEdge bisects it to the last value
// where the router's displaced expert still beats its kept one beyond the budget. There the
// difference exceeds the budget by less than the binary64 filter's error (~2^-50
// relative) but more than the MPFR enclosures' (2^-60): only the certified level sees the
// violation, which the judge once gave to the router as undecided.
TEST(FamilySelection, KeyDifferenceAtTheBudgetIsJudgedByTheCertifiedLevel) {
  Token t;  // sigmoid, one group: the router keeps expert 0, expert 1 scores higher
  t.x = {0.0f, 1e-4f};
  t.f.score = 1;
  t.ids = {0};
  t.gates = {1.0f};
  const double c = budgetEdge(t).violation;
  LevelCounters levels;
  const Verdict v = judgeAt(t, c, levels);
  ASSERT_EQ(v.outcome, Outcome::kViolation) << v.certificate;
  EXPECT_EQ(v.kind, ViolationKind::kBiasedKey);
  EXPECT_NE(v.certificate.find("certified"), std::string::npos) << v.certificate;
  EXPECT_EQ(levels.selectionCertified, 1u);
  EXPECT_EQ(levels.selectionDouble, 0u);
  EXPECT_EQ(levels.selectionUndecided, 0u);
}

TEST(FamilySelection, GroupDifferenceAtTheBudgetIsJudgedByTheCertifiedLevel) {
  Token t;  // sigmoid with a bias, 2 groups of 2 by top-2 sum, keep 1: group 1 is higher
  t.x = {0.5f, -0.25f, 0.5f, -0.25f + 3e-4f};
  t.f.score = 1;
  t.f.bias = {0.125f, 0.0f, 0.125f, 0.0f};
  t.f.groups = 2;
  t.f.topkGroups = 1;
  t.f.groupScore = 1;
  t.k = 2;
  t.ids = {0, 1};  // group 0's experts, in key order
  const double s0 = 1 / (1 + std::exp(-0.5)), s1 = 1 / (1 + std::exp(0.25));
  t.gates = {static_cast<float>(s0 / (s0 + s1)), static_cast<float>(s1 / (s0 + s1))};
  const double c = budgetEdge(t).violation;
  LevelCounters levels;
  const Verdict v = judgeAt(t, c, levels);
  ASSERT_EQ(v.outcome, Outcome::kViolation) << v.certificate;
  EXPECT_EQ(v.kind, ViolationKind::kKeptGroup) << v.certificate;
  EXPECT_EQ(levels.selectionCertified, 1u);
  EXPECT_EQ(levels.selectionDouble, 0u);
}

TEST(FamilySelection, CountsOncePerToken) {
  Token t;  // 4 groups of 2 by max, keep 2 groups and 3 experts: a correct router
  t.x = {3.0f, 0.0f, -1.0f, -2.0f, 2.0f, 1.0f, -3.0f, -4.0f};
  t.f.score = 1;
  t.f.groups = 4;
  t.f.topkGroups = 2;
  t.k = 3;
  t.f.renormalize = 0;
  t.ids = {0, 4, 5};
  for (int32_t e : t.ids) t.gates.push_back(1.0f / (1.0f + std::exp(0.0f - t.x[e])));
  LevelCounters levels;
  const Verdict v = judgeAt(t, 1.0, levels);
  EXPECT_NE(v.outcome, Outcome::kViolation) << v.certificate;
  EXPECT_EQ(levels.selectionDouble, 1u);  // once, not once per kept group
  EXPECT_EQ(levels.selectionCertified + levels.selectionUndecided, 0u);
}

}  // namespace
}  // namespace moe::fuzz
