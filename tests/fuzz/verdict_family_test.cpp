// judgeFamilyToken on hand-built tokens: a selection difference that binary64
// cannot place against its budget goes to the oracle's MPFR level and is judged there; the
// kept groups' span, the top-2 group budget, the raw gates' scale and the gates' analytic
// floor are checked as docs/fuzz.md derives them; the selection levels count once per token.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "family_token.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {
namespace {

using family_test::budgetEdge;
using family_test::BudgetEdge;
using family_test::judgeAt;
using family_test::Token;

// The spec's sigmoid score in binary32, 1 / (1 + exp(0 - x)), as a correct router's gate
// starts from; and in binary64, for the budgets' arithmetic.
float sigmoid32(float x) {
  return 1.0f / (1.0f + std::exp(0.0f - x));
}
double sigmoid64(float x) {
  return 1 / (1 + std::exp(-static_cast<double>(x)));
}

// The budget grows with the contract's exp_max_ulp; budgetEdge bisects it to the last value
// where the router's displaced expert still beats its kept one beyond the budget. There the
// difference exceeds the budget by less than the binary64 filter's error (~2^-50
// relative) but more than the MPFR enclosures' (2^-60): only the certified level sees the
// violation, which the judge once gave to the router as undecided.
// biased-key names the bias: only when the two experts' biases differ; else the scores
// decide between them and the kind is v1's beaten-kept.
TEST(FamilySelection, BiasedKeyOnlyWhenTheBiasDecides) {
  Token t;
  t.f.score = ScoreFunction::kSigmoid;
  t.x = {0.0f, 0.0f};
  t.f.bias = {0.0f, 1.0f};  // expert 1's key is 1 above expert 0's, by its bias alone
  t.ids = {0};
  t.gates = {0.5f};
  LevelCounters levels;
  EXPECT_EQ(judgeAt(t, 1, levels).kind, ViolationKind::kBiasedKey);
  t.x = {0.0f, 3.0f};
  t.f.bias = {0.25f, 0.25f};  // the same bias: the scores decide
  t.gates = {0.5f};
  EXPECT_EQ(judgeAt(t, 1, levels).kind, ViolationKind::kBeatenKept);
  t.f.bias.clear();
  EXPECT_EQ(judgeAt(t, 1, levels).kind, ViolationKind::kBeatenKept);
}

TEST(FamilySelection, KeyDifferenceAtTheBudgetIsJudgedByTheCertifiedLevel) {
  Token t;  // sigmoid, one group: the router keeps expert 0, expert 1 scores higher
  t.x = {0.0f, 1e-4f};
  t.f.score = ScoreFunction::kSigmoid;
  t.ids = {0};
  t.gates = {1.0f};
  const double c = budgetEdge(t).violation;
  LevelCounters levels;
  const Verdict v = judgeAt(t, c, levels);
  ASSERT_EQ(v.outcome, Outcome::kViolation) << v.certificate;
  EXPECT_EQ(v.kind, ViolationKind::kBeatenKept) << "no bias: the scores alone decide";
  EXPECT_NE(v.certificate.find("certified"), std::string::npos) << v.certificate;
  EXPECT_EQ(levels.selectionCertified, 1u);
  EXPECT_EQ(levels.selectionDouble, 0u);
  EXPECT_EQ(levels.selectionUndecided, 0u);
}

TEST(FamilySelection, GroupDifferenceAtTheBudgetIsJudgedByTheCertifiedLevel) {
  Token t;  // sigmoid with a bias, 2 groups of 2 by top-2 sum, keep 1: group 1 is higher
  t.x = {0.5f, -0.25f, 0.5f, -0.25f + 3e-4f};
  t.f.score = ScoreFunction::kSigmoid;
  t.f.bias = {0.125f, 0.0f, 0.125f, 0.0f};
  t.f.groups = 2;
  t.f.topkGroups = 1;
  t.f.groupScore = GroupScoreFunction::kTop2Sum;
  t.k = 2;
  t.ids = {0, 1};  // group 0's experts, in key order
  const double s0 = sigmoid64(0.5f), s1 = sigmoid64(-0.25f);
  t.gates = {static_cast<float>(s0 / (s0 + s1)), static_cast<float>(s1 / (s0 + s1))};
  const double c = budgetEdge(t).violation;
  LevelCounters levels;
  const Verdict v = judgeAt(t, c, levels);
  ASSERT_EQ(v.outcome, Outcome::kViolation) << v.certificate;
  EXPECT_EQ(v.kind, ViolationKind::kKeptGroup) << v.certificate;
  EXPECT_EQ(levels.selectionCertified, 1u);
  EXPECT_EQ(levels.selectionDouble, 0u);
}

// The kept experts of 2 groups where topk_groups is 1: the structure alone convicts, with no
// budget, and the certificate says so (whatever the group scores' difference).
TEST(FamilySelection, KeptExpertsSpanningTooManyGroupsAreCaughtByStructure) {
  Token t;  // sigmoid, 2 groups of 2 by max, keep 1 group and 2 experts: the best two keys
  t.x = {3.0f, -2.0f, 2.9f, -2.0f};  // lie in groups 0 and 1, a router that ignores groups
  t.f.score = ScoreFunction::kSigmoid;
  t.f.groups = 2;
  t.f.topkGroups = 1;
  t.k = 2;
  t.f.renormalize = 0;
  t.ids = {0, 2};
  for (int32_t e : t.ids) t.gates.push_back(sigmoid32(t.x[e]));
  LevelCounters levels;
  const Verdict v = judgeAt(t, 1.0, levels);
  ASSERT_EQ(v.outcome, Outcome::kViolation) << v.certificate;
  EXPECT_EQ(v.kind, ViolationKind::kKeptGroup) << v.certificate;
  EXPECT_NE(v.certificate.find("lie in 2 groups, but only topk_groups = 1"), std::string::npos)
      << v.certificate;
}

// A top-2 group score's budget is its two keys' budgets and the sum's rounding: with no
// bias, sigmoid keys s and c = exp_max_ulp, beta_e = (2c + 4) u s_e (docs/fuzz.md), so group
// 1 beats the router's group 0 beyond the budget while D = S1 - S0 > gamma_0 + gamma_1 =
// (2c + 4) u (S0 + S1) + u (S0 + S1): the edge sits at c = D / (2 u (S0 + S1)) - 2.5
// (terms of 2^-149 aside). A budget that counted one key of each group would move it to
// about twice that.
TEST(FamilySelection, TopTwoGroupBudgetCountsBothKeys) {
  Token t;  // sigmoid, 2 groups of 2 by top-2 sum, keep 1: group 1 higher by about 1e-4
  t.x = {0.5f, -0.25f, 0.5f, -0.25f + 4e-4f};
  t.f.score = ScoreFunction::kSigmoid;
  t.f.groups = 2;
  t.f.topkGroups = 1;
  t.f.groupScore = GroupScoreFunction::kTop2Sum;
  t.k = 2;
  t.ids = {0, 1};
  std::vector<double> s;
  for (float x : t.x) s.push_back(sigmoid64(x));
  const double s0 = s[0] + s[1], s1 = s[2] + s[3];
  t.gates = {static_cast<float>(s[0] / s0), static_cast<float>(s[1] / s0)};
  const double expected = (s1 - s0) / (2 * 0x1p-24 * (s0 + s1)) - 2.5;
  const BudgetEdge edge = budgetEdge(t);
  EXPECT_NEAR(edge.violation, expected, 0.01 * expected)
      << "the top-2 group budget at D = " << s1 - s0 << ", S0 + S1 = " << s0 + s1;
}

// Raw gates are the unbiased scores times the scale: the router that scales is right, the
// one that forgets the scale is a gate violation named for the scale.
TEST(FamilyGates, RawGatesCarryTheScale) {
  Token t;  // sigmoid, one group, keep 2 of 4, raw gates, scale 2.5
  t.x = {1.0f, -1.0f, 2.0f, 0.5f};
  t.f.score = ScoreFunction::kSigmoid;
  t.f.renormalize = 0;
  t.f.scale = 2.5f;
  t.k = 2;
  t.ids = {2, 0};
  for (int32_t e : t.ids) t.gates.push_back(sigmoid32(t.x[e]) * 2.5f);
  LevelCounters levels;
  const Verdict scaled = judgeAt(t, 1.0, levels);
  EXPECT_NE(scaled.outcome, Outcome::kViolation) << scaled.certificate;
  for (std::size_t i = 0; i < t.ids.size(); ++i) t.gates[i] = sigmoid32(t.x[t.ids[i]]);
  const Verdict unscaled = judgeAt(t, 1.0, levels);
  ASSERT_EQ(unscaled.outcome, Outcome::kViolation) << unscaled.certificate;
  EXPECT_EQ(unscaled.kind, ViolationKind::kGateScale) << unscaled.certificate;
}

// The binary32 spec's gates of the token's kept experts: softmax (exp(x - m), summed in index
// order) or sigmoid scores, divided by the kept scores' sum in index order when
// renormalising, times the scale.
std::vector<float> specGates32(const Token& t) {
  std::vector<float> s(t.x.size());
  if (t.f.score == ScoreFunction::kSoftmax) {
    float m = t.x[0], total = 0.0f;
    for (float v : t.x) m = std::max(m, v);
    for (std::size_t i = 0; i < t.x.size(); ++i) total += s[i] = std::exp(t.x[i] - m);
    for (float& v : s) v /= total;
  } else {
    for (std::size_t i = 0; i < t.x.size(); ++i) s[i] = sigmoid32(t.x[i]);
  }
  std::vector<int32_t> byIndex = t.ids;
  std::sort(byIndex.begin(), byIndex.end());
  float kept = 0.0f;
  for (int32_t j : byIndex) kept += s[j];
  std::vector<float> g;
  for (int32_t e : t.ids) g.push_back((t.f.renormalize == 1 ? s[e] / kept : s[e]) * t.f.scale);
  return g;
}

// The analytic floor lets a gate be as far off as a binary32 evaluation with an exp of
// exp_max_ulp ulps can make it: a gate 100 units in the last place (2^-24 relative) off is
// inside the budget at 64 ulps (every gate formula's floor is above 130 u |G| there) and
// outside it at 1 ulp (below 30 u |G|, with the spec32 and ulp terms), in each of the four
// formulas: softmax or sigmoid scores, raw or renormalised.
TEST(FamilyGates, TheAnalyticFloorGrowsWithTheExpError) {
  for (const auto score : {ScoreFunction::kSoftmax, ScoreFunction::kSigmoid}) {
    for (const int32_t renormalize : {0, 1}) {
      Token t;  // keep 2 of 4, one group, scale 1
      t.x = {1.0f, -0.5f, 0.25f, -1.0f};
      t.f.score = score;
      t.f.renormalize = renormalize;
      t.k = 2;
      t.ids = {0, 2};
      t.gates = specGates32(t);
      const std::string form =
          std::string(score == ScoreFunction::kSoftmax ? "softmax" : "sigmoid") +
          (renormalize == 1 ? ", renormalised" : ", raw");
      LevelCounters levels;
      const Verdict spec = judgeAt(t, 1.0, levels);
      ASSERT_NE(spec.outcome, Outcome::kViolation) << form << ": " << spec.certificate;
      t.gates[0] *= 1 + 100 * 0x1p-24f;
      const Verdict wide = judgeAt(t, 64.0, levels);
      EXPECT_NE(wide.outcome, Outcome::kViolation) << form << ": " << wide.certificate;
      const Verdict narrow = judgeAt(t, 1.0, levels);
      EXPECT_EQ(narrow.outcome, Outcome::kViolation) << form << ": " << narrow.certificate;
    }
  }
}

TEST(FamilySelection, CountsOncePerToken) {
  Token t;  // 4 groups of 2 by max, keep 2 groups and 3 experts: a correct router
  t.x = {3.0f, 0.0f, -1.0f, -2.0f, 2.0f, 1.0f, -3.0f, -4.0f};
  t.f.score = ScoreFunction::kSigmoid;
  t.f.groups = 4;
  t.f.topkGroups = 2;
  t.k = 3;
  t.f.renormalize = 0;
  t.ids = {0, 4, 5};
  for (int32_t e : t.ids) t.gates.push_back(sigmoid32(t.x[e]));
  LevelCounters levels;
  const Verdict v = judgeAt(t, 1.0, levels);
  EXPECT_NE(v.outcome, Outcome::kViolation) << v.certificate;
  EXPECT_EQ(levels.selectionDouble, 1u);  // once, not once per kept group
  EXPECT_EQ(levels.selectionCertified + levels.selectionUndecided, 0u);
}

}  // namespace
}  // namespace moe::fuzz
