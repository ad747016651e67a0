// The verdict's decisions as libFuzzer coverage. The judge and the oracle are built without
// instrumentation (fuzz/targets/CMakeLists.txt): they are the reference, not the code under
// test, and their per-expert loops made most of the features an exec touched. What should
// still steer the fuzzer is where the verdict went: which level decided (float, binary64,
// MPFR), which acceptable reason, how close a near-tie came to its budget. Each
// (router, signal) pair is one byte of libFuzzer's extra counters, set when an exec reached
// it, so "avx512-probs needed the MPFR level" is a feature of its own at a fixed cost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

enum class VerdictSignal : uint8_t {
  kSelectionFloat,
  kSelectionDouble,
  kSelectionCertified,
  kSelectionUndecided,
  kGateDouble,
  kGateCertified,
  kGateUndecided,
  kExactToken,
  kNearTieProbabilities,
  kNearTieOrder,
  kNonrealRow,
  kAbstained,
  kMarginAboveEighth,  // an acceptable near-tie used more than 1/8 of its budget
  kMarginAboveHalf,
  kMarginAboveSevenEighths,
  kNearTieKeys,    // moe_route_v2: biased keys within their budget
  kNearTieGroups,  // moe_route_v2: group scores within their budget
  kTinyScores,     // moe_route_v2: renormalising scores binary32 flushes to zero
  kFirstLevel,     // a token decided whole by the verdict's first level
  kCount
};
inline constexpr size_t kVerdictSignalCount = static_cast<size_t>(VerdictSignal::kCount);
inline constexpr size_t kCoveredRouters = 8;  // fuzz_route's built-in routers

// The signals one judged case reached, bit s for VerdictSignal s. `before` and `after` are
// the level counters around its judgeCase call.
uint32_t verdictSignals(const LevelCounters& before, const LevelCounters& after,
                        const CaseResult& result);

// Sets the counter byte of each signal for `router` (modulo kCoveredRouters). With
// MOE_FUZZ_SIGNALS=1 in the environment it also tallies the signals and the tokens judged,
// and prints the tally at exit (how often a run reached each level: docs/fuzz.md).
void markVerdictSignals(size_t router, uint32_t signals, size_t tokensJudged = 0);

// The counter bytes, router-major (kCoveredRouters x kVerdictSignalCount), for tests.
std::span<const uint8_t> verdictSignalCounters();

// The case's shape as coverage, for the targets whose code under test has no edges of its
// own to tell shapes apart: fuzz_external (a user's library is usually not instrumented)
// and fuzz_gates (its property is the judge's, which is not instrumented). One byte per
// (E, k against E): E exactly up to 64, above that E mod 16 (SIMD tails); k = 0, k < E,
// k = E, k > E. So the corpus keeps a case per shape, as the judge's loop counts made it.
inline constexpr size_t kShapeExpertBuckets = 64 + 16;
inline constexpr size_t kShapeKClasses = 4;
size_t caseShapeIndex(int32_t experts, int32_t k);
void markCaseShape(int32_t experts, int32_t k);
std::span<const uint8_t> caseShapeCounters();

}  // namespace moe::fuzz
