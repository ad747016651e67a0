// The verdict's decisions as libFuzzer coverage (moe/fuzz/decision_coverage.hpp): the
// judge is built without instrumentation, so these signals are what tells the fuzzer that a
// case reached a near-tie, the binary64 filter or a non-real row. Each must fire exactly
// where the verdict went.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <utility>

#include "moe/fuzz/decision_coverage.hpp"
#include "moe/fuzz/router.hpp"

namespace moe::fuzz {
namespace {

uint32_t bit(VerdictSignal s) {
  return uint32_t{1} << static_cast<unsigned>(s);
}

// The binary32 spec (it selects on probabilities) on one token.
uint32_t signalsOfSpec32(std::vector<float> logits, int32_t k) {
  static const auto spec = makeSpec32Router();
  Case c;
  c.tokens = 1;
  c.experts = static_cast<int32_t>(logits.size());
  c.k = k;
  c.logits = std::move(logits);
  LevelCounters levels;
  const LevelCounters before = levels;
  const CaseResult r = judgeCase(*spec, c, VerdictConfig{}, levels);
  EXPECT_FALSE(r.violation);
  return verdictSignals(before, levels, r);
}

// A clear token is decided whole by the first level: the ladder's levels are not reached.
TEST(VerdictSignals, ClearWinnerIsExactAndDecidedByTheFirstLevel) {
  const uint32_t s = signalsOfSpec32({1.0f, 0.0f, -2.0f}, 1);
  EXPECT_TRUE(s & bit(VerdictSignal::kExactToken));
  EXPECT_TRUE(s & bit(VerdictSignal::kFirstLevel));
  EXPECT_FALSE(s & bit(VerdictSignal::kSelectionFloat));
  EXPECT_FALSE(s & bit(VerdictSignal::kGateDouble));
  EXPECT_FALSE(s & bit(VerdictSignal::kSelectionDouble));
  EXPECT_FALSE(s & bit(VerdictSignal::kNearTieProbabilities));
}

// docs/design.md §1's example: 0 and 2^-30 have the same binary32 probability, so the spec in
// binary32 keeps expert 0 where the real-number spec keeps expert 1: an acceptable near-tie
// that only the binary64 filter (or MPFR) can excuse.
TEST(VerdictSignals, NearTieOnProbabilitiesReachesTheBinary64Filter) {
  const uint32_t s = signalsOfSpec32({0.0f, 0x1p-30f}, 1);
  EXPECT_TRUE(s & bit(VerdictSignal::kNearTieProbabilities));
  EXPECT_TRUE(s & (bit(VerdictSignal::kSelectionDouble) | bit(VerdictSignal::kSelectionCertified)));
  EXPECT_FALSE(s & bit(VerdictSignal::kExactToken));
}

TEST(VerdictSignals, PlusInfinityRowIsNonReal) {
  const uint32_t s = signalsOfSpec32({0.0f, std::numeric_limits<float>::infinity()}, 1);
  // Structure only, decided by the first level.
  EXPECT_EQ(s, bit(VerdictSignal::kNonrealRow) | bit(VerdictSignal::kFirstLevel));
}

// The family verdict's acceptable reasons are signals of their own, so a campaign on a
// moe_route_v2 library keeps the inputs that reach near-ties of keys and of groups.
TEST(VerdictSignals, FamilyReasonsAreSignals) {
  const std::pair<const char*, VerdictSignal> reasons[] = {
      {"near-tie-keys", VerdictSignal::kNearTieKeys},
      {"near-tie-groups", VerdictSignal::kNearTieGroups},
      {"tiny-scores", VerdictSignal::kTinyScores}};
  for (const auto& [reason, signal] : reasons) {
    CaseResult r;
    Verdict v;
    v.outcome = Outcome::kAcceptable;
    v.reason = reason;
    r.tokens.push_back(v);
    EXPECT_EQ(verdictSignals(LevelCounters{}, LevelCounters{}, r), bit(signal)) << reason;
  }
}

TEST(VerdictSignals, MarkSetsOneByteRowPerRouter) {
  const auto counters = verdictSignalCounters();
  ASSERT_EQ(counters.size(), kCoveredRouters * kVerdictSignalCount);
  const uint32_t s = bit(VerdictSignal::kGateCertified) | bit(VerdictSignal::kNearTieOrder);
  markVerdictSignals(3, s);
  for (size_t r = 0; r < kCoveredRouters; ++r) {
    for (size_t k = 0; k < kVerdictSignalCount; ++k) {
      EXPECT_EQ(counters[r * kVerdictSignalCount + k], (r == 3 && (s >> k & 1)) ? 1 : 0)
          << "router " << r << " signal " << k;
    }
  }
}

// fuzz_external and fuzz_gates: one shape byte per E (exact to 64, then mod 16) and k
// against E, so that their corpora keep a case per shape.
TEST(CaseShape, EachExpertCountAndKClassHasItsOwnByte) {
  std::set<size_t> seen;
  for (int32_t e = 1; e <= 64; ++e) {
    for (int32_t k : {0, 1, e, e + 1}) {
      if (k == 1 && e == 1) continue;  // k = E there
      const size_t i = caseShapeIndex(e, k);
      EXPECT_LT(i, caseShapeCounters().size());
      EXPECT_TRUE(seen.insert(i).second) << "E " << e << " k " << k;
    }
  }
  EXPECT_EQ(caseShapeIndex(65, 2), caseShapeIndex(1025, 2));  // both E mod 16 = 1
  EXPECT_NE(caseShapeIndex(65, 2), caseShapeIndex(66, 2));
  markCaseShape(17, 3);
  EXPECT_EQ(caseShapeCounters()[caseShapeIndex(17, 3)], 1);
  EXPECT_EQ(caseShapeCounters()[caseShapeIndex(17, 17)], 0);
}

}  // namespace
}  // namespace moe::fuzz
